"""The retired numbers task (tools/runs/numbers_task.py, for chapter 9's
sweep): hand-checked translations, disjoint splits, balancing by size."""

from __future__ import annotations

import pytest

from tools.runs.numbers_task import MAX_NUMBER, chinese_numerals, english_words
from tools.runs.numbers_task import make_splits
from tests.conftest import raises

# Written by hand (not by the code under test): number | English | Chinese.
TABLE = """
7 | seven | 七
10 | ten | 十
19 | nineteen | 十九
40 | forty | 四十
101 | one hundred and one | 一百零一
110 | one hundred and ten | 一百一十
1001 | one thousand and one | 一千零一
2020 | two thousand and twenty | 二千零二十
10010 | ten thousand and ten | 一万零一十
20017 | twenty thousand and seventeen | 二万零一十七
30600 | thirty thousand six hundred | 三万零六百
12305 | twelve thousand three hundred and five | 一万二千三百零五
45678 | forty five thousand six hundred and seventy eight | 四万五千六百七十八
99999 | ninety nine thousand nine hundred and ninety nine | 九万九千九百九十九
"""
HAND = [
    (int(n), en, zh)
    for n, en, zh in (row.split(" | ") for row in TABLE.strip().splitlines())
]


@pytest.mark.parametrize("n, en, zh", HAND)
def test_hand_translated_numbers(n, en, zh):
    assert english_words(n) == en.split()
    assert chinese_numerals(n) == list(zh)


def _chinese_value(chars):
    """Chinese numerals back to an int (an independent parser)."""
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")}
    units = {"十": 10, "百": 100, "千": 1000, "万": 10000}
    total, digit = 0, None
    for c in chars:
        if c in digits:
            digit = digits[c]
        else:
            total += (1 if digit is None else digit) * units[c]
            digit = None
    return total + (digit or 0)


def test_every_number_reads_back_and_is_unique():
    seen = set()
    for n in range(1, MAX_NUMBER + 1):
        zh = chinese_numerals(n)
        assert _chinese_value(zh) == n
        assert zh[0] != "零" and zh[-1] != "零" and "零零" not in "".join(zh)
        seen.add(" ".join(english_words(n)))
    assert len(seen) == MAX_NUMBER


def test_splits_are_disjoint_cover_everything_and_long_is_longer():
    s = make_splits(seed=0)
    keys = {k: {" ".join(src) for src, _ in v} for k, v in s.items()}
    assert set(s) == {"train", "valid", "test", "long"}
    assert sum(len(v) for v in keys.values()) == MAX_NUMBER
    names = list(keys)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not keys[a] & keys[b], (a, b)
    longest_train = max(
        len(src) for src, _ in s["train"] + s["valid"] + s["test"]
    )
    assert min(len(src) for src, _ in s["long"]) > longest_train
    assert len(s["valid"]) == 1000 and len(s["test"]) == 2000


def test_splits_are_deterministic_and_depend_on_the_seed():
    assert make_splits(seed=0)["test"][:50] == make_splits(seed=0)["test"][:50]
    assert make_splits(seed=0)["test"][:50] != make_splits(seed=1)["test"][:50]


def test_bad_numbers():
    raises(ValueError, "n must be", english_words, 0)
    raises(ValueError, "at most", chinese_numerals, MAX_NUMBER + 1)
    raises(TypeError, "n must be an int", chinese_numerals, 5.0)
    raises(ValueError, "n_valid", make_splits, n_valid=60000)


def test_read_english_and_size_classes_agree_with_the_generator():
    from tools.runs.numbers_task import SIZE_CLASSES, read_english, size_class

    for n in (1, 19, 99, 100, 999, 1000, 1005, 9999, 10000, 12305, 99999):
        words = english_words(n)
        assert read_english(words) == n
        lo, hi = SIZE_CLASSES[size_class(words)]
        assert lo <= n <= hi


def test_balance_by_size_repeats_rare_sizes_only():
    from collections import Counter

    from tools.runs.numbers_task import balance_by_size, size_class

    train = make_splits(seed=0)["train"]
    assert balance_by_size(train, 0.0) == train
    balanced = balance_by_size(train, 0.1)
    before = Counter(size_class(s) for s, _ in train)
    after = Counter(size_class(s) for s, _ in balanced)
    assert before[0] < 0.01 * len(train)  # 1-99: rare before
    for c in after:
        assert after[c] >= 0.1 * len(train)  # every class filled
        assert after[c] % before[c] == 0  # by whole repetitions
    assert after[3] == before[3]  # the common class is not repeated
    assert {(tuple(s), tuple(t)) for s, t in balanced} == {
        (tuple(s), tuple(t)) for s, t in train
    }  # the same numbers: the splits stay disjoint
