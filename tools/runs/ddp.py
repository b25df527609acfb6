"""The course's one launcher for stored runs on both cores.

    with ddp.processes(args.procs) as world:
        ...  # train with world (utils.parallel.World)

With ``procs`` 1 (or already inside a worker) the block runs here. With
``procs`` 2 this process starts ``torchrun --standalone --nproc_per_node=2
-m MODULE`` (the module it runs) with the same arguments, in the same
numeric mode, and exits with its status; each worker then enters the block
with its ``World``, on one thread, the gloo process group open.
``utils.parallel`` says why two processes compute the same bits as one.

``arguments`` and ``run`` are the options and the start that the stored
runs' scripts share. ``python -m tools.runs.ddp --procs N --out F`` trains
a tiny pronouncer and writes its losses and a hash of its weights:
``tests/test_ddp.py`` compares one process, two, and runs stopped in one
and resumed in the other.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys


@contextlib.contextmanager
def processes(procs: int):
    """This process's ``World`` inside the block (see the module's text)."""
    import torch

    from tools.numerics.numeric_mode import running_module
    from utils.parallel import World

    if procs < 1:
        raise ValueError(f"procs must be >= 1, got {procs}")
    if procs > 1 and "RANK" not in os.environ:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        cmd += [f"--nproc_per_node={procs}", "-m", running_module()]
        cmd += sys.argv[1:]
        raise SystemExit(subprocess.call(cmd))
    world = World.from_env()
    torch.set_num_threads(1)
    if world.size == 1:
        yield world
        return
    import torch.distributed as dist

    dist.init_process_group("gloo")
    try:
        yield world
    finally:
        dist.destroy_process_group()


def arguments(doc: str, every: int) -> argparse.ArgumentParser:
    """The options of a resumable run on ``--procs`` processes; ``--minutes``
    is read as ``args.max_seconds``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--procs", type=int, default=1, help="processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--minutes",
        type=lambda minutes: 60 * float(minutes),
        dest="max_seconds",
        help="stop after this long",
    )
    parser.add_argument("--every", type=int, default=every, help="checkpoint")
    parser.add_argument("--fresh", action="store_true", help="start over")
    return parser


@contextlib.contextmanager
def run(args, *paths):
    """``processes(args.procs)`` for a run that writes ``paths``: process 0
    makes their folders and, with ``args.fresh``, removes the files, before any
    process reads them."""
    with processes(args.procs) as world:
        if world.rank == 0:
            for path in paths:
                path.parent.mkdir(parents=True, exist_ok=True)
                if args.fresh:
                    path.unlink(missing_ok=True)
        world.barrier()
        yield world


def _check(args, world) -> None:
    """A tiny pronouncer run (dropout, clipping, two parts) on 3,000
    training words; process 0 writes its losses and a hash of its weights
    to ``args.out``."""
    import hashlib
    import json

    from utils import pronunciation as pr
    from utils.pronouncer import PronouncerConfig, train_pronouncer

    split = pr.split_words(2000, 12000, 0)
    split = {"train": split["train"][:3000], "valid": split["valid"][:50]}
    splits, vocabs = pr.pronouncer_data(split, stress=False)
    cfg = PronouncerConfig(
        d_model=32, num_heads=4, num_layers=2, d_ff=64, dropout=0.2,
        batch_size=63, steps=6, warmup_steps=2, peak_lr=2e-3, clip=0.5,
        parts=2, eval_every=3, n_valid_exact=20,
    )  # fmt: skip
    model, h = train_pronouncer(
        cfg,
        splits,
        vocabs,
        progress=False,
        world=world,
        checkpoint=args.checkpoint,
        checkpoint_every=2,
        stop_after=args.stop_after,
    )
    if world.rank == 0:
        weights = b"".join(
            v.numpy().tobytes() for v in model.state_dict().values()
        )
        out = {k: h[k] for k in ("train_loss", "lr", "valid_loss")}
        out["weights_sha256"] = hashlib.sha256(weights).hexdigest()
        out["config"] = cfg.as_dict()
        out["processes"] = world.size
        with open(args.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="the launcher's check")
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint")
    parser.add_argument("--stop-after", type=int)
    args = parser.parse_args()
    with processes(args.procs) as world:
        _check(args, world)
