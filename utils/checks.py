"""Argument checks shared by the ``utils`` modules, so every error names the argument,
says what it received and what was expected, in the same words everywhere."""
from __future__ import annotations

import numbers

__all__ = ["check_int", "check_number"]


def check_int(value, name: str, minimum: int | None = None) -> int:
    """``value`` must be an int (not a bool or a float) and, if given, at least ``minimum``.

    Raises ``TypeError`` for a wrong type and ``ValueError`` for a value below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


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
