"""Scaled dot-product and multi-head attention from the formulas (chapter
2). Batch-first; bool masks, True = may attend. The module takes a rank-4
``mask`` and a separate ``key_padding_mask (B, Lk)``: a ``(B, Lk)`` mask
would silently broadcast as ``(Lq, Lk)`` when ``B == Lq``."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .checks import (
    check_bool,
    check_heads,
    check_instance,
    check_int,
    check_like_weights,
    check_mask,
    check_probability,
    check_qkv,
    check_tensor,
)

# what a mask of another rank should have been (module docstring)
MASK_DIMS = "(B or 1, num_heads or 1, Lq, Lk)"
MASK_HINT = (
    ". Pass a (Lq, Lk) mask as mask[None, None] and a (B, Lk) padding mask "
    "as key_padding_mask=... (True = real token), or use padding_mask(ids), "
    "which is already (B, 1, 1, Lk)"
)

__all__ = [
    "scaled_dot_product_attention",
    "masked_softmax",
    "attend",
    "MultiHeadAttention",
    "AttentionCache",
    "load_torch_mha_weights",
]


def masked_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Softmax over the keys of ``(..., Lq, Lk)``; masked keys get exactly
    0, an all-masked row zeros (not NaN)."""
    check_tensor(scores, "scores", floating=True, min_ndim=1)
    if mask is not None:
        check_mask(mask, "mask", scores.shape, device=scores.device)
    return _masked_softmax(scores, mask)


def _masked_softmax(scores, mask):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    # all-masked rows are NaN after softmax: they attend to nothing, zeros
    return weights.masked_fill(~mask, 0.0)


def attend(
    scores: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores -> masked softmax -> dropout -> @ v -> ``(out, weights)``."""
    if mask is not None:
        check_mask(mask, "mask", scores.shape, device=scores.device)
    return _attend(scores, v, mask, dropout_p)


def _attend(scores, v, mask, dropout_p):
    weights = _masked_softmax(scores, mask)  # (..., Lq, Lk)
    attended = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return attended @ v, weights


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k)) v: q ``(..., Lq, d_k)``, k ``(..., Lk,
    d_k)``, v ``(..., Lk, d_v)``, mask broadcasting to ``(..., Lq, Lk)`` ->
    ``out (..., Lq, d_v)``, ``weights (..., Lq, Lk)`` (before dropout, which
    applies whenever > 0). An all-masked row gives zeros, not NaN."""
    check_qkv(q, k, v)
    check_int(q.size(-1), "q and k's feature size d_k", 1)
    dropout = check_probability(dropout, "dropout")
    return attend(_scores(q, k, v), v, mask, dropout)


def _scores(q, k, v) -> torch.Tensor:
    """q k^T / sqrt(d_k), expanded to the batch dims of q, k and v."""
    scores = q @ k.transpose(-2, -1)  # (..., Lq, Lk)
    # in place: same numbers, one (Lq, Lk) buffer fewer
    scores.div_(math.sqrt(q.size(-1)))
    # v's batch dims count too (the output has them): a view, no copy
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    return scores.expand(*batch, q.size(-2), k.size(-2))


class MultiHeadAttention(nn.Module):
    """Project, split into heads, attend per head, concatenate, W^O:
    ``forward(q (B, Lq, d_model), k, v (B, Lk, d_model), mask=None,
    key_padding_mask=None)`` -> ``out (B, Lq, d_model)``, ``weights (B, h,
    Lq, Lk)``. ``mask``: bool ``(B|1, h|1, Lq, Lk)``. ``key_padding_mask``:
    bool ``(B, Lk)``, True = real token (``nn.MultiheadAttention``'s means
    ignore: ``utils.masks.to_key_padding_mask``). ``last_weights``: the
    weights of the last call. ``forward`` runs unchecked, as every layer
    inside a model does; ``check_inputs`` takes the same arguments and names
    what is wrong (a rank-2 ``mask``, shapes, dtypes, devices)."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        d_model = check_int(d_model, "d_model", 1)
        check_heads(d_model, num_heads)
        dropout = check_probability(dropout, "dropout")
        check_bool(bias, "bias")
        self.d_model, self.num_heads = d_model, num_heads
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        # the weights (B, h, Lq, Lk) of the last forward, for inspection
        self.last_weights: torch.Tensor | None = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n, d_model) -> (B, h, n, d_head): each head its slice."""
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.d_head).transpose(1, 2)

    def merge_heads(self, out: torch.Tensor) -> torch.Tensor:
        """(B, h, n, d_head) -> concatenated, W_O -> (B, n, d_model)."""
        b, _, n, _ = out.shape
        return self.w_o(out.transpose(1, 2).reshape(b, n, self.d_model))

    def _dropout_p(self) -> float:  # the weights' dropout now (0 in eval)
        return self.dropout.p if self.training else 0.0

    def check_inputs(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        cache: AttentionCache | None = None,
    ) -> None:
        """Raise on what ``forward`` would compute wrongly or fail on, with
        a sentence: the entry point's check (``forward`` checks nothing)."""
        d = self.d_model
        check_tensor(q, "q", floating=True, shape=("batch", "length", d))
        for name, t in (("k", k), ("v", v)):
            check_tensor(t, name, shape=(q.size(0), "length", d))
        check_qkv(q, k, v)  # one dtype and device, k and v of one length
        check_like_weights(self, q)
        lk = k.size(1)  # the keys the scores will have
        if cache is not None:
            check_instance(cache, "cache", AttentionCache)
            projected = cache.static and cache.keys is not None
            lk = cache.length if projected else cache.length + lk
        b, lq = q.size(0), q.size(1)
        if mask is not None:  # rank 2 would be ambiguous (module docstring)
            if check_tensor(mask, "mask").dim() != 4:
                got = f"got shape {tuple(mask.shape)}"
                raise ValueError(
                    f"mask must have 4 dims {MASK_DIMS}, {got}{MASK_HINT}"
                )
            scores = (b, self.num_heads, lq, lk)  # what the mask applies to
            check_mask(mask, "mask", scores, device=q.device)
        if key_padding_mask is not None:
            check_mask(key_padding_mask, "key_padding_mask", device=q.device)
            check_tensor(key_padding_mask, "key_padding_mask", shape=(b, lk))

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        cache: AttentionCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """With a ``cache``, ``k`` and ``v`` are only the new positions (self-
        attention: the keys attend to the cached ones plus these) or the
        encoder memory, projected on the first call only (cross-attention,
        ``AttentionCache(static=True)``); ``mask`` then covers every key.
        Nothing is checked here: ``check_inputs`` says what is wrong."""
        qh = self.split_heads(self.w_q(q))  # (B, h, Lq, d_head)
        if cache is not None and cache.static and cache.keys is not None:
            kh, vh = cache.keys, cache.values  # the memory's, projected once
        else:
            kh = self.split_heads(self.w_k(k))  # (B, h, Lk, d_head)
            vh = self.split_heads(self.w_v(v))
            if cache is not None:  # past positions, then these
                kh, vh = cache.update(kh, vh)
        if key_padding_mask is not None:  # (B, Lk) -> (B, 1, 1, Lk)
            keys = key_padding_mask[:, None, None, :]
            mask = keys if mask is None else mask & keys
        scores = _scores(qh, kh, vh)  # (B, h, Lq, Lk)
        out, weights = _attend(scores, vh, mask, self._dropout_p())
        self.last_weights = weights  # kept for a look after the call
        return self.merge_heads(out), weights

    def causal(self, x: torch.Tensor) -> torch.Tensor:
        """Causal self-attention of ``x`` ``(B, n, d_model)`` by PyTorch's
        fused kernel (``F.scaled_dot_product_attention``, ``is_causal``):
        ``forward(x, x, x, causal mask)[0]`` up to rounding, faster, the
        weights never formed, the dropout drawn in the kernel's order (for
        training; tests/test_gpt.py compares the two)."""
        heads = [
            self.split_heads(w(x)) for w in (self.w_q, self.w_k, self.w_v)
        ]
        out = F.scaled_dot_product_attention(
            *heads, dropout_p=self._dropout_p(), is_causal=True
        )
        self.last_weights = None  # never formed
        return self.merge_heads(out)


