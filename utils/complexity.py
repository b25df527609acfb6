"""Cost of attention, counted and measured.

Windowed (restricted) attention, online-softmax attention, and small helpers to
count FLOPs, time a call, measure its peak tensor memory and fit a power law on
a log-log scale.

Shapes are batch-first like ``utils.attention``: q ``(..., n, d_k)``, k
``(..., n, d_k)``, v ``(..., n, d_v)``. Boolean masks mean True = may attend.
Costs are best proven on counts (FLOPs, bytes), which are deterministic; times
depend on the machine and its load, so ``time_fn`` can read the CPU time of the
calling thread, which other processes competing for the cores do not inflate.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F

# Private PyTorch API, used by `peak_memory` only (PyTorch has no public hook
# that sees every operator's outputs). Proven on torch 2.13 (the pinned
# version; the course's floor is 2.11) by
# tests/test_complexity.py::test_private_dispatch_mode_api.
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from .attention import scaled_dot_product_attention
from .checks import check_int, check_number, check_qkv
from .masks import band_mask, check_mask
from .runtime import threads

__all__ = [
    "banded_attention",
    "count_flops",
    "fit_power_law",
    "flops_by_op",
    "online_softmax_attention",
    "peak_memory",
    "time_fn",
    "time_interleaved",
    "windowed_attention",
]


def _check_self_attention(q, k, v) -> None:
    check_qkv(q, k, v)
    if q.size(-2) != k.size(-2):
        raise ValueError(
            "windowed self-attention needs q and k of the same length: "
            f"q {tuple(q.shape)}, k {tuple(k.shape)}"
        )


# ------------------------------------------------- restricted (windowed)
# attention


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    causal: bool = False,
) -> torch.Tensor:
    """Windowed attention the simple way: full attention with a band mask.

    Same O(n^2 d) cost as full attention; it is the correctness reference for
    ``windowed_attention``. Returns ``out (..., n, d_v)``.
    """
    _check_self_attention(q, k, v)
    check_int(window, "window", 0)
    mask = band_mask(q.size(-2), window, causal=causal, device=q.device)
    return scaled_dot_product_attention(q, k, v, mask)[0]


def windowed_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    causal: bool = False,
) -> torch.Tensor:
    """Windowed attention in O(n r d): each query meets only its r neighbours.

    k and v are zero-padded by ``window`` at the ends, then ``unfold`` gives
    every position its own window of r keys ``(..., n, d, r)`` without building
    any ``(n, n)`` tensor. Padded slots are masked out, so the result equals
    ``banded_attention``. Returns ``out (..., n, d_v)``.
    """
    _check_self_attention(q, k, v)
    check_int(window, "window", 0)
    n, d_k = q.size(-2), q.size(-1)
    left, right = window, (0 if causal else window)
    r = left + right + 1
    k_pad = F.pad(k, (0, 0, left, right))  # (..., n + left + right, d_k)
    v_pad = F.pad(v, (0, 0, left, right))
    # window slot t of query i holds key i - left + t
    k_win = k_pad.unfold(-2, r, 1)  # (..., n, d_k, r)
    v_win = v_pad.unfold(-2, r, 1)  # (..., n, d_v, r)
    scores = torch.einsum("...nd,...ndr->...nr", q, k_win) / math.sqrt(d_k)
    pos = torch.arange(n, device=q.device)
    key_pos = pos[:, None] - left + torch.arange(r, device=q.device)  # (n, r)
    real = (key_pos >= 0) & (key_pos < n)  # False on the zero padding
    # every row keeps key i itself, so softmax never sees an all -inf row
    weights = torch.softmax(scores.masked_fill(~real, float("-inf")), dim=-1)
    return torch.einsum("...nr,...ndr->...nd", weights, v_win)


# --------------------------------------------------------- online-softmax
# attention


def online_softmax_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_size: int,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Exact softmax attention computed over blocks of ``block_size`` keys.

    Keeps, per query, a running maximum ``m``, a running denominator ``l`` and
    a running weighted sum ``acc``; when a new block raises the maximum, the
    old ``l`` and ``acc`` are rescaled by ``exp(m_old - m_new)``. Only a
    ``(..., Lq, block_size)`` piece of the score matrix exists at any time.
    ``mask`` (True = attend) broadcasts to ``(..., Lq, Lk)``; a query with no
    visible key gets a zero output, like
    ``utils.attention.scaled_dot_product_attention``. Returns
    ``out (..., Lq, d_v)``.
    """
    check_qkv(q, k, v)
    check_int(block_size, "block_size", 1)
    lq, lk = q.size(-2), k.size(-2)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        check_mask(mask, (*batch, lq, lk))
        mask = mask.expand(*batch, lq, lk)  # a view: no (Lq, Lk) copy is made
    scale = 1.0 / math.sqrt(q.size(-1))
    opts = {"dtype": q.dtype, "device": q.device}
    m = torch.full((*batch, lq, 1), float("-inf"), **opts)
    total = torch.zeros((*batch, lq, 1), **opts)  # running sum of weights
    acc = torch.zeros((*batch, lq, v.size(-1)), **opts)
    for start in range(0, lk, block_size):
        stop = min(start + block_size, lk)
        k_blk = k[..., start:stop, :]
        s = (q @ k_blk.transpose(-2, -1)) * scale  # (..., Lq, block)
        if mask is not None:
            s = s.masked_fill(~mask[..., start:stop], float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        # m_new is -inf only while every key seen so far is masked: shift by 0
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - shift)  # (..., Lq, block), unnormalised weights
        rescale = torch.exp(m - shift)  # how much the old running sums shrink
        total = total * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:stop, :]
        m = m_new
    # total == 0 only for rows with nothing visible: their output stays 0
    return acc / torch.where(total > 0, total, torch.ones_like(total))


