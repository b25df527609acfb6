"""One stack, three pre-training objectives on English words (chapter 10):
training, evaluation, sampling; re-exports ``utils.objectives``. Its count
baselines are ``utils.ngram.LetterCounts``."""

from __future__ import annotations

import functools
import math
import random

import torch
from torch import nn

from .checks import check_choice, check_int, check_number
from .checks import check_probability
from .layers import Embeddings, EncoderLayer, Stack, xavier_init
from .loss import masked_cross_entropy
from .objectives import (
    BOS,
    EOS,
    FIRST_LETTER,
    MASK,
    OBJECTIVES,
    PAD,
    VOCAB,
    attention_mask,
    bert_mask,
    check_words,
    decode,
    encode,
    objective_batch,
    SENTINELS,
    span_corruption,
    span_vocab,
)
from .positional import PositionalEncoding
from .training import adam, adamw, linear_scheduler, threads, train

__all__ = [
    "round_fp16",
    "OBJECTIVES",
    "MASK",
    "VOCAB",
    "LMConfig",
    "encode",
    "decode",
    "bert_mask",
    "attention_mask",
    "objective_batch",
    "TinyLM",
    "train_lm",
    "evaluate_lm",
    "INPUT_KINDS",
    "input_kinds",
    "SENTINELS",
    "span_vocab",
    "span_corruption",
    "span_pairs",
    "sample_words",
    "complete",
]


class LMConfig:
    """The stack's sizes, named and sized as chapter 8's encoder."""

    def __init__(
        self,
        d_model: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.1,
        norm_first: bool = False,
    ):
        self.d_model = check_int(d_model, "d_model", 1)
        self.num_heads = check_int(num_heads, "num_heads", 1)
        self.num_layers = check_int(num_layers, "num_layers", 1)
        self.d_ff = check_int(d_ff, "d_ff", 1)
        self.dropout = check_probability(dropout, "dropout")
        self.norm_first = bool(norm_first)

    @classmethod
    def like(cls, cfg) -> LMConfig:
        """The sizes of a ``PronouncerConfig`` (the pronouncer's encoder)."""
        names = ("d_model", "num_heads", "num_layers", "d_ff", "dropout")
        return cls(
            **{n: getattr(cfg, n) for n in names}, norm_first=cfg.norm_first
        )


class TinyLM(nn.Module):
    """The pronouncer's encoder + an LM head: ``forward(ids (B, L), mask (B,
    1, L, L)) -> (B, L, d_model)``, ``head -> (B, L, VOCAB)``."""

    def __init__(self, cfg: LMConfig | None = None):
        super().__init__()
        cfg = cfg or LMConfig()
        if not isinstance(cfg, LMConfig):
            raise TypeError(f"cfg must be an LMConfig, got {cfg!r:.40}")
        sizes = (cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.dropout)
        self.embed = Embeddings(VOCAB, cfg.d_model)
        self.pos = PositionalEncoding(cfg.d_model, cfg.dropout, max_len=64)
        self.encoder = Stack(
            lambda: EncoderLayer(*sizes, cfg.norm_first),
            cfg.num_layers,
            cfg.d_model,
            cfg.norm_first,
        )
        self.head = nn.Linear(cfg.d_model, VOCAB)
        xavier_init(self)  # as utils.model.Transformer starts

    def forward(self, ids, mask):
        return self.encoder(self.pos(self.embed(ids)), mask)

    def logits(self, ids, mask):  # (B, L) -> (B, L, VOCAB)
        return self.head(self(ids, mask))


RECIPES = ("onecycle", "adamw")  # train_lm's optimisers and schedules


