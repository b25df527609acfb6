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

British English: "and" before the last two digits. ``tools/numbers_task.py``
turns these pairs into splits, vocabularies and batches.

Chapter 9 adds ambiguity: a second, equally valid way to write every number,
the financial numerals (大写) of cheques and invoices, where each digit and
the units 十, 百, 千 have their own characters
(12305 -> 壹 万 贰 仟 叁 佰 零 伍) and a leading ten keeps its one
(15 -> 壹 拾 伍). ``valid_writings(n)`` lists
both; ``read_numeral`` parses either, independently of the two writers, and
rejects a number that mixes them (一 万 贰 仟).
"""

from __future__ import annotations

import random

from .checks import check_int

__all__ = [
    "MAX_NUMBER",
    "english_words",
    "chinese_numerals",
    "SOURCE_WORDS",
    "TARGET_CHARS",
    "PINYIN",
    "FINANCIAL_CHARS",
    "FINANCIAL_PINYIN",
    "AMBIGUOUS_CHARS",
    "chinese_financial",
    "valid_writings",
    "read_numeral",
    "is_valid_writing",
    "mixes_conventions",
    "convention_of",
    "mixed_targets",
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


# The financial numerals (大写): digits 1-9, then 十, 百, 千. 零 and 万 are
# shared with the everyday numerals.
FINANCIAL_CHARS = tuple("壹贰叁肆伍陆柒捌玖拾佰仟")
AMBIGUOUS_CHARS = TARGET_CHARS + FINANCIAL_CHARS
FINANCIAL_PINYIN = {
    c: "F" + name
    for c, name in zip(
        FINANCIAL_CHARS,
        "yi er san si wu liu qi ba jiu shi bai qian".split(),
    )
}
_EVERYDAY = frozenset("一二三四五六七八九十百千")
_FINANCIAL = frozenset(FINANCIAL_CHARS)


def chinese_financial(n: int) -> list[str]:
    """Financial numerals of ``n`` (1..99,999), one token per character.

    The everyday writing with every digit and the units 十, 百, 千 replaced
    by their financial characters, except that a leading ten keeps its one:
    15 -> 壹 拾 伍 (everyday 十 五).
    """
    n = _check_number(n)
    swap = dict(zip("一二三四五六七八九十百千", FINANCIAL_CHARS))
    out = [swap.get(c, c) for c in chinese_numerals(n)]
    if out[0] == "拾":  # 10..19: the one is written
        out.insert(0, "壹")
    return out


def valid_writings(n: int) -> list[list[str]]:
    """Every valid writing of ``n``: everyday, then financial."""
    return [chinese_numerals(n), chinese_financial(n)]


def convention_of(chars) -> str | None:
    """ "everyday", "financial", "mixed", or None if ``chars`` holds neither
    kind of digit or unit (only 零 and 万, or nothing)."""
    chars = set(chars)
    a, b = bool(chars & _EVERYDAY), bool(chars & _FINANCIAL)
    return (
        "mixed"
        if a and b
        else "everyday"
        if a
        else ("financial" if b else None)
    )


def mixes_conventions(chars) -> bool:
    """True if ``chars`` uses characters of both conventions (never valid)."""
    return convention_of(chars) == "mixed"


# The reader's tables, written out (not derived from the writers).
_DIGIT_VALUE = {c: i + 1 for i, c in enumerate("一二三四五六七八九")}
_DIGIT_VALUE.update({c: i + 1 for i, c in enumerate("壹贰叁肆伍陆柒捌玖")})
_UNIT_PLACE = {"十": 1, "百": 2, "千": 3, "拾": 1, "佰": 2, "仟": 3, "万": 4}


def read_numeral(chars) -> int | None:
    """Parse a writing in either convention -> its number, or None if it is
    not a well-formed writing of any number 1..99,999.

    Well-formed: digit-unit pairs with strictly falling places, a last digit
    with no unit allowed only in the ones place; exactly one 零 for each gap
    of skipped places before a non-zero digit, and none elsewhere; one
    convention throughout; a ten at the very start written 十 (everyday) or
    壹拾 (financial), inside a number with its one.
    """
    chars = list(chars)
    kind = convention_of(chars)
    if kind is None or kind == "mixed":
        return None
    if any(
        c not in _DIGIT_VALUE and c not in _UNIT_PLACE and c != "零"
        for c in chars
    ):
        return None
    if kind == "everyday" and chars[:2] == ["一", "十"]:
        return None  # everyday writing drops a leading ten's one: 十 五
    if kind == "everyday" and chars[0] == "十":
        chars = ["一", *chars]  # the leading ten's silent one
    elif kind == "financial" and chars[0] == "拾":
        return None  # financial writing keeps the one: 壹拾
    total, last_place, i, zero = 0, 5, 0, False
    while i < len(chars):
        c = chars[i]
        if c == "零":
            if zero or i == 0:
                return None
            zero, i = True, i + 1
            continue
        if c not in _DIGIT_VALUE:
            return None  # a unit with no digit before it
        unit = chars[i + 1] if i + 1 < len(chars) else None
        place = _UNIT_PLACE.get(unit, 0) if unit != "零" else 0
        if unit is not None and unit != "零" and unit not in _UNIT_PLACE:
            return None  # two digits in a row
        if place >= last_place:
            return None
        skipped = last_place - place > 1 and total > 0
        if zero != skipped:
            return None  # a 零 without a gap, or a gap without its 零
        if place == 0 and i + 1 != len(chars):
            return None  # a bare digit must be the last character
        total += _DIGIT_VALUE[c] * 10**place
        last_place, zero = place, False
        i += 2 if place else 1
    if zero or total == 0:
        return None  # a trailing 零
    return total


def is_valid_writing(chars, n: int) -> bool:
    """Is ``chars`` a valid writing of ``n`` (in one convention)?"""
    n = _check_number(n)
    return read_numeral(chars) == n


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
