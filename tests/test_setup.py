"""utils.setup, proof.setup and proof.glue: what every chapter's first cell
and its prose rely on."""

from __future__ import annotations

import sys

import pytest
import torch

import proof
import utils
from tests.conftest import raises


def test_glue_prints_the_value_where_myst_nb_is_missing(monkeypatch, capsys):
    # import now raises ImportError
    monkeypatch.setitem(sys.modules, "myst_nb", None)
    proof.glue("ratio", 5.2)
    assert capsys.readouterr().out == "ratio = 5.2\n"


def test_glue_is_silent_under_myst_nb(capsys):
    pytest.importorskip("myst_nb")
    proof.glue("ratio", 5.2)
    assert "ratio = 5.2" not in capsys.readouterr().out


def test_glue_rejects_a_bad_name():
    raises(TypeError, "name", proof.glue, "", 1)


def test_glue_writes_a_range_in_chinese(monkeypatch, capsys):
    """In a Chinese notebook a glued range of numbers reads "a 至 b"; other
    words are left alone (they need glue's zh=)."""
    from proof import labels

    monkeypatch.setitem(sys.modules, "myst_nb", None)
    monkeypatch.setitem(labels._state, "language", "zh")
    for value in ("0.29 to 0.30", "-1.2% to +3.4%", "4 of 5", "up to 3"):
        proof.glue("v", value)
    want = ["0.29 至 0.30", "-1.2% 至 +3.4%", "4 of 5", "up to 3"]
    assert capsys.readouterr().out.splitlines() == [f"v = {v}" for v in want]
    monkeypatch.setitem(labels._state, "language", "en")
    proof.glue("v", "0.29 to 0.30")
    assert capsys.readouterr().out == "v = 0.29 to 0.30\n"


@pytest.mark.parametrize(
    "setup,seed",
    [(proof.setup, 1), (utils.setup, 0)],
    ids=["proof's replaces the seed", "utils' ignores the harness seed"],
)
def test_course_seed(monkeypatch, setup, seed):
    """With COURSE_SEED=1, proof.setup (the harness's) takes COURSE_SEED, the
    learner's utils.setup(seed=0) the seed it is given."""
    monkeypatch.setenv("COURSE_SEED", "1")
    setup(seed=0)
    drawn = torch.rand(3)
    monkeypatch.delenv("COURSE_SEED")
    utils.setup(seed=seed)
    assert torch.equal(drawn, torch.rand(3))
    utils.setup(seed=1 - seed)
    assert not torch.equal(drawn, torch.rand(3))


def test_course_seed_must_be_an_integer(monkeypatch):
    monkeypatch.setenv("COURSE_SEED", "one")
    raises(ValueError, "COURSE_SEED", proof.setup)
