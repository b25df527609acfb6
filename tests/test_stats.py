"""utils.stats: Student-t quantiles against published tables, the paired
interval against a hand computation, McNemar's test against the binomial."""

from __future__ import annotations

import math

import pytest

from utils.stats import mcnemar, paired_interval, t_quantile
from tests.conftest import raises


@pytest.mark.parametrize(  # two-sided 95% and 99% critical values (tables)
    "p, df, want",
    [(0.975, 1, 12.706), (0.975, 4, 2.776), (0.975, 10, 2.228),
     (0.995, 4, 4.604), (0.975, 1000, 1.962)],
)  # fmt: skip
def test_t_quantile_matches_the_tables(p, df, want):
    assert t_quantile(p, df) == pytest.approx(want, abs=1e-3)


def test_paired_interval_by_hand():
    a, b = [3.0, 5.0, 4.0, 6.0, 7.0], [1.0, 2.0, 2.0, 3.0, 2.0]
    d = [2, 3, 2, 3, 5]  # mean 3, sd sqrt(1.5)
    mean, lo, hi = paired_interval(a, b)
    half = 2.7764 * math.sqrt(1.5) / math.sqrt(5)
    assert mean == pytest.approx(sum(d) / 5)
    assert (lo, hi) == pytest.approx((3 - half, 3 + half), abs=1e-3)


def test_bad_input():
    pair = [1.0, 2.0]
    raises(ValueError, "pair up", paired_interval, pair, [1.0])
    raises(ValueError, "finite", paired_interval, [1.0, float("nan")], pair)
    raises(ValueError, "level", paired_interval, pair, [1.0, 3.0], level=1.5)


def test_mcnemar_exact_and_normal():
    assert mcnemar(5, 5) == {"z": 0.0, "p_exact": 1.0}
    assert mcnemar(0, 0) == {"z": 0.0, "p_exact": 1.0}  # nothing differs
    # 10 against 0: two-sided p = 2 / 2**10
    assert mcnemar(10, 0)["p_exact"] == pytest.approx(2 / 1024)
    assert mcnemar(130, 75)["z"] == pytest.approx(55 / 205**0.5)
    raises(ValueError, "breaks must be an int >= 0", mcnemar, 3, -1)
    raises(TypeError, "fixes must be an int", mcnemar, 3.0, 1)
