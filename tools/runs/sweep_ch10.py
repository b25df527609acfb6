"""Chapter 10's stored runs: pre-training on English words, and what it buys.

    python -m tools.runs.sweep_ch10 [--seeds 0 1 ...]
    python -m tools.runs.sweep_ch10 --list
    python -m tools.runs.sweep_ch10 --probe t5|bart [--pre] [--factor F]
    python -m tools.runs.sweep_ch10 --curve clm [--seeds 0 ...] [--size d128]
    python -m tools.runs.sweep_ch10 --pilot128 [pretrained|scratch] [--seeds 0]
    python -m tools.runs.sweep_ch10 --table128 [pretrained|scratch] --seeds 0 1

For each seed: each objective (``KINDS``) is trained on the spellings of
the pronouncer's training words, rounded to fp16 (as stored) and scored on
the validation words; the causal LM samples words, the causal and prefix
LMs complete words from their first letters. Then chapter 8's pronouncer
(``TUNE``) is fine-tuned on each of ``LABELS`` labelled words from each
start of ``ARMS`` and scored greedily on the first ``N_TEST`` test words.

One JSON line per finished run goes to ``book/data/ch10_runs.jsonl`` (runs
already there are skipped: a stopped sweep goes on where it stopped; two
processes with other seeds may share the file); the seed-0 models go to
``book/data/ch10_lm_s0.pt`` (fp16). ``--probe`` is apart from the sweep: the
encoder-decoder on T5's own target or BART's (``probe``), a row per seed.
``--curve KIND`` too: the objective's learning curve (``curve``), a row per
seed in ``CURVES``, beside the count models' bits on the same positions
(``curve_counts``); its last weights (fp16) stay in ``CURVE_MODELS`` (seed 0's
at d128 in ``STARTS128`` too); ``--pilot128`` fine-tunes the pronouncer from
those (``run_d128``), ``--table128`` too.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import fcntl
import functools
import itertools
import json
import math
import random
import time

import numpy as np
import torch

from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import r5, read_rows
from tools.runs.sweep_pronouncer import RECIPE
from tools.runs.train_pronouncer import scores as greedy_scores
from utils import finetuning as ft
from utils import ngram
from utils import objectives as obj
from utils import pretraining as pt
from utils import pronunciation as pr
from utils.batches import make_batches
from utils.checks import check_probability
from utils.layers import evaluating
from utils.pronouncer import train_pronouncer
from utils.training import evaluate_loss

OUT = ROOT / "book" / "data" / "ch10_runs.jsonl"
CURVES = ROOT / "book" / "data" / "ch10_curves.jsonl"
MODELS = ROOT / "book" / "data" / "ch10_lm_s0.pt"
CURVE_MODELS = ROOT / "_build" / "ch10"  # each curve's last weights (fp16)
STARTS128 = ROOT / "book" / "data" / "ch10_lm_d128_s0.pt"  # seed 0's, kept
SEEDS = (0, 1, 2, 3, 4)
PRE_STEPS = {"mlm": 2000, "clm": 1200, "plm": 1200}
PRE_BATCH, PRE_LR = 128, 3e-3
REPLAY = 30  # first losses stored: the chapter re-runs them
TEMPERATURES = (0.8, 1.2)
N_SAMPLES = 2000
PREFIX_LETTERS = 3
LABELS = (500, 2000, 8000)
TUNE_STEPS, LONG_STEPS = 600, 1800
N_TEST = 2000
# (start, steps) of each fine-tuning arm: the pre-trained encoder and a
# random one, for the same steps and for three times as many; then the
# practitioners' choices at the same steps: the masked LM's encoder at a
# tenth of the rate (GBERT's encoder rates are 5 to 50 times below its
# decoder's) or frozen, and the causal and prefix stacks as starts
ARMS = (
    ("pretrained", TUNE_STEPS),
    ("scratch", TUNE_STEPS),
    ("scratch", LONG_STEPS),
    ("pretrained", LONG_STEPS),
    ("lowlr", TUNE_STEPS),
    ("frozen", TUNE_STEPS),
    ("causal", TUNE_STEPS),
    ("prefix", TUNE_STEPS),
    ("bart", TUNE_STEPS),
    ("bartlow", TUNE_STEPS),
)
# start -> (the objective whose stack starts the encoder, init_lr)
STARTS = {
    "pretrained": ("mlm", 1.0),
    "lowlr": ("mlm", 0.1),
    "frozen": ("mlm", 0.0),
    "causal": ("clm", 1.0),
    "prefix": ("plm", 1.0),
    "bart": ("bart", 1.0),
    "bartlow": ("bart", 0.1),
}
# the encoder-decoder family: the pronouncer's own shape pre-trained on the
# same spellings, T5's spans hidden, the whole word written back (BART's
# target: T5's own, the spans alone, did not train at this rate, see
# probe); as many words seen as the masked LM sees (2,000 x 128), two
# corruptions of each
ED_STEPS, ED_COPIES = 4000, 2
KINDS = (*pt.OBJECTIVES, "bart")
TUNE = dataclasses.replace(
    RECIPE, batch_size=64, warmup_steps=100, n_valid_exact=200
)
LM = pt.LMConfig.like(TUNE)
TUNE_RUNS = [(n, init, steps) for n in LABELS for init, steps in ARMS]
# the fine-tuning recipe for (steps, seed), and the label order of a seed
tune_config = functools.partial(ft.tune_config, TUNE)
label_order = ft.label_order


def data() -> dict:
    split = pr.split_words(2000, 12000, 0)
    return {
        "split": split,
        "train": [w for w, _ in split["train"]],
        "valid": [w for w, _ in split["valid"]],
        "heldout": {w for k in ("valid", "test") for w, _ in split[k]},
    }


def stored_rows(path=OUT) -> dict:
    """The finished runs, by name."""
    return {r["run"]: r for r in read_rows(path)}


def store(row: dict, path=OUT) -> None:
    """Append one run's row (locked: two processes may share the file)."""
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row) + "\n")
    print({k: v for k, v in row.items() if k != "losses"}, flush=True)


