"""PPMd as a baseline: honest primed sizes (a fork gives the bytes a fresh
encoding gives), priming helps, bad settings refused; stored rows redone."""

from __future__ import annotations

import json

import pytest

from utils import ppmd
from utils import shakespeare as sh
from tests.conftest import raises

MEMORY = 64 << 20  # enough for these slices


@pytest.fixture(scope="module")
def slices() -> tuple[str, list[str]]:
    works = sh.load_works()
    prime = sh.split_works("train")[:200_000] + sh.SEPARATOR
    return prime, [works["macbeth"][:20_000], works["tempest"][:20_000]]


def test_forked_encoder_gives_the_same_bytes(slices):
    prime, texts = slices
    forked = ppmd.primed_streams(prime, texts, 8, MEMORY)
    again = ppmd.primed_streams(prime, texts, 8, MEMORY, fork=False)
    assert forked == again


def test_streams_decode_back_to_the_text(slices):
    prime, texts = slices
    _, streams = ppmd.primed_streams(prime, texts, 8, MEMORY)
    whole = (prime + texts[1]).encode()
    assert ppmd.decompress(streams[1], len(whole), 8, MEMORY) == whole
    try:  # the check can fail: other settings do not decode it
        wrong = ppmd.decompress(streams[1], len(whole), 6, MEMORY)
    except ValueError:  # "corrupted input data"
        wrong = None
    assert wrong != whole


def test_priming_helps(slices):
    prime, texts = slices
    primed = ppmd.primed_bits(prime, texts, 8, MEMORY)
    alone = ppmd.primed_bits("", texts, 8, MEMORY)
    for p, a, t in zip(primed, alone, texts):
        assert 1.0 < p / len(t) < a / len(t) - 0.2 < 4.0


def test_bad_arguments():
    raises(ValueError, "order must be an int >= 2", ppmd.compress, "abc", 1)
    raises(ValueError, "order must be <= 64, got 65", ppmd.compress, "abc", 65)
    raises(ValueError, "memory", ppmd.compress, "abc", 6, memory=1000)
    raises(ValueError, "memory", ppmd.compress, "abc", 6, memory=1 << 32)
    raises(TypeError, "data must be a str or bytes", ppmd.compress, 3, 6)
    with pytest.raises(TypeError, match="texts must be a list"):
        ppmd.primed_bits("abc", "def", 6)
    raises(TypeError, r"texts\[1\]", ppmd.primed_bits, "abc", ["def", None], 6)
    raises(TypeError, "fork", ppmd.primed_bits, "abc", ["def"], 6, fork="yes")


def _stored() -> dict:
    from tools.runs import ch11_baselines

    return json.loads(ch11_baselines.OUT.read_text())["ppmd"]


def test_stored_ppmd_rows_recomputed():
    """The chosen order's bits, play by play, exactly (PPMd counts in
    integers); its settings are what the table says."""
    import pyppmd

    stored = _stored()
    assert stored["pyppmd"] == pyppmd.__version__
    assert stored["memory"] == ppmd.MEMORY
    assert all(stored["same_bytes_at_256MiB"].values())
    assert stored["lossless"]["ok"]
    rows = {row["order"]: row for row in stored["rows"]}
    best = min(rows.values(), key=lambda row: row["valid"])
    assert stored["best_on_valid"] == best["order"]
    for row in rows.values():  # the training works help at every order
        assert row["valid"] < row["valid_unprimed"]
        assert row["test"] < row["test_unprimed"]
    assert best["test"] < best["test_unprimed"] - 0.4  # at 8, by 0.48
    plays = {n: sh.load_works()[n] for n in best["bits"]}
    prime = sh.split_works("train") + sh.SEPARATOR
    texts = list(plays.values())
    primed = ppmd.primed_bits(prime, texts, best["order"])
    alone = ppmd.primed_bits("", texts, best["order"])
    for name, p, a in zip(plays, primed, alone):
        assert best["bits"][name] == {"primed": p, "unprimed": a}, name
    chars = sum(len(sh.load_works()[n]) for n in sh.VALID_WORKS)
    valid = sum(best["bits"][n]["primed"] for n in sh.VALID_WORKS) / chars
    assert valid == pytest.approx(best["valid"], abs=1e-5)
