"""The translation task as data: every number 1..99,999 as a pair
(English words, Chinese characters), split, turned into ids and batched.

The pairs come from ``utils.numerals``. The splits are disjoint by
construction: every number belongs to exactly one split. Sources longer than
``max_train_words`` words go to the out-of-distribution split ``"long"``; the
rest are shuffled with a seeded generator and cut into train / valid / test.

Token ids: 0 = PAD, 1 = BOS, 2 = EOS, then the words. The source is the words
followed by EOS; the target is BOS, the characters, EOS (the decoder reads it
shifted right).
"""

from __future__ import annotations

import functools
import math
import random
from typing import Iterable, Sequence

import torch

from .checks import check_int
from .numerals import (
    MAX_NUMBER,
    SOURCE_WORDS,
    TARGET_CHARS,
    chinese_numerals,
    english_words,
)

__all__ = [
    "make_splits",
    "SIZE_CLASSES",
    "read_english",
    "size_class",
    "balance_by_size",
    "Vocab",
    "source_vocab",
    "target_vocab",
    "encode_batch",
    "make_batches",
    "group_pairs",
    "pad_fraction",
    "use_chinese_font",
]

_SPECIALS = ["<pad>", "<bos>", "<eos>"]

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
    if n_valid + n_test >= len(short):
        raise ValueError(
            f"n_valid + n_test must leave training data: got {n_valid} + "
            f"{n_test} "
            f"of {len(short)} numbers"
        )
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


class Vocab:
    """Tokens <-> ids, with PAD = 0, BOS = 1, EOS = 2 first.

    ``encode(tokens, bos=False, eos=True)`` -> list of ids; ``decode(ids)`` ->
    tokens, stopping at the first EOS and skipping PAD and BOS; ``len(vocab)``
    is the number of ids.
    """

    def __init__(self, tokens: Iterable[str]):
        tokens = list(tokens)
        if any(not isinstance(t, str) or not t for t in tokens):
            raise TypeError("tokens must be non-empty strings")
        clash = set(tokens) & set(_SPECIALS)
        if clash or len(set(tokens)) != len(tokens):
            raise ValueError(
                f"tokens must be distinct and not special, got {sorted(clash)}"
            )
        self.itos = _SPECIALS + tokens
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} ids: {' '.join(self.itos[3:])})"

    def encode(
        self, tokens: Sequence[str], bos: bool = False, eos: bool = True
    ) -> list[int]:
        """Token list -> ids, optionally with BOS first and EOS last."""
        if isinstance(tokens, str):
            raise TypeError(
                "tokens must be a list of tokens, not a str (split it first)"
            )
        unknown = [t for t in tokens if t not in self.stoi or t in _SPECIALS]
        if unknown:
            raise ValueError(f"tokens not in the vocabulary: {unknown[:5]}")
        ids = [self.stoi[t] for t in tokens]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids) -> list[str]:
        """Ids (list or 1-D tensor) -> tokens; stops at EOS, skips PAD and
        BOS."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        out = []
        for i in ids:
            if not 0 <= i < len(self):
                raise ValueError(
                    f"id {i} is outside the vocabulary of {len(self)} ids"
                )
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.itos[i])
        return out


def source_vocab() -> Vocab:
    """The English words of the task."""
    return Vocab(SOURCE_WORDS)


def target_vocab() -> Vocab:
    """The Chinese characters of the task."""
    return Vocab(TARGET_CHARS)


def _pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor(
        [r + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long
    )


def encode_batch(
    pairs: Sequence[Pair],
    vocab_src: Vocab,
    vocab_tgt: Vocab,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs -> ``src (B, S)`` = words, EOS, PAD... and ``tgt (B, T)`` = BOS,
    chars, EOS, PAD...

    Each tensor is padded only to its own longest row. The decoder reads
    ``tgt[:, :-1]`` and learns to predict ``tgt[:, 1:]``.
    """
    if not pairs:
        raise ValueError("pairs must hold at least one (source, target) pair")
    src = _pad([vocab_src.encode(s) for s, _ in pairs], vocab_src.pad_id)
    tgt = _pad(
        [vocab_tgt.encode(t, bos=True) for _, t in pairs], vocab_tgt.pad_id
    )
    return src.to(device), tgt.to(device)


def make_batches(
    pairs: Sequence[Pair],
    batch_size: int,
    vocab_src: Vocab,
    vocab_tgt: Vocab,
    seed: int | None = 0,
    bucket: bool = True,
    device: torch.device | str | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of padded batches.

    With ``seed`` the pairs are shuffled first (``seed=None`` keeps their
    order). With ``bucket=True`` pairs of similar length share a batch, so
    little padding is needed: the shuffled pairs are cut into pools of 50
    batches, each pool is sorted by length and cut into batches, and the batch
    order is shuffled again (so lengths do not come in order).
    """
    groups = group_pairs(pairs, batch_size, seed, bucket)
    return [encode_batch(g, vocab_src, vocab_tgt, device) for g in groups]


def group_pairs(
    pairs: Sequence[Pair],
    batch_size: int,
    seed: int | None = 0,
    bucket: bool = True,
) -> list[list[Pair]]:
    """The grouping of ``make_batches`` without the encoding: a list of lists
    of pairs."""
    check_int(batch_size, "batch_size", 1)
    pairs = list(pairs)
    rng = random.Random(seed)
    if seed is not None:
        rng.shuffle(pairs)
    if bucket:
        pool = 50 * batch_size
        ordered = []
        for i in range(0, len(pairs), pool):
            ordered += sorted(
                pairs[i : i + pool], key=lambda p: (len(p[0]), len(p[1]))
            )
        pairs = ordered
    groups = [
        pairs[i : i + batch_size] for i in range(0, len(pairs), batch_size)
    ]
    if bucket and seed is not None:
        rng.shuffle(groups)
    return groups


def pad_fraction(
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]], pad_id: int = 0
) -> float:
    """The fraction of all source and target positions in ``batches`` that are
    padding."""
    pads = total = 0
    for src, tgt in batches:
        pads += int((src == pad_id).sum()) + int((tgt == pad_id).sum())
        total += src.numel() + tgt.numel()
    if total == 0:
        raise ValueError("batches is empty")
    return pads / total


def use_chinese_font() -> bool:
    """Add an installed CJK font to matplotlib's fallback list; True if one was
    found.

    Figures can then write the characters; where none is installed (Colab by
    default), label them with ``PINYIN[char]`` instead.
    """
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    found = [
        n
        for n in (
            "Noto Sans CJK SC",
            "Noto Sans CJK JP",
            "WenQuanYi Zen Hei",
            "SimHei",
            "Microsoft YaHei",
            "PingFang SC",
        )
        if n in names
    ]
    if not found:
        return False
    family = list(plt.rcParams["font.family"])
    base = (
        list(plt.rcParams["font.sans-serif"])
        if family == ["sans-serif"]
        else family
    )
    if found[0] not in base:
        plt.rcParams["font.family"] = (
            [base[0], found[0]] if base else [found[0]]
        )
    return True
