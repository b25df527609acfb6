"""Count baselines for chapters 10 and 11 (chapter 11 scores them in bits
per character, chapter 10 by the accuracy of their best guess).

Bits per character = the total bits (``-log2`` of the probability the model
gives the whole held-out text) divided by its number of characters, every
character counted, newlines included. A model that spells text with other
units (bytes, BPE tokens, words) is scored on the same scale.

* :class:`KneserNey`: an n-gram model over integer symbols with interpolated
  Kneser-Ney smoothing (Chen and Goodman, 1998): the top order uses counts,
  each lower order *continuation* counts (how many different symbols come
  before a gram), every order subtracts a discount ``D = n1 / (n1 + 2 n2)``
  from each count and gives the mass to the order below; the order below the
  unigrams is uniform, so every symbol gets a probability.
  :meth:`KneserNey.from_grams` trains one on grams listed one per row
  and :meth:`KneserNey.probs` gives whole distributions at once.
* :class:`LetterCounts`: chapter 10's count baselines, such a model over
  its letters as a language model with ``logits`` like its Transformers'.
* :func:`char_model`: that model over the UTF-8 bytes of a text (on ASCII
  text, one byte is one character).
* :class:`WordBigram`: a Kneser-Ney bigram over words, each other character
  (space, newline, punctuation) a token of its own; a token seen fewer than
  ``min_count`` times in training is ``<unk>`` there, and a held-out
  ``<unk>`` pays for its own spelling, byte by byte, under a character
  n-gram trained on the rare training words. No character is free.

Counting is done with NumPy on integer codes (a k-gram of symbols below
``base`` is the number ``s1 base^(k-1) + ... + sk``), so a model of the
4.6 million training characters trains in seconds.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch

from . import objectives as obj
from .checks import check_at_most, check_choice, check_int

__all__ = [
    "KneserNey",
    "char_model",
    "text_bits",
    "WORD",
    "tokenize_words",
    "WordBigram",
    "LetterCounts",
]

MAX_CODE = 2**63 - 1  # the codes are int64


def _codes(seq: np.ndarray, k: int, base: int) -> np.ndarray:
    """The code of the k-gram ending at each position ``i >= k - 1``:
    ``(len(seq) - k + 1,)`` int64, entry ``j`` for the gram ``seq[j:j+k]``."""
    n = len(seq) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    code = np.zeros(n, dtype=np.int64)
    for j in range(k):
        code = code * base + seq[j : j + n]
    return code


@dataclass
class _Level:
    """One order's statistics: sorted gram codes and their counts, sorted
    context codes (the gram without its last symbol) with the total count
    and the number of distinct symbols seen after them; the discount."""

    keys: np.ndarray
    counts: np.ndarray
    contexts: np.ndarray
    totals: np.ndarray
    types: np.ndarray
    discount: float

    @classmethod
    def of(cls, keys: np.ndarray, counts: np.ndarray, base: int) -> _Level:
        contexts, first = np.unique(keys // base, return_index=True)
        totals = np.add.reduceat(counts, first) if len(keys) else counts
        types = np.diff(np.append(first, len(keys)))
        n1, n2 = np.sum(counts == 1), np.sum(counts == 2)
        discount = n1 / (n1 + 2 * n2) if n1 > 0 else 0.5
        return cls(keys, counts, contexts, totals, types, float(discount))


def _lookup(keys: np.ndarray, values: np.ndarray, codes: np.ndarray):
    """``values`` at ``codes`` in the sorted ``keys``, 0 where absent."""
    if len(keys) == 0:
        return np.zeros(len(codes), dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, codes), len(keys) - 1)
    return np.where(keys[at] == codes, values[at], 0)


def _mix(level: _Level, codes: np.ndarray, below: np.ndarray, base: int):
    """One order's interpolation: ``P_k(gram)`` for the gram ``codes``
    given ``below``, their probabilities under the order below."""
    count = _lookup(level.keys, level.counts, codes)
    total = _lookup(level.contexts, level.totals, codes // base)
    types = _lookup(level.contexts, level.types, codes // base)
    seen = total > 0  # an unseen context passes the order below on
    d = level.discount
    safe = np.maximum(total, 1)
    here = np.maximum(count - d, 0) / safe + d * types / safe * below
    return np.where(seen, here, below)


def _grid_codes(grams: np.ndarray, base: int) -> np.ndarray:
    """The code of each row of ``grams`` ``(M, k)``: ``(M,)`` int64."""
    powers = np.arange(grams.shape[1] - 1, -1, -1, dtype=np.int64)
    return grams @ base**powers


class KneserNey:
    """Interpolated Kneser-Ney n-gram model over symbols ``0 .. base-1``.

    ``seq``: the training sequence, ``(n,)`` ints; ``order``: n (1 = a
    unigram model); ``base``: the alphabet size (the uniform distribution
    under the unigrams spreads over it). ``order * log2(base) <= 63``.
    """

    def __init__(self, seq, order: int, base: int = 256):
        self._sizes(order, base)
        seq = _check_seq(seq, "seq", self.base)
        self._fit([_codes(seq, k, self.base) for k in range(1, order + 1)])

    @classmethod
    def from_grams(cls, grams, base: int) -> KneserNey:
        """A model of order ``k`` trained on the rows of ``grams`` ``(M,
        k)``, each a gram whose last symbol follows the others. The rows
        need not come from one sequence (separate words; a context put
        together in another order, such as both sides of a letter)."""
        grams = _check_grid(grams, "grams", base)
        self = cls.__new__(cls)
        self._sizes(grams.shape[1], base)
        ks = range(1, self.order + 1)
        self._fit([_grid_codes(grams[:, -k:], base) for k in ks])
        return self

    def _sizes(self, order: int, base: int) -> None:
        self.order = check_int(order, "order", 1)
        self.base = check_int(base, "base", 2)
        if self.base**self.order > MAX_CODE:
            raise ValueError(
                f"order={order} is too high for base={base}: codes overflow"
            )

    def _fit(self, codes: list[np.ndarray]) -> None:
        """The levels from the codes of every 1-, 2-, ... order-gram seen."""
        raw = [np.unique(c, return_counts=True) for c in codes]
        self.levels = []
        for k in range(1, self.order + 1):
            keys, counts = raw[k - 1]
            if k < self.order:  # continuation counts: distinct predecessors
                longer = raw[k][0]  # the (k+1)-grams seen
                keys, counts = np.unique(
                    longer % self.base**k, return_counts=True
                )
            self.levels.append(_Level.of(keys, counts, self.base))

    def probs(self, contexts) -> np.ndarray:
        """``P(s | context)`` for each row of ``contexts`` ``(N, order -
        1)`` and every symbol ``s``: ``(N, base)``, each row sums to 1."""
        ctx = _check_grid(contexts, "contexts", self.base, self.order - 1)
        n = len(ctx)
        symbols = np.tile(np.arange(self.base), n)[:, None]
        grams = np.concatenate([np.repeat(ctx, self.base, 0), symbols], 1)
        p = np.full(len(grams), 1.0 / self.base)
        for k, level in enumerate(self.levels, start=1):
            codes = _grid_codes(grams[:, grams.shape[1] - k :], self.base)
            p = _mix(level, codes, p, self.base)
        return p.reshape(n, self.base)

    def log2probs(self, seq, start: int = 0) -> np.ndarray:
        """``log2 P(seq[i] | seq[i-order+1 : i])`` for ``i = start, ...,
        len(seq) - 1``: ``(len(seq) - start,)`` floats. The first symbols,
        with fewer than ``order - 1`` before them, are scored by the lower
        orders alone."""
        seq = _check_seq(seq, "seq", self.base)
        start = check_int(start, "start", 0)
        positions = np.arange(start, len(seq))
        p = np.full(len(positions), 1.0 / self.base)
        for k, level in enumerate(self.levels, start=1):
            ok = positions >= k - 1  # a whole k-gram ends there
            codes = _codes(seq, k, self.base)[positions[ok] - (k - 1)]
            p[ok] = _mix(level, codes, p[ok], self.base)
        return np.log2(p)

    def next_probs(self, context) -> np.ndarray:
        """``P(s | context)`` for every symbol ``s``: ``(base,)``, sums to
        1 (the context's last ``order - 1`` symbols count)."""
        context = list(_check_seq(context, "context", self.base))
        context = context[max(len(context) - self.order + 1, 0) :]
        out = np.empty(self.base)
        for s in range(self.base):
            seq = np.array(context + [s], dtype=np.int64)
            out[s] = 2.0 ** self.log2probs(seq, len(context))[0]
        return out


def _check_seq(seq, name: str, base: int) -> np.ndarray:
    """``seq`` as a 1-D int64 array of symbols in ``[0, base)``."""
    arr = np.asarray(seq)
    if arr.size == 0:
        return arr.astype(np.int64).reshape(0)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold ints, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.min() < 0 or arr.max() >= base:
        raise ValueError(f"{name} must hold symbols in [0, {base})")
    return arr.astype(np.int64)


def _check_grid(grid, name: str, base: int, width=None) -> np.ndarray:
    """``grid`` as a 2-D int64 array of symbols in ``[0, base)`` (and of
    ``width`` columns, if given)."""
    arr = np.asarray(grid)
    if arr.ndim != 2 or width not in (None, arr.shape[1]):
        raise ValueError(f"{name} must be 2-D (width {width}): {arr.shape}")
    return _check_seq(arr.reshape(-1), name, base).reshape(arr.shape)


def _bytes(text: str) -> np.ndarray:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def char_model(text: str, order: int) -> KneserNey:
    """A Kneser-Ney model of ``order`` over the UTF-8 bytes of ``text``."""
    return KneserNey(_bytes(text), order, 256)


def text_bits(model: KneserNey, text: str) -> float:
    """Bits per character of ``text`` under a byte model (the first bytes
    are scored with the context they have)."""
    if len(text) == 0:
        raise ValueError("text must not be empty")
    return float(-model.log2probs(_bytes(text)).sum() / len(text))


# a word: letters, with inner apostrophes ("nam'd", "o'er"); any other
# character is a token alone, so the tokens join back to the text
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|.", re.DOTALL)


def tokenize_words(text: str) -> list[str]:
    """``text`` as words and single other characters (they join to it)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return WORD.findall(text)


class WordBigram:
    """A Kneser-Ney word bigram that scores every character.

    Tokens (:func:`tokenize_words`) seen at least ``min_count`` times in
    ``text`` form the vocabulary; the others are ``<unk>`` in training. A
    held-out token outside the vocabulary costs ``P(<unk> | previous)``
    times the probability of its spelling: its bytes and an end mark
    (symbol 256) under a Kneser-Ney model of ``spell_order`` trained on the
    spellings of the training tokens seen fewer than ``min_count`` times,
    each word starting after ``spell_order - 1`` start marks (also 256).

    The model gives probability to some token sequences that do not come
    from tokenizing a text ("th" "ee"), so the probabilities of all texts sum
    to less than 1: the bits it reports are an upper bound, never too few.
    """

    def __init__(self, text: str, min_count: int = 2, spell_order: int = 5):
        self.min_count = check_int(min_count, "min_count", 1)
        self.spell_order = check_int(spell_order, "spell_order", 1)
        counts = Counter(tokenize_words(text))
        self.words = sorted(w for w, c in counts.items() if c >= min_count)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.unk = len(self.words)
        self.bigram = KneserNey(
            self._ids(tokenize_words(text)), 2, self.unk + 1
        )
        rare = sorted(w for w, c in counts.items() if c < min_count)
        self.speller = KneserNey(self._spellings(rare)[0], spell_order, 257)

    def _ids(self, tokens: list[str]) -> np.ndarray:
        return np.array([self.index.get(t, self.unk) for t in tokens])

    def _spellings(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The words' spellings in one sequence, and for each symbol the
        word it belongs to (-1 for the start marks, which are not scored)."""
        pad = self.spell_order - 1
        seq, owner = [], []
        for i, w in enumerate(words):
            spelled = list(w.encode("utf-8")) + [256]
            seq += [256] * pad + spelled
            owner += [-1] * pad + [i] * len(spelled)
        return np.array(seq, dtype=np.int64), np.array(owner, dtype=np.int64)

    def bits(self, text: str) -> dict:
        """The bits of ``text``: ``{"bits_per_char", "bits", "chars",
        "tokens", "unknown" (tokens outside the vocabulary), "spelling_bits"
        (their spellings' share)}``."""
        tokens = tokenize_words(text)
        if not tokens:
            raise ValueError("text must not be empty")
        ids = self._ids(tokens)
        bits = -self.bigram.log2probs(ids)
        unknown = [t for t in tokens if t not in self.index]
        seq, owner = self._spellings(unknown)
        spelled = -self.speller.log2probs(seq)[owner >= 0]
        total = float(bits.sum() + spelled.sum())
        return {
            "bits_per_char": total / len(text),
            "bits": total,
            "chars": len(text),
            "tokens": len(tokens),
            "unknown": len(unknown),
            "spelling_bits": float(spelled.sum()),
        }


class LetterCounts:
    """Chapter 10's count baseline: a Kneser-Ney model of ``order`` (1-5)
    over its token ids (``utils.objectives``), trained on ``words``.
    ``kind="clm"``, ``"plm"``: the next token given the ``order - 1`` up to
    it (start tokens before a word); ``"mlm"``: a letter given
    ``CONTEXTS[order]`` (left, right) tokens as the input shows them, never
    its own. ``logits(ids (B, L), mask) -> (B, L, VOCAB)`` log-probabilities
    (no mask needed): ``utils.pretraining`` evaluates and samples it as it
    does a ``TinyLM``."""

    # the masked kind's context: dropping its first (farthest) column
    # gives the order below, 2+2 -> 2+1 -> 1+1 -> 1+0 -> 0
    CONTEXTS = {1: (0, 0), 2: (1, 0), 3: (1, 1), 4: (2, 1), 5: (2, 2)}

    def __init__(self, kind: str, words, order: int):
        self.kind = check_choice(kind, "kind", obj.OBJECTIVES)
        self.order = check_at_most(check_int(order, "order", 1), "order", 5)
        ids = _encoded(tuple(obj.check_words(words)), kind != "mlm")
        if kind == "mlm":  # every letter of every word
            targets, on = ids, (ids >= obj.FIRST_LETTER) & (ids < obj.MASK)
        else:  # every token after the start
            ids, targets = ids[:, :-1], ids[:, 1:]
            on = targets != obj.PAD
        rows, cols = on.nonzero().unbind(1)
        last = targets[rows, cols].numpy()[:, None]
        grams = np.concatenate([self._contexts(ids, rows, cols), last], 1)
        self.counts = KneserNey.from_grams(grams, obj.VOCAB)

    def _contexts(self, ids, rows, cols) -> np.ndarray:
        """The context of position ``(rows, cols)`` of ``ids``: ``(N,
        order - 1)``, far to near (the masked kind: right before left)."""
        grid = np.pad(ids.numpy(), ((0, 0), (4, 2)))  # PAD after a word
        grid[:, :4] = obj.BOS  # start tokens before it
        if self.kind == "mlm":
            left, right = self.CONTEXTS[self.order]
            at = [side * d for d in (2, 1) for side in (1, -1)
                  if d <= (right if side > 0 else left)]  # fmt: skip
        else:
            at = list(range(2 - self.order, 1))
        rows, cols = rows.numpy(), cols.numpy() + 4
        picked = np.array([grid[rows, cols + a] for a in at], dtype=np.int64)
        return picked.T.reshape(len(rows), len(at))

    def logits(self, ids: torch.Tensor, mask=None) -> torch.Tensor:
        """``ids`` ``(B, L)`` -> log-probabilities ``(B, L, VOCAB)``."""
        b, size = ids.shape
        rows, cols = torch.ones(b, size).nonzero().unbind(1)
        probs = self.counts.probs(self._contexts(ids, rows, cols))
        return torch.from_numpy(np.log(probs)).float().view(b, size, -1)


@functools.lru_cache(maxsize=2)
def _encoded(words: tuple[str, ...], bos: bool) -> torch.Tensor:
    return obj.encode(list(words), bos=bos)
