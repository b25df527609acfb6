"""Benchmark: utils.attention.MultiHeadAttention vs nn.MultiheadAttention.

Forward pass on CPU. Not a test (pytest does not collect it): timings depend on
the machine and its load. Run:

    python -m tools.numerics.bench_attention [--repeats 30] [--clock cpu]

Prints the times and the ratio ours / torch, with torch's ``need_weights=True``
(its default, weights averaged over heads) and ``need_weights=False`` (its fast
path, no weights returned). The three calls are timed in interleaved rounds
(``utils.complexity.time_interleaved``), keeping each one's fastest round, so a
burst of load hits all three alike. ``--clock cpu`` reads the CPU time of one
thread instead of the wall clock: steady even while other programs share the
cores.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from utils.attention import MultiHeadAttention, load_torch_mha_weights
from utils.complexity import time_interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
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
    best = time_interleaved(
        {
            "ours": lambda: ours(x, x, x),
            "weights": lambda: theirs(x, x, x),
            "fast": lambda: theirs(x, x, x, need_weights=False),
        },
        rounds=args.rounds,
        repeats=args.repeats,
        warmup=3,
        clock=args.clock,
        num_threads=threads,
    )
    t_ours, t_w, t_fast = best["ours"], best["weights"], best["fast"]
    print(
        f"B={args.batch} T={args.length} d_model={args.d_model} "
        f"heads={args.heads} clock={args.clock} "
        f"threads={threads or torch.get_num_threads()} "
        f"torch={torch.__version__}"
    )
    print(f"ours (returns per-head weights)   {t_ours * 1e3:8.2f} ms")
    print(
        f"torch need_weights=True           {t_w * 1e3:8.2f} ms  "
        f"ours/torch = {t_ours / t_w:.2f}"
    )
    print(
        f"torch need_weights=False          {t_fast * 1e3:8.2f} ms  "
        f"ours/torch = {t_ours / t_fast:.2f}"
    )


if __name__ == "__main__":
    main()
