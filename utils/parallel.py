"""Data parallelism as the stored runs use it: one optimiser step's batch
cut into equal parts, each part's gradient computed on its own, the step
taken on their mean.

Two processes (``torchrun --nproc_per_node=2``, one thread each) compute
one part each and average their gradients with one all-reduce, as
PyTorch's ``DistributedDataParallel`` does. One process can compute the
same parts in turn and average them itself (gradient accumulation). The
two give the same bits: each part's forward and backward pass is the same
computation in either place (same code, same shapes, one thread), a sum of
two floats is the same in either order, and halving is exact. Each part
draws its dropout from a random stream of its own (``Streams``), so the
parts drop the same units wherever they are computed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import time

import torch
import torch.distributed as dist
from torch import nn

from .checks import check_int, check_number
from .training import load_checkpoint, save_checkpoint

__all__ = ["World", "Streams", "DataParallel", "split_parts", "Resumable"]


@dataclasses.dataclass(frozen=True)
class World:
    """This process's place among ``size`` data-parallel processes."""

    rank: int = 0
    size: int = 1

    def __post_init__(self):
        check_int(self.size, "size", 1)
        if not 0 <= check_int(self.rank, "rank", 0) < self.size:
            raise ValueError(
                f"rank must be < size ({self.size}), got {self.rank}"
            )

    @classmethod
    def from_env(cls) -> "World":
        """The world ``torchrun`` describes (``RANK``, ``WORLD_SIZE``)."""
        return cls(
            int(os.environ.get("RANK", "0")),
            int(os.environ.get("WORLD_SIZE", "1")),
        )

    def mine(self, parts: int) -> range:
        """The parts this process computes: all of them alone, else its
        own one (``parts`` must then equal ``size``)."""
        if self.size == 1:
            return range(parts)
        if parts != self.size:
            raise ValueError(
                f"parts must equal the number of processes ({self.size}), "
                f"got {parts}"
            )
        return range(self.rank, self.rank + 1)

    def merge(self, part: dict) -> dict:
        """Every process's ``part`` merged into one dict, in every process."""
        if self.size == 1:
            return dict(part)
        every = [None] * self.size
        dist.all_gather_object(every, part)
        return {key: value for one in every for key, value in one.items()}

    def any(self, flag: bool) -> bool:
        """True in every process if ``flag`` is True in any."""
        return any(self.merge({self.rank: bool(flag)}).values())

    def map(self, fn, items: list) -> list:
        """``[fn(x) for x in items]``, each process computing every
        ``size``-th item (results gathered, in order, in every process)."""
        share = range(self.rank, len(items), self.size)
        done = self.merge({i: fn(items[i]) for i in share})
        return [done[i] for i in range(len(items))]

    def barrier(self) -> None:
        if self.size > 1:
            dist.barrier()

    def broadcast(self, model: nn.Module) -> None:
        """Process 0's weights into every process, as DDP starts."""
        if self.size > 1:
            for tensor in model.state_dict().values():
                dist.broadcast(tensor, 0)


class Streams:
    """One random stream per part: part ``i`` draws its dropout from
    ``torch.manual_seed(seed + i)``'s stream, continued step after step."""

    def __init__(self, seed: int, parts: range):
        check_int(seed, "seed", 0)
        before = torch.get_rng_state()
        self.states = {}
        for i in parts:
            torch.manual_seed(seed + i)
            self.states[i] = torch.get_rng_state()
        torch.set_rng_state(before)

    @contextlib.contextmanager
    def part(self, i: int):
        """Inside the block, the global generator is part ``i``'s."""
        before = torch.get_rng_state()
        torch.set_rng_state(self.states[i])
        try:
            yield
        finally:
            self.states[i] = torch.get_rng_state()
            torch.set_rng_state(before)


