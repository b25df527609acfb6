"""Argument checks for every ``utils`` module: each returns the value
(``np.int64(8) -> 8``) or raises, naming the argument and what it got.
``TypeError``: wrong kind (not a tensor, wrong dtype, ``8.0`` or ``True``
for an int). ``ValueError``: wrong value (shape, range, NaN, ids outside the
vocabulary, device). NumPy scalars count as Python numbers."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = [
    "check_bool",
    "check_int",
    "check_number",
    "check_probability",
    "check_tensor",
    "check_choice",
    "check_instance",
    "check_heads",
    "check_at_most",
    "check_ids",
    "check_qkv",
    "check_mask",
    "check_like_weights",
]


def _kind(value: Any) -> str:
    """A short description of what was received, for error messages."""
    if isinstance(value, torch.Tensor):
        return f"tensor of dtype {value.dtype} and shape {tuple(value.shape)}"
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def check_bool(value: Any, name: str) -> bool:
    """``value``, which must be a Python or NumPy bool (not 0 or 1)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {_kind(value)}")
    return bool(value)


def check_int(value: Any, name: str, minimum: int | None = None) -> int:
    """``value`` as a Python int >= ``minimum`` (bool, ``8.0``: TypeError)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_kind(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _interval(lo, hi, lo_closed: bool, hi_closed: bool) -> str:
    left = "(-inf" if lo is None else ("[" if lo_closed else "(") + f"{lo}"
    right = "inf)" if hi is None else f"{hi}" + ("]" if hi_closed else ")")
    return f"{left}, {right}"


def check_number(
    value: Any,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    *,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
    finite: bool = False,
) -> float:
    """``value`` as a float in ``[minimum, maximum]`` (ends open with
    ``min_inclusive``/``max_inclusive`` false; ``finite``: no infinity)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_kind(value)}")
    number = float(value)
    if math.isnan(number):
        raise ValueError(f"{name} must be a number, got NaN")
    if finite and math.isinf(number):
        raise ValueError(f"{name} must be finite, got {number}")
    too_low = minimum is not None and (
        number < minimum or (not min_inclusive and number == minimum)
    )
    too_high = maximum is not None and (
        number > maximum or (not max_inclusive and number == maximum)
    )
    if too_low or too_high:
        span = _interval(minimum, maximum, min_inclusive, max_inclusive)
        raise ValueError(f"{name} must be in {span}, got {value!r}")
    return number


def check_probability(
    value: Any, name: str, *, allow_one: bool = False
) -> float:
    """A float in ``[0, 1)`` (``[0, 1]`` with ``allow_one``)."""
    return check_number(value, name, 0.0, 1.0, max_inclusive=allow_one)


def _check_ndim(
    x: torch.Tensor,
    name: str,
    ndim: int | Sequence[int] | None,
    what: str = "",
) -> None:
    if ndim is None:
        return
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if x.dim() not in allowed:
        dims = " or ".join(str(n) for n in allowed)
        layout = f" {what}" if what else ""
        raise ValueError(f"{name} must have {dims} dims{layout}{_got(x)}")


def check_tensor(
    x: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    floating: bool | None = None,
    min_ndim: int | None = None,
    shape: Sequence[int | str] | None = None,
    layout: str = "",
    device: torch.device | None = None,
) -> torch.Tensor:
    """``x``, a ``torch.Tensor`` of rank ``ndim`` (int or several) or >=
    ``min_ndim``, ``floating`` or not, of ``shape`` (a str: any size), on
    ``device``; ``layout`` names the dims in a wrong-rank message."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {_kind(x)}")
    if floating is not None and x.is_floating_point() != floating:
        want = "be a floating-point tensor" if floating else "not be floating"
        raise TypeError(f"{name} must {want}, got dtype {x.dtype}")
    _check_ndim(x, name, ndim, layout)
    if min_ndim is not None and x.dim() < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dims{_got(x)}")
    if device is not None and x.device != device:
        raise ValueError(f"{name} is on {x.device}, the others on {device}")
    if shape is not None and not _fits(x.shape, shape):
        want = ", ".join(str(n) for n in shape)
        raise ValueError(f"{name} must have shape ({want}){_got(x)}")
    return x


def _got(x: torch.Tensor) -> str:
    return f", got shape {tuple(x.shape)}"


def _fits(actual: Sequence[int], pattern: Sequence[int | str]) -> bool:
    return len(actual) == len(pattern) and all(
        isinstance(p, str) or a == p for a, p in zip(actual, pattern)
    )


def check_choice(value: Any, name: str, options: Sequence[str]) -> str:
    """``value``, which must be one of the strings ``options``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_kind(value)}")
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def check_instance(value: Any, name: str, kind: type, what: str = "") -> Any:
    """``value``, an instance of ``kind`` (``what`` names it)."""
    if not isinstance(value, kind):
        what = what or f"a {kind.__name__}"
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def check_heads(d_model: int, num_heads: Any) -> int:
    """``num_heads``, an int >= 1 that divides ``d_model`` (checked)."""
    num_heads = check_int(num_heads, "num_heads", 1)
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} is not divisible by {num_heads=}")
    return num_heads


