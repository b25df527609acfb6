"""Chapter 1's toy tasks. Motif: 1 when the motif (default ``0 1 2``) is a
contiguous run; negatives hold a reordering, so only order tells (local
structure). Ends: 1 when the first and last symbols match (long-range)."""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from .checks import check_at_most, check_choice, check_ids, check_int

__all__ = [
    "DEFAULT_MOTIF",
    "contains_motif",
    "make_motif_data",
    "make_ends_data",
    "symbol_counts",
]

DEFAULT_MOTIF: tuple[int, ...] = (0, 1, 2)


def contains_motif(
    x: torch.Tensor, motif: Sequence[int] = DEFAULT_MOTIF
) -> torch.Tensor:
    """Rows of ``x (N, L)`` holding ``motif`` contiguously -> ``(N,)`` bool."""
    check_ids(x, "x", ndim=2)
    m = _check_motif(motif)
    k = m.numel()
    check_at_most(k, "motif's length", x.size(1), "the sequences' length")
    windows = x.unfold(1, k, 1)  # (N, L - k + 1, k): every k-run
    return (windows == m).all(dim=-1).any(dim=-1)  # (N,)


def _check_motif(motif, vocab_size: int | None = None) -> torch.Tensor:
    m = torch.as_tensor(list(motif), dtype=torch.long)
    check_ids(m, "motif", vocab_size, ndim=1)
    check_int(m.numel(), "motif's length", 1)
    return m


def _plant(
    rows: torch.Tensor, runs: torch.Tensor, g: torch.Generator
) -> torch.Tensor:
    """Write ``runs (N, k)`` into ``rows (N, L)`` at random starts."""
    n, k = runs.shape
    starts = torch.randint(0, rows.size(1) - k + 1, (n,), generator=g)
    cols = starts[:, None] + torch.arange(k)  # (N, k)
    return rows.scatter_(1, cols, runs)


def _shuffled_runs(
    motif: torch.Tensor, n: int, g: torch.Generator
) -> torch.Tensor:
    """``n`` random reorderings of ``motif``, none equal to it -> (n, k)."""
    out = []
    while sum(len(b) for b in out) < n:
        perms = torch.rand(2 * n + 16, motif.numel(), generator=g).argsort(1)
        runs = motif[perms]  # (M, k)
        out.append(runs[~(runs == motif).all(dim=1)])
    return torch.cat(out)[:n]


def make_motif_data(
    n: int,
    length: int = 8,
    vocab_size: int = 4,
    motif: Sequence[int] = DEFAULT_MOTIF,
    seed: int = 0,
    negatives: str = "shuffled",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` sequences, half with the motif: ``x (n, length)``, ``y (n,)``;
    own generator from ``seed`` (the global seed is untouched)."""
    check_int(n, "n", 2)
    check_int(vocab_size, "vocab_size", 2)
    check_int(seed, "seed", 0)
    check_choice(negatives, "negatives", ("shuffled", "random"))
    m = _check_motif(motif, vocab_size)
    if negatives == "shuffled" and len(set(m.tolist())) < 2:  # no reorder
        raise ValueError(f"a shuffled motif needs two symbols, got {motif}")
    check_int(length, "length", m.numel() + 1)
    g = torch.Generator().manual_seed(seed)
    n_pos = n // 2
    n_neg = n - n_pos

    # Negatives by rejection: draw, and keep only rows without the motif.
    kept = []
    while sum(len(b) for b in kept) < n_neg:
        batch = torch.randint(
            0, vocab_size, (2 * n_neg + 16, length), generator=g
        )
        if negatives == "shuffled":
            _plant(batch, _shuffled_runs(m, len(batch), g), g)
        kept.append(batch[~contains_motif(batch, m.tolist())])
    neg = torch.cat(kept)[:n_neg]

    pos = torch.randint(0, vocab_size, (n_pos, length), generator=g)
    _plant(pos, m.expand(n_pos, -1).contiguous(), g)

    x = torch.cat([pos, neg])
    y = torch.cat(
        [
            torch.ones(n_pos, dtype=torch.long),
            torch.zeros(n_neg, dtype=torch.long),
        ]
    )
    order = torch.randperm(n, generator=g)
    return x[order], y[order]


def make_ends_data(
    n: int, length: int = 16, vocab_size: int = 4, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` sequences, half with last == first: ``x (n, length)``, ``y
    (n,)``; own generator from ``seed``."""
    check_int(n, "n", 2)
    check_int(length, "length", 2)
    check_int(vocab_size, "vocab_size", 2)
    check_int(seed, "seed", 0)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab_size, (n, length), generator=g)
    y = (torch.arange(n) < n // 2).long()  # n // 2 positives
    other = torch.randint(1, vocab_size, (n,), generator=g)  # a shift != 0
    x[:, -1] = torch.where(y == 1, x[:, 0], (x[:, 0] + other) % vocab_size)
    order = torch.randperm(n, generator=g)
    return x[order], y[order]


def symbol_counts(x: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``x (N, L)`` -> float counts ``(N, V)``: a sequence without order."""
    check_ids(x, "x", vocab_size, ndim=2)  # and vocab_size
    return F.one_hot(x, vocab_size).sum(dim=1).float()
