"""Chapter 4's seed sweep: four position schemes on the previous-token task.

    python -m tools.runs.sweep_ch04          # about a minute on one core

Trains ``utils.position_probe.train_position_probe`` for every scheme in
``POSITION_KINDS`` and every seed in ``SEEDS`` (in the portable numeric mode,
the one the tests compare in; the script re-starts itself in it) and writes
``book/data/ch04_positions.json``. Chapter 4 plots the stored rows and asserts
its claims on all of them; ``tests/test_sweep_ch04.py`` re-trains one row and
compares it with the file.
"""

from __future__ import annotations

import json
import time

from tools import ROOT
from tools.numerics import numeric_mode

OUT = ROOT / "book" / "data" / "ch04_positions.json"
SEEDS = list(range(8))
SETTINGS = dict(length=16, vocab=16, steps=300, batch=64, lr=3e-3)


def rows() -> list[dict]:
    import torch

    from utils.position_probe import POSITION_KINDS, train_position_probe

    torch.set_num_threads(1)
    out = []
    for position in POSITION_KINDS:
        for seed in SEEDS:
            start = time.perf_counter()
            row = train_position_probe(position, seed, **SETTINGS)
            row = {
                k: round(v, 4) if isinstance(v, float) else v
                for k, v in row.items()
            }
            out.append(row)
            print(row, f"{time.perf_counter() - start:.1f} s", flush=True)
    return out


def main() -> None:
    data = {
        "task": "previous token",
        "settings": SETTINGS,
        "seeds": SEEDS,
        "numeric_mode": numeric_mode.stamp(),
        "rows": rows(),
    }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print("wrote", OUT.relative_to(ROOT))


if __name__ == "__main__":
    main()
