"""One stack, three pre-training objectives, and fine-tuning (chapter 10).

The same small stack of the course's ``EncoderLayer``s becomes a different
model family by its attention mask and its loss targets alone:

==========  ============================  ==================================
objective   attention mask                loss on
==========  ============================  ==================================
``"mlm"``   bidirectional (real keys)     the 15% chosen positions only
``"clm"``   causal                        every next token
``"plm"``   prefix bidirectional, then    the next tokens after the prefix
            causal                        (``= digits [EOS]`` -> the digits)
==========  ============================  ==================================

Ids follow ``utils.corpus``; masks are boolean, True = may attend.
"""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from . import corpus
from .checks import (
    check_at_most,
    check_choice,
    check_int,
    check_probability,
)
from .layers import Embeddings, EncoderLayer, Stack
from .loss import masked_cross_entropy
from .masks import causal_mask
from .positional import PositionalEncoding
from .runtime import adam, threads

__all__ = [
    "OBJECTIVES",
    "bert_mask",
    "attention_mask",
    "objective_batch",
    "TinyLM",
    "Classifier",
    "train_lm",
    "evaluate_lm",
    "generate",
    "fine_tune",
    "accuracy",
    "exact_match",
    "statement_data",
    "fine_tune_row",
]

OBJECTIVES = ("mlm", "clm", "plm")


