"""A small pre-training corpus made by code: numbers written twice.

    [CLS] three hundred and five = 3 0 5 [EOS]

Each sentence is a number from 1 to 999 in British English words
(``utils.numerals.english_words``), an ``=`` sign, then its decimal
digits. The structure is real and learnable: the words follow a grammar
("hundred" after a digit word, "and" before the last two digits) and the
digits are a function of the words, with the order rearranged ("twenty
one thousand" puts 2 and 1 first; "and five" is a 0 then a 5).

Token ids: 0 = [PAD], 1 = [CLS], 2 = [MASK], 3 = [EOS], then ``=``, the
digits and the words. Every sentence starts with [CLS] and ends with [EOS].
The splits are disjoint sets of numbers, shuffled with a seeded generator.
"""

from __future__ import annotations

import random

import torch

from .checks import check_at_most, check_int
from .numerals import english_words

__all__ = [
    "MAX_NUMBER",
    "PAD",
    "CLS",
    "MASK",
    "EOS",
    "SPECIALS",
    "TOKENS",
    "TOKEN_ID",
    "NORMAL_IDS",
    "sentence",
    "make_splits",
    "encode",
    "decode",
    "prefix_lengths",
]

MAX_NUMBER = 999
SPECIALS = ["[PAD]", "[CLS]", "[MASK]", "[EOS]"]
PAD, CLS, MASK, EOS = range(4)
_WORDS = sorted(
    {w for n in range(1, MAX_NUMBER + 1) for w in english_words(n)}
)
TOKENS = SPECIALS + ["="] + [str(d) for d in range(10)] + _WORDS
TOKEN_ID = {t: i for i, t in enumerate(TOKENS)}
#: ids a masked LM may choose, and may draw as a random replacement
NORMAL_IDS = list(range(len(SPECIALS), len(TOKENS)))


def _check_number(n) -> int:
    n = check_int(n, "n", 1)
    return check_at_most(n, "n", MAX_NUMBER, f"MAX_NUMBER={MAX_NUMBER}")


def sentence(n: int, digits: bool = True) -> list[str]:
    """The tokens of number ``n``: ``[CLS] words = digits [EOS]``, or
    ``[CLS] words [EOS]`` when ``digits=False``."""
    n = _check_number(n)
    body = english_words(n) + (["="] + list(str(n)) if digits else [])
    return ["[CLS]"] + body + ["[EOS]"]


def make_splits(
    seed: int = 0, n_valid: int = 100, n_test: int = 200
) -> dict[str, list[int]]:
    """Numbers 1..999 shuffled with ``random.Random(seed)`` and cut into
    ``{"train", "valid", "test"}`` lists of ints: disjoint, covering every
    number once."""
    check_int(seed, "seed", 0)
    check_int(n_valid, "n_valid", 0)
    check_int(n_test, "n_test", 0)
    # at least one number must be left for training
    why = f"{MAX_NUMBER - 1}, to leave training data"
    check_at_most(n_valid + n_test, "n_valid + n_test", MAX_NUMBER - 1, why)
    numbers = list(range(1, MAX_NUMBER + 1))
    random.Random(seed).shuffle(numbers)
    return {
        "train": numbers[n_valid + n_test :],
        "valid": numbers[:n_valid],
        "test": numbers[n_valid : n_valid + n_test],
    }


def encode(numbers, digits: bool = True) -> torch.Tensor:
    """Sentences of ``numbers`` as ids ``(B, L)``, right-padded with
    [PAD]; L is the longest sentence."""
    rows = [[TOKEN_ID[t] for t in sentence(n, digits)] for n in numbers]
    check_int(len(rows), "the count of numbers", 1)
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])


def decode(ids, keep_specials: bool = False) -> str:
    """Ids ``(L,)`` back to a space-separated string (no [PAD])."""
    words = [TOKENS[int(i)] for i in ids if int(i) != PAD]
    if not keep_specials:
        words = [w for w in words if w not in SPECIALS]
    return " ".join(words)


def prefix_lengths(ids: torch.Tensor) -> torch.Tensor:
    """Length of ``[CLS] words =`` in each row of ids ``(B, L)``: the
    prefix a prefix LM reads bidirectionally. Rows without ``=`` give 0."""
    is_eq = ids == TOKEN_ID["="]
    first = is_eq.int().argmax(dim=1) + 1
    return torch.where(is_eq.any(dim=1), first, torch.zeros_like(first))
