"""Argument checks shared by the ``utils`` modules, so every error names the argument,
says what it received and what was expected, in the same words everywhere."""

from __future__ import annotations

import numbers

import torch

__all__ = ["check_int", "check_number", "check_qkv", "check_tensor"]


def check_int(value, name: str, minimum: int | None = None) -> int:
    """``value`` must be an int (not a bool or a float) and, if given, at least ``minimum``.

    Raises ``TypeError`` for a wrong type and ``ValueError`` for a value below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r}"
        )
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_tensor(
    x, name: str, *, ndim: int | None = None, floating: bool | None = None
) -> torch.Tensor:
    """``x`` must be a tensor; with ``ndim``, of at least that many dims; with
    ``floating=True``, of a floating-point dtype.

    Raises ``TypeError`` for a non-tensor or a wrong dtype, ``ValueError`` for too
    few dims.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__}"
        )
    if floating and not x.dtype.is_floating_point:
        raise TypeError(
            f"{name} must be a floating-point tensor, got dtype {x.dtype}"
        )
    if ndim is not None and x.dim() < ndim:
        raise ValueError(
            f"{name} must have at least {ndim} dims, got shape {tuple(x.shape)}"
        )
    return x


def check_qkv(q, k, v) -> None:
    """q ``(..., Lq, d_k)``, k ``(..., Lk, d_k)``, v ``(..., Lk, d_v)``: floating
    tensors of one dtype, q and k sharing ``d_k``, k and v sharing the length."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(t, name, ndim=2, floating=True)
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"q, k and v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}"
        )
    if q.size(-1) != k.size(-1):
        raise ValueError(
            "q and k must share the feature size d_k: "
            f"q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(
            "k and v must have the same length: "
            f"k {tuple(k.shape)}, v {tuple(v.shape)}"
        )


def check_number(value, name: str, minimum: float | None = None,
                 maximum: float | None = None) -> float:
    """``value`` must be a real number (int, float or NumPy scalar; not a bool, str or NaN)
    within ``[minimum, maximum]`` where given.

    Raises ``TypeError`` for a wrong type and ``ValueError`` for NaN or a value out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if value != value:
        raise ValueError(f"{name} must be a number, got NaN")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return value