def check_at_most(value: int, name: str, limit: int, why: str = "") -> int:
    """``value <= limit``; ``why`` names the limit, e.g. ``"max_len=8"``."""
    if value > limit:
        raise ValueError(f"{name} must be at most {why or limit}, got {value}")
    return value


def check_ids(
    ids: Any,
    name: str,
    vocab_size: int | None = None,
    *,
    ndim: int | Sequence[int] | None = None,
) -> torch.Tensor:
    """Signed integer ids of rank ``ndim`` in ``[0, vocab_size)``. uint8 is
    refused: indexing reads it as a mask, and 0 - 1 wraps to 255."""
    check_tensor(ids, name)
    if ids.dtype == torch.uint8:  # indexing reads uint8 as a mask
        raise TypeError(f"{name} has dtype torch.uint8, which wraps: .long()")
    if ids.is_floating_point() or ids.is_complex() or not ids.dtype.is_signed:
        raise TypeError(f"{name} must hold integer token ids, got {ids.dtype}")
    _check_ndim(ids, name, ndim, "(batch, length)" if ndim == 2 else "")
    if vocab_size is not None:
        top = check_int(vocab_size, "vocab_size", 1)
        low, high = (int(ids.min()), int(ids.max())) if ids.numel() else (0, 0)
        if low < 0 or high >= top:
            bad = low if low < 0 else high
            raise ValueError(f"{name} must be in [0, {top}), found {bad}")
    return ids


def check_qkv(q: Any, k: Any, v: Any, *, share_d_k: bool = True) -> None:
    """q ``(..., Lq, d_k)``, k ``(..., Lk, d_k)``, v ``(..., Lk, d_v)``:
    floating, one dtype and device, batch dims broadcasting
    (``share_d_k=False``: q and k may differ in size)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(t, name, floating=True, min_ndim=2)
    shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype: {_dtypes(q, k, v)}")
    if not q.device == k.device == v.device:
        raise ValueError(f"q, k and v must be on one device, got {shapes}")
    if share_d_k and q.size(-1) != k.size(-1):
        qk = f"q {tuple(q.shape)}, k {tuple(k.shape)}"
        raise ValueError(f"q and k must share the feature size d_k: {qk}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length: {shapes}")
    if _broadcast(q.shape[:-2], k.shape[:-2], v.shape[:-2]) is None:
        raise ValueError(f"batch dims of q, k and v must broadcast: {shapes}")


def _broadcast(*shapes: Sequence[int]) -> torch.Size | None:
    """The shape ``shapes`` broadcast to, None if they do not."""
    try:
        return torch.broadcast_shapes(*shapes)
    except RuntimeError:
        return None


def _dtypes(q, k, v) -> str:
    return f"q {q.dtype}, k {k.dtype}, v {v.dtype}"


def check_mask(
    mask: Any,
    name: str,
    shape: Sequence[int] | None = None,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """A bool keep-mask broadcasting to ``shape`` (None: kind only) on
    ``device``; a 0/1 or float mask raises ``TypeError`` (``.bool()``)."""
    check_tensor(mask, name)
    if mask.dtype != torch.bool:  # True = may attend
        raise TypeError(f"{name} must be a bool, not {mask.dtype}: .bool()")
    target = torch.Size(mask.shape if shape is None else shape)
    if _broadcast(mask.shape, target) != target:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not "
            f"broadcast to the shape {tuple(target)} it masks"
        )
    here, want = mask.device, torch.device(device or mask.device)
    if want.type != here.type or want.index not in (None, here.index):
        raise ValueError(f"{name} is on {here}, what it masks on {want}")
    return mask


def check_like_weights(module: Any, x: torch.Tensor) -> None:
    """Inputs match the module's weights' dtype and device (not autocast)."""
    w = next(module.parameters())
    if torch.is_autocast_enabled(x.device.type):
        return
    if x.dtype != w.dtype:
        raise TypeError(f"q, k, v have dtype {x.dtype}, the weights {w.dtype}")
    if x.device != w.device:
        raise ValueError(f"q, k, v are on {x.device}, the weights {w.device}")
