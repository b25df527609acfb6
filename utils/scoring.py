"""Additive (Bahdanau) and bilinear (Luong) scorers for queries and keys of
different sizes (chapter 2)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import attend
from .checks import (
    check_bool,
    check_int,
    check_like_weights,
    check_probability,
    check_qkv,
    check_tensor,
)

__all__ = ["AdditiveAttention", "BilinearAttention"]


def _check_sizes(module: nn.Module, q, k, v, d_q: int, d_k: int) -> None:
    """q, k, v for the scorers whose queries and keys differ in size."""
    check_qkv(q, k, v, share_d_k=False)
    check_like_weights(module, q)
    check_tensor(q, "q", shape=(*q.shape[:-1], d_q))  # d_q features
    check_tensor(k, "k", shape=(*k.shape[:-1], d_k))


class _ScoredAttention(nn.Module):
    """Check, score (the subclass's ``scores``), mask, softmax, weight."""

    def __init__(self, d_q: int, d_k: int, dropout: float):
        super().__init__()
        self.d_q = check_int(d_q, "d_q", 1)
        self.d_k = check_int(d_k, "d_k", 1)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        _check_sizes(self, q, k, v, self.d_q, self.d_k)
        p = self.dropout.p if self.training else 0.0
        return attend(self.scores(q, k), v, mask, p)


class AdditiveAttention(_ScoredAttention):
    """score(q, k) = w^T tanh(W q + U k): q ``(..., Lq, d_q)``, k ``(..., Lk,
    d_k)``, v ``(..., Lk, d_v)`` -> ``out (..., Lq, d_v)``, ``weights``."""

    def __init__(
        self, d_q: int, d_k: int, d_hidden: int, dropout: float = 0.0
    ):
        super().__init__(d_q, d_k, dropout)
        self.d_hidden = check_int(d_hidden, "d_hidden", 1)
        self.w_q = nn.Linear(self.d_q, self.d_hidden, bias=False)  # W
        self.w_k = nn.Linear(self.d_k, self.d_hidden, bias=False)  # U
        self.w_score = nn.Linear(self.d_hidden, 1, bias=False)  # w^T

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Unnormalised scores ``(..., Lq, Lk)``."""
        # (..., Lq, 1, d_hidden) + (..., 1, Lk, d_hidden)
        hidden = self.w_q(q).unsqueeze(-2) + self.w_k(k).unsqueeze(-3)
        return self.w_score(torch.tanh(hidden)).squeeze(-1)


class BilinearAttention(_ScoredAttention):
    """score(q, k) = q W k^T, W ``(d_q, d_k)``, optionally / sqrt(d_k)."""

    def __init__(
        self, d_q: int, d_k: int, scale: bool = True, dropout: float = 0.0
    ):
        super().__init__(d_q, d_k, dropout)
        self.scale = check_bool(scale, "scale")
        self.weight = nn.Parameter(torch.empty(self.d_q, self.d_k))
        nn.init.xavier_uniform_(self.weight)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Unnormalised scores ``(..., Lq, Lk)``."""
        s = (q @ self.weight) @ k.transpose(-2, -1)
        return s / math.sqrt(self.d_k) if self.scale else s
