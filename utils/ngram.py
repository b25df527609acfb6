"""Count baselines for chapters 10 and 11 (chapter 11 scores them in bits
per character, chapter 10 by the accuracy of their best guess).

Bits per character = the total bits (``-log2`` of the probability the model
gives the whole held-out text) divided by its number of characters, every
character counted, newlines included. A model that spells text with other
units (bytes, BPE tokens, words) is scored on the same scale.

* :class:`KneserNey` (``utils.kneser_ney``, imported here): an n-gram
  model over integer symbols with interpolated Kneser-Ney smoothing, one
  discount per order or, ``modified=True``, three (Chen and Goodman's
  modified Kneser-Ney).
* :class:`LetterCounts`: chapter 10's count baselines, such a model over
  its letters as a language model with ``logits`` like its Transformers'.
* :func:`char_model`: that model over the UTF-8 bytes of a text (on ASCII
  text, one byte is one character).
* :class:`WordBigram`: a Kneser-Ney bigram over words, each other character
  (space, newline, punctuation) a token of its own; a token seen fewer than
  ``min_count`` times in training is ``<unk>`` there, and a held-out
  ``<unk>`` pays for its own spelling, byte by byte, under a character
  n-gram trained on the rare training words. No character is free.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

import numpy as np
import torch

from . import objectives as obj
from .checks import check_at_most, check_choice, check_int
from .kneser_ney import KneserNey

__all__ = [
    "KneserNey",
    "char_model",
    "text_bits",
    "token_bits",
    "WORD",
    "tokenize_words",
    "WordBigram",
    "LetterCounts",
]


def _bytes(text: str) -> np.ndarray:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int64)


def char_model(text: str, order: int, modified=False) -> KneserNey:
    """A Kneser-Ney model of ``order`` over the UTF-8 bytes of ``text``
    (``modified``: three discounts per order)."""
    return KneserNey(_bytes(text), order, 256, modified)


def text_bits(model: KneserNey, text: str) -> float:
    """Bits per character of ``text`` under a byte model (the first bytes
    are scored with the context they have)."""
    if len(text) == 0:
        raise ValueError("text must not be empty")
    return float(-model.log2probs(_bytes(text)).sum() / len(text))


def token_bits(model: KneserNey, ids, text: str) -> float:
    """Bits per character of ``text`` under a model of the tokens ``ids``
    that spell it (BPE): the bits of ``ids`` over ``len(text)``. The model
    also gives probability to other token sequences of the same text (``t``
    ``he`` for ``the``), so these are an upper bound, never too few."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if len(text) == 0 or len(ids) == 0:
        raise ValueError(f"text and ids must not be empty: {len(ids)} ids")
    return float(-model.log2probs(ids).sum() / len(text))


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
    """Chapter 10's count baseline: a Kneser-Ney model of ``order`` (1-7;
    1-5 masked) over its token ids (``utils.objectives``), trained on
    ``words``. ``kind="clm"``, ``"plm"``: the next token given the ``order -
    1`` up to it (start tokens before a word); ``"mlm"``: a letter given
    ``CONTEXTS[order]`` (left, right) tokens as the input shows them, never
    its own. ``logits(ids (B, L), mask) -> (B, L, VOCAB)`` log-probabilities
    (no mask needed): ``utils.pretraining`` evaluates and samples it as it
    does a ``TinyLM``."""

    # the masked kind's context: dropping its first (farthest) column
    # gives the order below, 2+2 -> 2+1 -> 1+1 -> 1+0 -> 0
    CONTEXTS = {1: (0, 0), 2: (1, 0), 3: (1, 1), 4: (2, 1), 5: (2, 2)}

    def __init__(self, kind: str, words, order: int):
        self.kind = check_choice(kind, "kind", obj.OBJECTIVES)
        top = 5 if kind == "mlm" else 7
        self.order = check_at_most(check_int(order, "order", 1), "order", top)
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
        grid = np.pad(ids.numpy(), ((0, 0), (6, 2)))  # PAD after a word
        grid[:, :6] = obj.BOS  # start tokens before it
        if self.kind == "mlm":
            left, right = self.CONTEXTS[self.order]
            at = [side * d for d in (2, 1) for side in (1, -1)
                  if d <= (right if side > 0 else left)]  # fmt: skip
        else:
            at = list(range(2 - self.order, 1))
        rows, cols = rows.numpy(), cols.numpy() + 6
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
