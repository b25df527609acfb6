"""Data parallelism on this CPU: one DistributedDataParallel step of
chapter 11's GPT on two processes equals a single-process step.

    torchrun --standalone --nproc_per_node=2 -m tools.ddp_gpt --check
    torchrun --standalone --nproc_per_node=2 -m tools.ddp_gpt --speed
    torchrun --standalone --nproc_per_node=1 -m tools.ddp_gpt --speed
    python -m tools.ddp_gpt --store    # all of these: book/data/ch11_ddp.json

Each process restarts itself in the portable numeric mode, computes on one
thread and takes one half of a global batch; DDP (gloo backend) sums the two
halves' gradients and divides by 2 during the backward pass, then both
processes take the same AdamW step.

``--check`` compares, in rank 0, the DDP step with

(a) one process that runs the two halves' forward and backward passes in
    turn and sets grad = (g0 + g1) / 2. Equal bit for bit: each half's
    gradient is the same computation as in its DDP process (same code, same
    thread count, same machine); gloo's sum of two tensors is one float
    addition per element, and a + b is b + a exactly; halving is exact in
    binary floating point (an exponent change), whether DDP divides before
    or after the sum: round(a/2 + b/2) = round(a + b)/2. So the gradients,
    and the AdamW step made from them, are the same bits.
(b) one process that runs the whole global batch in one backward pass.
    Equal within float rounding only: the gradient of a weight is a sum
    over every position of the batch, which one big matrix product adds up
    in another order than two half-size products plus one addition.

``--speed`` times training steps on the global batch: with 2 processes each
does half of it (plus one all-reduce of the gradients), with 1 process the
whole of it; steps per second, best and median of a few repeats.
Results: ``--out`` (JSON, rank 0 writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import time

from tools.numerics import numeric_mode

if __name__ == "__main__":  # before torch is imported
    numeric_mode.reexec_in("portable", "tools.ddp_gpt")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from tools import ROOT  # noqa: E402
from utils.gpt import GPT, GPTConfig  # noqa: E402

TINY = GPTConfig(
    vocab_size=64,
    context=32,
    d_model=32,
    num_heads=4,
    num_layers=2,
    d_ff=64,
    dropout=0.0,
)
# the stored run's sizes (tools/train_gpt.py), for the speed measurement
STORED = GPTConfig(1024, 256, 128, 4, 4, 512, 0.0)


def global_batch(config: GPTConfig, rows: int, seed: int) -> torch.Tensor:
    """``rows`` random windows of ``context + 1`` token ids (the same in
    every process: a seeded generator of its own)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(
        config.vocab_size, (rows, config.context + 1), generator=g
    )


def build(config: GPTConfig, seed: int = 0):
    torch.manual_seed(seed)
    model = GPT(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    return model, opt


def grads(model) -> list[torch.Tensor]:
    return [p.grad.detach().clone() for p in model.parameters()]


def params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def max_diff(xs, ys) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(xs, ys))


def check(config: GPTConfig, rows: int, rank: int, world: int) -> dict | None:
    """One DDP step; rank 0 compares it with (a) and (b)."""
    batch = global_batch(config, rows, seed=1)
    halves = batch.chunk(world)
    model, opt = build(config)
    ddp = DDP(model)
    logits = ddp(halves[rank][:, :-1])  # through DDP: it hooks the grads
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, config.vocab_size), halves[rank][:, 1:].reshape(-1)
    )
    opt.zero_grad()
    loss.backward()  # DDP all-reduces the gradients here
    g_ddp = grads(model)
    opt.step()
    p_ddp = params(model)
    dist.barrier()
    if rank != 0:
        return None
    # (a) the halves in turn in one process, grad = (g0 + g1) / 2
    ref, ref_opt = build(config)
    parts = []
    for half in halves:
        ref_opt.zero_grad()
        ref.loss(half).backward()
        parts.append(grads(ref))
    for p, g0, g1 in zip(ref.parameters(), *parts):
        p.grad = (g0 + g1) / 2
    g_a = grads(ref)
    ref_opt.step()
    p_a = params(ref)
    # (b) the whole batch in one backward pass
    whole, whole_opt = build(config)
    whole_opt.zero_grad()
    whole.loss(batch).backward()
    g_b = grads(whole)
    whole_opt.step()
    p_b = params(whole)
    scale = max(float(g.abs().max()) for g in g_b)
    return {
        "config": config.__dict__,
        "global_batch": rows,
        "world_size": world,
        "a_grads_equal": all(torch.equal(x, y) for x, y in zip(g_ddp, g_a)),
        "a_params_equal": all(torch.equal(x, y) for x, y in zip(p_ddp, p_a)),
        "b_grads_equal": all(torch.equal(x, y) for x, y in zip(g_ddp, g_b)),
        "b_grad_max_abs_diff": max_diff(g_ddp, g_b),
        "b_grad_max_abs": scale,
        "b_param_max_abs_diff": max_diff(p_ddp, p_b),
    }