def settings() -> dict:
    """What the chapter needs to replay the runs: stored in the meta row
    (tests/test_pretraining.py checks it against this script)."""
    names = (
        "SEEDS PRE_STEPS PRE_BATCH PRE_LR REPLAY TEMPERATURES N_SAMPLES "
        "PREFIX_LETTERS LABELS TUNE_STEPS LONG_STEPS N_TEST ARMS ED_STEPS "
        "ED_COPIES STARTS"
    ).split()
    out = json.loads(json.dumps({n: globals()[n] for n in names}))
    return {**out, "LM": vars(LM), "TUNE": TUNE.as_dict()}


def replayed(losses: list) -> dict:
    """A run's first ``REPLAY`` losses (the chapter re-runs them) and the
    mean of its last 50."""
    return {
        "losses": [r5(x) for x in losses[:REPLAY]],
        "last_loss": r5(sum(losses[-50:]) / 50),
    }


def ed_splits(d: dict, seed: int, whole: bool) -> dict:
    """The encoder-decoder's pairs: ``ED_COPIES`` span corruptions of each
    training word, one of each validation word; BART's target (``whole``)
    or T5's (the spans)."""
    return {
        "train": pt.span_pairs(d["train"], seed, ED_COPIES, whole=whole),
        "valid": pt.span_pairs(d["valid"], 123, whole=whole),
    }


def ed_config(seed: int, factor: float | None = None, pre: bool = False):
    """The encoder-decoder's recipe: the fine-tuning one for ``ED_STEPS``,
    scored on 500 validation sources (``factor``: its rate's, if given;
    ``pre``: on a Pre-Norm stack)."""
    cfg = dataclasses.replace(tune_config(ED_STEPS, seed), n_valid_exact=500)
    if factor is not None:
        cfg = dataclasses.replace(cfg, factor=factor)
    return dataclasses.replace(cfg, norm_first=True) if pre else cfg


def train_ed(cfg, splits: dict, **kwargs):
    """``train_pronouncer`` on span pairs, the letters both sides."""
    vocab = pt.span_vocab()
    return train_pronouncer(
        cfg, splits, progress=False, vocabs=(vocab, vocab), **kwargs
    )


