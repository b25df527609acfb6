"""The stored seed sweeps of chapter 8 (book/data/ch08_sweep.json: the
chapter's config on five seeds; book/data/ch08_ablations.json: the config
with one ingredient changed) are what the code computes. pytest runs in the
portable numeric mode, the mode the sweeps were made in, so a retrained run
agrees closely with its stored row; the tolerances leave room for a slightly
different portable mode."""

from __future__ import annotations

import json

import pytest

from tools import sweep_ch08


def _rows(path):
    return json.loads(path.read_text())["rows"]


def test_the_sweep_has_five_seeds_and_every_number_the_chapters_read():
    rows = _rows(sweep_ch08.OUT)
    assert [r["seed"] for r in rows] == list(sweep_ch08.SEEDS)
    for r in rows:
        for key in (
            "exact",
            "bleu",
            "ppl",
            "valid_exact",
            "by_size",
            "by_length",
            "test_by_chars",
            "long_by_chars",
            "at_end",
            "at_end_chance",
            "align_rate",
            "align_diagonal",
            "teen_reorder",
            "mine_right",
        ):
            assert key in r, key


def test_every_ablation_has_every_seed():
    rows = _rows(sweep_ch08.ABLATION_OUT)
    keys = sorted((r["ablation"], r["seed"]) for r in rows)
    assert keys == sorted(
        (name, seed)
        for name in sweep_ch08.ABLATIONS
        for seed in sweep_ch08.SEEDS
    )


@pytest.mark.exact
@pytest.mark.slow
def test_seed_0_retrained_matches_its_stored_row():
    stored = _rows(sweep_ch08.OUT)[0]
    row = sweep_ch08.run_seed(0)
    assert abs(row["valid_last"] - stored["valid_last"]) < 0.01
    assert abs(row["exact"] - stored["exact"]) < 0.01
    for size, acc in stored["by_size"].items():
        assert abs(row["by_size"][int(size)] - acc) < 0.03, size
    for n, acc in stored["by_length"].items():
        if stored["n_by_length"][n] >= 100:  # enough numbers to compare
            assert abs(row["by_length"][int(n)] - acc) < 0.03, n
    assert abs(row["align_rate"] - stored["align_rate"]) < 0.03


@pytest.mark.exact
@pytest.mark.slow
def test_one_ablation_retrained_matches_its_stored_row():
    stored = next(
        r
        for r in _rows(sweep_ch08.ABLATION_OUT)
        if (r["ablation"], r["seed"]) == ("no_warmup", 0)
    )
    row = sweep_ch08.run_ablation(0, "no_warmup")
    assert abs(row["exact"] - stored["exact"]) < 0.02
    assert abs(row["ppl"] - stored["ppl"]) < 0.02
    assert row["valid_step"] == stored["valid_step"]
    for a, b in zip(row["valid_exact"], stored["valid_exact"]):
        assert abs(a - b) < 0.05
