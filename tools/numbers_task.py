"""The retired numbers task as data, for the maintenance scripts
(``tools/ambiguous.py``, ``tools/sweep_ch09.py``): every number 1..99,999
as a pair (English words, Chinese characters), split, and balanced by size.

The pairs come from ``utils.numerals``. The splits are disjoint by
construction: every number belongs to exactly one split. Sources longer than
``max_train_words`` words go to the out-of-distribution split ``"long"``; the
rest are shuffled with a seeded generator and cut into train / valid / test.
"""

from __future__ import annotations

import functools
import math
import random
from typing import Sequence

from utils.batches import Vocab
from utils.checks import check_at_most, check_int
from utils.numerals import (
    MAX_NUMBER,
    SOURCE_WORDS,
    TARGET_CHARS,
    chinese_numerals,
    english_words,
)

Pair = tuple[list[str], list[str]]


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
    """Every number 1..99,999 as a pair ``(english words, chinese
    characters)``, split.

    Returns ``{"train", "valid", "test", "long"}``, each a list of ``(src,
    tgt)`` pairs of token lists. ``"long"`` holds every number whose English
    has more than ``max_train_words`` words (so no training source is as long);
    the others are shuffled with ``random.Random(seed)``: the first ``n_valid``
    are validation, the next ``n_test`` test, the rest training. The splits are
    disjoint and together cover every number once.
    """
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
    size class present makes up at least about ``min_share`` of the result.

    A class of ``n`` pairs in ``len(pairs)`` is repeated ``ceil(min_share *
    len(pairs) / n)`` times when that is more than once; the others appear
    once. ``min_share=0`` returns the pairs unchanged. The order is by
    class; ``group_pairs`` shuffles.
    """
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
