"""Kneser-Ney smoothing for n-gram models over integer symbols (Chen and
Goodman, 1998), the engine of ``utils.ngram``'s count baselines.

:class:`KneserNey` is interpolated: the top order uses counts, each lower
order *continuation* counts (how many different symbols come before a gram),
every order subtracts a discount from each count and gives the mass to the
order below; the order below the unigrams is uniform, so every symbol gets a
probability. Its discounts come from each order's counts-of-counts ``n1 ..
n4`` (how many grams it saw once, ..., four times; continuation counts below
the top order), with ``Y = n1 / (n1 + 2 n2)``:

* one discount per order (the default): ``D = Y`` for every count;
* ``modified=True``, Chen and Goodman's *modified* Kneser-Ney: three, ``D1``,
  ``D2``, ``D3+`` for grams seen once, twice, three times or more, ``D_r = r
  - (r + 1) Y n_{r+1} / n_r`` (so ``D1 = Y``), and a context gives the order
  below ``D1 N1 + D2 N2 + D3+ N3+`` over its total count (``N_r``: how many
  symbols it saw r times). The one-discount model is its case ``D1 = D2 =
  D3+``: one engine.

:meth:`KneserNey.from_grams` trains one on grams listed one per row and
:meth:`KneserNey.probs` gives whole distributions at once. Counting is done
with NumPy on integer codes (a k-gram is the number ``s1 A^(k-1) + ... +
sk`` of its symbols' ranks ``s``, ``A`` the alphabet seen plus one), so a
model of the 4.6 million training characters trains in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import check_bool, check_int

__all__ = ["KneserNey", "counts_of_counts"]

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
    and the mass the discounts take from it (``D1 N1 + D2 N2 + D3+ N3+``
    over the symbols seen after it once, twice, three times or more); the
    discounts ``(D1, D2, D3+)``."""

    keys: np.ndarray
    counts: np.ndarray
    contexts: np.ndarray
    totals: np.ndarray
    mass: np.ndarray
    discounts: tuple[float, float, float]

    @classmethod
    def of(cls, keys, counts, base: int, modified: bool) -> _Level:
        contexts, first = np.unique(keys // base, return_index=True)
        d = _discounts(counts, modified)
        if len(keys) == 0:
            zero = np.zeros(0, dtype=np.int64)
            return cls(keys, counts, contexts, zero, zero.astype(float), d)
        totals = np.add.reduceat(counts, first)
        types = np.diff(np.append(first, len(keys)))
        twice = np.add.reduceat((counts == 2).astype(np.int64), first)
        more = np.add.reduceat((counts >= 3).astype(np.int64), first)
        # D1 * types + ... rather than D1 * N1 + ...: with one discount the
        # other terms are exactly 0, so its floats are those of D * types,
        # as the stored one-discount baselines were computed
        mass = d[0] * types + (d[1] - d[0]) * twice + (d[2] - d[0]) * more
        return cls(keys, counts, contexts, totals, mass, d)


def counts_of_counts(counts) -> tuple[int, int, int, int]:
    """``(n1, n2, n3, n4)``: how many grams were seen once, ..., 4 times."""
    counts = np.asarray(counts)
    return tuple(int(np.sum(counts == r)) for r in (1, 2, 3, 4))


def _discounts(counts, modified: bool) -> tuple[float, float, float]:
    """Chen and Goodman's discounts from one order's counts-of-counts.

    ``Y = n1 / (n1 + 2 n2)`` (0.5 without singletons). One discount: ``Y``
    for every count. Modified: ``D_r = r - (r + 1) Y n_{r+1} / n_r`` for
    r = 1, 2, 3 (so ``D1 = Y``); where ``n_r = 0`` or the formula leaves
    ``(0, r]``, as it can on a tiny corpus, ``D_r`` takes ``D_{r-1}``: a
    discount of 0 would leave a context no mass for what it never saw."""
    n = counts_of_counts(counts)
    y = n[0] / (n[0] + 2 * n[1]) if n[0] > 0 else 0.5
    out = [float(y)]
    for r in (2, 3):
        known = modified and n[r - 1] > 0
        d = r - (r + 1) * y * n[r] / n[r - 1] if known else 0.0
        out.append(float(d) if 0 < d <= r else out[-1])
    return tuple(out)


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
    mass = _lookup(level.contexts, level.mass, codes // base)
    seen = total > 0  # an unseen context passes the order below on
    d = np.array((0.0, *level.discounts))[np.minimum(count, 3)]
    safe = np.maximum(total, 1)
    here = np.maximum(count - d, 0) / safe + mass / safe * below
    return np.where(seen, here, below)


def _grid_codes(grams: np.ndarray, base: int) -> np.ndarray:
    """The code of each row of ``grams`` ``(M, k)``: ``(M,)`` int64."""
    powers = np.arange(grams.shape[1] - 1, -1, -1, dtype=np.int64)
    return grams @ base**powers


class KneserNey:
    """Interpolated Kneser-Ney n-gram model over symbols ``0 .. base-1``.

    ``seq``: the training sequence, ``(n,)`` ints; ``order``: n (1 = a
    unigram model); ``base``: the alphabet size (the uniform distribution
    under the unigrams spreads over it). A gram is coded as an int64 in
    base ``A + 1``, ``A`` the number of symbols seen in training (the ``+
    1`` for all others, which no seen gram holds), so ``(A + 1) ** order``
    must stay below ``2**63``: a byte model over English text (about 85
    symbols) reaches order 9, whatever ``base``.
    ``modified``: three discounts per order (``D1``, ``D2``, ``D3+`` for
    grams seen once, twice, more), Chen and Goodman's modified Kneser-Ney;
    otherwise one. ``levels[k - 1].discounts``: order k's, from its counts
    (continuation counts below the top order).
    """

    def __init__(self, seq, order: int, base: int = 256, modified=False):
        self._settings(order, base, modified)
        seq = _check_seq(seq, "seq", self.base)
        self._alphabet(seq)
        seq = self._rank[seq]
        self._fit([_codes(seq, k, self.radix) for k in range(1, order + 1)])

    @classmethod
    def from_grams(cls, grams, base: int, modified=False) -> KneserNey:
        """A model of order ``k`` trained on the rows of ``grams`` ``(M,
        k)``, each a gram whose last symbol follows the others. The rows
        need not come from one sequence (separate words; a context put
        together in another order, such as both sides of a letter)."""
        grams = _check_grid(grams, "grams", base)
        self = cls.__new__(cls)
        self._settings(grams.shape[1], base, modified)
        self._alphabet(grams)
        grams = self._rank[grams]
        ks = range(1, self.order + 1)
        self._fit([_grid_codes(grams[:, -k:], self.radix) for k in ks])
        return self

    def _settings(self, order: int, base: int, modified: bool) -> None:
        self.modified = check_bool(modified, "modified")
        self.order = check_int(order, "order", 1)
        self.base = check_int(base, "base", 2)

    def _alphabet(self, symbols: np.ndarray) -> None:
        """The digits of the codes, ``_rank[symbol]``: each training
        symbol's rank among those seen, ``radix - 1`` for any other."""
        alphabet = np.unique(symbols)
        self.radix = len(alphabet) + 1
        if self.radix**self.order > MAX_CODE:
            raise ValueError(
                f"order={self.order} is too high for the "
                f"{len(alphabet)} symbols seen: codes overflow"
            )
        self._rank = np.full(self.base, len(alphabet), dtype=np.int64)
        self._rank[alphabet] = np.arange(len(alphabet))

    def _fit(self, codes: list[np.ndarray]) -> None:
        """The levels from the codes of every 1-, 2-, ... order-gram seen."""
        raw = [np.unique(c, return_counts=True) for c in codes]
        self.levels = []
        for k in range(1, self.order + 1):
            keys, counts = raw[k - 1]
            if k < self.order:  # continuation counts: distinct predecessors
                longer = raw[k][0]  # the (k+1)-grams seen
                keys, counts = np.unique(
                    longer % self.radix**k, return_counts=True
                )
            level = _Level.of(keys, counts, self.radix, self.modified)
            self.levels.append(level)

    def probs(self, contexts) -> np.ndarray:
        """``P(s | context)`` for each row of ``contexts`` ``(N, order -
        1)`` and every symbol ``s``: ``(N, base)``, each row sums to 1."""
        ctx = _check_grid(contexts, "contexts", self.base, self.order - 1)
        n = len(ctx)
        symbols = np.tile(np.arange(self.base), n)[:, None]
        grams = np.concatenate([np.repeat(ctx, self.base, 0), symbols], 1)
        grams = self._rank[grams]
        p = np.full(len(grams), 1.0 / self.base)
        for k, level in enumerate(self.levels, start=1):
            codes = _grid_codes(grams[:, grams.shape[1] - k :], self.radix)
            p = _mix(level, codes, p, self.radix)
        return p.reshape(n, self.base)

    def log2probs(self, seq, start: int = 0) -> np.ndarray:
        """``log2 P(seq[i] | seq[i-order+1 : i])`` for ``i = start, ...,
        len(seq) - 1``: ``(len(seq) - start,)`` floats. The first symbols,
        with fewer than ``order - 1`` before them, are scored by the lower
        orders alone."""
        seq = self._rank[_check_seq(seq, "seq", self.base)]
        start = check_int(start, "start", 0)
        positions = np.arange(start, len(seq))
        p = np.full(len(positions), 1.0 / self.base)
        for k, level in enumerate(self.levels, start=1):
            ok = positions >= k - 1  # a whole k-gram ends there
            codes = _codes(seq, k, self.radix)[positions[ok] - (k - 1)]
            p[ok] = _mix(level, codes, p[ok], self.radix)
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
