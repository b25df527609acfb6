"""Scaled dot-product attention and multi-head attention, written from the formulas, plus the
additive (Bahdanau) and bilinear (Luong "general") scorers for queries and keys of different sizes.

Shapes are batch-first: queries ``(B, Lq, d_model)``, keys and values ``(B, Lk, d_model)``.
Masks are boolean, True = may attend (see ``utils.masks``).
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from .masks import check_mask

__all__ = [
    "scaled_dot_product_attention", "masked_softmax", "MultiHeadAttention", "load_torch_mha_weights",
    "AdditiveAttention", "BilinearAttention",
]


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last dim (the keys) that skips masked keys.

    scores ``(..., Lq, Lk)``, mask broadcastable to it with True = attend. Masked keys get
    exactly zero weight; a row with every key masked gets all zeros (not NaN).
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    check_mask(mask, tuple(scores.shape))
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    # Rows with every key masked are NaN after softmax; they attend to nothing: zeros.
    return weights.masked_fill(~mask, 0.0)


def _attend(scores: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
            dropout: Callable[[torch.Tensor], torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor]:
    weights = masked_softmax(scores, mask)  # (..., Lq, Lk)
    attended = dropout(weights) if dropout is not None else weights
    return attended @ v, weights


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v.

    q ``(..., Lq, d_k)``, k ``(..., Lk, d_k)``, v ``(..., Lk, d_v)``, mask broadcastable to
    ``(..., Lq, Lk)`` with True = attend. Returns ``out (..., Lq, d_v)`` and
    ``weights (..., Lq, Lk)`` (before dropout). A query row whose keys are all masked gets
    zero weights and a zero output instead of the NaN that softmax over all -inf gives.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() < 2:
            raise ValueError(f"{name} must be a tensor with at least 2 dims (..., length, features), "
                             f"got {getattr(t, 'shape', type(t).__name__)}")
    if q.size(-1) != k.size(-1):
        raise ValueError(f"q and k must share the feature size d_k: q {tuple(q.shape)}, k {tuple(k.shape)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length: k {tuple(k.shape)}, v {tuple(v.shape)}")
    scores = q @ k.transpose(-2, -1)  # (..., Lq, Lk)
    scores.div_(math.sqrt(q.size(-1)))  # in place: same numbers, one (Lq, Lk) buffer fewer
    return _attend(scores, v, mask, dropout)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend per head, concatenate, W^O.

    ``forward(q, k, v, mask=None)`` with q ``(B, Lq, d_model)``, k and v ``(B, Lk, d_model)``
    returns ``out (B, Lq, d_model)`` and ``weights (B, num_heads, Lq, Lk)``.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model <= 0 or num_heads <= 0:
            raise ValueError(f"d_model and num_heads must be positive, got d_model={d_model}, num_heads={num_heads}")
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.d_head).transpose(1, 2)  # (B, h, n, d_head)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        for name, t in (("q", q), ("k", k), ("v", v)):
            if t.dim() != 3 or t.size(-1) != self.d_model:
                raise ValueError(f"{name} must have shape (batch, length, d_model={self.d_model}), "
                                 f"got {tuple(t.shape)}")
        if not (q.size(0) == k.size(0) == v.size(0)):
            raise ValueError(f"q, k, v must share the batch size, got {q.size(0)}, {k.size(0)}, {v.size(0)}")
        if k.size(1) != v.size(1):
            raise ValueError(f"k and v must have the same length: k {tuple(k.shape)}, v {tuple(v.shape)}")
        b, lq, lk = q.size(0), q.size(1), k.size(1)
        if mask is not None:
            check_mask(mask, (b, self.num_heads, lq, lk))
        qh, kh, vh = self._split(self.w_q(q)), self._split(self.w_k(k)), self._split(self.w_v(v))
        out, weights = scaled_dot_product_attention(qh, kh, vh, mask, dropout=self.dropout)  # (B, h, Lq, d_head)
        out = out.transpose(1, 2).reshape(b, lq, self.d_model)  # concat heads: (B, Lq, d_model)
        return self.w_o(out), weights


@torch.no_grad()
def load_torch_mha_weights(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> MultiHeadAttention:
    """Copy an ``nn.MultiheadAttention``'s weights into ours (its in_proj stacks W_q, W_k, W_v)."""
    if theirs.embed_dim != ours.d_model or theirs.num_heads != ours.num_heads:
        raise ValueError(f"shapes differ: ours d_model={ours.d_model}, heads={ours.num_heads}; "
                         f"theirs embed_dim={theirs.embed_dim}, heads={theirs.num_heads}")
    if theirs.in_proj_weight is None:
        raise ValueError("theirs uses separate q/k/v projections (kdim/vdim set); only the packed form is supported")
    for i, lin in enumerate((ours.w_q, ours.w_k, ours.w_v)):
        lin.weight.copy_(theirs.in_proj_weight[i * ours.d_model:(i + 1) * ours.d_model])
        if lin.bias is not None:
            lin.bias.copy_(theirs.in_proj_bias[i * ours.d_model:(i + 1) * ours.d_model])
    ours.w_o.weight.copy_(theirs.out_proj.weight)
    if ours.w_o.bias is not None:
        ours.w_o.bias.copy_(theirs.out_proj.bias)
    return ours


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, d_q: int, d_k: int) -> None:
    for name, t, d in (("q", q, d_q), ("k", k, d_k), ("v", v, None)):
        if not isinstance(t, torch.Tensor) or t.dim() < 2:
            raise ValueError(f"{name} must be a tensor with at least 2 dims (..., length, features), "
                             f"got {getattr(t, 'shape', type(t).__name__)}")
        if d is not None and t.size(-1) != d:
            raise ValueError(f"{name} must have {d} features in its last dim, got shape {tuple(t.shape)}")
    if k.size(-2) != v.size(-2):
        raise ValueError(f"k and v must have the same length: k {tuple(k.shape)}, v {tuple(v.shape)}")


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: score(q, k) = w^T tanh(W q + U k).

    Queries and keys may have different sizes. ``forward(q, k, v, mask=None)`` with
    q ``(..., Lq, d_q)``, k ``(..., Lk, d_k)``, v ``(..., Lk, d_v)`` returns
    ``out (..., Lq, d_v)`` and ``weights (..., Lq, Lk)``. The hidden tensor is
    ``(..., Lq, Lk, d_hidden)``: more memory than a dot product, the price of the MLP.
    """

    def __init__(self, d_q: int, d_k: int, d_hidden: int, dropout: float = 0.0):
        super().__init__()
        for name, value in (("d_q", d_q), ("d_k", d_k), ("d_hidden", d_hidden)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_q, self.d_k, self.d_hidden = d_q, d_k, d_hidden
        self.w_q = nn.Linear(d_q, d_hidden, bias=False)  # W
        self.w_k = nn.Linear(d_k, d_hidden, bias=False)  # U
        self.w_score = nn.Linear(d_hidden, 1, bias=False)  # w^T
        self.dropout = nn.Dropout(dropout)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Unnormalised scores ``(..., Lq, Lk)``."""
        hidden = self.w_q(q).unsqueeze(-2) + self.w_k(k).unsqueeze(-3)  # (..., Lq, Lk, d_hidden)
        return self.w_score(torch.tanh(hidden)).squeeze(-1)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        _check_qkv(q, k, v, self.d_q, self.d_k)
        return _attend(self.scores(q, k), v, mask, self.dropout)


class BilinearAttention(nn.Module):
    """Bilinear ("general", Luong) attention: score(q, k) = q W k^T, optionally / sqrt(d_k).

    Queries and keys may have different sizes: W is ``(d_q, d_k)``. Shapes as in
    :class:`AdditiveAttention`. A Transformer head is the low-rank case W = W_q^T W_k.
    """

    def __init__(self, d_q: int, d_k: int, scale: bool = True, dropout: float = 0.0):
        super().__init__()
        for name, value in (("d_q", d_q), ("d_k", d_k)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_q, self.d_k, self.scale = d_q, d_k, scale
        self.weight = nn.Parameter(torch.empty(d_q, d_k))
        nn.init.xavier_uniform_(self.weight)
        self.dropout = nn.Dropout(dropout)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Unnormalised scores ``(..., Lq, Lk)``."""
        s = (q @ self.weight) @ k.transpose(-2, -1)
        return s / math.sqrt(self.d_k) if self.scale else s

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        _check_qkv(q, k, v, self.d_q, self.d_k)
        return _attend(self.scores(q, k), v, mask, self.dropout)