def bert_mask(
    ids: torch.Tensor,
    generator: torch.Generator | None = None,
    p: float = 0.15,
    p_mask: float = 0.8,
    p_random: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption rule. ids ``(B, L)`` -> ``(inputs, chosen)``.

    Each normal token (not [PAD], [CLS], [EOS]) is chosen with probability
    ``p``; a chosen token becomes [MASK] with probability ``p_mask``, a
    random normal token with ``p_random``, and stays itself otherwise. The
    loss is taken at ``chosen`` positions only, against the original ids.
    """
    p = check_probability(p, "p", allow_one=True)
    p_mask = check_probability(p_mask, "p_mask", allow_one=True)
    p_random = check_probability(p_random, "p_random", allow_one=True)
    check_at_most(p_mask + p_random, "p_mask + p_random", 1)
    normal = ids >= len(corpus.SPECIALS)
    u = torch.rand(ids.shape, generator=generator)
    chosen = normal & (torch.rand(ids.shape, generator=generator) < p)
    to_mask = chosen & (u < p_mask)
    to_random = chosen & (u >= p_mask) & (u < p_mask + p_random)
    first, n = corpus.NORMAL_IDS[0], len(corpus.NORMAL_IDS)
    random_ids = first + torch.randint(n, ids.shape, generator=generator)
    inputs = torch.where(to_mask, torch.full_like(ids, corpus.MASK), ids)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, chosen


def attention_mask(
    kind: str, ids: torch.Tensor, prefix_len: torch.Tensor | None = None
) -> torch.Tensor:
    """The objective's mask ``(B, 1, L, L)``: its pattern AND real keys.

    ``"plm"`` needs ``prefix_len`` ``(B,)``: query t sees key s when
    ``s < prefix_len`` or ``s <= t``.
    """
    check_choice(kind, "kind", OBJECTIVES)
    b, size = ids.shape
    real = (ids != corpus.PAD)[:, None, None, :]  # (B, 1, 1, L)
    if kind == "mlm":
        return real.expand(b, 1, size, size)
    pattern = causal_mask(size, device=ids.device)[None, None]  # (1,1,L,L)
    if kind == "plm":
        if prefix_len is None:
            raise ValueError("kind='plm' needs prefix_len (B,)")
        keys = torch.arange(size, device=ids.device)
        in_prefix = keys[None, :] < prefix_len[:, None]  # (B, L)
        pattern = pattern | in_prefix[:, None, None, :]
    return real & pattern


def objective_batch(
    kind: str, ids: torch.Tensor, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(inputs, mask, targets, loss_mask)`` for one objective.

    MLM: inputs corrupted by ``bert_mask``, targets the original ids at the
    same positions. CLM and PLM: inputs ``ids[:, :-1]``, targets
    ``ids[:, 1:]`` (next token); PLM keeps only targets after the prefix.
    """
    if kind == "mlm":  # attention_mask checks kind
        inputs, chosen = bert_mask(ids, generator)
        return inputs, attention_mask("mlm", ids), ids, chosen
    inputs, targets = ids[:, :-1], ids[:, 1:]
    loss_mask = targets != corpus.PAD
    prefix = corpus.prefix_lengths(ids)
    if kind == "plm":
        # target t is token t + 1: keep it when it is past the prefix
        t = torch.arange(targets.size(1), device=ids.device)
        loss_mask = loss_mask & (t[None, :] + 1 >= prefix[:, None])
    return inputs, attention_mask(kind, inputs, prefix), targets, loss_mask


class TinyLM(nn.Module):
    """Embeddings + positions + a Pre-Norm stack of encoder layers + a token
    head.

    ``forward(ids (B, L), mask (B, 1, L, L)) -> hidden (B, L, d_model)``;
    ``head(hidden) -> logits (B, L, vocab)``.
    """

    def __init__(self, d_model=64, num_heads=4, num_layers=2, d_ff=128):
        super().__init__()
        vocab = len(corpus.TOKENS)
        self.embed = Embeddings(vocab, d_model)
        self.pos = PositionalEncoding(d_model, max_len=64)
        self.encoder = Stack(
            lambda: EncoderLayer(d_model, num_heads, d_ff, 0.0, True),
            num_layers,
            d_model,
            norm_first=True,
        )
        self.head = nn.Linear(d_model, vocab)

    def forward(self, ids, mask):
        return self.encoder(self.pos(self.embed(ids)), mask)


class Classifier(nn.Module):
    """A sentence classifier on a ``TinyLM`` body: bidirectional mask, then
    the [CLS] vector (``pooling="cls"``) or the mean of real tokens
    (``"mean"``), then a linear layer."""

    def __init__(self, body: TinyLM, pooling: str = "cls", classes: int = 2):
        super().__init__()
        check_choice(pooling, "pooling", ("cls", "mean"))
        self.body, self.pooling = body, pooling
        self.out = nn.Linear(body.head.in_features, classes)

    def forward(self, ids):  # (B, L) -> (B, classes)
        hidden = self.body(ids, attention_mask("mlm", ids))
        if self.pooling == "cls":
            return self.out(hidden[:, 0])  # [CLS] is position 0
        real = (ids != corpus.PAD)[..., None].float()  # (B, L, 1)
        return self.out((hidden * real).sum(1) / real.sum(1))


def train_lm(
    kind: str,
    numbers,
    steps: int = 300,
    batch: int = 128,
    seed: int = 0,
    lr: float = 5e-3,
) -> tuple[TinyLM, list[float]]:
    """Train a fresh ``TinyLM`` on one objective; return it and the losses.

    Batches are sampled from ``numbers`` with a generator seeded by ``seed``
    (which also seeds the weights and the MLM corruption)."""
    check_choice(kind, "kind", OBJECTIVES)
    steps, batch = check_int(steps, "steps", 1), check_int(batch, "batch", 1)
    torch.manual_seed(seed)
    model, gen = TinyLM(), torch.Generator().manual_seed(seed)
    data = corpus.encode(numbers)
    opt = adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    losses = []
    with threads(1):  # tiny matrices: more threads only fight on a busy CPU
        for _ in range(steps):
            rows = data[torch.randint(len(data), (batch,), generator=gen)]
            inputs, mask, targets, loss_mask = objective_batch(kind, rows, gen)
            loss = masked_cross_entropy(
                model.head(model(inputs, mask)), targets, loss_mask
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def evaluate_lm(kind: str, model: TinyLM, numbers, seed: int = 123) -> dict:
    """Held-out loss and token accuracy of ``kind`` on ``numbers``
    (MLM: at the chosen positions of a seeded corruption)."""
    ids = corpus.encode(numbers)
    gen = torch.Generator().manual_seed(seed)
    inputs, mask, targets, loss_mask = objective_batch(kind, ids, gen)
    logits = model.head(model(inputs, mask))
    loss = masked_cross_entropy(logits, targets, loss_mask).item()
    right = (logits.argmax(-1) == targets)[loss_mask]
    return {"loss": loss, "accuracy": right.float().mean().item()}


@torch.no_grad()
def generate(
    kind: str, model: TinyLM, prompt: torch.Tensor, max_new: int = 12
) -> torch.Tensor:
    """Greedy continuation of one prompt ``(L,)`` until [EOS].

    ``"clm"``: causal over everything. ``"plm"``: the prompt is the prefix,
    read bidirectionally; new tokens are causal."""
    check_choice(kind, "kind", ("clm", "plm"))
    ids, n_prefix = prompt[None], torch.tensor([prompt.numel()])
    for _ in range(max_new):
        mask = attention_mask(kind, ids, n_prefix)
        nxt = model.head(model(ids, mask))[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
        if nxt.item() == corpus.EOS:
            break
    return ids[0]


@torch.no_grad()
def accuracy(model: Classifier, ids: torch.Tensor, labels) -> float:
    """Fraction of ``ids`` rows whose argmax class equals ``labels``."""
    return (model(ids).argmax(-1) == labels).float().mean().item()


def fine_tune(
    body: TinyLM | None,
    ids: torch.Tensor,
    labels: torch.Tensor,
    pooling: str = "cls",
    steps: int = 150,
    seed: int = 0,
    lr: float = 1e-3,
) -> Classifier:
    """Train a ``Classifier`` on ``(ids (N, L), labels (N,))``, full batch.

    ``body=None`` starts from random weights (from scratch); otherwise a
    copy of ``body`` (the pre-trained stack) is fine-tuned whole."""
    torch.manual_seed(seed)
    if body is None:
        body = TinyLM()
    else:
        state = {k: v.clone() for k, v in body.state_dict().items()}
        body = TinyLM()
        body.load_state_dict(state)
    model = Classifier(body, pooling)
    opt = adam(model.parameters(), lr=lr)
    model.train()
    with threads(1):
        for _ in range(check_int(steps, "steps", 1)):
            loss = F.cross_entropy(model(ids), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def exact_match(kind: str, model: TinyLM, numbers) -> float:
    """Fraction of ``numbers`` whose digits the model generates exactly
    from the prompt ``[CLS] words =``."""
    right = 0
    for n in numbers:
        ids = corpus.encode([n])[0]
        cut = int(corpus.prefix_lengths(ids[None])[0])
        out = generate(kind, model, ids[:cut], max_new=5)
        right += corpus.decode(out[cut:]) == " ".join(str(n))
    return right / len(numbers)


def statement_data(
    numbers, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The downstream task: is the sentence true? Ids ``(N, L)`` and labels
    ``(N,)``: 1 for ``words = digits`` as written, 0 when one digit (drawn
    with ``random.Random(seed)``) was changed to another digit."""
    rng = random.Random(seed)
    ids, labels = corpus.encode(numbers), []
    for row in ids:
        true = rng.random() < 0.5
        labels.append(int(true))
        if not true:
            digits = (row >= corpus.TOKEN_ID["0"]) & (
                row <= corpus.TOKEN_ID["9"]
            )
            where = rng.choice(digits.nonzero().flatten().tolist())
            old = int(row[where]) - corpus.TOKEN_ID["0"]
            new = rng.choice([d for d in range(10) if d != old])
            row[where] = corpus.TOKEN_ID["0"] + new
    return ids, torch.tensor(labels)


def fine_tune_row(
    body: TinyLM | None, train, test, labels: int, pooling: str, seed: int
) -> float:
    """Test accuracy of one fine-tuning run on the first ``labels`` numbers
    of ``train`` (the sweep's unit)."""
    ids, y = statement_data(train[:labels], seed)
    model = fine_tune(body, ids, y, pooling, seed=seed)
    return accuracy(model, *statement_data(test, 99))
