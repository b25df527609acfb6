"""Benchmark: utils.attention.MultiHeadAttention vs nn.MultiheadAttention, forward on CPU.

Not a test (pytest does not collect it): timings depend on the machine and its load.
Run: ``python tests/bench_attention.py [--repeats 30]``. Prints the median times and the
ratio ours / torch, with torch's ``need_weights=True`` (its default, weights averaged over
heads) and ``need_weights=False`` (its fast path, no weights returned).
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from utils.attention import MultiHeadAttention, load_torch_mha_weights  # noqa: E402
from utils.complexity import time_fn  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave the default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)  # 1 thread is steadier when other jobs share the CPU

    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(args.d_model, args.heads, batch_first=True).eval()
    ours = load_torch_mha_weights(MultiHeadAttention(args.d_model, args.heads), theirs).eval()
    x = torch.randn(args.batch, args.length, args.d_model)  # self-attention: q = k = v = x

    with torch.no_grad():
        torch.testing.assert_close(ours(x, x, x)[0], theirs(x, x, x)[0], atol=1e-5, rtol=1e-5)
        # Interleave the three timings in rounds so a burst of machine load hits all of them.
        t_ours, t_w, t_now = [], [], []
        for _ in range(3):
            t_ours.append(time_fn(ours, x, x, x, repeats=args.repeats, warmup=3))
            t_w.append(time_fn(theirs, x, x, x, repeats=args.repeats, warmup=3))
            t_now.append(time_fn(theirs, x, x, x, need_weights=False, repeats=args.repeats, warmup=3))
    t_ours, t_w, t_now = min(t_ours), min(t_w), min(t_now)

    print(f"B={args.batch} T={args.length} d_model={args.d_model} heads={args.heads} "
          f"threads={torch.get_num_threads()} torch={torch.__version__}")
    print(f"ours (returns per-head weights)        {t_ours * 1e3:8.2f} ms")
    print(f"nn.MultiheadAttention need_weights=True  {t_w * 1e3:8.2f} ms  ratio ours/torch = {t_ours / t_w:.2f}")
    print(f"nn.MultiheadAttention need_weights=False {t_now * 1e3:8.2f} ms  ratio ours/torch = {t_ours / t_now:.2f}")


if __name__ == "__main__":
    main()
