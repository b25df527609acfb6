"""Cost of attention, counted and measured: windowed (restricted) attention, online-softmax
attention, and small helpers to count FLOPs, time a call, measure its peak tensor memory and
fit a power law on a log-log scale.

Shapes are batch-first like ``utils.attention``: q ``(..., n, d_k)``, k ``(..., n, d_k)``,
v ``(..., n, d_v)``. Boolean masks mean True = may attend.
"""
from __future__ import annotations

import functools
import math
import statistics
import time
import weakref
from typing import Any, Callable, Sequence

import torch

from .checks import check_int as _check_int
from .masks import band_mask
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from .attention import scaled_dot_product_attention
from .masks import check_mask

__all__ = [
    "banded_attention", "windowed_attention", "online_softmax_attention",
    "count_flops", "flops_by_op", "time_fn", "peak_memory", "fit_power_law",
]


# ----------------------------------------------------------------------------- checks



def _check_qkv(q: Any, k: Any, v: Any, same_length: bool) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dims (..., length, features), got shape {tuple(t.shape)}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
    if q.size(-1) != k.size(-1):
        raise ValueError(f"q and k must share the feature size d_k: q {tuple(q.shape)}, k {tuple(k.shape)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length: k {tuple(k.shape)}, v {tuple(v.shape)}")
    if same_length and q.size(-2) != k.size(-2):
        raise ValueError(f"windowed self-attention needs q and k of the same length: "
                         f"q {tuple(q.shape)}, k {tuple(k.shape)}")


# ------------------------------------------------------------ restricted (windowed) attention

def banded_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                     causal: bool = False) -> torch.Tensor:
    """Windowed attention the simple way: full ``(n, n)`` attention with a band mask.

    Same O(n^2 d) cost as full attention; it is the correctness reference for
    ``windowed_attention``. Returns ``out (..., n, d_v)``.
    """
    _check_qkv(q, k, v, same_length=True)
    _check_int(window, "window", 0)
    mask = band_mask(q.size(-2), window, causal=causal, device=q.device)
    return scaled_dot_product_attention(q, k, v, mask)[0]


def windowed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                       causal: bool = False) -> torch.Tensor:
    """Windowed attention in O(n r d): each query meets only its ``r`` neighbouring keys.

    k and v are zero-padded by ``window`` at the ends, then ``unfold`` gives every position its
    own window of r keys ``(..., n, d, r)`` without building any ``(n, n)`` tensor. Padded
    slots are masked out, so the result equals ``banded_attention``. Returns ``out (..., n, d_v)``.
    """
    _check_qkv(q, k, v, same_length=True)
    _check_int(window, "window", 0)
    n, d_k = q.size(-2), q.size(-1)
    left, right = window, (0 if causal else window)
    r = left + right + 1
    k_pad = F.pad(k, (0, 0, left, right))  # (..., n + left + right, d_k)
    v_pad = F.pad(v, (0, 0, left, right))
    k_win = k_pad.unfold(-2, r, 1)  # (..., n, d_k, r): window t of query i holds key i - left + t
    v_win = v_pad.unfold(-2, r, 1)  # (..., n, d_v, r)
    scores = torch.einsum("...nd,...ndr->...nr", q, k_win) / math.sqrt(d_k)  # (..., n, r)
    key_pos = torch.arange(n, device=q.device)[:, None] - left + torch.arange(r, device=q.device)
    real = (key_pos >= 0) & (key_pos < n)  # (n, r): False on the zero padding
    # every row keeps at least key i itself, so softmax never sees an all -inf row
    weights = torch.softmax(scores.masked_fill(~real, float("-inf")), dim=-1)
    return torch.einsum("...nr,...ndr->...nd", weights, v_win)


# ------------------------------------------------------------------ online-softmax attention

def online_softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int,
                             mask: torch.Tensor | None = None) -> torch.Tensor:
    """Exact softmax attention computed over blocks of ``block_size`` keys at a time.

    Keeps, per query, a running maximum ``m``, a running denominator ``l`` and a running
    weighted sum ``acc``; when a new block raises the maximum, the old ``l`` and ``acc`` are
    rescaled by ``exp(m_old - m_new)``. Only a ``(..., Lq, block_size)`` piece of the score
    matrix exists at any time. ``mask`` (True = attend) broadcasts to ``(..., Lq, Lk)``; a query
    with no visible key gets a zero output, like ``utils.attention.scaled_dot_product_attention``.
    Returns ``out (..., Lq, d_v)``.
    """
    _check_qkv(q, k, v, same_length=False)
    _check_int(block_size, "block_size", 1)
    lq, lk, d_k = q.size(-2), k.size(-2), q.size(-1)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        check_mask(mask, (*batch, lq, lk))
        mask = mask.expand(*batch, lq, lk)  # a view: no (Lq, Lk) copy is made
    scale = 1.0 / math.sqrt(d_k)
    m = torch.full((*batch, lq, 1), float("-inf"), dtype=q.dtype, device=q.device)
    l = torch.zeros((*batch, lq, 1), dtype=q.dtype, device=q.device)
    acc = torch.zeros((*batch, lq, v.size(-1)), dtype=q.dtype, device=q.device)
    for start in range(0, lk, block_size):
        stop = min(start + block_size, lk)
        s = (q @ k[..., start:stop, :].transpose(-2, -1)) * scale  # (..., Lq, block)
        if mask is not None:
            s = s.masked_fill(~mask[..., start:stop], float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        # m_new is -inf only while every key seen so far is masked; shift by 0 then (exp(-inf) = 0)
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - shift)  # (..., Lq, block), unnormalised weights
        rescale = torch.exp(m - shift)  # how much the old running sums shrink
        l = l * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:stop, :]
        m = m_new
    safe_l = torch.where(l > 0, l, torch.ones_like(l))  # l == 0 only for rows with nothing visible
    return acc / safe_l