def pretrain_bart(seed: int, d: dict):
    """The denoising encoder-decoder (the pronouncer's shape), rounded."""
    start = time.perf_counter()
    model, history = train_ed(ed_config(seed), ed_splits(d, seed, True))
    pt.round_fp16(model)
    row = {
        "run": f"pre_bart_s{seed}",
        "kind": "bart",
        "seed": seed,
        "steps": ED_STEPS,
        "loss": r5(history["valid_loss"][-1]),
        "words_exact": r5(history["valid_exact"][-1]),
        **replayed(history["train_loss"]),
        "seconds": round(time.perf_counter() - start, 1),
    }
    return model, row


# T5's own target, the spans alone, is a probe beside the sweep
# (``--probe t5``). At the recipe's rate (factor 1, a peak of 0.0125) the
# decoder learns the spans' letter frequencies within the warm-up, and the
# Post-Norm encoder then writes one vector for every letter of every word
# (its FFNs add a large constant before the last LayerNorm): the decoder
# has nothing to read, and never learns to. At a quarter of the rate the
# encoder survives and the decoder reads the source. Each probe row says
# how much its decoder reads the source, early and at the end. ``--pre``:
# the same on a Pre-Norm stack (chapter 11's), and ``--probe bart`` BART's
# target at the same settings, to compare the targets on one stack.
PROBE_FACTOR = 1.0  # the recipe's: the stored probe_t5_s0
PROBE_EARLY = 150  # a step of the warm-up's end, where the collapse shows


def probe_name(seed: int, factor: float, kind="t5", pre=False) -> str:
    tag = ("_pre" if pre else "") + (
        "" if factor == PROBE_FACTOR else f"_f{factor:g}"
    )
    return f"probe_{kind}{tag}_s{seed}"


def source_free_loss(train_pairs, valid_pairs, vocab, smoothing: float):
    """The least validation loss (label-smoothed) of a decoder that never
    reads the source: each target token predicted by how often it follows
    the same prefix in ``train_pairs``, smoothed as the loss smooths; an
    unseen prefix: uniform."""
    check_probability(smoothing, "smoothing")
    counts: dict[tuple, collections.Counter] = collections.defaultdict(
        collections.Counter
    )
    for _, target in train_pairs:
        ids = vocab.encode(target, bos=True)
        for i in range(1, len(ids)):
            counts[tuple(ids[:i])][ids[i]] += 1
    size, total, n = len(vocab), 0.0, 0
    for _, target in valid_pairs:
        ids = vocab.encode(target, bos=True)
        for i in range(1, len(ids)):
            seen = counts.get(tuple(ids[:i]))
            if seen:
                k = sum(seen.values())
                p = np.array([seen[j] / k for j in range(size)])
                p = (1 - smoothing) * p + smoothing / size
            else:
                p = np.full(size, 1 / size)
            spread = -np.log(p).mean() if smoothing else 0.0
            total += (1 - smoothing) * -np.log(p[ids[i]]) + smoothing * spread
            n += 1
    return total / n


def swapped_sources(pairs, seed: int) -> list:
    """Each target with another pair's source (a seeded cycle: no pair
    keeps its own), to measure what a decoder takes from the source."""
    pairs = list(pairs)
    if len(pairs) < 2:
        raise ValueError(f"pairs must hold >= 2 pairs, got {len(pairs)}")
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    source = {a: pairs[b][0] for a, b in zip(order, order[1:] + order[:1])}
    return [(source[i], t) for i, (_, t) in enumerate(pairs)]


def memory_spread(model, src: torch.Tensor) -> float:
    """The encoder outputs' mean distance from their mean, over its length:
    0 when the encoder writes one vector whatever it reads."""
    with evaluating(model):
        memory, _ = model.encode(src)
    m = memory[src != model.pad_id]
    centre = m.mean(0)
    return ((m - centre).norm(dim=1).mean() / centre.norm()).item()


def reads_source(model, valid, vocab, smoothing: float) -> dict:
    """What a seq2seq model's decoder takes from the source: its validation
    ``loss``, the same with every source swapped for another word's, and
    the encoder's ``memory_spread`` over the first 500 sources."""

    def loss(pairs):
        batches = make_batches(pairs, 500, vocab, vocab, seed=None)
        return evaluate_loss(model, batches, smoothing, vocab.pad_id)

    src = make_batches(valid[:500], 500, vocab, vocab, seed=None)[0][0]
    return {
        "loss": r5(loss(valid)),
        "swapped": r5(loss(swapped_sources(valid, 5))),
        "memory_spread": r5(memory_spread(model, src)),
    }


