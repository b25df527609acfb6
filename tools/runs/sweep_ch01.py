"""Chapter 1's data-versus-prior experiment over seeds, stored for the chapter.

    python -m tools.runs.sweep_ch01
        every seed -> book/data/ch01_data_vs_prior.json
    python -m tools.runs.sweep_ch01 --seed 0 --motif 32 512 --ends 128
        one row, printed as JSON

One seed (two tasks, a CNN and a tiny Transformer, ten training-set sizes)
takes one to two minutes of CPU, too long for the chapter's 60 s budget: the
chapter runs seed 0 live and reads the spread over all seeds from the file
written here; ``tests/test_sweep_ch01.py`` re-runs part of seed 0 against its
stored row. A seed changes the training pool and the test set
(``data_seeds``), the initial weights and the order of the mini-batches.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import write_json
from utils import priors, toy_tasks

OUT = ROOT / "book" / "data" / "ch01_data_vs_prior.json"

SEEDS = list(range(5))
STEPS, BATCH, LR = 600, 256, 1e-2  # the same budget for every model and size
VOCAB, MOTIF, LENGTH = 4, (0, 1, 2), 8  # the local task
ENDS_LENGTH = 16  # the long-range task: first symbol == last symbol?
POOL, TEST = 8192, 1000
MOTIF_SIZES = [2**k for k in range(4, 14)]  # 16 .. 8192, doubling
ENDS_SIZES = [32, 128, 512, 2048, 8192]
WINDOW_SIZES = [32, 128]  # chapter 1, exercise 2
CNN = dict(vocab_size=VOCAB, embed_dim=16, channels=44, kernel_size=3)
TRANSFORMER = dict(vocab_size=VOCAB, d_model=16, num_heads=2, d_ff=32)
MODELS = {
    "CNN": functools.partial(priors.MotifCNN, **CNN),
    "Transformer": functools.partial(priors.TinyTransformer, **TRANSFORMER),
    "window": functools.partial(
        priors.TinyTransformer, **TRANSFORMER, window=1
    ),
    "counts": functools.partial(priors.CountClassifier, VOCAB),
}

CONFIG = dict(
    steps=STEPS,
    batch=BATCH,
    lr=LR,
    vocab=VOCAB,
    motif=list(MOTIF),
    length=LENGTH,
    ends_length=ENDS_LENGTH,
    pool=POOL,
    test=TEST,
    cnn=CNN,
    transformer=TRANSFORMER,
    window=1,
)


def data_seeds(seed: int) -> tuple[int, int]:
    """The seeds of the training pool and of the test set for run ``seed``."""
    return 10 * seed + 1, 10 * seed + 2


def _fit(name: str, data: tuple, seed: int, n: int | None = None) -> float:
    """The test accuracy of ``MODELS[name]`` trained on the first ``n``
    examples of the pool (all of it: ``None``)."""
    x, y, xt, yt = data
    acc = priors.train_and_evaluate(
        MODELS[name], x[:n], y[:n], xt, yt,
        steps=STEPS, lr=LR, batch_size=BATCH, seed=seed,
    )  # fmt: skip
    return round(acc, 4)


def _curves(data: tuple, seed: int, sizes) -> dict:
    return {
        name: [_fit(name, data, seed, n) for n in sizes]
        for name in ("CNN", "Transformer")
    }


def motif_row(seed: int, sizes=MOTIF_SIZES, window_sizes=WINDOW_SIZES) -> dict:
    """Accuracies on the local (motif) task for one seed."""

    def data(**kw) -> tuple:
        kw.update(length=LENGTH, vocab_size=VOCAB, motif=MOTIF)
        pool_seed, test_seed = data_seeds(seed)
        x, y = toy_tasks.make_motif_data(POOL, seed=pool_seed, **kw)
        return x, y, *toy_tasks.make_motif_data(TEST, seed=test_seed, **kw)

    d = data()
    row = _curves(d, seed, sizes)
    row["window"] = [_fit("window", d, seed, n) for n in window_sizes]
    if sizes == MOTIF_SIZES:  # the count-only floors, with all the data
        row["counts"] = _fit("counts", d, seed)
        row["counts_naive"] = _fit("counts", data(negatives="random"), seed)
    return row


def ends_row(seed: int, sizes=ENDS_SIZES) -> dict:
    """Accuracies on the long-range (ends) task for one seed."""
    pool_seed, test_seed = data_seeds(seed)
    x, y = toy_tasks.make_ends_data(POOL, ENDS_LENGTH, VOCAB, seed=pool_seed)
    xt, yt = toy_tasks.make_ends_data(TEST, ENDS_LENGTH, VOCAB, seed=test_seed)
    row = _curves((x, y, xt, yt), seed, sizes)
    if sizes == ENDS_SIZES:
        row["counts"] = _fit("counts", (x, y, xt, yt), seed)
    return row


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seed", type=int, help="one seed, printed, not stored"
    )
    parser.add_argument("--motif", type=int, nargs="*", default=MOTIF_SIZES)
    parser.add_argument("--ends", type=int, nargs="*", default=ENDS_SIZES)
    args = parser.parse_args(argv)
    if args.seed is not None:
        windows = WINDOW_SIZES if args.motif == MOTIF_SIZES else []
        motif = motif_row(args.seed, args.motif, windows)
        row = {"motif": motif, "ends": ends_row(args.seed, args.ends)}
        print(json.dumps(row))
        return
    out = {
        "config": CONFIG,
        "seeds": SEEDS,
        "motif_sizes": MOTIF_SIZES,
        "ends_sizes": ENDS_SIZES,
        "window_sizes": WINDOW_SIZES,
        "motif": [],
        "ends": [],
    }
    for seed in SEEDS:
        for task, make in (("motif", motif_row), ("ends", ends_row)):
            out[task].append(make(seed))
            print(f"seed {seed}: {task} {out[task][-1]}", flush=True)
    write_json(OUT, {**out, "numeric_mode": numeric_mode.stamp()})
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
