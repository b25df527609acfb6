"""Scaled dot-product attention and multi-head attention, written from the formulas.

Shapes are batch-first: queries ``(B, Lq, d_model)``, keys and values ``(B, Lk, d_model)``.
Masks are boolean, True = may attend (see ``utils.masks``).
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from .masks import check_mask

__all__ = ["scaled_dot_product_attention", "MultiHeadAttention", "load_torch_mha_weights"]


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
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Lq, Lk)
    if mask is not None:
        check_mask(mask, tuple(scores.shape))
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        # Rows with every key masked are NaN after softmax; they attend to nothing: zeros.
        weights = weights.masked_fill(~mask, 0.0)
    attended = dropout(weights) if dropout is not None else weights
    return attended @ v, weights


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
