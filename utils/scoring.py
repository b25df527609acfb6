"""Scoring variants for queries and keys of different sizes (chapter 2):
the additive (Bahdanau) and bilinear (Luong "general") scorers, which turn
their scores into weights and outputs as scaled dot-product attention does
(``utils.attention``).
"""

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
    """What the additive and bilinear scorers share: check q, k, v against the
    sizes the scorer was built for, score, mask, softmax, weight the values.
    A subclass defines ``scores``."""

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
    """Additive (Bahdanau) attention: score(q, k) = w^T tanh(W q + U k).

    Queries and keys may have different sizes. ``forward(q, k, v, mask=None)``
    with q ``(..., Lq, d_q)``, k ``(..., Lk, d_k)``, v ``(..., Lk, d_v)``
    returns ``out (..., Lq, d_v)`` and ``weights (..., Lq, Lk)``; the mask
    broadcasts as in ``scaled_dot_product_attention``. The hidden tensor is
    ``(..., Lq, Lk, d_hidden)``: more memory than a dot product, the price
    of the MLP.
    """

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
    """Bilinear ("general", Luong) attention: score(q, k) = q W k^T,
    optionally divided by sqrt(d_k).

    Queries and keys may have different sizes: W is ``(d_q, d_k)``. Shapes
    as in :class:`AdditiveAttention`. A Transformer head is the low-rank
    case W = W_q^T W_k.
    """

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
