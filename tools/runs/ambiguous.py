"""Chapter 9's experiment: the ambiguous translation task, trained and
measured (``tools/runs/sweep_ch09.py`` runs it on five seeds).

Every training target is drawn from a number's everyday and financial
writings (``tools.runs.numbers_task.mixed_targets``), so an input has two
right answers. ``train`` is chapter 8's run plus what chapter 9 needs; the
rest scores outputs against every valid writing.
"""

from __future__ import annotations

import copy
import functools
import itertools

import torch

from tools.runs import numbers_task as nm
from utils.batches import Vocab, encode_batch, group_pairs
from utils.decoding import beam_search, greedy_decode
from utils.decoding import sample_decode, sequence_log_prob
from utils.layers import evaluating
from utils.loss import masked_cross_entropy
from utils.pronouncer import PronouncerConfig, build_pronouncer
from utils import training
from utils.training import noam_scheduler, paper_adam
from utils.training import teacher_forced_loss, threads

STEPS = 500  # both decoders, the same recipe and the same steps
EARLY_STEPS = 150  # the checkpoint kept as the "early" model
EVAL_EVERY = 50
N_CURVE = 100  # validation numbers decoded for the learning curves
N_TEST = 300  # test numbers the chapter decodes
MAX_LEN = 12  # the longest target has 9 characters, plus EOS
NAR_LEN = 10
TEMPERATURES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
TOP_PS = (0.3, 0.5, 0.7, 0.9, 1.0)
N_SAMPLES = 8  # samples per source in the quality/diversity curves
N_SAMPLED = 60  # sources in the quality/diversity curves
# chapter 8's model and recipe (label smoothing included), for fewer steps
RECIPE = PronouncerConfig(steps=STEPS)
# the training pairs balanced by size first (tools.runs.numbers_task): each
# size at least this share of them
MIN_SIZE_SHARE = 0.1

VOCAB_SRC, VOCAB_TGT = nm.source_vocab(), Vocab(nm.AMBIGUOUS_CHARS)
BOS, EOS, PAD = VOCAB_TGT.bos_id, VOCAB_TGT.eos_id, VOCAB_TGT.pad_id
TEACHER_FORCED_LOSS = functools.partial(
    teacher_forced_loss, label_smoothing=RECIPE.label_smoothing, pad_id=PAD
)


def task(seed: int) -> dict:
    """Chapter 8's splits with mixed training targets; the evaluation
    splits keep the number (``(words, n)``), scored against every valid
    writing."""
    splits = nm.make_splits(seed)

    def numbered(pairs):
        return [(w, nm.read_numeral(t)) for w, t in pairs]

    return {
        "train": nm.mixed_targets(splits["train"], seed),
        "valid": numbered(splits["valid"][:N_CURVE]),
        "test": numbered(splits["test"][:N_TEST]),
    }


def mixed_test(seed: int) -> list:
    """The whole test split with mixed targets (for perplexity)."""
    return nm.mixed_targets(nm.make_splits(seed)["test"], seed + 1)


def sources(numbered) -> torch.Tensor:
    pairs = [(w, nm.chinese_numerals(n)) for w, n in numbered]
    return encode_batch(pairs, VOCAB_SRC, VOCAB_TGT)[0]  # (B, S)


def queries(batch_size: int) -> torch.Tensor:
    """The one-pass decoder's input: BOS at every position (B, NAR_LEN)."""
    return torch.full((batch_size, NAR_LEN), BOS)


def one_pass_decode(model, src) -> list[list[str]]:
    with torch.no_grad():
        logits = model(src, queries(src.size(0)))  # (B, L, V): one pass
    logits[..., PAD] = float("-inf")
    return [VOCAB_TGT.decode(row) for row in logits.argmax(-1)]


def greedy(model, src) -> list[list[str]]:
    out = greedy_decode(model, src, MAX_LEN, BOS, EOS, PAD)
    return [VOCAB_TGT.decode(row) for row in out]


def valid_rate(outputs, numbered) -> float:
    ok = sum(nm.is_valid_writing(o, n) for o, (_, n) in zip(outputs, numbered))
    return ok / len(numbered)


