"""Chapter 9's reader of Chinese numerals 1..99,999, everyday (二千零二十六)
or financial (贰仟零贰拾陆), never mixed; its tables are written out, apart
from the writers in ``tools/runs/numbers_task.py``."""

from __future__ import annotations

__all__ = ["read_numeral", "mixes_conventions", "convention_of"]

_EVERYDAY = frozenset("一二三四五六七八九十百千")
_FINANCIAL = frozenset("壹贰叁肆伍陆柒捌玖拾佰仟")
_DIGIT_VALUE = {c: i + 1 for i, c in enumerate("一二三四五六七八九")}
_DIGIT_VALUE.update({c: i + 1 for i, c in enumerate("壹贰叁肆伍陆柒捌玖")})
_UNIT_PLACE = {"十": 1, "百": 2, "千": 3, "拾": 1, "佰": 2, "仟": 3, "万": 4}


def convention_of(chars) -> str | None:
    """ "everyday", "financial", "mixed", or None (only 零 and 万)."""
    chars = set(chars)
    a, b = bool(chars & _EVERYDAY), bool(chars & _FINANCIAL)
    if a and b:
        return "mixed"
    return "everyday" if a else ("financial" if b else None)


def mixes_conventions(chars) -> bool:
    """True if ``chars`` uses characters of both conventions (never valid)."""
    return convention_of(chars) == "mixed"


def read_numeral(chars) -> int | None:
    """A writing in either convention -> its number, or None if malformed:
    digit-unit pairs in falling places (a bare digit only last), one 零 per
    gap and none elsewhere, one convention, a leading ten 十 (everyday) or
    壹拾 (financial)."""
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
