"""Benchmark: utils.attention.MultiHeadAttention vs nn.MultiheadAttention.

    python -m tools.numerics.bench_attention [--repeats 30] [--clock cpu]

The forward pass on CPU, ours against torch's with ``need_weights=True``
(its default, weights averaged over heads) and ``need_weights=False`` (its
fast path), timed in interleaved rounds (``utils.complexity.time_interleaved``,
each call's fastest round kept) so a burst of load hits all three alike.
``--clock cpu`` reads the CPU time of one thread: steady even while other
programs share the cores. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from utils.attention import MultiHeadAttention, load_torch_mha_weights
from utils.complexity import time_interleaved

OURS = "ours (returns per-head weights)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizes = {"batch": 8, "length": 256, "d-model": 256, "heads": 8}
    for name, default in {**sizes, "repeats": 30, "rounds": 3}.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads for the wall clock (0: leave the default)",
    )
    args = parser.parse_args()
    threads = 1 if args.clock == "cpu" else (args.threads or None)

    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(
        args.d_model, args.heads, batch_first=True
    ).eval()
    ours = MultiHeadAttention(args.d_model, args.heads)
    ours = load_torch_mha_weights(ours, theirs).eval()
    # self-attention: q = k = v = x
    x = torch.randn(args.batch, args.length, args.d_model)

    with torch.no_grad():
        torch.testing.assert_close(
            ours(x, x, x)[0], theirs(x, x, x)[0], atol=1e-5, rtol=1e-5
        )
    calls = {
        OURS: lambda: ours(x, x, x),
        "torch need_weights=True": lambda: theirs(x, x, x),
        "torch need_weights=False": lambda: theirs(
            x, x, x, need_weights=False
        ),
    }
    best = time_interleaved(
        calls,
        rounds=args.rounds,
        repeats=args.repeats,
        warmup=3,
        clock=args.clock,
        num_threads=threads,
    )
    print(
        f"B={args.batch} T={args.length} d_model={args.d_model} "
        f"heads={args.heads} clock={args.clock} "
        f"threads={threads or torch.get_num_threads()} "
        f"torch={torch.__version__}"
    )
    ours_time = best.pop(OURS)
    print(f"{OURS:<34}{ours_time * 1e3:8.2f} ms")
    for name, seconds in best.items():
        ratio = f"ours/torch = {ours_time / seconds:.2f}"
        print(f"{name:<34}{seconds * 1e3:8.2f} ms  {ratio}")


if __name__ == "__main__":
    main()
