"""Paired comparisons: over seeds, the mean difference and its Student-t
confidence interval (chapter 10's fine-tuning arms); over words, McNemar's
test of two systems right on different words (chapters 8 and 9)."""

from __future__ import annotations

import math
from typing import Sequence

from .checks import check_int, check_probability

__all__ = ["paired_interval", "mcnemar"]


def _t_cdf(t: float, df: int, n: int = 4000) -> float:
    """P(T <= t) for t >= 0: Simpson's rule over the density from 0."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2))
    c /= math.sqrt(df * math.pi)
    h = t / n
    total = 0.0
    for i in range(n + 1):
        w = 1 if i in (0, n) else (4 if i % 2 else 2)
        total += w * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2)
    return 0.5 + c * total * h / 3


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``df`` >= 1
    degrees of freedom, by bisection on its distribution function."""
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def paired_interval(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)`` of ``a[i] - b[i]`` over pairs (seeds): the
    mean difference and its two-sided ``level`` t interval."""
    check_probability(level, "level")
    d = [float(x) - float(y) for x, y in zip(a, b)]
    if len(a) != len(b) or len(d) < 2 or not all(map(math.isfinite, d)):
        raise ValueError(
            f"a and b must pair up, 2+ finite numbers each, got {a}, {b}"
        )
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def mcnemar(fixes: int, breaks: int) -> dict:
    """McNemar's test on the discordant words (``fixes``: right only for
    the new system, ``breaks``: only for the old): ``{"z", "p_exact"}``,
    the exact two-sided binomial p-value (each discordant word a fair coin
    under "no difference") and the normal approximation's z."""
    check_int(fixes, "fixes", 0)
    check_int(breaks, "breaks", 0)
    n, k = fixes + breaks, min(fixes, breaks)
    tail = sum(math.comb(n, x) for x in range(k + 1)) / 2**n
    return {
        "z": (fixes - breaks) / math.sqrt(n) if n else 0.0,
        "p_exact": min(1.0, 2 * tail),
    }
