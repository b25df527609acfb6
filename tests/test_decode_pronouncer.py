"""Chapter 9's decoding study (tools/runs/decode_pronouncer.py) belongs to
today's split and stored model, its totals are its per-word codes'; the
splice test (utils.splices) on small cases, some where it must say no."""

from __future__ import annotations

import hashlib
import json

import pytest

from proof.runtime import split_fingerprint
from tools.runs import decode_pronouncer as dp
from utils.splices import aligned_cuts, splice
from utils.stats import mcnemar

EXIT = [("EH", "G", "Z", "IH", "T"), ("EH", "K", "S", "AH", "T")]


def _study() -> dict:
    return json.loads(dp.OUT.read_text())


def test_the_study_was_made_on_todays_split_and_model():
    study = _study()
    assert study["split"] == split_fingerprint()
    weights = dp.MODEL.read_bytes()
    assert study["model_sha256"] == hashlib.sha256(weights).hexdigest()


def test_the_totals_are_what_the_per_word_codes_say():
    study = _study()
    codes = study["codes"]
    assert len(codes) == study["split"]["sizes"]["test"]
    fixes = sum(
        dp.has(c, "beam_right") and not dp.has(c, "greedy_right")
        for c in codes
    )
    breaks = sum(
        dp.has(c, "greedy_right") and not dp.has(c, "beam_right")
        for c in codes
    )
    assert (fixes, breaks) == (study["fixes"], study["breaks"])
    wrong = sum(not dp.has(c, "greedy_right") for c in codes)
    assert wrong / len(codes) == pytest.approx(study["wer"]["greedy"])
    groups = study["groups"]
    for key in ("n", "greedy_wrong", "search_errors", "greedy_splices"):
        assert groups["all"][key] == (
            groups["ambiguous"][key] + groups["rest"][key]
        )
    # a splice needs two readings: none outside the ambiguous words
    assert groups["rest"]["greedy_splices"] == 0
    assert study["mcnemar"] == mcnemar(fixes, breaks)


def test_a_splice_joins_two_readings_where_they_line_up():
    got = splice(("EH", "K", "S", "IH", "T"), EXIT)
    assert got == (EXIT[1], EXIT[0], 3, 3)
    # different lengths: grandfathers with and without D
    a = tuple("G R AE N D F AA DH ER Z".split())
    b = tuple("G R AE N F AA DH ER Z".split())
    assert (5, 4) in aligned_cuts(a, b) and (5, 5) not in aligned_cuts(a, b)
    # readings of different lengths: the start of y joined to the end of x
    x, y = ("P", "Q", "R", "S"), ("P", "T", "R", "S", "U")
    assert splice(("P", "T", "R", "S"), [x, y]) == (y, x, 2, 2)


def test_what_is_not_a_splice():
    assert splice(EXIT[0], EXIT) is None  # a right answer
    assert splice(("EH", "K", "S", "T"), EXIT) is None  # a dropped phoneme
    # cutting after R in one and after R IY in the other lines nothing up
    assert splice(("R", "D"), [("R", "EH", "D"), ("R", "IY", "D")]) is None
    assert splice(("R", "AY", "D"), [("R", "EH", "D")]) is None  # one ref


def test_splice_rejects_strings():
    with pytest.raises(TypeError, match="str"):
        splice("exit", EXIT)
    with pytest.raises(TypeError, match="a must hold tokens"):
        aligned_cuts("ab", ("a", "b"))
