"""The seed sweep behind chapters 8 and 9's pronouncer claims.

    python -m tools.runs.sweep_pronouncer [NAME ...]   (default: every run)
    python -m tools.runs.sweep_pronouncer --list

The stored pronouncer (``tools/runs/train_pronouncer.py``) is one run of an
hour; a claim needs seeds. Each run here is the recipe at d_model 64 for
2,000 steps (about 4 minutes of one core; ``RECIPE``) or one of its
``VARIANTS``, on seeds 0-4, scored greedily on the 2,000 validation words;
the recipe's runs are also measured on the 12,000 test words as chapter 9
needs (``decoding``). Rows go to ``book/data/pronouncer_sweep.json`` as
each run finishes (a stopped sweep goes on where it stopped; a run named
again is replaced).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time

from tools import ROOT
from tools.runs import error_rates, table_rows, write_table
from tools.runs.decode_pronouncer import references
from tools.runs.probe_pronouncer import BASE
from tools.runs.train_pronouncer import STRESS
from utils import pronunciation as pr
from utils.training import threads
from utils.pronouncer import train_pronouncer

OUT = ROOT / "book" / "data" / "pronouncer_sweep.json"
SEEDS = (0, 1, 2, 3, 4)
RECIPE = dataclasses.replace(
    BASE, d_model=64, d_ff=256, steps=2000, eval_every=250, n_valid_exact=300
)
VARIANTS = {
    "recipe": {},
    "no_warmup": {"warmup": False},
    "no_smoothing": {"label_smoothing": 0.0},
    "no_dropout": {"dropout": 0.0},
    # the rate falls linearly towards 0 over the last third of the run
    "cooldown": {"cooldown_steps": RECIPE.steps // 3},
}
RUNS = [f"{v}_s{s}" for v in VARIANTS for s in SEEDS]
BEAM, N_SAMPLES, TEMPERATURES = 4, 10, (0.5, 1.0, 1.5)


def scores(hyps, entries) -> dict:
    return error_rates(hyps, [p for _, p in entries], digits=5)


def decoding(model, test) -> dict:
    """Chapter 9's measures on the test words."""
    words = [w for w, _ in test]
    refs = references(test)
    greedy = pr.pronounce(model, words, stress=STRESS)
    nbest = pr.pronounce_beam(model, words, BEAM, num_return=2, stress=STRESS)
    beam = [b[0][0] for b in nbest]
    normed = pr.pronounce_beam(model, words, BEAM, alpha=1.0, stress=STRESS)
    norm = [b[0][0] for b in normed]
    wrong = [i for i, (h, r) in enumerate(zip(greedy, refs)) if h not in r]
    search = search_errors(model, words, greedy, refs, wrong)
    row = {
        "greedy": scores(greedy, test),
        "beam": scores(beam, test),
        "beam_alpha1": scores(norm, test),
        "differ": sum(g != b for g, b in zip(greedy, beam)),
        "greedy_wrong": len(wrong),
        "search_errors": len(search),
        "beam_fixes_search": sum(beam[i] in refs[i] for i in search),
        "beam_fixes_model": sum(
            beam[i] in refs[i] for i in set(wrong) - set(search)
        ),
        "beam_breaks": sum(
            g in r and b not in r for g, b, r in zip(greedy, beam, refs)
        ),
        "len_greedy": sum(map(len, greedy)) / len(greedy),
        "len_beam": sum(map(len, beam)) / len(beam),
        "len_alpha1": sum(map(len, norm)) / len(norm),
    }
    return {**row, **ambiguous_words(model, words, refs, nbest)}


def search_errors(model, words, greedy, refs, wrong) -> list[int]:
    """The ``wrong`` greedy outputs that are search errors: a right
    pronunciation scores higher than greedy's own output (the model prefers
    a right answer)."""
    lp_out = pr.log_prob(
        model, [words[i] for i in wrong], [greedy[i] for i in wrong], STRESS
    )
    lp_ref = {}
    for k in range(max(map(len, refs))):
        has = [i for i in wrong if len(refs[i]) > k]
        got = pr.log_prob(
            model, [words[i] for i in has], [refs[i][k] for i in has], STRESS
        )
        for i, v in zip(has, got):
            lp_ref[i] = max(lp_ref.get(i, -1e9), v)
    return [i for i, o in zip(wrong, lp_out) if lp_ref[i] > o]


