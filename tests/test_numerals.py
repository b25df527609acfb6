"""Chapter 9's second convention: financial numerals, the valid writings,
and an independent reader that accepts exactly those."""

from __future__ import annotations

import random

import pytest

from tools.runs.numbers_task import AMBIGUOUS_CHARS, FINANCIAL_CHARS
from tools.runs.numbers_task import MAX_NUMBER, chinese_financial
from tools.runs.numbers_task import is_valid_writing, mixed_targets
from tools.runs.numbers_task import valid_writings
from utils.numerals import convention_of, mixes_conventions, read_numeral

# Written by hand (not by the code under test): number, financial writing.
HAND = [
    (7, "柒"),
    (10, "壹拾"),
    (15, "壹拾伍"),
    (40, "肆拾"),
    (101, "壹佰零壹"),
    (115, "壹佰壹拾伍"),
    (2026, "贰仟零贰拾陆"),
    (10010, "壹万零壹拾"),
    (12305, "壹万贰仟叁佰零伍"),
    (99999, "玖万玖仟玖佰玖拾玖"),
]


@pytest.mark.parametrize("n, text", HAND)
def test_financial_writing_by_hand(n, text):
    assert chinese_financial(n) == list(text)
    assert read_numeral(text) == n


def test_every_number_reads_back_from_both_writings_and_they_differ():
    seen = set()
    for n in range(1, MAX_NUMBER + 1):
        everyday, financial = valid_writings(n)
        assert everyday != financial
        assert read_numeral(everyday) == n and read_numeral(financial) == n
        assert convention_of(everyday) == "everyday"
        assert convention_of(financial) == "financial"
        seen.update(("".join(everyday), "".join(financial)))
    assert len(seen) == 2 * MAX_NUMBER  # no two numbers share a writing


@pytest.mark.parametrize(
    "text",
    [
        "一十五",  # everyday drops a leading ten's one
        "拾伍",  # financial keeps it
        "二仟",  # mixed
        "一千零零五",  # one 零 per gap
        "一千五",  # a bare digit only in the ones place
        "二百零",  # trailing 零
        "零五",
        "十十",
        "五五",
        "万",
        "",
        "一万一万",
        "一百一千",  # places must fall
        "一千零五十零",
        "一千五十",  # a gap needs its 零
    ],
)
def test_malformed_writings_are_rejected(text):
    assert read_numeral(text) is None


def test_random_strings_parse_only_when_they_are_a_valid_writing():
    rng, alphabet, hits = random.Random(0), list(AMBIGUOUS_CHARS), 0
    for _ in range(50_000):
        s = [rng.choice(alphabet) for _ in range(rng.randint(1, 9))]
        n = read_numeral(s)
        if n is not None:
            hits += 1
            assert s in valid_writings(n)
    for _ in range(20_000):  # one character changed in a valid writing
        n = rng.randint(1, MAX_NUMBER)
        w = list(rng.choice(valid_writings(n)))
        w[rng.randrange(len(w))] = rng.choice(alphabet)
        m = read_numeral(w)
        assert m is None or w in valid_writings(m)
    assert hits > 1000  # the random strings did reach the accepting paths


def test_mixing_and_validity():
    assert mixes_conventions("一万贰仟") and not mixes_conventions("零万")
    assert convention_of("零万") is None
    assert is_valid_writing("贰仟零贰拾陆", 2026)
    assert not is_valid_writing("贰仟零贰拾陆", 2025)
    with pytest.raises(ValueError):
        is_valid_writing("一", 0)
    with pytest.raises(TypeError):
        is_valid_writing("一", 1.0)


def test_mixed_targets_are_seeded_valid_and_use_both_conventions():
    from tools.runs.numbers_task import chinese_numerals, english_words

    pairs = [(english_words(n), chinese_numerals(n)) for n in range(1, 2001)]
    a, b = mixed_targets(pairs, 3), mixed_targets(pairs, 3)
    assert a == b and a != mixed_targets(pairs, 4)
    kinds = [convention_of(t) for _, t in a]
    assert all(read_numeral(t) == n for n, (_, t) in enumerate(a, start=1))
    assert 0.45 < kinds.count("financial") / len(kinds) < 0.55
    with pytest.raises(ValueError):
        mixed_targets([(["one"], list("壹"))], 0)


def test_financial_tables():
    assert len(FINANCIAL_CHARS) == len(set(FINANCIAL_CHARS)) == 12