def split_parts(items: list, parts: int) -> list[list]:
    """``items`` cut into ``parts`` consecutive pieces, their lengths
    differing by at most one (a last, smaller batch splits too)."""
    check_int(parts, "parts", 1)
    if len(items) < parts:
        raise ValueError(
            f"a batch of {len(items)} does not split into {parts} parts"
        )
    cut = [len(items) * i // parts for i in range(parts + 1)]
    return [items[a:b] for a, b in zip(cut, cut[1:])]


class DataParallel:
    """How ``utils.training.train`` takes a step whose batch comes in
    parts: ``{part: batch}`` for the parts this process computes
    (``world.mine(parts)``), each backpropagated with its own stream; the
    gradients summed over the processes (one all-reduce) and divided by
    ``parts``."""

    def __init__(self, parts: int, seed: int, world: World | None = None):
        self.parts = check_int(parts, "parts", 1)
        self.world = World() if world is None else world
        self.streams = Streams(seed, self.world.mine(parts))

    def backward(self, model: nn.Module, loss_fn, batches: dict):
        """-> the mean of every part's loss; ``.grad``: their mean."""
        total = None
        for i, batch in batches.items():
            with self.streams.part(i):
                loss = loss_fn(model, batch)
            loss.backward()  # adds this part's gradient to .grad
            loss = loss.detach()
            total = loss if total is None else total + loss
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if self.world.size > 1:
            flat = [g.reshape(-1) for g in grads] + [total.reshape(1)]
            flat = torch.cat(flat)
            dist.all_reduce(flat)  # the sum over processes
            offset = 0
            for g in grads:
                g.copy_(flat[offset : offset + g.numel()].view_as(g))
                offset += g.numel()
            total = flat[-1]
        for g in grads:
            g.div_(self.parts)
        return total / self.parts

    def states(self) -> dict:
        """Every part's random state, gathered from every process."""
        return self.world.merge(self.streams.states)


class Resumable:
    """What lets a run stop and continue bit for bit, alone or as one of
    a ``world``'s processes: ``resume()`` restores a saved state (weights,
    optimiser, schedule, random states, every part's stream) and returns
    what else was saved; ``hook(extra)``, one of ``train``'s hooks, saves
    every ``every`` steps, at step ``steps`` and when ``max_seconds`` have
    passed (then the processes stop together; process 0 writes), with
    ``extra()`` (the data's place, the history) beside the state; and at
    step ``stop_at``, where it stops the run too."""

    def __init__(
        self,
        path,
        model: nn.Module,
        optimizer,
        scheduler=None,
        *,
        steps: int,
        every: int = 500,
        max_seconds: float | None = None,
        stop_at: int | None = None,
        world: World | None = None,
        parallel: DataParallel | None = None,
    ):
        self.path = None if path is None else pathlib.Path(path)
        self.model, self.optimizer = model, optimizer
        self.scheduler = scheduler
        self.steps = check_int(steps, "steps", 1)
        self.every = check_int(every, "every", 1)
        if max_seconds is not None:
            check_number(max_seconds, "max_seconds", 0.0)
        self.max_seconds = max_seconds
        if stop_at is not None:
            check_int(stop_at, "stop_at", 1)
        self.stop_at = stop_at
        self.world = World() if world is None else world
        self.parallel = parallel
        self.begun = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Seconds since the hook was made (the training's time)."""
        return time.perf_counter() - self.begun

    def resume(self) -> dict | None:
        """The saved ``extra`` (the model and the rest restored), or None
        when there is nothing to continue."""
        if self.path is None or not self.path.is_file():
            return None
        saved = load_checkpoint(
            self.path, self.model, self.optimizer, self.scheduler
        )
        if self.parallel is not None:
            for i in self.parallel.streams.states:
                self.parallel.streams.states[i] = saved["streams"][i]
        return saved

    def hook(self, extra):
        """``hook(step, loss) -> stop?`` for ``train``."""
        self.begun = time.perf_counter()

        def save_or_stop(step: int, loss: float) -> bool:
            late = self.max_seconds is not None and (
                self.seconds > self.max_seconds
            )
            late = self.world.any(late)  # the processes stop together
            late = late or step == self.stop_at
            due = step % self.every == 0 or step == self.steps or late
            if self.path is not None and due:
                streams = None
                if self.parallel is not None:
                    streams = self.parallel.states()
                if self.world.rank == 0:
                    save_checkpoint(
                        self.path,
                        self.model,
                        self.optimizer,
                        self.scheduler,
                        **extra(),
                        streams=streams,
                    )
                self.world.barrier()  # written before anyone reads it
            return late

        return save_or_stop