def ambiguous_words(model, words, refs, nbest) -> dict:
    """On the words with two or more pronunciations (without stress): the
    beam's two best, and samples at each of ``TEMPERATURES``."""
    amb = [i for i, r in enumerate(refs) if len(r) >= 2]
    two = [[p for p, _ in nbest[i]] for i in amb]
    out = {
        "ambiguous": {
            "n": len(amb),
            "top1_right": sum(t[0] in refs[i] for t, i in zip(two, amb)),
            "top2_both": sum(
                len(set(t) & set(refs[i])) == 2 for t, i in zip(two, amb)
            ),
            "top2_any": sum(
                any(p in refs[i] for p in t) for t, i in zip(two, amb)
            ),
        },
        "sampling": [],
    }
    amb_words = [words[i] for i in amb]
    for t in TEMPERATURES:
        drawn = pr.sample_pronunciations(
            model, amb_words, N_SAMPLES, t, seed=0, stress=STRESS
        )
        right = [[p for p in d if p in refs[i]] for d, i in zip(drawn, amb)]
        out["sampling"].append(
            {
                "temperature": t,
                "right": sum(map(len, right)) / (N_SAMPLES * len(amb)),
                "distinct": sum(len(set(d)) for d in drawn) / len(amb),
                "both": sum(len(set(r)) >= 2 for r in right) / len(amb),
            }
        )
    return out


def run(name: str) -> dict:
    variant, seed = name.rsplit("_s", 1)
    cfg = dataclasses.replace(RECIPE, seed=int(seed), **VARIANTS[variant])
    split = pr.split_words()
    splits, vocabs = pr.pronouncer_data(split, stress=STRESS)
    with threads(1):
        start = time.perf_counter()
        model, h = train_pronouncer(cfg, splits, progress=False, vocabs=vocabs)
        seconds = time.perf_counter() - start
        words = [w for w, _ in split["valid"]]
        valid = scores(
            pr.pronounce(model, words, stress=STRESS), split["valid"]
        )
        row = {
            "name": name,
            "variant": variant,
            "seed": int(seed),
            "train_seconds": round(seconds, 1),
            "train_loss_first": [float(x) for x in h["train_loss"][:20]],
            "train_loss_last100": round(sum(h["train_loss"][-100:]) / 100, 4),
            "valid_step": h["valid_step"],
            "valid_exact": [round(x, 4) for x in h["valid_exact"]],
            "valid_loss": [round(x, 4) for x in h["valid_loss"]],
            "valid": valid,
        }
        if variant == "recipe":
            row["test"] = decoding(model, split["test"])
    return row


def main(names) -> None:
    rows = {r["name"]: r for r in table_rows(OUT, same_mode=True)}
    meta = {
        "what": "tools/runs/sweep_pronouncer.py: seeds of the "
        "pronouncer recipe and its ablations",
        "recipe": RECIPE.as_dict(),
        "variants": VARIANTS,
        "stress": STRESS,
        "beam": BEAM,
        "n_samples": N_SAMPLES,
    }
    for name in names or [n for n in RUNS if n not in rows]:
        if name not in RUNS:
            raise SystemExit(f"unknown run {name!r}; --list shows them")
        start = time.perf_counter()
        rows[name] = run(name)
        write_table(OUT, meta, [rows[n] for n in RUNS if n in rows])
        took = time.perf_counter() - start
        valid = json.dumps(rows[name]["valid"])
        print(f"{name}: {took:.0f} s {valid}", flush=True)


if __name__ == "__main__":
    if "--list" in sys.argv[1:]:
        print("\n".join(RUNS))
    else:
        main(sys.argv[1:])
