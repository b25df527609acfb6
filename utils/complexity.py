"""Cost, counted and measured (chapter 6): FLOPs, time, peak tensor memory,
power-law fits. ``time_fn`` can read the thread's CPU time, which other
processes do not inflate."""

from __future__ import annotations

import functools
import math
import statistics
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import torch

# Private PyTorch API, for `peak_memory` only (no public hook sees every
# operator's outputs); proven on torch 2.13 (pinned; the floor is 2.11) by
# tests/test_complexity.py::test_private_dispatch_mode_api.
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from .checks import (
    check_at_most,
    check_choice,
    check_instance,
    check_int,
    check_number,
    check_tensor,
)
from .training import threads

__all__ = [
    "count_flops",
    "fit_power_law",
    "flops_by_op",
    "peak_memory",
    "time_fn",
    "time_interleaved",
]


def flops_by_op(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """FLOPs of ``fn(*args, **kwargs)`` per aten op (2 per multiply-add);
    ops without a formula (softmax, some fused kernels) count 0."""
    check_instance(fn, "fn", Callable, "callable")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    counts = counter.get_flop_counts().get("Global", {})
    return {str(op): int(n) for op, n in counts.items()}


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """Total FLOPs of ``fn(*args, **kwargs)`` (see ``flops_by_op``)."""
    return sum(flops_by_op(fn, *args, **kwargs).values())


def time_fn(
    fn: Callable,
    *args,
    repeats: int = 5,
    warmup: int = 1,
    min_time: float = 0.0,
    num_threads: int | None = None,
    clock: str = "wall",
    **kwargs,
) -> float:
    """Median seconds of ``fn(*args, **kwargs)`` over >= ``repeats`` runs
    (until ``min_time``, at most 10,000) after ``warmup``, no_grad, with
    ``num_threads`` threads (restored). ``clock="wall"``: what a user waits;
    ``"cpu"``: one thread's CPU time, which busy cores do not inflate."""
    check_instance(fn, "fn", Callable, "callable")
    check_int(repeats, "repeats", 1)
    check_int(warmup, "warmup", 0)
    check_number(min_time, "min_time", 0)
    check_choice(clock, "clock", ("wall", "cpu"))
    if num_threads is not None:
        check_int(num_threads, "num_threads", 1)
    if clock == "cpu":  # it times the calling thread only
        check_at_most(num_threads or 1, "num_threads", 1, "1 (clock='cpu')")
        num_threads = 1
    now = time.perf_counter if clock == "wall" else time.thread_time
    times: list[float] = []
    fixed = nullcontext() if num_threads is None else threads(num_threads)
    with fixed:
        with torch.no_grad():
            for _ in range(warmup):
                fn(*args, **kwargs)
            while len(times) < repeats or (
                sum(times) < min_time and len(times) < 10_000
            ):
                start = now()
                fn(*args, **kwargs)
                times.append(now() - start)
    return statistics.median(times)


def time_interleaved(
    calls: Mapping[str, Callable[[], Any]], rounds: int = 3, **options
) -> dict[str, float]:
    """Name -> minimum seconds over interleaved rounds of ``time_fn``."""
    check_int(rounds, "rounds", 1)
    check_instance(calls, "calls", Mapping, "a mapping name -> call")
    check_int(len(calls), "the number of calls", 1)
    best = {name: math.inf for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], time_fn(call, **options))
    return best


def _tensors(obj: Any) -> Iterator[torch.Tensor]:
    # the tensors inside an operator's (nested) arguments or outputs
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


class _LiveTensorBytes(TorchDispatchMode):
    """Sees every aten op; adds each new output storage's bytes while alive."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._alive: dict[int, weakref.ref] = {}

    def _freed(self, key: int, nbytes: int, _ref: weakref.ref) -> None:
        self.live -= nbytes
        self._alive.pop(key, None)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        # an output on an input's storage (a view, in place): nothing new
        inputs = {
            t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))
        }
        for t in _tensors(out):
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes == 0 or key in inputs or key in self._alive:
                continue
            self.live += nbytes
            self.peak = max(self.peak, self.live)
            freed = functools.partial(self._freed, key, nbytes)
            self._alive[key] = weakref.ref(storage, freed)
        return out


def peak_memory(fn: Callable, *args, **kwargs) -> int:
    """Peak bytes of the tensors ``fn`` creates alive at once (a lower
    bound: output counted, inputs and in-kernel scratch not)."""
    check_instance(fn, "fn", Callable, "callable")
    tracker = _LiveTensorBytes()
    with torch.no_grad(), tracker:
        result = fn(*args, **kwargs)
    del result
    return tracker.peak


def fit_power_law(
    x: Sequence[float], y: Sequence[float]
) -> tuple[float, float]:
    """Least squares on logs -> ``(slope, c)``, ``y ~ c * x**slope``."""
    xs = torch.as_tensor(x, dtype=torch.float64).flatten()
    ys = torch.as_tensor(y, dtype=torch.float64).flatten()
    check_int(len(xs), "x's number of points (at least 2 for a slope)", 2)
    check_tensor(ys, "y (the same length as x)", shape=xs.shape)
    above = dict(min_inclusive=False)  # a log-log fit: finite and > 0
    for name, t in (("x", xs), ("y", ys)):
        check_number(float(t.min()), f"{name}'s least value", 0, **above)
        check_number(float(t.max()), f"{name}'s largest value", finite=True)
    check_int(len(torch.unique(xs)), "x's number of distinct values", 2)
    lx, ly = xs.log(), ys.log()
    lx_c = lx - lx.mean()
    slope = float((lx_c * (ly - ly.mean())).sum() / (lx_c**2).sum())
    c = float(torch.exp(ly.mean() - slope * lx.mean()))
    return slope, c
