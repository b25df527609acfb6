"""utils.setup, proof.setup and proof.glue: what every chapter's first cell
and its prose rely on."""

from __future__ import annotations

import sys

import pytest
import torch

import proof
import utils


def test_glue_prints_the_value_where_myst_nb_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(
        sys.modules, "myst_nb", None
    )  # import now raises ImportError
    proof.glue("ratio", 5.2)
    assert capsys.readouterr().out == "ratio = 5.2\n"


def test_glue_is_silent_under_myst_nb(capsys):
    pytest.importorskip("myst_nb")
    proof.glue("ratio", 5.2)
    assert "ratio = 5.2" not in capsys.readouterr().out


def test_glue_rejects_a_bad_name():
    with pytest.raises(TypeError, match="name"):
        proof.glue("", 1)


def test_glue_writes_a_range_in_chinese(monkeypatch, capsys):
    """In a Chinese notebook a glued range of numbers reads "a 至 b"; other
    words are left alone (they need glue's zh=)."""
    from proof import labels

    monkeypatch.setitem(sys.modules, "myst_nb", None)
    monkeypatch.setitem(labels._state, "language", "zh")
    for value in ("0.29 to 0.30", "-1.2% to +3.4%", "4 of 5", "up to 3"):
        proof.glue("v", value)
    assert capsys.readouterr().out.splitlines() == [
        "v = 0.29 至 0.30",
        "v = -1.2% 至 +3.4%",
        "v = 4 of 5",
        "v = up to 3",
    ]
    monkeypatch.setitem(labels._state, "language", "en")
    proof.glue("v", "0.29 to 0.30")
    assert capsys.readouterr().out == "v = 0.29 to 0.30\n"


def test_course_seed_replaces_the_seed(monkeypatch):
    monkeypatch.setenv("COURSE_SEED", "1")
    proof.setup(seed=0)
    with_env = torch.rand(3)
    monkeypatch.delenv("COURSE_SEED")
    utils.setup(seed=1)
    assert torch.equal(with_env, torch.rand(3))
    utils.setup(seed=0)
    assert not torch.equal(with_env, torch.rand(3))


def test_course_seed_must_be_an_integer(monkeypatch):
    monkeypatch.setenv("COURSE_SEED", "one")
    with pytest.raises(ValueError, match="COURSE_SEED"):
        proof.setup()


def test_utils_setup_ignores_the_harness_seed(monkeypatch):
    """The learner's setup does what it says: the seed it is given."""
    monkeypatch.setenv("COURSE_SEED", "1")
    utils.setup(seed=0)
    first = torch.rand(3)
    monkeypatch.delenv("COURSE_SEED")
    utils.setup(seed=0)
    assert torch.equal(first, torch.rand(3))
