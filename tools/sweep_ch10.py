"""Chapter 10's seed sweep: pre-train each objective and fine-tune, over
seeds; stored in ``book/data/ch10_sweep.json`` for the chapter to load.

Run once, in the portable mode (about 12 minutes on a loaded 2-core machine):
``python -m tools.numeric_mode portable -- python -m tools.sweep_ch10``.
``tests/test_pretraining.py`` re-runs one fine-tuning row against it.
"""

from __future__ import annotations

import json
import random

import torch

from tools import ROOT
from utils import corpus
from utils import pretraining as pt

SEEDS = [0, 1, 2, 3, 4]
LABELS = [16, 64, 256]
STEPS = 300  # the chapter's pre-training, live
BODY_STEPS = 1500  # the masked LM fine-tuned below: five times longer
OUT = ROOT / "book" / "data" / "ch10_sweep.json"


def label_order(train: list[int], seed: int) -> list[int]:
    """The labelled examples of one seed: the train split reshuffled."""
    order = list(train)
    random.Random(1000 + seed).shuffle(order)
    return order


def main() -> None:
    torch.set_num_threads(1)
    splits = corpus.make_splits(0)
    rows, tune = [], []
    for seed in SEEDS:
        row = {"seed": seed}
        for kind in pt.OBJECTIVES:
            model, _ = pt.train_lm(kind, splits["train"], STEPS, seed=seed)
            stats = pt.evaluate_lm(kind, model, splits["test"])
            if kind == "plm":
                stats["exact_match"] = pt.exact_match(
                    kind, model, splits["test"]
                )
            row[kind] = {k: round(v, 4) for k, v in stats.items()}
        body, _ = pt.train_lm("mlm", splits["train"], BODY_STEPS, seed=seed)
        stats = pt.evaluate_lm("mlm", body, splits["test"])
        row["mlm_body"] = {k: round(v, 4) for k, v in stats.items()}
        rows.append(row)
        print(row, flush=True)
        train = label_order(splits["train"], seed)
        for labels in LABELS:
            for init in ("pretrained", "scratch"):
                for pooling in ("cls", "mean"):
                    acc = pt.fine_tune_row(
                        body if init == "pretrained" else None,
                        train,
                        splits["test"],
                        labels,
                        pooling,
                        seed,
                    )
                    tune.append(
                        {
                            "seed": seed,
                            "labels": labels,
                            "init": init,
                            "pooling": pooling,
                            "accuracy": round(acc, 4),
                        }
                    )
                    print(tune[-1], flush=True)
    config = {
        "seeds": SEEDS,
        "labels": LABELS,
        "steps": STEPS,
        "body_steps": BODY_STEPS,
        "torch": torch.__version__.split("+")[0],
    }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(
        json.dumps(
            {"config": config, "pretrain": rows, "finetune": tune}, indent=1
        )
        + "\n"
    )
    print("wrote", OUT)


if __name__ == "__main__":
    main()
