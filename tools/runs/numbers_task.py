"""The retired numbers task, for ``tools/runs/ambiguous.py`` and
``sweep_ch09.py``: every number 1..99,999 as a pair (British English words,
Chinese numerals), split and balanced by size, plus chapter 9's second
convention, the financial numerals (大写).

    "twelve thousand three hundred and five" -> 一 万 二 千 三 百 零 五
                                             or 壹 万 贰 仟 叁 佰 零 伍

``utils.numerals.read_numeral`` reads either writing back.
"""

from __future__ import annotations

import functools
import math
import random
from typing import Sequence

from utils.batches import Vocab
from utils.checks import check_at_most, check_int
from utils.numerals import read_numeral

Pair = tuple[list[str], list[str]]

MAX_NUMBER = 99_999

_ONES = [""] + "one two three four five six seven eight nine".split()
_TEENS = (
    "ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen"
).split()
_TENS = ["", ""] + (
    "twenty thirty forty fifty sixty seventy eighty ninety".split()
)
_DIGITS_ZH = "零一二三四五六七八九"


def _check_number(n) -> int:
    return check_at_most(check_int(n, "n", 1), "n", MAX_NUMBER)


def _below_hundred(n: int) -> list[str]:
    """1..99 in words: "seven", "thirteen", "forty two"."""
    if n < 10:
        return [_ONES[n]]
    if n < 20:
        return [_TEENS[n - 10]]
    return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])


def english_words(n: int) -> list[str]:
    """British English words of ``n`` (1..99,999), one token per word:
    "and" before the last two digits when something bigger precedes them
    (1005: "one thousand and five")."""
    n = _check_number(n)
    thousands, hundreds, rest = n // 1000, n // 100 % 10, n % 100
    words: list[str] = []
    if thousands:
        words += _below_hundred(thousands) + ["thousand"]
    if hundreds:
        words += [_ONES[hundreds], "hundred"]
    if rest:
        if words:
            words.append("and")
        words += _below_hundred(rest)
    return words


def chinese_numerals(n: int) -> list[str]:
    """Chinese numerals of ``n`` (1..99,999), one token per character.

    One 零 stands for any run of zeros between two non-zero digits; trailing
    zeros are silent (1050 -> 一 千 零 五 十, 1500 -> 一 千 五 百). A leading
    ten is 十, not 一 十 (15 -> 十 五), but inside a number it keeps its 一
    (115 -> 一 百 一 十 五).
    """
    n = _check_number(n)
    digits = [int(c) for c in str(n)]
    units = ["", "十", "百", "千", "万"]
    out: list[str] = []
    gap = False
    for i, d in enumerate(digits):
        place = len(digits) - 1 - i
        if d == 0:
            gap = bool(out)  # a zero after a non-zero digit opens a gap
            continue
        if gap:
            out.append("零")
            gap = False
        if not (d == 1 and place == 1 and not out):  # "十五", not "一十五"
            out.append(_DIGITS_ZH[d])
        if place:
            out.append(units[place])
    return out


# The vocabularies' tokens, fixed so they do not depend on a split.
SOURCE_WORDS = tuple(filter(None, _ONES + _TEENS + _TENS))
SOURCE_WORDS += ("hundred", "thousand", "and")
TARGET_CHARS = tuple(_DIGITS_ZH) + ("十", "百", "千", "万")

# The financial numerals (大写): digits 1-9, then 十, 百, 千. 零 and 万 are
# shared with the everyday numerals.
FINANCIAL_CHARS = tuple("壹贰叁肆伍陆柒捌玖拾佰仟")
AMBIGUOUS_CHARS = TARGET_CHARS + FINANCIAL_CHARS


def chinese_financial(n: int) -> list[str]:
    """Financial numerals of ``n``: the everyday writing in the financial
    characters, except that a leading ten keeps its one (15 -> 壹 拾 伍)."""
    n = _check_number(n)
    swap = dict(zip("一二三四五六七八九十百千", FINANCIAL_CHARS))
    out = [swap.get(c, c) for c in chinese_numerals(n)]
    if out[0] == "拾":  # 10..19: the one is written
        out.insert(0, "壹")
    return out


def valid_writings(n: int) -> list[list[str]]:
    """Every valid writing of ``n``: everyday, then financial."""
    return [chinese_numerals(n), chinese_financial(n)]