# ---------------------------------------------------------------------------- measuring

def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")


def flops_by_op(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """FLOPs of ``fn(*args, **kwargs)`` per aten operator, counted by
    ``torch.utils.flop_counter.FlopCounterMode`` (2 per multiply-add; matmuls and convolutions
    only, elementwise work such as softmax is not counted)."""
    _check_callable(fn)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """Total FLOPs of ``fn(*args, **kwargs)`` (see ``flops_by_op``)."""
    return sum(flops_by_op(fn, *args, **kwargs).values())


def time_fn(fn: Callable, *args, repeats: int = 5, warmup: int = 1, min_time: float = 0.0,
            num_threads: int | None = None, **kwargs) -> float:
    """Median wall time in seconds of ``fn(*args, **kwargs)`` over at least ``repeats`` runs
    (``time.perf_counter``, after ``warmup`` untimed runs, under ``torch.no_grad``).

    The median ignores the odd run slowed down by another process. A fast call is repeated
    until the timed runs add up to ``min_time`` seconds (at most 10,000 runs), so that a
    sub-millisecond median rests on many samples. ``num_threads`` (e.g. 1) fixes torch's
    intra-op threads while timing and restores them after: on a machine whose cores are
    shared, one thread gives steadier numbers than threads waiting for each other.
    """
    _check_callable(fn)
    _check_int(repeats, "repeats", 1)
    _check_int(warmup, "warmup", 0)
    if isinstance(min_time, bool) or not isinstance(min_time, (int, float)) or not min_time >= 0:
        raise ValueError(f"min_time must be a number of seconds >= 0, got {min_time!r}")
    if num_threads is not None:
        _check_int(num_threads, "num_threads", 1)
    before = torch.get_num_threads()
    times: list[float] = []
    try:
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        with torch.no_grad():
            for _ in range(warmup):
                fn(*args, **kwargs)
            while len(times) < repeats or (sum(times) < min_time and len(times) < 10_000):
                start = time.perf_counter()
                fn(*args, **kwargs)
                times.append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(before)
    return statistics.median(times)


class _LiveTensorBytes(TorchDispatchMode):
    """Sees every aten op; adds the bytes of each new output storage while it is alive."""

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
        # an output sharing storage with an input is a view or an in-place result: nothing new
        inputs = {t.untyped_storage().data_ptr() for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes == 0 or key in inputs or key in self._alive:
                continue
            self.live += nbytes
            self.peak = max(self.peak, self.live)
            self._alive[key] = weakref.ref(storage, functools.partial(self._freed, key, nbytes))
        return out


def peak_memory(fn: Callable, *args, **kwargs) -> int:
    """Peak bytes of the tensors ``fn(*args, **kwargs)`` creates, alive at the same time.

    Every aten operator's new output storage is counted from its creation until it is freed
    (under ``torch.no_grad``); the inputs are not counted, the returned output is. This is
    deterministic, so a notebook can check it. It does not see scratch buffers that a kernel
    allocates and frees inside one operator (e.g. BLAS packing), so it is a lower bound on
    what the process really allocates.
    """
    _check_callable(fn)
    tracker = _LiveTensorBytes()
    with torch.no_grad(), tracker:
        result = fn(*args, **kwargs)
    del result
    return tracker.peak


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Least-squares line through ``(log x, log y)``: returns ``(slope, c)`` with ``y ~ c * x**slope``.

    A slope of 2 means doubling x multiplies y by 4 (quadratic); 1 means linear.
    """
    xs = torch.as_tensor(x, dtype=torch.float64).flatten()
    ys = torch.as_tensor(y, dtype=torch.float64).flatten()
    if xs.numel() != ys.numel():
        raise ValueError(f"x and y must have the same length, got {xs.numel()} and {ys.numel()}")
    if xs.numel() < 2:
        raise ValueError(f"x needs at least 2 points to fit a slope, got {xs.numel()}")
    for name, t in (("x", xs), ("y", ys)):
        if not torch.isfinite(t).all() or (t <= 0).any():
            raise ValueError(f"{name} must be finite and > 0 for a log-log fit, got {t.tolist()}")
    if torch.unique(xs).numel() < 2:
        raise ValueError(f"x must contain at least 2 distinct values, got {xs.tolist()}")
    lx, ly = xs.log(), ys.log()
    lx_c = lx - lx.mean()
    slope = float((lx_c * (ly - ly.mean())).sum() / (lx_c ** 2).sum())
    c = float(torch.exp(ly.mean() - slope * lx.mean()))
    return slope, c
