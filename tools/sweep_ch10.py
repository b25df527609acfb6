"""Chapter 10's seed sweep: pre-train each objective and fine-tune, over
seeds; stored in ``book/data/ch10_sweep.json`` for the chapter to load.

``python -m tools.sweep_ch10`` (about 12 minutes on a loaded 2-core machine)
restarts itself in the portable numeric mode, the stored outputs' mode.
``tests/test_pretraining.py`` re-runs one fine-tuning row against it.
"""

from __future__ import annotations

import json
import random

from tools import ROOT, numeric_mode

if __name__ == "__main__":  # before torch is imported
    numeric_mode.reexec_in("portable", "tools.sweep_ch10")

import torch  # noqa: E402

from utils import corpus  # noqa: E402
from utils import pretraining as pt  # noqa: E402

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
        "numeric_mode": numeric_mode.stamp(),
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
