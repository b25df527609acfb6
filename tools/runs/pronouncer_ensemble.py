"""Chapter 8's ensemble: the first recipe trained on several seeds, and
the pronouncer that averages their probabilities, scored on the test words.

    python -m tools.runs.train_pronouncer --seed 1   # ... one run per member
    python -m tools.runs.pronouncer_ensemble --seeds 0 1 2 3 4 5 6

Seed s is ``book/data/pronouncer_seeds/s{s}/``. Every member is scored
alone, greedy, on the 12,000 test words and the 2,000 validation words; so
are ensembles of 2, 4, ... members (disjoint groups of seeds in order, so
each size has its spread) and the whole ensemble, whose outcome on each test
word (right or not) is stored as one character per word: the chapter,
decoding the first ``BLOCK`` test words the same way, must find the same
outcomes exactly. The JSON also keeps the split's fingerprint and each
member's SHA-256, which ``tests/test_pronouncer_ensemble.py`` compares with
today's files.
"""

from __future__ import annotations

import argparse
import json
import time

from proof.runtime import split_fingerprint
from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import error_rates, write_json
from tools.runs.decode_pronouncer import model_hash, references
from utils import pronunciation as pr
from utils.ensemble import Ensemble
from utils.pronouncer import SEEDS_DIR, load_pronouncer
from utils.training import threads

OUT = ROOT / "book" / "data" / "pronouncer_ensemble.json"
STRESS, BLOCK = False, 500  # as chapter 9's decoding study


def member_path(seed: int):
    """The first recipe's run of ``seed`` (``train_pronouncer --seed``)."""
    return SEEDS_DIR / f"s{seed}" / "pronouncer.pt"


def members(seeds) -> list:
    """The stored runs of ``seeds``, loaded (eval mode)."""
    return [load_pronouncer(member_path(s))[0] for s in seeds]


def pronounce(model, entries) -> list[tuple]:
    """Greedy outputs, decoded in blocks of ``BLOCK`` words in the stored
    order (a batch's padding can move the last bits of a score)."""
    words = [w for w, _ in entries]
    return [
        h
        for s in range(0, len(words), BLOCK)
        for h in pr.pronounce(model, words[s : s + BLOCK], stress=STRESS)
    ]


def score(model, entries) -> dict:
    """Greedy WER and PER of ``model`` (multi-reference), and which words
    it gets right."""
    hyps, refs = pronounce(model, entries), references(entries)
    right = "".join("1" if h in r else "0" for h, r in zip(hyps, refs))
    return {**error_rates(hyps, refs), "right": right}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    args = parser.parse_args(argv)
    seeds = args.seeds
    split = pr.split_words()
    sizes = [1]  # 1, 2, 4, ... and all of them
    while sizes[-1] * 2 < len(seeds):
        sizes.append(sizes[-1] * 2)
    sizes = sorted({*sizes, len(seeds)})
    rows = []
    with threads(1):
        loaded = dict(zip(seeds, members(seeds)))
        for size in sizes:  # disjoint groups in order, the rest left out
            for i in range(0, len(seeds) - size + 1, size):
                group = seeds[i : i + size]
                model = Ensemble([loaded[s] for s in group])
                start = time.process_time()
                test = score(model, split["test"])
                seconds = time.process_time() - start
                valid = score(model, split["valid"])
                row = {
                    "seeds": group,
                    "test": {k: test[k] for k in ("wer", "per")},
                    "valid": {k: valid[k] for k in ("wer", "per")},
                    "test_cpu_seconds": round(seconds, 1),
                }
                if size == len(seeds):
                    row["test_right"] = test["right"]
                rows.append(row)
                print(json.dumps({k: row[k] for k in list(row)[:4]}))
    data = {
        "what": "tools/runs/pronouncer_ensemble.py: the stored recipe on "
        "several seeds, alone and averaged (greedy, no stress)",
        "split": split_fingerprint(),
        "numeric_mode": numeric_mode.stamp(),
        "seeds": seeds,
        "member_sha256": {str(s): model_hash(member_path(s)) for s in seeds},
        "block": BLOCK,
        "rows": rows,
    }
    write_json(OUT, data)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