def probe(seed: int, d: dict, factor=PROBE_FACTOR, kind="t5", pre=False):
    """The encoder-decoder pre-trained on T5's target (``kind``: or BART's)
    as ``pretrain_bart`` trains BART's (``factor``: the rate's; ``pre``: on
    a Pre-Norm stack), rounded -> ``(model, row)``: what its decoder
    reads, at the end and after ``PROBE_EARLY`` steps."""
    start = time.perf_counter()
    vocab, splits = pt.span_vocab(), ed_splits(d, seed, kind == "bart")
    cfg = ed_config(seed, factor, pre)
    model, history = train_ed(cfg, splits)
    pt.round_fp16(model)
    early, _ = train_ed(cfg, splits, stop_after=PROBE_EARLY)
    valid, smoothing = splits["valid"], cfg.label_smoothing
    free = source_free_loss(splits["train"], valid, vocab, smoothing)
    target = "T5 targets (spans only)" if kind == "t5" else "BART targets"
    return model, {
        "run": probe_name(seed, factor, kind, pre),
        "kind": kind,
        "seed": seed,
        "steps": ED_STEPS,
        "factor": factor,
        **({"norm_first": True} if pre else {}),
        "loss": r5(history["valid_loss"][-1]),
        ("spans_exact" if kind == "t5" else "words_exact"): r5(
            history["valid_exact"][-1]
        ),
        "loss_without_source": r5(free),
        "source": reads_source(model, valid, vocab, smoothing),
        "early": {
            "step": PROBE_EARLY,
            **reads_source(early, valid, vocab, smoothing),
        },
        **replayed(history["train_loss"]),
        "seconds": round(time.perf_counter() - start, 1),
        "what": f"one run: {target}"
        + ("" if factor == PROBE_FACTOR else f", rate factor {factor:g}")
        + (", Pre-Norm" if pre else "")
        + ", not used by the sweep",
    }


def run_probe(seeds, factor, tune_too=False, kind="t5", pre=False) -> None:
    """``probe`` on each seed, stored if new or if the stored row (whose
    first losses it must replay) lacks a score; ``tune_too``: then the
    pronouncer fine-tuned from it whole, as the ``"bart"`` arm is."""
    if tune_too and (kind, pre) != ("t5", False):  # the pronouncer's shape
        raise ValueError("--tune needs the T5 probe on a Post-Norm stack")
    d = data()
    for seed in seeds:
        done = stored_rows().get(probe_name(seed, factor, kind, pre))
        model, row = probe(seed, d, factor, kind, pre)
        if done is not None and row["losses"] != done["losses"]:
            raise RuntimeError(f"{row['run']} did not replay its losses")
        if done is None or set(row) - set(done):
            store(row)  # a later row of the same run supersedes
        else:
            print(row, flush=True)
        if not tune_too:
            continue
        tag = probe_name(seed, factor)[len("probe_") : -len(f"_s{seed}")]
        for n in LABELS:
            run = f"probe_tune_{n}_{tag}_{TUNE_STEPS}_s{seed}"
            if run not in stored_rows():
                row = tune({"t5": model}, n, "t5", TUNE_STEPS, seed, d,
                           start=("t5", 1.0))  # fmt: skip
                store({**row, "run": run, "factor": factor})


def word_log2probs(counts, words) -> np.ndarray:
    """``log2 P(word)`` under a causal ``ngram.LetterCounts``, start to EOS."""
    rows = [[obj.BOS] * 4 + obj.encode([w])[0, : len(w) + 1].tolist()
            for w in words]  # fmt: skip
    logp = counts.counts.log2probs(np.concatenate(rows))
    ends = np.cumsum([len(r) for r in rows])
    total = np.concatenate([[0.0], np.cumsum(logp)])
    return total[ends] - total[ends - [len(r) - 4 for r in rows]]


