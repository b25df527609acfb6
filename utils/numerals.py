"""The task's two languages, written by code: English number words and
Chinese numerals for 1..99,999.

    "twelve thousand three hundred and five"  ->  一 万 二 千 三 百 零 五

It has the structure that makes translation hard, in miniature:

- **reordering and non-monotonic alignment**: Chinese groups digits by ten
  thousands (万), English by thousands, so "twelve thousand" becomes
  一 万 二 千: the word "twelve" is split around 万;
- **one-to-many and many-to-one tokens**: "seventy" -> 七 十,
  "thirteen" -> 十 三, while "hundred and" -> 百;
- **context rules**: 零 marks a gap of zeros (1005 -> 一 千 零 五), and ten is
  十 alone at the start of a number but 一 十 inside it (15 -> 十 五,
  115 -> 一 百 一 十 五).

British English: "and" before the last two digits. ``utils.translation``
turns these pairs into splits, vocabularies and batches.
"""

from __future__ import annotations

from .checks import check_int

__all__ = [
    "MAX_NUMBER",
    "english_words",
    "chinese_numerals",
    "SOURCE_WORDS",
    "TARGET_CHARS",
    "PINYIN",
]

MAX_NUMBER = 99_999

_ONES = [
    "",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
]
_TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = [
    "",
    "",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
]
_DIGITS_ZH = "零一二三四五六七八九"


def _check_number(n) -> int:
    check_int(n, "n", 1)
    if n > MAX_NUMBER:
        raise ValueError(f"n must be at most {MAX_NUMBER}, got {n}")
    return int(n)


def _below_hundred(n: int) -> list[str]:
    """1..99 in words: "seven", "thirteen", "forty two"."""
    if n < 10:
        return [_ONES[n]]
    if n < 20:
        return [_TEENS[n - 10]]
    return [_TENS[n // 10]] + ([_ONES[n % 10]] if n % 10 else [])


def english_words(n: int) -> list[str]:
    """British English words of ``n`` (1..99,999), one token per word.

    ``english_words(12305)`` -> ``twelve thousand three hundred and five``.
    "and" comes before the last two digits when something bigger precedes
    them (1005: "one thousand and five").
    """
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

    Digits are read in groups of ten thousand (万):
    12305 -> 一 万 二 千 三 百 零 五. One 零 stands for any run of zeros
    between two non-zero digits; trailing zeros are silent
    (1050 -> 一 千 零 五 十, 1500 -> 一 千 五 百). A leading ten is 十, not
    一 十 (15 -> 十 五), but inside a number it keeps its 一
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
SOURCE_WORDS = tuple(w for w in _ONES + _TEENS + _TENS if w) + (
    "hundred",
    "thousand",
    "and",
)
TARGET_CHARS = tuple(_DIGITS_ZH) + ("十", "百", "千", "万")

# Romanised names of the characters, for figures where no Chinese font is
# installed.
PINYIN = dict(
    zip(
        "零一二三四五六七八九十百千万",
        "ling yi er san si wu liu qi ba jiu shi bai qian wan".split(),
    )
)
