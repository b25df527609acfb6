"""Chapter 4's stored sweep (book/data/ch04_positions.json) against a fresh
run.

The file is written by ``python -m tools.runs.sweep_ch04``; chapter 4 asserts
its claims on every stored row, so the rows must be what the code trains today.
"""

from __future__ import annotations

import json

import pytest
import torch

from tools.runs.sweep_ch04 import OUT, SEEDS, SETTINGS
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


# The text's claims on every stored seed (moved here from the chapter's
# folded cells, which glue the numbers): chapter 4, "Measured: which encoding
# finds the previous token?".


def _bag_ceiling(length, vocab, n=20000):
    """A bag of tokens at best: the symbol most frequent among the others,
    estimated on ``n`` random sequences (the chapter's estimate)."""
    seqs = torch.randint(0, vocab, (n, length))
    one_hot = torch.nn.functional.one_hot
    counts = one_hot(seqs, vocab).sum(1)  # (n, vocab)
    others = counts[:, None] - one_hot(seqs[:, 1:], vocab)  # (n, L-1, V)
    return (others.max(-1).values / (length - 1)).float().mean().item()


def test_the_text_states_the_stored_settings(sweep):
    # "The sweep over eight seeds", "300 Adam steps", "16 symbols"
    assert len(sweep["seeds"]) == 8
    assert sweep["settings"] == dict(
        length=16, vocab=16, steps=300, batch=64, lr=3e-3
    )


def test_every_stored_seed_shows_the_texts_claims(sweep):
    kinds = ("none", "learned", "sinusoidal", "rope")
    acc = {
        (kind, key): sorted(
            r[key] for r in sweep["rows"] if r["position"] == kind
        )
        for kind in kinds
        for key in METRICS
    }
    vocab = sweep["settings"]["vocab"]
    chance = 1 / vocab
    torch.manual_seed(0)  # the chapter's estimate
    ceiling = {16: _bag_ceiling(16, vocab), 32: _bag_ceiling(32, vocab)}
    for key in ("acc_train_len", "acc_double_seen", "acc_double_new"):
        top = ceiling[16 if key == "acc_train_len" else 32]
        assert acc["none", key][-1] < top + 0.02  # never above the ceiling
        assert acc["none", key][0] > top - 0.03  # ... and it reaches it
    for kind in kinds[1:]:  # every encoding solves the task at length 16
        assert acc[kind, "acc_train_len"][0] > 0.99
    new, seen = "acc_double_new", "acc_double_seen"
    window = "acc_double_window"
    assert acc["learned", new][-1] < 2 * chance  # untrained rows: chance
    assert acc["sinusoidal", new][-1] < acc["rope", new][0]  # RoPE best
    assert acc["rope", new][-1] < 0.9  # ... but nothing extrapolates fully
    assert acc["rope", seen][-1] < acc["sinusoidal", seen][0]  # RoPE pays
    # far keys hidden: RoPE right everywhere, the others not rescued
    assert acc["rope", window][0] > 0.99
    assert max(acc[kind, window][-1] for kind in kinds[:3]) < 0.9