def restore(counts, sources) -> list[str]:
    """Counting on the denoising objective: for each source with one
    sentinel, the likeliest fill of 1 or 2 letters under the causal
    ``counts``, or of 3 after the 20 best of 2."""
    if counts.kind != "clm":
        raise ValueError(
            f"restore needs a causal count model, got {counts.kind!r}"
        )
    abc = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    short = abc + [a + b for a in abc for b in abc]
    out = []
    for source in sources:
        at = [i for i, t in enumerate(source) if t in obj.SENTINELS]
        if len(at) != 1:
            raise ValueError(f"sources need one sentinel each: {source}")
        left, right = "".join(source[: at[0]]), "".join(source[at[0] + 1 :])
        score = word_log2probs(counts, [left + f + right for f in short])
        best = np.argsort(-score[26:], kind="stable")[:20]
        longer = [short[26 + i] + c for i in best for c in abc]
        score = np.concatenate(
            [score, word_log2probs(counts, [left + f + right for f in longer])]
        )
        out.append(left + (short + longer)[int(np.argmax(score))] + right)
    return out


def denoising_targets(d: dict, n: int) -> dict[tuple, set[str]]:
    """The first ``n`` validation sources of the denoising objective, each
    with its words (as ``train_pronouncer`` scores exact matches)."""
    targets = {}
    for source, word in pt.span_pairs(d["valid"], 123, whole=True):
        if tuple(source) in targets or len(targets) < n:
            targets.setdefault(tuple(source), set()).add("".join(word))
    return targets


def restore_counts(d: dict) -> dict:
    """The count models' exact matches on the denoising objective, on the
    500 validation sources the encoder-decoder is scored on."""
    targets = denoising_targets(d, 500)
    exact, first = {}, {}
    for n in range(1, 6):
        counts = ngram.LetterCounts("clm", d["train"], n)
        got = restore(counts, [list(s) for s in targets])
        hits = [g in t for g, t in zip(got, targets.values())]
        exact[n] = r5(sum(hits) / len(hits))
        first[n] = r5(sum(hits[:100]) / 100)
    return {"run": "restore_counts", "n": len(targets), "exact": exact,
            "exact_first_100": first}  # fmt: skip


def pretrain(kind: str, seed: int, d: dict):
    """One objective pre-trained, rounded to fp16 and scored -> ``(model,
    row)``."""
    if kind == "bart":
        return pretrain_bart(seed, d)
    start = time.perf_counter()
    model, losses = pt.train_lm(
        kind, d["train"], PRE_STEPS[kind], PRE_BATCH, seed, PRE_LR, LM
    )
    pt.round_fp16(model)
    stats = pt.evaluate_lm(kind, model, d["valid"])
    row = {
        "run": f"pre_{kind}_s{seed}",
        "kind": kind,
        "seed": seed,
        "steps": PRE_STEPS[kind],
        "loss": r5(stats["loss"]),
        "accuracy": r5(stats["accuracy"]),
        "n": stats["n"],
        **replayed(losses),
    }
    if kind in ("clm", "plm"):
        long = [w for w in d["valid"] if len(w) > PREFIX_LETTERS]
        done = pt.complete(kind, model, [w[:PREFIX_LETTERS] for w in long])
        after = pt.evaluate_lm(
            kind, model, long, prefix_letters=PREFIX_LETTERS
        )
        row["completion"] = {
            "n": len(long),
            "exact": r5(sum(a == b for a, b in zip(done, long)) / len(long)),
            "real": r5(sum(w in d["heldout"] for w in done) / len(long)),
            "letter_accuracy": r5(after["accuracy"]),
        }
    if kind == "clm":
        known = set(d["train"])
        row["samples"] = []
        for t in TEMPERATURES:
            words = pt.sample_words(model, N_SAMPLES, t, seed=seed)
            new = [w for w in words if w and w not in known]
            real = sum(w in d["heldout"] for w in new)
            row["samples"].append({
                "temperature": t,
                "new": r5(len(new) / N_SAMPLES),
                "real_unseen": r5(real / N_SAMPLES),
                "distinct": r5(len(set(words)) / N_SAMPLES),
                "examples": words[:12],
            })  # fmt: skip
    row["seconds"] = round(time.perf_counter() - start, 1)
    return model, row


# Issue 59's learning curves: how far does more training take a letter model?
CURVE_EPOCHS, CURVE_POINTS, CURVE_ORDERS = 15, 30, (3, 4, 5, 7)
# The sizes: the chapter's stack as the sweep trains it, and the next one
# the issue names (Pre-Norm, chapter 11's AdamW recipe and peak rate)
CURVE_SIZES = {
    "d64": (LM, "onecycle", PRE_LR),
    "d128": (pt.LMConfig(128, 4, 4, 512, 0.1, norm_first=True), "adamw", 2e-3),
}


