"""Does a language model write, or recite? The copy rate of a sample: the
share of its ``span``-character windows (50 by default) found verbatim in
the training text (chapter 11).

``SpanIndex(train_text, span)`` hashes every window of the training text
once (a polynomial rolling hash modulo 2^64, computed for all windows at
once with NumPy: 4.6 million windows in a few seconds) and keeps them
sorted; a sample's windows are hashed the same way and looked up by binary
search. A hash match is confirmed by comparing the characters, so a hash
collision can never count as a copy.
"""

from __future__ import annotations

import numpy as np

from .checks import check_int

__all__ = ["SpanIndex", "window_hashes"]

BASE = np.uint64(1_000_003)  # odd: every power is odd, none is 0 mod 2^64


def _codes(text: str) -> np.ndarray:
    """The text's characters as unsigned 64-bit code points."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(
        np.uint64
    )


def window_hashes(text: str, span: int) -> np.ndarray:
    """The hash of every ``span``-character window of ``text``:
    ``(len(text) - span + 1,)`` uint64 (empty when the text is shorter).

    ``h(i) = sum_j text[i + j] * BASE^(span - 1 - j) mod 2^64``, summed
    over ``j`` by Horner's rule, one vector operation per position in the
    window (NumPy's uint64 arithmetic wraps, which is the modulus).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    span = check_int(span, "span", 1)
    codes = _codes(text)
    n = len(codes) - span + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(span):
            h = h * BASE + codes[j : j + n]
    return h


class SpanIndex:
    """Every ``span``-character window of ``text``, ready for look-ups."""

    def __init__(self, text: str, span: int = 50):
        self.span = check_int(span, "span", 1)
        hashes = window_hashes(text, self.span)
        if hashes.size == 0:
            raise ValueError(
                f"text must have at least span={self.span} characters, "
                f"got {len(text)}"
            )
        self.text = text
        self.order = np.argsort(hashes, kind="stable")  # window starts
        self.hashes = hashes[self.order]

    def found(self, sample: str) -> np.ndarray:
        """For each window of ``sample`` (by start), whether it occurs in
        the text: bool ``(len(sample) - span + 1,)``."""
        hashes = window_hashes(sample, self.span)
        at = np.searchsorted(self.hashes, hashes)
        at = np.minimum(at, self.hashes.size - 1)
        hit = self.hashes[at] == hashes
        out = np.zeros(hashes.size, dtype=bool)
        for i in np.flatnonzero(hit):  # confirm: a collision is no copy
            start = int(self.order[at[i]])
            window = sample[i : i + self.span]
            out[i] = self.text[start : start + self.span] == window
            j = at[i] + 1  # other windows with this hash, if any
            while (
                not out[i]
                and j < self.hashes.size
                and self.hashes[j] == hashes[i]
            ):
                start = int(self.order[j])
                out[i] = self.text[start : start + self.span] == window
                j += 1
        return out

    def copy_rate(self, sample: str) -> float:
        """The share of ``sample``'s windows found verbatim in the text
        (0.0 for a sample shorter than one window: nothing to copy)."""
        found = self.found(sample)
        return float(found.mean()) if found.size else 0.0

    def copied_chars(self, sample: str) -> np.ndarray:
        """bool ``(len(sample),)``: True where a character lies inside a
        window found in the text (to show the copied stretches)."""
        found = self.found(sample)
        marks = np.zeros(len(sample) + 1, dtype=np.int64)
        starts = np.flatnonzero(found)
        np.add.at(marks, starts, 1)
        np.add.at(marks, starts + self.span, -1)
        return np.cumsum(marks)[: len(sample)] > 0
