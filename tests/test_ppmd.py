"""PPMd as a baseline: the primed sizes are honest (forking the primed
encoder gives the bytes that encoding everything again gives, the streams
decode back to the text), priming helps, bad settings are refused."""

from __future__ import annotations

import pytest

from utils import ppmd
from utils import shakespeare as sh

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
    with pytest.raises(ValueError, match="order must be an int >= 2"):
        ppmd.compress("abc", 1)
    with pytest.raises(ValueError, match="order must be <= 64, got 65"):
        ppmd.compress("abc", 65)
    with pytest.raises(ValueError, match="memory"):
        ppmd.compress("abc", 6, memory=1000)
    with pytest.raises(ValueError, match="memory"):
        ppmd.compress("abc", 6, memory=1 << 32)
    with pytest.raises(TypeError, match="data must be a str or bytes"):
        ppmd.compress(3, 6)
    with pytest.raises(TypeError, match="texts must be a list"):
        ppmd.primed_bits("abc", "def", 6)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        ppmd.primed_bits("abc", ["def", None], 6)
    with pytest.raises(TypeError, match="fork"):
        ppmd.primed_bits("abc", ["def"], 6, fork="yes")
