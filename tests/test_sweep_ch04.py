"""Chapter 4's stored sweep (book/data/ch04_positions.json) against a fresh
run.

The file is written by ``python -m tools.sweep_ch04``; chapter 4 asserts its
claims on every stored row, so the rows must be what the code trains today.
"""

from __future__ import annotations

import json

import pytest

from tools.sweep_ch04 import OUT, SEEDS, SETTINGS
from utils.position_probe import POSITION_KINDS, train_position_probe

METRICS = (
    "acc_train_len",
    "acc_double_seen",
    "acc_double_new",
    "acc_double_window",
)


@pytest.fixture(scope="module")
def sweep():
    return json.loads(OUT.read_text())


def test_every_option_and_seed_is_stored_once(sweep):
    assert sweep["settings"] == SETTINGS and sweep["seeds"] == SEEDS
    keys = [(row["position"], row["seed"]) for row in sweep["rows"]]
    assert sorted(keys) == sorted(
        (kind, seed) for kind in POSITION_KINDS for seed in SEEDS
    )
    assert len(SEEDS) >= 5
    for row in sweep["rows"]:
        assert all(0.0 <= row[key] <= 1.0 for key in METRICS)


@pytest.mark.exact
@pytest.mark.parametrize("position, seed", [("sinusoidal", 3)])
def test_a_stored_row_reproduces(sweep, position, seed):
    (row,) = [
        r
        for r in sweep["rows"]
        if r["position"] == position and r["seed"] == seed
    ]
    fresh = train_position_probe(position, seed, **sweep["settings"])
    for key in METRICS:
        assert abs(fresh[key] - row[key]) < 0.02, key