def train(seed: int, one_pass: bool = False, steps: int = STEPS, data=None):
    """Chapter 8's recipe and run (the seeding and batches of
    ``utils.pronouncer.train_pronouncer``) on the mixed targets, plus what
    it does not offer: the one-pass decoder (every position at once, from
    BOS queries), a learning curve and the weights at ``EARLY_STEPS`` ->
    ``(model, [(step, share of validation numbers decoded validly)],
    early weights)``."""
    data = task(seed) if data is None else data
    valid_src = sources(data["valid"])
    decode = one_pass_decode if one_pass else greedy
    curve, early = [], []

    def measure(step: int, loss: float) -> None:
        if step % EVAL_EVERY == 0:
            with evaluating(model):
                rate = valid_rate(decode(model, valid_src), data["valid"])
            curve.append((step, round(rate, 4)))
        if step == EARLY_STEPS:
            early.append(copy.deepcopy(model.state_dict()))

    with threads(1):
        torch.manual_seed(seed)
        model = build_pronouncer(RECIPE, VOCAB_SRC, VOCAB_TGT)
        opt = paper_adam(model.parameters())
        cfg = RECIPE
        sched = noam_scheduler(
            opt, cfg.d_model, cfg.warmup_steps, cfg.factor, cfg.warmup
        )
        training.train(
            model,
            opt,
            batches(data["train"], seed),
            one_pass_loss if one_pass else TEACHER_FORCED_LOSS,
            steps,
            scheduler=sched,
            hooks=[measure],
            progress=False,
        )
    model.eval()
    return model, curve, early[0] if early else None


def batches(pairs, seed: int):
    """Chapter 8's batches of ``pairs`` balanced by size, epoch after epoch,
    each reshuffled."""
    pairs = nm.balance_by_size(pairs, MIN_SIZE_SHARE)
    for epoch in itertools.count():
        seed_e = seed * 1000 + epoch
        for group in group_pairs(pairs, RECIPE.batch_size, seed_e):
            yield encode_batch(group, VOCAB_SRC, VOCAB_TGT)


def one_pass_loss(model, batch):
    """The one-pass decoder's loss: every position at once, from BOS."""
    src, tgt = batch
    target = torch.full((src.size(0), NAR_LEN), PAD)
    target[:, : tgt.size(1) - 1] = tgt[:, 1:]
    logits = model(src, queries(src.size(0)))  # (B, L, V)
    return masked_cross_entropy(
        logits, target, target != PAD, RECIPE.label_smoothing
    )


def references(numbered):
    return [nm.valid_writings(n) for _, n in numbered]


def token_ids(outputs) -> torch.Tensor:
    """Character lists -> (B, T) ids: BOS, characters, EOS, PAD..."""
    rows = [VOCAB_TGT.encode(o, bos=True) for o in outputs]
    ids = torch.full((len(rows), max(map(len, rows))), PAD)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    return ids


def error_kinds(model, src, outputs, numbered) -> dict:
    """Greedy's invalid outputs, split: a search error when some valid
    writing scores higher under the model than the output, else a model
    error."""
    wrong = [
        i
        for i, (o, (_, n)) in enumerate(zip(outputs, numbered))
        if not nm.is_valid_writing(o, n)
    ]
    if not wrong:
        return {"search": 0, "model": 0, "wrong": []}
    rows = src[wrong]

    def log_prob(targets) -> torch.Tensor:
        return sequence_log_prob(model, rows, token_ids(targets), EOS, PAD)

    out_lp = log_prob([outputs[i] for i in wrong])
    refs = [nm.valid_writings(numbered[i][1]) for i in wrong]
    best_ref = torch.stack([log_prob([r[c] for r in refs]) for c in (0, 1)])
    search = (best_ref.amax(0) > out_lp).tolist()
    return {
        "search": sum(search),
        "model": len(wrong) - sum(search),
        "wrong": wrong,
        "is_search": search,
    }


def beam(model, src, k=4, alpha=0.0) -> list[list[str]]:
    hyps = beam_search(
        model, src, MAX_LEN, BOS, EOS, beam_size=k, alpha=alpha, pad_id=PAD
    )
    return [VOCAB_TGT.decode(h[0][0]) for h in hyps]


def quality_diversity(model, numbered, seed: int, **filters) -> tuple:
    """Sample N_SAMPLES outputs per source -> (share valid, mean distinct
    valid outputs per source)."""
    src = sources(numbered).repeat_interleave(N_SAMPLES, 0)
    gen = torch.Generator().manual_seed(seed)
    out = sample_decode(
        model, src, MAX_LEN, BOS, EOS, PAD, generator=gen, **filters
    )
    texts = [VOCAB_TGT.decode(r) for r in out]
    valid, distinct = 0, 0
    for i, (_, n) in enumerate(numbered):
        mine = texts[i * N_SAMPLES : (i + 1) * N_SAMPLES]
        ok = [tuple(t) for t in mine if nm.is_valid_writing(t, n)]
        valid += len(ok)
        distinct += len(set(ok))
    return valid / len(src), distinct / len(numbered)


def mean_len(outputs) -> float:
    return sum(map(len, outputs)) / len(outputs)


def closest_ref_len(outputs, numbered) -> float:
    """Mean length of the valid writing closest in length to each output."""
    return sum(
        min((abs(len(w) - len(o)), len(w)) for w in nm.valid_writings(n))[1]
        for o, (_, n) in zip(outputs, numbered)
    ) / len(outputs)