def speed(
    config: GPTConfig,
    rows: int,
    rank: int,
    world: int,
    steps: int,
    repeats: int,
) -> dict | None:
    """Steps per second of training on ``rows`` windows shared by the
    ``world`` processes."""
    model, opt = build(config)
    net = DDP(model) if world > 1 else model
    batch = global_batch(config, rows, seed=2).chunk(world)[rank]

    def step():
        logits = net(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, config.vocab_size), batch[:, 1:].reshape(-1)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()  # warm-up
    rates = []
    for _ in range(repeats):
        if world > 1:
            dist.barrier()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        if world > 1:
            dist.barrier()
        rates.append(steps / (time.perf_counter() - t))
    if rank != 0:
        return None
    return {
        "config": config.__dict__,
        "global_batch": rows,
        "world_size": world,
        "steps": steps,
        "steps_per_s": [round(r, 4) for r in rates],
        "best": round(max(rates), 4),
        "median": round(statistics.median(rates), 4),
        "load_average": list(os.getloadavg()),
    }


def main(args) -> None:
    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group("gloo")
    config = TINY if args.tiny else STORED
    try:
        if args.check:
            if world != 2:
                raise SystemExit(
                    "--check needs 2 processes: torchrun --nproc_per_node=2"
                )
            result = check(config, args.rows, rank, world)
        else:
            result = speed(
                config, args.rows, rank, world, args.steps, args.repeats
            )
    finally:
        if world > 1:
            dist.destroy_process_group()
    if result is not None:
        result["numeric_mode"] = numeric_mode.stamp()
        text = json.dumps(result)
        print(text, flush=True)
        if args.out:
            pathlib.Path(args.out).write_text(text + "\n")


def store(out: pathlib.Path, rows: int, steps: int, repeats: int) -> None:
    """Run the checks (tiny model and the stored run's size) and the speed
    measurement (1 and 2 processes, twice each, alternating) with torchrun;
    write them all to ``out``."""
    import subprocess
    import sys
    import tempfile

    def run(nproc: int, *flags: str) -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "r.json"
            cmd = [sys.executable, "-m", "torch.distributed.run"]
            cmd += ["--standalone", f"--nproc_per_node={nproc}"]
            cmd += ["-m", "tools.ddp_gpt", *flags, "--out", str(path)]
            subprocess.run(cmd, check=True, capture_output=True)
            return json.loads(path.read_text())

    speed_flags = ["--speed", "--rows", str(rows), "--steps", str(steps)]
    speed_flags += ["--repeats", str(repeats)]
    result = {
        "what": "tools/ddp_gpt.py: one DDP step (2 CPU processes, gloo) vs "
        "single-process steps; speed of 2 processes vs 1 (one thread each)",
        "check_tiny": run(2, "--check", "--tiny", "--rows", "8"),
        "check_stored_size": run(2, "--check", "--rows", str(rows)),
        "speed": [run(n, *speed_flags) for _ in range(2) for n in (1, 2)],
    }
    # the mode the processes computed in (``tests/test_repo.py`` reads it)
    result["numeric_mode"] = result["check_tiny"]["numeric_mode"]
    one = [r["median"] for r in result["speed"] if r["world_size"] == 1]
    two = [r["median"] for r in result["speed"] if r["world_size"] == 2]
    result["speedup_median"] = round(
        statistics.median(two) / statistics.median(one), 3
    )
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("speedup_median",)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--tiny", action="store_true", help="a tiny model")
    parser.add_argument("--rows", type=int, default=16, help="global batch")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out")
    parser.add_argument("--store", action="store_true", help="all: JSON")
    args = parser.parse_args()
    if args.store:
        default = ROOT / "book" / "data" / "ch11_ddp.json"
        store(
            pathlib.Path(args.out or default),
            args.rows,
            args.steps,
            args.repeats,
        )
    else:
        main(args)
