"""The seed sweeps behind chapter 8: every training claim, measured on five
seeds.

    python -m tools.sweep_ch08 [SEED ...]   (default: seeds 0 to 4; 1 min each)
    python -m tools.sweep_ch08 --ablations [NAME ...] [SEED ...]

Training the translator takes half of chapter 8's 60 s budget, so the chapter
trains one seed (``utils.runtime.course_seed()``) and loads the spread over
seeds from ``book/data/ch08_sweep.json``, which this script writes. For every
seed it trains the chapter's model (``TranslatorConfig()``) exactly as the
chapter does and records each number a claim rests on. (Chapter 9's claims
come from ``tools/sweep_ch09.py``.)
``--ablations`` trains the config with one ingredient changed
(``ABLATIONS``) on each seed and writes ``book/data/ch08_ablations.json``.
It runs in the portable numeric mode (it sets it itself), like the stored
outputs. ``tests/test_sweep_ch08.py`` re-trains seed 0 and one ablation and
checks them against their stored rows.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import random
import sys
import time

from tools import numeric_mode

if __name__ == "__main__":  # before torch is imported
    numeric_mode.reexec_in("portable", "tools.sweep_ch08")

import torch  # noqa: E402

from tools import ROOT  # noqa: E402
from utils import numerals, translation as tr  # noqa: E402
from utils.bleu import corpus_bleu  # noqa: E402
from utils.decoding import (  # noqa: E402
    greedy_decode,
)
from utils.runtime import threads  # noqa: E402
from utils.training import (  # noqa: E402
    evaluate_perplexity,
)
from utils.translator import (  # noqa: E402
    TranslatorConfig,
    train_translator,
)

OUT = ROOT / "book" / "data" / "ch08_sweep.json"
ABLATION_OUT = ROOT / "book" / "data" / "ch08_ablations.json"
SEEDS = (0, 1, 2, 3, 4)
MAX_LEN = 12
MINE = (2024, 10203, 90009, 45678)  # chapter 8's exercise 3, and its hint


def read_chinese(chars) -> int:
    """Chinese numerals -> int (the same independent reader as chapter 8's)."""
    digit = dict(zip("零一二三四五六七八九", range(10)))
    unit = {"十": 10, "百": 100, "千": 1000, "万": 10000}
    total, d = 0, None
    for c in chars:
        if c in digit:
            d = digit[c]
        elif c in unit:
            total += (1 if d is None else d) * unit[c]
            d = None
    return total + (d or 0)


def digit_word(n: int) -> dict:
    """Place of each digit -> index of the English word naming it (chapter
    8's)."""
    where, i = {}, 0

    def two_digits(value, high):
        nonlocal i
        if value < 20:
            where[high] = where[high - 1] = i
            i += 1
        else:
            where[high], where[high - 1] = i, i + 1
            i += 1 + (value % 10 > 0)

    if n >= 1000:
        two_digits(n // 1000, 4)
        i += 1
    if n // 100 % 10:
        where[2] = i
        i += 2
    if n % 100:
        i += n >= 100
        two_digits(n % 100, 1)
    return where


class Decoder:
    """The chapters' small helpers, bound to the vocabularies."""

    def __init__(self):
        self.vs, self.vt = tr.source_vocab(), tr.target_vocab()
        self.bos, self.eos, self.pad = (
            self.vt.bos_id,
            self.vt.eos_id,
            self.vt.pad_id,
        )

    def src(self, pairs):
        return tr.encode_batch(pairs, self.vs, self.vt)[0]

    def greedy(self, model, pairs):
        out = greedy_decode(
            model, self.src(pairs), MAX_LEN, self.bos, self.eos, self.pad
        )
        return [self.vt.decode(r) for r in out]


def exact(outputs, pairs) -> float:
    return sum(o == t for o, (_, t) in zip(outputs, pairs)) / len(pairs)


def diagonal_hits(words, chars, where) -> tuple[int, int]:
    """A monotonic baseline: the row emitting character t of T looks at
    source word floor((t + 0.5) * S / T) of S. Returns (hits, digits)."""
    unit_place = {"十": 1, "百": 2, "千": 3, "万": 4}
    hits = total = 0
    for t, c in enumerate(chars):
        if c in "一二三四五六七八九":
            nxt = chars[t + 1] if t + 1 < len(chars) else None
            diag = int((t + 0.5) * len(words) / len(chars))
            hits += diag == where[unit_place.get(nxt, 0)]
            total += 1
    return hits, total


def first_mistake(ref, hyp) -> int:
    padded = hyp + [None] * (len(ref) + 1 - len(hyp))
    return next(
        i for i, (a, b) in enumerate(zip(ref + [None], padded)) if a != b
    )


def shares(flags_by_key: dict) -> tuple[dict, dict]:
    """{key: [bool]} -> ({key: share true}, {key: count}), keys sorted."""
    keys = sorted(flags_by_key)
    return (
        {k: sum(flags_by_key[k]) / len(flags_by_key[k]) for k in keys},
        {k: len(flags_by_key[k]) for k in keys},
    )


def chapter8(seed: int, model, history, d: Decoder) -> dict:
    splits = tr.make_splits(seed)
    test = splits["test"]
    hyps = d.greedy(model, test)
    refs = [t for _, t in test]
    batches = tr.make_batches(test, 500, d.vs, d.vt, seed=None)
    row = {
        "valid_first": history["valid_loss"][0],
        "valid_last": history["valid_loss"][-1],
        "train_last50": sum(history["train_loss"][-50:]) / 50,
        "valid_step": history["valid_step"],
        "valid_loss": history["valid_loss"],
        "valid_exact": history["valid_exact"],
        "exact": exact(hyps, test),
        "bleu": corpus_bleu(hyps, [[r] for r in refs]),
        "ppl": evaluate_perplexity(model, batches),
        "errors": sum(h != r for h, r in zip(hyps, refs)),
    }
    # exact match by number size
    by_size = collections.defaultdict(list)
    for (s, r), h in zip(test, hyps):
        by_size[tr.size_class(s)].append(h == r)
    row["by_size"], row["n_by_size"] = shares(by_size)
    # by source length, test + 2,000 long numbers; and by target length
    long_sample = random.Random(0).sample(splits["long"], 2000)
    long_hyps = d.greedy(model, long_sample)
    by_length = collections.defaultdict(list)
    for (s, r), h in zip(test + long_sample, hyps + long_hyps):
        by_length[len(s)].append(h == r)
    row["by_length"], row["n_by_length"] = shares(by_length)
    for name, pairs, outs in (
        ("test", test, hyps),
        ("long", long_sample, long_hyps),
    ):
        by_chars = collections.defaultdict(list)
        for (_, r), h in zip(pairs, outs):
            by_chars[len(r)].append(h == r)
        row[f"{name}_by_chars"], row[f"{name}_n_by_chars"] = shares(by_chars)
    wrong = [(r, h) for (_, r), h in zip(long_sample, long_hyps) if h != r]
    row["n_long_wrong"] = len(wrong)
    row["at_end"] = sum(
        first_mistake(r, h) >= len(r) - 2 for r, h in wrong
    ) / max(len(wrong), 1)
    row["at_end_chance"] = sum(3 / (len(r) + 1) for r, _ in wrong) / max(
        len(wrong), 1
    )
    # cross-attention alignment of digits, on correctly translated numbers
    correct = [p for p, h in zip(test, hyps) if h == p[1]][:500]
    correct = correct or test[:1]  # an untrained model (a smoke test)
    src, tgt = tr.encode_batch(correct, d.vs, d.vt)
    with torch.no_grad():
        model(src, tgt[:, :-1])
    weights = model.decoder.layers[-1].cross_weights.mean(1)
    unit_place = {"十": 1, "百": 2, "千": 3, "万": 4}
    hits = total = chance = diag = 0
    for b, (words, chars) in enumerate(correct):
        where = digit_word(read_chinese(chars))
        diag += diagonal_hits(words, chars, where)[0]
        for t, c in enumerate(chars):
            if c in "一二三四五六七八九":
                nxt = chars[t + 1] if t + 1 < len(chars) else None
                place = unit_place.get(nxt, 0)
                hits += weights[b, t].argmax().item() == where[place]
                total += 1
                chance += 1 / (len(words) + 1)
    total = max(total, 1)
    row["align_rate"], row["align_chance"] = hits / total, chance / total
    row["align_diagonal"] = diag / total
    # the reordering of "X-teen thousand ...": 一 and the digit after 万
    # both look at the teen word (index 0)
    teens = [
        (i, p)
        for i, p in enumerate(correct)
        if p[0][0] in numerals._TEENS[1:] and p[0][1] == "thousand"
    ]
    row["teen_reorder"] = sum(
        weights[i, 0].argmax().item() == 0 == weights[i, 2].argmax().item()
        for i, _ in teens
    ) / max(len(teens), 1)
    row["n_teen"] = len(teens)
    mine = [
        (numerals.english_words(n), numerals.chinese_numerals(n)) for n in MINE
    ]
    row["mine_right"] = {
        n: h == p[1] for n, p, h in zip(MINE, mine, d.greedy(model, mine))
    }
    return row


def run_seed(seed: int) -> dict:
    """Every number chapter 8's training claims rest on, for one seed."""
    d = Decoder()
    with threads(1):
        start = time.perf_counter()
        cfg = TranslatorConfig(seed=seed)
        model, history = train_translator(cfg, progress=False)
        row = {"seed": seed, **chapter8(seed, model, history, d)}
        row["seconds"] = round(time.perf_counter() - start, 1)
    return row


# The ablations: the chapter's config with one ingredient changed.
ABLATIONS = {
    "no_warmup": dict(warmup=False),  # same peak rate, from step 1
    "no_smoothing": dict(label_smoothing=0.0),
    "unbalanced": dict(min_size_share=0.0),  # sizes as they come
    "two_layers": dict(num_layers=2),  # twice the cost per step
    "high_rate": dict(factor=1.0),  # twice the peak rate
    "high_rate_no_warmup": dict(factor=1.0, warmup=False),
}


def run_ablation(seed: int, name: str) -> dict:
    """The chapter's config with ``ABLATIONS[name]``, trained on ``seed``:
    exact match overall and by size, test perplexity, the curves."""
    d = Decoder()
    cfg = dataclasses.replace(TranslatorConfig(seed=seed), **ABLATIONS[name])
    with threads(1):
        start = time.perf_counter()
        model, history = train_translator(cfg, progress=False)
        test = tr.make_splits(seed)["test"]
        hyps = d.greedy(model, test)
        by_size = collections.defaultdict(list)
        for (s, r), h in zip(test, hyps):
            by_size[tr.size_class(s)].append(h == r)
        batches = tr.make_batches(test, 500, d.vs, d.vt, seed=None)
        row = {
            "ablation": name,
            "seed": seed,
            "exact": exact(hyps, test),
            "by_size": shares(by_size)[0],
            "ppl": evaluate_perplexity(model, batches),
            "valid_step": history["valid_step"],
            "valid_exact": history["valid_exact"],
            "train_loss_first50": sum(history["train_loss"][:50]) / 50,
            "seconds": round(time.perf_counter() - start, 1),
        }
    return row


def _round(x):
    if isinstance(x, float):
        return round(x, 6)
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    return x


def ablations(seeds, names) -> None:
    rows = []
    if ABLATION_OUT.is_file():  # keep the runs not redone
        rows = [
            r
            for r in json.loads(ABLATION_OUT.read_text())["rows"]
            if (r["ablation"], r["seed"])
            not in {(n, s) for n in names for s in seeds}
        ]
    for name in names:
        for seed in seeds:
            row = _round(run_ablation(seed, name))
            print(json.dumps(row), flush=True)
            rows.append(row)
    rows.sort(key=lambda r: (r["ablation"], r["seed"]))
    meta = {
        "what": "tools/sweep_ch08.py --ablations: chapter 8's config with "
        "one ingredient changed, per seed",
        "numeric_mode": numeric_mode.stamp(),
        "config": dataclasses.asdict(TranslatorConfig()),
        "ablations": ABLATIONS,
    }
    ABLATION_OUT.write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n"
    )
    print(f"wrote {ABLATION_OUT.relative_to(ROOT)}")


def main(seeds) -> None:
    rows = []
    if OUT.is_file():  # keep the seeds not rerun
        rows = [
            r
            for r in json.loads(OUT.read_text())["rows"]
            if r["seed"] not in seeds
        ]
    for seed in seeds:
        row = _round(run_seed(seed))
        print(json.dumps(row), flush=True)
        rows.append(row)
    rows.sort(key=lambda r: r["seed"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "what": "tools/sweep_ch08.py: chapter 8's training claims, per seed",
        "numeric_mode": numeric_mode.stamp(),
        "settings": dataclasses.asdict(TranslatorConfig()),
    }
    OUT.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--ablations":
        names = [a for a in args[1:] if a in ABLATIONS] or list(ABLATIONS)
        chosen = [int(a) for a in args[1:] if a.isdigit()]
        ablations(chosen or list(SEEDS), names)
    else:
        main([int(a) for a in args] or list(SEEDS))