class AttentionCache:
    """Keys and values ``(B, h, t, d_head)`` kept for the next call."""

    def __init__(self, static: bool = False):
        self.static = check_bool(static, "static")
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """How many key positions are held."""
        return 0 if self.keys is None else self.keys.size(2)

    def update(
        self, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append ``(B, h, n, d_head)`` keys/values; return all held."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep batch rows ``rows`` ``(B',)``, in that order."""
        if self.keys is not None:
            self.keys = self.keys.index_select(0, rows)
            self.values = self.values.index_select(0, rows)

    def num_bytes(self) -> int:
        """Memory held by the keys and values."""
        return sum(
            t.numel() * t.element_size()
            for t in (self.keys, self.values)
            if t is not None
        )


@torch.no_grad()
def load_torch_mha_weights(
    ours: MultiHeadAttention, theirs: nn.MultiheadAttention
) -> MultiHeadAttention:
    """``nn.MultiheadAttention``'s weights -> ``ours``; returns it."""
    check_instance(ours, "ours", MultiHeadAttention, "a MultiHeadAttention")
    what = "an nn.MultiheadAttention"
    check_instance(theirs, "theirs", nn.MultiheadAttention, what)
    # the same sizes, q/k/v packed in one in_proj (no kdim/vdim), bias or not
    want = (ours.d_model, ours.num_heads, True, ours.w_q.bias is not None)
    packed = theirs.in_proj_weight is not None, theirs.in_proj_bias is not None
    kind = (theirs.embed_dim, theirs.num_heads, *packed)
    if kind != want:
        raise ValueError(f"(size, heads, packed, bias): {kind} != ours {want}")
    d = ours.d_model
    for i, lin in enumerate((ours.w_q, ours.w_k, ours.w_v)):
        lin.weight.copy_(theirs.in_proj_weight[i * d : (i + 1) * d])
        if lin.bias is not None:
            lin.bias.copy_(theirs.in_proj_bias[i * d : (i + 1) * d])
    ours.w_o.weight.copy_(theirs.out_proj.weight)
    if ours.w_o.bias is not None:
        ours.w_o.bias.copy_(theirs.out_proj.bias)
    return ours
