"""Argument checks shared by the ``utils`` modules, so every error names the argument,
says what it received and what was expected, in the same words everywhere."""

from __future__ import annotations

import numbers

import torch

__all__ = ["check_int", "check_tensor", "check_ids"]


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
    """``x`` must be a tensor; with ``ndim``, of that rank; with ``floating``,
    of a floating (True) or non-floating (False) dtype.

    Raises ``TypeError`` for a non-tensor or a wrong dtype, ``ValueError``
    for a wrong rank.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__}"
        )
    if floating is not None and x.is_floating_point() != floating:
        kind = "a floating-point" if floating else "an integer"
        raise TypeError(f"{name} must have {kind} dtype, got {x.dtype}")
    if ndim is not None and x.dim() != ndim:
        raise ValueError(
            f"{name} must have {ndim} dims, got shape {tuple(x.shape)}"
        )
    return x


def check_ids(
    ids, name: str, vocab_size: int | None = None, *, ndim: int | None = None
) -> torch.Tensor:
    """``ids`` must be an integer tensor of token ids (rank ``ndim`` if
    given), each in ``[0, vocab_size)`` if ``vocab_size`` is given.

    Raises ``TypeError`` for a non-tensor or a non-integer dtype (bool and
    float included), ``ValueError`` for a wrong rank or an id out of range.
    """
    check_tensor(ids, name, ndim=ndim)
    if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
        raise TypeError(
            f"{name} must hold integer token ids, got dtype {ids.dtype}"
        )
    if vocab_size is not None and ids.numel():
        lo, hi = ids.min().item(), ids.max().item()
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"{name} must hold ids in [0, {vocab_size}), found {bad}"
            )
    return ids