# ------------------------------------------------------------------- measuring


def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")


def flops_by_op(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """FLOPs of ``fn(*args, **kwargs)`` per aten operator.

    Counted by ``torch.utils.flop_counter.FlopCounterMode`` under
    ``torch.no_grad`` (2 per multiply-add). It counts the operators it has a
    formula for (matrix products, convolutions, some fused attention kernels);
    elementwise work such as a softmax is not counted, and neither is a fused
    kernel without a formula (e.g. ``nn.MultiheadAttention``'s inference path).
    """
    _check_callable(fn)
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
    """Median time in seconds of ``fn(*args, **kwargs)`` over at least
    ``repeats`` runs, after ``warmup`` untimed runs, under ``torch.no_grad``.

    A fast call is repeated until the timed runs add up to ``min_time``
    seconds (at most 10,000 runs). ``num_threads`` fixes torch's intra-op
    threads while timing and restores them after.

    ``clock="wall"`` reads ``time.perf_counter``: what a user waits, which
    grows when other processes take the cores. ``clock="cpu"`` reads
    ``time.thread_time``, the CPU time this thread ran: the work the call
    did, which waiting for a busy core does not add to. It needs one thread
    (``num_threads`` 1, the default for this clock), so that all the work
    runs in the calling thread.
    """
    _check_callable(fn)
    check_int(repeats, "repeats", 1)
    check_int(warmup, "warmup", 0)
    check_number(min_time, "min_time", 0)
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', got {clock!r}")
    if num_threads is not None:
        check_int(num_threads, "num_threads", 1)
    if clock == "cpu":
        if num_threads not in (None, 1):
            raise ValueError(
                f"clock='cpu' times one thread: num_threads must be 1, "
                f"got {num_threads!r}"
            )
        num_threads = 1
    now = time.perf_counter if clock == "wall" else time.thread_time
    times: list[float] = []
    fixed = (
        contextlib.nullcontext()
        if num_threads is None
        else threads(num_threads)
    )
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
    """Time several zero-argument calls in interleaved rounds; keep the
    minimum.

    Each round times every call once with ``time_fn(call, **options)``; a
    burst of load then hits all calls alike instead of one, and the minimum
    over rounds is the least disturbed reading. Returns name -> seconds.
    """
    check_int(rounds, "rounds", 1)
    if not isinstance(calls, Mapping) or not calls:
        raise TypeError(
            "calls must be a non-empty mapping name -> callable, "
            f"got {type(calls).__name__}"
        )
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
        # an output sharing storage with an input is a view or an in-place
        # result: nothing new was allocated
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
    """Peak bytes of the tensors ``fn(*args, **kwargs)`` creates, alive at
    once.

    Every aten operator's new output storage is counted from its creation
    until it is freed (under ``torch.no_grad``); the inputs are not counted,
    the returned output is. This is deterministic, so a notebook can check
    it. It does not see scratch buffers that a kernel allocates and frees
    inside one operator (e.g. BLAS packing): a lower bound on what the
    process really allocates.
    """
    _check_callable(fn)
    tracker = _LiveTensorBytes()
    with torch.no_grad(), tracker:
        result = fn(*args, **kwargs)
    del result
    return tracker.peak


def fit_power_law(
    x: Sequence[float], y: Sequence[float]
) -> tuple[float, float]:
    """Least-squares line through ``(log x, log y)``.

    Returns ``(slope, c)`` with ``y ~ c * x**slope``. A slope of 2 means
    doubling x multiplies y by 4 (quadratic); 1 means linear.
    """
    xs = torch.as_tensor(x, dtype=torch.float64).flatten()
    ys = torch.as_tensor(y, dtype=torch.float64).flatten()
    if xs.numel() != ys.numel():
        raise ValueError(
            "x and y must have the same length, "
            f"got {xs.numel()} and {ys.numel()}"
        )
    if xs.numel() < 2:
        raise ValueError(
            f"x needs at least 2 points to fit a slope, got {xs.numel()}"
        )
    for name, t in (("x", xs), ("y", ys)):
        if not torch.isfinite(t).all() or (t <= 0).any():
            raise ValueError(
                f"{name} must be finite and > 0 for a log-log fit, "
                f"got {t.tolist()}"
            )
    if torch.unique(xs).numel() < 2:
        raise ValueError(
            f"x must contain at least 2 distinct values, got {xs.tolist()}"
        )
    lx, ly = xs.log(), ys.log()
    lx_c = lx - lx.mean()
    slope = float((lx_c * (ly - ly.mean())).sum() / (lx_c**2).sum())
    c = float(torch.exp(ly.mean() - slope * lx.mean()))
    return slope, c