def valid_bits(kind: str, model, d: dict) -> float:
    """``model``'s validation bits per letter on ``kind``'s positions (the
    masked kind: on the letters its input hides behind [MASK])."""
    out = pt.evaluate_lm(kind, model, d["valid"])
    loss = out["loss_by_input"]["mask"] if kind == "mlm" else out["loss"]
    return r5(loss / math.log(2))


def curve_counts(d: dict) -> dict:
    """The count models' validation bits per letter, by objective and order
    (the masked kind's widest is 5: two letters each side)."""
    bits = {
        kind: {
            n: valid_bits(kind, ngram.LetterCounts(kind, d["train"], n), d)
            for n in CURVE_ORDERS
            if n <= 5 or kind != "mlm"
        }
        for kind in pt.OBJECTIVES
    }
    return {"run": "curve_counts", "bits": bits}


def curve_name(kind: str, seed: int, size: str = "d64") -> str:
    tag = "" if size == "d64" else f"_{size}"
    return f"curve_{kind}{tag}_s{seed}"


def curve(kind: str, seed: int, d: dict, size: str = "d64") -> dict:
    """``kind`` at ``size`` trained for ``CURVE_EPOCHS`` passes; at
    ``CURVE_POINTS`` evenly spaced steps, its validation bits per letter
    (fp32 weights) and the mean training loss since the last point."""
    cfg, recipe, lr = CURVE_SIZES[size]
    steps = CURVE_EPOCHS * len(d["train"]) // PRE_BATCH
    marks = {steps * (i + 1) // CURVE_POINTS for i in range(CURVE_POINTS)}
    points, since = [], []

    def hook(model, step, loss):
        since.append(loss)
        if step in marks:
            with evaluating(model):
                bits = valid_bits(kind, model, d)
            points.append({
                "step": step,
                "epochs": r5(step * PRE_BATCH / len(d["train"])),
                "valid_bits": bits,
                "train_bits": r5(float(np.mean(since)) / math.log(2)),
            })  # fmt: skip
            since.clear()

    start = time.perf_counter()
    model, _ = pt.train_lm(kind, d["train"], steps, PRE_BATCH, seed, lr, cfg,
                           hooks=[hook], recipe=recipe)  # fmt: skip
    seconds = round(time.perf_counter() - start, 1)
    CURVE_MODELS.mkdir(parents=True, exist_ok=True)  # kept for later use
    state = {n: v.half() for n, v in model.state_dict().items()}
    name = curve_name(kind, seed, size)
    torch.save(
        {"config": vars(cfg), "model": state}, CURVE_MODELS / f"{name}.pt"
    )
    if (size, seed) == ("d128", 0):  # the fine-tuning starts, stored
        kept = torch.load(STARTS128) if STARTS128.is_file() else {}
        kept.setdefault("models", {})[kind] = state
        torch.save({**kept, "config": vars(cfg)}, STARTS128)
    return {
        "run": name,
        "kind": kind,
        "size": size,
        "seed": seed,
        "steps": steps,
        "points": points,
        "seconds": seconds,
    }


def run_curves(kind: str, seeds, size: str = "d64") -> None:
    d, done = data(), stored_rows(CURVES)
    if "meta" not in done:
        store({"run": "meta", "numeric_mode": numeric_mode.stamp()}, CURVES)
    if "curve_counts" not in done:
        store(curve_counts(d), CURVES)
    for seed in seeds:
        if curve_name(kind, seed, size) not in done:
            store(curve(kind, seed, d, size), CURVES)


def tune(models, labels: int, init: str, steps: int, seed: int, d: dict,
         start: tuple[str, float] | None = None,
         cfg=None) -> dict:  # fmt: skip
    """One fine-tuning run of ``init`` (``start``: its ``(kind, init_lr)``
    if not in ``STARTS``; ``cfg``: the recipe if not ``tune_config``'s),
    scored greedily on the test words."""
    began = time.perf_counter()
    kind, init_lr = start or STARTS.get(init, (None, 1.0))
    if kind is None:
        init_state = None
    elif kind in ("bart", "t5"):  # the whole encoder-decoder
        init_state = ft.seq2seq_state(models[kind])
    else:
        init_state = ft.encoder_state(models[kind], kind)
    entries = label_order(d["split"]["train"], seed)[:labels]
    splits, vocabs = pr.pronouncer_data(
        {"train": entries, "valid": d["split"]["valid"]}, stress=False
    )
    model, history = train_pronouncer(
        cfg or tune_config(steps, seed), splits, progress=False, vocabs=vocabs,
        init=init_state, init_lr=init_lr,
    )  # fmt: skip
    test = greedy_scores(model, d["split"]["test"][:N_TEST])
    row = {
        "run": f"tune_{labels}_{init}_{steps}_s{seed}",
        "labels": labels,
        "init": init,
        "steps": steps,
        "seed": seed,
        **{k: r5(v) for k, v in test.items()},
        "valid_exact": r5(history["valid_exact"][-1]),
        "losses": replayed(history["train_loss"])["losses"],
        "seconds": round(time.perf_counter() - began, 1),
    }
    if len(history["valid_step"]) > 1:  # a pilot's (step, loss, exact)
        names = ("valid_step", "valid_loss", "valid_exact")
        row["valid_curve"] = [
            [k, r5(x), r5(y)] for k, x, y in zip(*map(history.get, names))
        ]
    return row


# Item 4 at the next size: the d128 curves' last weights (seed 0) start a
# pronouncer of their shape (4 Pre-Norm layers of width 128 each side),
# trained as the public recipes train (issue 58): the rate up over 100
# steps then linearly to 0, clipping at 1, a peak of 5e-4 (their 1.5e-3
# for 512 words scaled by the square root to these 64). The pilot: from
# scratch and from the masked stack on 2,000 labels, validation every 300
# steps, to see where it stops improving (then the table's budget).
TUNE128 = dataclasses.replace(
    TUNE, d_model=128, d_ff=512, num_layers=4, norm_first=True,
    peak_lr=5e-4, clip=1.0,
)  # fmt: skip
TUNE128_ROWS = ROOT / "book" / "data" / "ch10_tune128.jsonl"
PILOT128 = {"labels": 2000, "steps": 3600, "every": 300}
PILOT_STARTS = ("pretrained", "scratch")
# The table at that size: the d64 table's two budgets, 600 steps and 1,800
# (where the pilot's validation loss stopped falling), on five seeds.
TABLE128_STEPS = (600, 1800)


def run_d128(seeds, starts=PILOT_STARTS, table: bool = False) -> None:
    """The d128 pilot's runs (``table``: the table's) not stored yet, each
    scored on the validation words every 300 steps (where it stops)."""
    d, (n, steps, every) = data(), PILOT128.values()
    recipe = dataclasses.replace(TUNE128, steps=steps, eval_every=every)
    if "meta" not in stored_rows(TUNE128_ROWS):
        stamp = {"run": "meta", "numeric_mode": numeric_mode.stamp()}
        store({**stamp, **PILOT128, "recipe": recipe.as_dict()}, TUNE128_ROWS)
    tag, plan = ("tune128", TABLE128_STEPS) if table else ("pilot128", [steps])
    for seed, steps, init in itertools.product(seeds, plan, starts):
        run = f"{tag}_{n}_{init}_{steps}_s{seed}"
        if run in stored_rows(TUNE128_ROWS):
            continue
        kind = STARTS.get(init, (None,))[0]
        models = {kind: stored_body(kind, STARTS128)} if kind else {}
        cfg = dataclasses.replace(recipe, steps=steps, seed=seed)
        row = tune(models, n, init, steps, seed, d, cfg=cfg)
        store({**row, "run": run, "size": "d128"}, TUNE128_ROWS)


def cost(d: dict) -> dict:
    """The seconds of seed 0's masked and denoising pre-training and of
    scratch fine-tuning at both step counts, back to back in one process."""
    out = {"run": "cost_s0", "what": "seconds, one process, back to back"}
    for kind in ("mlm", "bart"):
        out[f"pre_{kind}"] = pretrain(kind, 0, d)[1]["seconds"]
    for steps in (TUNE_STEPS, LONG_STEPS):
        row = tune({}, LABELS[-1], "scratch", steps, 0, d)
        out[f"tune_{steps}"] = row["seconds"]
    return out


def stored_body(kind: str, path=MODELS) -> pt.TinyLM:
    """Seed 0's ``kind`` model as stored in ``path`` (fp16; ``MODELS`` as
    ``pretrain`` rounds them, or ``STARTS128``, the d128 curves' last)."""
    saved = torch.load(path, weights_only=True)
    model = pt.TinyLM(pt.LMConfig(**saved["config"])).eval()
    state = saved["models"][kind]
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model


def run_seed(seed: int, d: dict) -> None:
    """Every run of ``seed`` not stored yet; the pre-trained models they
    start from are read from ``MODELS`` (seed 0) or trained again."""
    done = stored_rows()
    todo = [
        (n, init, steps)
        for n, init, steps in TUNE_RUNS
        if f"tune_{n}_{init}_{steps}_s{seed}" not in done
    ]
    need = {STARTS[init][0] for _, init, _ in todo if init in STARTS}
    if f"by_input_s{seed}" not in done:
        need.add("mlm")
    models, fresh = {}, 0
    for kind in KINDS:
        run = f"pre_{kind}_s{seed}"
        if run in done and kind not in need:
            continue
        if run in done and seed == 0 and kind != "bart" and MODELS.is_file():
            models[kind] = stored_body(kind)
            continue
        models[kind], row = pretrain(kind, seed, d)
        fresh += 1
        if run not in done:
            store(row)
        elif row["losses"] != done[run]["losses"]:  # a re-run must replay
            raise RuntimeError(f"{run} did not replay its stored losses")
    if seed == 0 and fresh >= 3:
        state = {
            k: {n: v.half() for n, v in models[k].state_dict().items()}
            for k in pt.OBJECTIVES
        }
        torch.save({"config": vars(LM), "models": state}, MODELS)
    if "mlm" in models and f"by_input_s{seed}" not in done:
        stats = pt.evaluate_lm("mlm", models["mlm"], d["valid"])
        store({
            "run": f"by_input_s{seed}",
            "seed": seed,
            "by_input": {k: r5(v) for k, v in stats["by_input"].items()},
            "share": {k: r5(v) for k, v in stats["share"].items()},
        })  # fmt: skip
    for n, init, steps in todo:
        store(tune(models, n, init, steps, seed, d))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--cost", action="store_true", help="cost_s0 row")
    parser.add_argument("--probe", choices=("t5", "bart"), help="a target")
    parser.add_argument("--pre", action="store_true", help="Pre-Norm probe")
    parser.add_argument("--factor", type=float, default=PROBE_FACTOR,
                        help="the probe's rate factor")  # fmt: skip
    parser.add_argument("--tune", action="store_true",
                        help="with --probe: tune from it too")  # fmt: skip
    parser.add_argument("--curve", choices=pt.OBJECTIVES, help="item 1")
    parser.add_argument("--size", choices=CURVE_SIZES, default="d64")
    parser.add_argument("--pilot128", nargs="*", choices=PILOT_STARTS)
    parser.add_argument("--table128", nargs="*", choices=PILOT_STARTS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for table, starts in ((False, args.pilot128), (True, args.table128)):
        if starts is not None:  # item 4; no starts named: both
            return run_d128(args.seeds or [0], starts or PILOT_STARTS, table)
    if args.curve:
        return run_curves(args.curve, args.seeds or [0], args.size)
    if args.cost:
        return store(cost(data()))
    if args.probe:
        seeds = args.seeds or [0]
        return run_probe(seeds, args.factor, args.tune, args.probe, args.pre)
    seeds = list(SEEDS) if args.seeds is None else args.seeds
    if args.list:
        for s in seeds:
            print(*(f"pre_{k}_s{s}" for k in pt.OBJECTIVES))
            print(*(f"tune_{n}_{i}_{t}_s{s}" for n, i, t in TUNE_RUNS))
        return
    if "meta" not in stored_rows():  # the numerics every row is computed in
        meta = {"numeric_mode": numeric_mode.stamp(), "settings": settings()}
        store({"run": "meta", **meta})
    d = data()
    if "restore_counts" not in stored_rows():
        store(restore_counts(d))
    for seed in seeds:
        run_seed(seed, d)


if __name__ == "__main__":
    main()
