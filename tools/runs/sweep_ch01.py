"""Chapter 1's data-versus-prior experiment over seeds, stored for the chapter.

    python -m tools.runs.sweep_ch01
        every seed -> book/data/ch01_data_vs_prior.json
    python -m tools.runs.sweep_ch01 --seed 0 --motif 32 512 --ends 128
        one row, printed as JSON

One seed of the experiment (two tasks, a CNN and a tiny Transformer, ten
training-set sizes) takes one to two minutes of CPU on this 2-core machine, so
five seeds do not fit the chapter's 60 s budget. The chapter runs one seed live
and reads the spread over all of them from the file written here;
``tests/test_sweep_ch01.py`` re-runs part of one seed and checks it against its
stored row. A run re-executes itself in the portable numeric mode
(tools/numerics/numeric_mode.py), the mode the notebook's stored outputs are
made in.

What a "seed" changes: the training pool and the test set (drawn with seeds
``10 * seed + 1`` and ``10 * seed + 2``), the models' initial weights and the
order of the mini-batches. Seed 0 is the chapter's default run.
"""

from __future__ import annotations

import argparse
import json
import sys

from tools import ROOT
from tools.numerics import numeric_mode

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


def _fit(make, x, y, xt, yt, seed):
    from utils import priors

    acc = priors.train_and_evaluate(
        make, x, y, xt, yt, steps=STEPS, lr=LR, batch_size=BATCH, seed=seed
    )
    return round(acc, 4)


def motif_row(seed: int, sizes=MOTIF_SIZES, window_sizes=WINDOW_SIZES) -> dict:
    """Accuracies on the local (motif) task for one seed."""
    from utils import priors, toy_tasks

    pool_seed, test_seed = data_seeds(seed)
    kw = dict(length=LENGTH, vocab_size=VOCAB, motif=MOTIF)
    x, y = toy_tasks.make_motif_data(POOL, seed=pool_seed, **kw)
    xt, yt = toy_tasks.make_motif_data(TEST, seed=test_seed, **kw)
    cnn = lambda: priors.MotifCNN(**CNN)  # noqa: E731
    tf = lambda: priors.TinyTransformer(**TRANSFORMER)  # noqa: E731
    local = lambda: priors.TinyTransformer(**TRANSFORMER, window=1)  # noqa: E731
    count = lambda: priors.CountClassifier(VOCAB)  # noqa: E731
    row = {
        "CNN": [_fit(cnn, x[:n], y[:n], xt, yt, seed) for n in sizes],
        "Transformer": [_fit(tf, x[:n], y[:n], xt, yt, seed) for n in sizes],
        "window": [
            _fit(local, x[:n], y[:n], xt, yt, seed) for n in window_sizes
        ],
    }
    if sizes == MOTIF_SIZES:  # the count-only floors, with all the data
        row["counts"] = _fit(count, x, y, xt, yt, seed)
        xr, yr = toy_tasks.make_motif_data(
            POOL, seed=pool_seed, negatives="random", **kw
        )
        xrt, yrt = toy_tasks.make_motif_data(
            TEST, seed=test_seed, negatives="random", **kw
        )
        row["counts_naive"] = _fit(count, xr, yr, xrt, yrt, seed)
    return row


def ends_row(seed: int, sizes=ENDS_SIZES) -> dict:
    """Accuracies on the long-range (ends) task for one seed."""
    from utils import priors, toy_tasks

    pool_seed, test_seed = data_seeds(seed)
    x, y = toy_tasks.make_ends_data(POOL, ENDS_LENGTH, VOCAB, seed=pool_seed)
    xt, yt = toy_tasks.make_ends_data(TEST, ENDS_LENGTH, VOCAB, seed=test_seed)
    cnn = lambda: priors.MotifCNN(**CNN)  # noqa: E731
    tf = lambda: priors.TinyTransformer(**TRANSFORMER)  # noqa: E731
    count = lambda: priors.CountClassifier(VOCAB)  # noqa: E731
    row = {
        "CNN": [_fit(cnn, x[:n], y[:n], xt, yt, seed) for n in sizes],
        "Transformer": [_fit(tf, x[:n], y[:n], xt, yt, seed) for n in sizes],
    }
    if sizes == ENDS_SIZES:
        row["counts"] = _fit(count, x, y, xt, yt, seed)
    return row


def sweep(seeds=SEEDS) -> dict:
    out = {
        "config": CONFIG,
        "seeds": list(seeds),
        "motif_sizes": MOTIF_SIZES,
        "ends_sizes": ENDS_SIZES,
        "window_sizes": WINDOW_SIZES,
        "motif": [],
        "ends": [],
    }
    for seed in seeds:
        out["motif"].append(motif_row(seed))
        out["ends"].append(ends_row(seed))
        print(f"seed {seed}: motif {out['motif'][-1]}", flush=True)
        print(f"seed {seed}: ends {out['ends'][-1]}", flush=True)
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seed", type=int, help="one seed, printed, not stored"
    )
    parser.add_argument("--motif", type=int, nargs="*", default=MOTIF_SIZES)
    parser.add_argument("--ends", type=int, nargs="*", default=ENDS_SIZES)
    args = parser.parse_args(argv)
    if args.seed is not None:
        full = args.motif == MOTIF_SIZES  # the whole row, as stored
        windows = WINDOW_SIZES if full else []
        row = {
            "motif": motif_row(args.seed, args.motif, windows),
            "ends": ends_row(args.seed, args.ends),
        }
        print(json.dumps(row))
        return
    out = {**sweep(), "numeric_mode": numeric_mode.stamp()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
