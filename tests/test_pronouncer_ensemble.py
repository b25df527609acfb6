"""Chapter 8's ensemble (tools/runs/pronouncer_ensemble.py) belongs to
today's split and stored members; its totals are its per-word outcomes', and
it scores below the classic baseline on the same test words."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from proof.runtime import split_fingerprint
from tools.runs import pronouncer_ensemble as pe
from tools.runs import train_pronouncer
from tools.runs.decode_pronouncer import model_hash
from tools.runs.g2p_baselines import BASELINE


@pytest.fixture(scope="module")
def study() -> dict:
    return json.loads(pe.OUT.read_text())


def _log(seed: int) -> dict:
    """The training log stored beside a member's weights."""
    return json.loads(
        pe.member_path(seed).with_name("pronouncer.json").read_text()
    )


def test_the_study_is_of_todays_split_and_members(study):
    assert study["split"] == split_fingerprint()
    assert study["seeds"] == list(range(len(study["seeds"])))
    for seed in study["seeds"]:
        assert study["member_sha256"][str(seed)] == model_hash(
            pe.member_path(seed)
        )


def test_each_member_is_a_complete_run_of_the_stored_recipe(study):
    for seed in study["seeds"][1:]:
        log = _log(seed)
        cfg = dataclasses.replace(train_pronouncer.CONFIG, seed=seed)
        assert log["complete"] and log["meta"]["config"] == (cfg.as_dict())
        assert log["seconds"] < 60 * 60
        assert log["numeric_mode"]["mode"] == "portable"


def test_the_groups_cover_each_size_once(study):
    seeds = study["seeds"]
    sizes = sorted({len(r["seeds"]) for r in study["rows"]})
    assert sizes[0] == 1 and sizes[-1] == len(seeds)
    for size in sizes:
        rows = [r["seeds"] for r in study["rows"] if len(r["seeds"]) == size]
        used = [s for group in rows for s in group]
        assert used == seeds[: len(used)] and len(used) > len(seeds) - size


def test_the_whole_ensemble_beats_every_member_and_scores_below_the_baseline(
    study,
):
    whole = study["rows"][-1]
    right = whole["test_right"]
    assert len(right) == study["split"]["sizes"]["test"]
    assert right.count("0") / len(right) == pytest.approx(whole["test"]["wer"])
    alone = [r["test"]["wer"] for r in study["rows"] if len(r["seeds"]) == 1]
    assert whole["test"]["wer"] < min(alone)
    baseline = json.loads(BASELINE.read_text())
    assert whole["test"]["wer"] < baseline["test"]["wer"]


@pytest.mark.exact
def test_the_last_member_replays_bit_for_bit(study):
    from tests.test_pronouncer_runs import STEPS, _replay

    seed = study["seeds"][-1]
    log = _log(seed)
    cfg = dataclasses.replace(train_pronouncer.CONFIG, seed=seed)
    stored = np.array(log["train_loss"][:STEPS], dtype=np.float32)
    assert np.array_equal(_replay(cfg, STEPS), stored)


def test_seed_0_is_the_stored_pronouncer(study):
    stored = _log(0)
    assert study["rows"][0]["seeds"] == [0]
    # decoded in blocks here, in one call there: the same words right
    assert study["rows"][0]["test"]["wer"] == stored["test"]["wer"]
