"""Chapter 9's rescoring (book/data/g2p_rescored.json, tools/runs/
g2p_rescore.py) belongs to today's files and its totals are what its per-word
record says. Nothing here runs Phonetisaurus: ``make rescore`` does."""

from __future__ import annotations

import json
import math

import pytest

from tools.runs import g2p_rescore as rs
from tools.runs import pronouncer_ensemble as pe
from tools.runs.decode_pronouncer import model_hash, references
from tools.runs.g2p_baselines import BASELINE
from proof.runtime import split_fingerprint as fingerprint
from utils import pronunciation as pr
from utils.pronouncer import STORED_PRONOUNCER, load_pronouncer


@pytest.fixture(scope="module")
def stored() -> dict:
    return json.loads(rs.OUT.read_text())


def test_it_is_of_todays_split_members_and_tool(stored):
    assert stored["split"] == fingerprint()
    for seed in rs.SEEDS:
        path = pe.member_path(seed)
        assert stored["member_sha256"][str(seed)] == model_hash(path)
    assert stored["stored_sha256"] == model_hash(STORED_PRONOUNCER)
    base = json.loads(BASELINE.read_text())
    for key in ("tool", "version"):  # the baseline's Phonetisaurus
        assert stored[key] == base[key]
    assert stored["decode"]["nbest"] == rs.NBEST > 1
    assert stored["numeric_mode"]["mode"] == "portable"


def test_every_run_is_stored_with_its_validation_choice(stored):
    assert [r["run"] for r in stored["rows"]] == rs.RUNS
    for r in stored["rows"]:
        grid = r["valid_wer"]
        assert list(map(float, grid)) == stored["grid"]
        assert r["lam"] == float(min(grid, key=grid.get)), r["run"]
        assert 0.1 < r["test"]["wer"] < 0.35
        assert 0.01 < r["test"]["per"] < r["test"]["wer"] / 2


def test_the_totals_match_the_per_word_record(stored):
    for r in stored["rows"]:
        if "test_right" in r:
            right = r["test_right"]
            assert len(right) == 12000 and set(right) <= {"0", "1"}
            assert math.isclose(1 - right.count("1") / 12000, r["test"]["wer"])
    assert {r["run"] for r in stored["rows"] if "test_right" in r} == {
        "stored",
        "e7",
    }


def test_the_parts_of_the_gain_are_ordered(stored):
    """The combination beats each of its two sources; none beats the oracle
    (a right pronunciation anywhere in the lists)."""
    parts = stored["rows"][0]["parts"]
    alone = ("pronouncer_alone", "cost_alone", "first_listed", "greedy")
    assert all(parts["combined"] < parts[k] for k in alone)
    assert parts["oracle"] < min(v for k, v in parts.items() if k != "oracle")


def test_the_live_lists_rescore_to_the_record(stored):
    live = stored["live"]
    n = live["n"]
    test = pr.split_words()["test"][:n]
    refs = references(test)
    assert len(live["nbest"]) == len(live["log_p"]) == n
    greedy = pr.pronounce(load_pronouncer()[0], [w for w, _ in test], False)
    first = stored["rows"][0]  # the stored model's
    picked = rs.outputs(live["nbest"], live["log_p"], first["lam"], greedy)
    right = "".join("1" if h in r else "0" for h, r in zip(picked, refs))
    assert right == first["test_right"][:n]
    for cands, lp in zip(live["nbest"], live["log_p"]):
        assert len(cands) == len(lp) <= rs.NBEST
        # distinct pronunciations (--accumulate), each a cost -log p > 0
        assert len({tuple(p) for p, _ in cands}) == len(cands)
        assert all(c > 0 for _, c in cands)
        assert all(x < 0 for x in lp)  # log-probabilities


def test_pick_takes_the_best_combined_score():
    cands = [[["A"], 1.0], [["B"], 2.0]]
    assert rs.pick(cands, [-3.0, -1.0], 0.0) == 1  # the Transformer alone
    assert rs.pick(cands, [-3.0, -1.0], 3.0) == 0  # Phonetisaurus weighs more
    assert rs.pick([], [], 1.0) is None
    fallback = [("G",)]
    assert rs.outputs([[]], [[]], 1.0, fallback) == [("G",)]