def is_valid_writing(chars, n: int) -> bool:
    """Is ``chars`` a valid writing of ``n`` (in one convention)?"""
    return read_numeral(chars) == _check_number(n)


def mixed_targets(pairs, seed: int) -> list:
    """``pairs`` of (source, everyday target) -> the same sources, each with
    a target drawn from its valid writings (a seeded 50/50 choice)."""
    seed = check_int(seed, "seed", 0)
    rng = random.Random(seed)
    out = []
    for src, tgt in pairs:
        n = read_numeral(tgt)
        if n is None or list(tgt) != chinese_numerals(n):
            raise ValueError(f"not an everyday writing: {' '.join(tgt)}")
        out.append((list(src), valid_writings(n)[rng.random() < 0.5]))
    return out


@functools.lru_cache(maxsize=1)
def _all_pairs() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    return tuple(
        (tuple(english_words(n)), tuple(chinese_numerals(n)))
        for n in range(1, MAX_NUMBER + 1)
    )


def make_splits(
    seed: int = 0,
    max_train_words: int = 6,
    n_valid: int = 1000,
    n_test: int = 2000,
) -> dict[str, list[Pair]]:
    """Every number 1..99,999 as a pair of token lists ``(english words,
    chinese characters)``, in disjoint splits ``{"train", "valid", "test",
    "long"}``: ``"long"`` holds the numbers with more than
    ``max_train_words`` words, the others are shuffled with ``seed`` into
    ``n_valid`` validation pairs, ``n_test`` test pairs and the rest."""
    check_int(seed, "seed", 0)
    check_int(max_train_words, "max_train_words", 1)
    check_int(n_valid, "n_valid", 0)
    check_int(n_test, "n_test", 0)
    short, long = [], []
    for src, tgt in _all_pairs():
        pair = (list(src), list(tgt))  # fresh lists: callers may change them
        (short if len(src) <= max_train_words else long).append(pair)
    limit = f"{len(short) - 1}, to leave training data"
    check_at_most(n_valid + n_test, "n_valid + n_test", len(short) - 1, limit)
    random.Random(seed).shuffle(short)
    return {
        "train": short[n_valid + n_test :],
        "valid": short[:n_valid],
        "test": short[n_valid : n_valid + n_test],
        "long": long,
    }


# Number sizes, by digits: accuracy is reported per class, and training can
# be balanced over them (numbers below 1,000 are 1% of 1..99,999).
SIZE_CLASSES = ((1, 99), (100, 999), (1000, 9999), (10000, 99999))

_WORD_VALUE = {
    **{w: i for i, w in enumerate(SOURCE_WORDS[:19], 1)},  # one..nineteen
    **{w: 10 * i for i, w in enumerate(SOURCE_WORDS[19:27], 2)},  # twenty..
}


def read_english(words: Sequence[str]) -> int:
    """English number words -> int, read independently of the generator:
    ``["twelve", "thousand", "and", "five"]`` -> 12005."""
    total = current = 0
    for w in words:
        if w == "hundred":
            current *= 100
        elif w == "thousand":
            total, current = total + current * 1000, 0
        elif w != "and":
            current += _WORD_VALUE[w]
    return total + current


def size_class(words: Sequence[str]) -> int:
    """Index into ``SIZE_CLASSES`` of the number that ``words`` name."""
    return max(len(str(read_english(words))), 2) - 2  # digits 1-2 -> 0


def balance_by_size(pairs: Sequence[Pair], min_share: float) -> list[Pair]:
    """``pairs`` with the pairs of rare number sizes repeated, so that each
    size class present makes up at least about ``min_share`` of the result
    (ordered by class: ``group_pairs`` shuffles)."""
    if min_share == 0:
        return list(pairs)
    by_class: dict[int, list[Pair]] = {}
    for pair in pairs:
        by_class.setdefault(size_class(pair[0]), []).append(pair)
    out = []
    for _, group in sorted(by_class.items()):
        times = max(1, math.ceil(min_share * len(pairs) / len(group)))
        out += group * times
    return out


def source_vocab() -> Vocab:
    """The English words of the task."""
    return Vocab(SOURCE_WORDS)


def target_vocab() -> Vocab:
    """The Chinese characters of the task."""
    return Vocab(TARGET_CHARS)
