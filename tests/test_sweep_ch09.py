"""The stored seed sweep of chapter 9 (book/data/ch09_sweep.json) is what the
code computes: seed 0's autoregressive translator is retrained here (about
20 s) and its learning curve and test results are compared with the stored
row. pytest runs in the portable numeric mode, the mode the sweep was made
in; the tolerances leave room for a slightly different portable mode."""

from __future__ import annotations

import json

import pytest

from tools.runs import sweep_ch09
from tools.runs import ambiguous as amb


def _rows():
    return json.loads(sweep_ch09.OUT.read_text())["rows"]


def test_the_sweep_has_five_seeds_and_every_number_the_chapter_reads():
    rows = _rows()
    assert [r["seed"] for r in rows] == list(sweep_ch09.SEEDS)
    for r in rows:
        for key in ("ar_curve", "nar_curve", "ppl_ar", "ppl_early"):
            assert key in r, key
        for part in ("ar", "early"):
            for key in ("g_valid", "b_valid", "search", "model", "too_long"):
                assert key in r[part], (part, key)
        assert len(r["temperature"]) == len(amb.TEMPERATURES)
        assert len(r["top_p"]) == len(amb.TOP_PS)
        assert {"valid", "mixed", "bleu"} <= set(r["nar"])


@pytest.mark.exact
@pytest.mark.slow
def test_seed_0_retrained_matches_its_stored_row():
    stored = _rows()[0]
    data = amb.task(0)
    model, curve, _ = amb.train(0, data=data)
    assert [s for s, _ in curve] == [s for s, _ in stored["ar_curve"]]
    for (_, got), (_, want) in zip(curve, stored["ar_curve"]):
        assert abs(got - want) < 0.05
    src = amb.sources(data["test"])
    greedy = amb.greedy(model, src)
    assert (
        abs(amb.valid_rate(greedy, data["test"]) - stored["ar"]["g_valid"])
        < 0.03
    )
    kinds = amb.error_kinds(model, src, greedy, data["test"])
    assert abs(kinds["search"] - stored["ar"]["search"]) <= 5
    assert abs(kinds["model"] - stored["ar"]["model"]) <= 10


def test_the_run_is_train_pronouncers_on_the_same_data():
    """``amb.train`` adds curves and a snapshot to chapter 8's run,
    and changes nothing else: same config and data, same weights."""
    import dataclasses

    import torch

    from tools.runs.numbers_task import balance_by_size
    from utils.pronouncer import train_pronouncer

    data = amb.task(0)
    balanced = balance_by_size(data["train"], amb.MIN_SIZE_SHARE)
    splits = {"train": balanced, "valid": data["train"][:50]}
    cfg = dataclasses.replace(amb.RECIPE, steps=30, eval_every=30)
    theirs, _ = train_pronouncer(
        cfg, splits, (amb.VOCAB_SRC, amb.VOCAB_TGT), progress=False
    )
    ours, _, _ = amb.train(0, steps=30, data=data)
    for (name, a), b in zip(
        theirs.state_dict().items(), ours.state_dict().values()
    ):
        assert torch.equal(a, b), name