def train_lm(
    kind: str,
    words,
    steps: int = 300,
    batch: int = 128,
    seed: int = 0,
    lr: float = 3e-3,
    cfg: LMConfig | None = None,
    stop_after: int | None = None,
    hooks=(),
    recipe: str = "onecycle",
) -> tuple[TinyLM, list[float]]:
    """Train a fresh ``TinyLM`` on one objective -> (eval-mode model,
    losses); ``seed`` seeds weights, batches and corruption. Each
    ``hook(model, step, loss)`` runs after every step (a learning curve's
    evaluations). ``recipe``: ``"onecycle"`` (Adam, the one-cycle rate
    peaking at ``lr``) or ``"adamw"`` (chapter 11's GPT recipe: AdamW,
    warm-up over 1/24 of the steps, then linearly to 0, clipping at 1)."""
    check_choice(kind, "kind", OBJECTIVES)
    words = check_words(words)
    steps, batch = check_int(steps, "steps", 1), check_int(batch, "batch", 1)
    check_number(lr, "lr", 0.0, min_inclusive=False)
    if stop_after is not None:
        check_int(stop_after, "stop_after", 1)
    check_choice(recipe, "recipe", RECIPES)
    torch.manual_seed(seed)
    model, gen = TinyLM(cfg), torch.Generator().manual_seed(seed)
    if recipe == "onecycle":
        opt = adam(model.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    else:  # chapter 11's warm-up: 100 of its 2,400 steps
        opt = adamw(model, lr)
        sched = linear_scheduler(opt, max(1, steps // 24), steps)

    def batches():  # batch words drawn with gen, then corrupted with it
        while True:
            pick = torch.randint(len(words), (batch,), generator=gen)
            rows = [words[i] for i in pick.tolist()]
            yield objective_batch(kind, rows, gen)

    def loss_fn(model, rows):
        inputs, mask, targets, keep = rows
        return masked_cross_entropy(model.logits(inputs, mask), targets, keep)

    with threads(1):  # tiny matrices: more threads only fight on a busy CPU
        losses = train(
            model,
            opt,
            batches(),
            loss_fn,
            min(steps, stop_after or steps),
            scheduler=sched,
            clip=1.0 if recipe == "adamw" else None,
            hooks=[functools.partial(h, model) for h in hooks],
            progress=False,
        )
    return model.eval(), losses


@torch.no_grad()
def evaluate_lm(
    kind: str,
    model: TinyLM,
    words,
    seed: int = 123,
    prefix_letters: int | None = None,
) -> dict:
    """Held-out ``loss``, ``accuracy`` and ``n`` tokens, seeded positions;
    for ``"mlm"`` also ``"by_input"``, ``"share"`` and ``"loss_by_input"``:
    the accuracy at, share of and loss on the chosen letters the input shows
    as [MASK], kept or random (``input_kinds``). ``model``: anything with
    ``logits(ids, mask)``."""
    gen = torch.Generator().manual_seed(seed)
    inputs, mask, targets, keep = objective_batch(
        kind, words, gen, prefix_letters
    )
    logits = model.logits(inputs, mask)
    loss = masked_cross_entropy(logits, targets, keep).item()
    hit = logits.argmax(-1) == targets
    out = {
        "loss": loss,
        "accuracy": hit[keep].float().mean().item(),
        "n": int(keep.sum()),
    }
    if kind == "mlm":  # by what the input shows at the chosen letter
        where = input_kinds(inputs, targets, keep).items()
        out["by_input"] = {k: hit[v].float().mean().item() for k, v in where}
        out["share"] = {k: v.sum().item() / out["n"] for k, v in where}
        ce = {k: masked_cross_entropy(logits, targets, v) for k, v in where}
        out["loss_by_input"] = {k: v.item() for k, v in ce.items()}
    return out


INPUT_KINDS = ("mask", "kept", "random")


def input_kinds(inputs: torch.Tensor, targets: torch.Tensor, chosen):
    """The masked LM's chosen positions by what its input shows there:
    ``{"mask": [MASK], "kept": the letter itself, "random": another
    letter}``, each a ``(B, L)`` bool tensor (a random letter that hits
    the right one counts as kept: the input shows the answer)."""
    shown = inputs == MASK
    kept = chosen & (inputs == targets)
    return {"mask": chosen & shown, "kept": kept,
            "random": chosen & ~shown & ~kept}  # fmt: skip


def round_fp16(model: nn.Module) -> nn.Module:
    """Round weights to float16 and back, in place: what is shipped."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    return model


def span_pairs(words, seed: int, copies: int = 1, whole: bool = False):
    """``copies`` span corruptions of each word of 2 or more letters
    (``span_corruption``; one letter hidden would leave nothing to read),
    drawn in order from one seeded generator, as ``(source, target)`` for
    ``train_pronouncer`` with ``span_vocab()`` on both sides. The target is
    T5's (the spans), or with ``whole`` BART's: the whole word."""
    words = [w for w in check_words(words, "words") if len(w) > 1]
    check_int(copies, "copies", 1)
    rng = random.Random(seed)
    pairs = [span_corruption(w, rng) for _ in range(copies) for w in words]
    if whole:
        pairs = [(s, list(w)) for (s, _), w in zip(pairs, words * copies)]
    return pairs


@torch.no_grad()
def _next_logits(kind, model, ids, n_prefix) -> torch.Tensor:
    mask = attention_mask(kind, ids, n_prefix)
    return model.logits(ids, mask)[:, -1]  # (B, VOCAB)


@torch.no_grad()
def sample_words(
    model: TinyLM,
    n: int,
    temperature: float = 1.0,
    seed: int = 0,
    max_len: int = 20,
) -> list[str]:
    """``n`` words from a causal LM, [BOS] to EOS, at ``temperature``."""
    check_int(n, "n", 1)
    check_number(temperature, "temperature", 0.0, min_inclusive=False)
    check_int(max_len, "max_len", 1)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.full((n, 1), BOS)
    done = torch.zeros(n, dtype=torch.bool)
    allowed = torch.full((VOCAB,), -math.inf)
    allowed[EOS], allowed[FIRST_LETTER:MASK] = 0.0, 0.0
    with threads(1):
        for _ in range(max_len + 1):
            logits = _next_logits("clm", model, ids, None)
            probs = torch.softmax(logits / temperature + allowed, -1)
            nxt = torch.multinomial(probs, 1, generator=gen)[:, 0]
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            ids = torch.cat([ids, nxt[:, None]], 1)
            done |= nxt == EOS
            if done.all():
                break
    words = []
    for row in ids:
        row = row.tolist()
        words.append(decode(row[: row.index(EOS)] if EOS in row else []))
    return words


@torch.no_grad()
def complete(
    kind: str, model: TinyLM, prefixes, max_new: int = 20
) -> list[str]:
    """Greedy whole-word completions of prefixes (``"plm"`` or ``"clm"``)."""
    check_choice(kind, "kind", ("clm", "plm"))
    prefixes = check_words(prefixes, "prefixes")
    check_int(max_new, "max_new", 1)
    out = []
    with threads(1):
        for p in prefixes:
            ids = encode([p], bos=True)[:, :-1]  # without EOS
            n_prefix = torch.tensor([ids.size(1)])
            for _ in range(max_new):
                logits = _next_logits(kind, model, ids, n_prefix)
                logits[:, [PAD, BOS, MASK]] = -math.inf
                nxt = logits.argmax(-1, keepdim=True)
                if nxt.item() == EOS:
                    break
                ids = torch.cat([ids, nxt], 1)
            out.append(decode(ids[0]))
    return out
