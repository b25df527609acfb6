"""Cheaper attention (chapter 6): windowed attention two ways, exact
attention by blocks with an online softmax. Masks: True = may attend."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention
from .checks import check_int, check_mask, check_qkv, check_tensor
from .masks import band_mask

__all__ = [
    "banded_attention",
    "windowed_attention",
    "online_softmax_attention",
]


def _check_window(q, k, v, window) -> None:
    check_qkv(q, k, v)
    check_int(window, "window", 0)
    # a window around each position: as many keys as queries
    same = (*k.shape[:-2], q.size(-2), k.size(-1))
    check_tensor(k, "k (the same length as q)", shape=same)


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    causal: bool = False,
) -> torch.Tensor:
    """Full attention with a band mask, O(n^2 d): the reference."""
    _check_window(q, k, v, window)
    mask = band_mask(q.size(-2), window, causal=causal, device=q.device)
    return scaled_dot_product_attention(q, k, v, mask)[0]


def windowed_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    window: int,
    causal: bool = False,
) -> torch.Tensor:
    """O(n r d): ``unfold`` gives each query its r keys, no ``(n, n)``."""
    _check_window(q, k, v, window)
    n, d_k = q.size(-2), q.size(-1)
    left, right = window, (0 if causal else window)
    r = left + right + 1
    k_pad = F.pad(k, (0, 0, left, right))  # (..., n + left + right, d_k)
    v_pad = F.pad(v, (0, 0, left, right))
    # window slot t of query i holds key i - left + t
    k_win = k_pad.unfold(-2, r, 1)  # (..., n, d_k, r)
    v_win = v_pad.unfold(-2, r, 1)  # (..., n, d_v, r)
    scores = torch.einsum("...nd,...ndr->...nr", q, k_win) / math.sqrt(d_k)
    pos = torch.arange(n, device=q.device)
    key_pos = pos[:, None] - left + torch.arange(r, device=q.device)  # (n, r)
    real = (key_pos >= 0) & (key_pos < n)  # False on the zero padding
    # every row keeps key i itself, so softmax never sees an all -inf row
    weights = torch.softmax(scores.masked_fill(~real, float("-inf")), dim=-1)
    return torch.einsum("...nr,...ndr->...nd", weights, v_win)


def online_softmax_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_size: int,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Exact attention over blocks of ``block_size`` keys, rescaling by
    ``exp(m_old - m_new)``: ``out (..., Lq, d_v)``."""
    check_qkv(q, k, v)
    check_int(block_size, "block_size", 1)
    lq, lk = q.size(-2), k.size(-2)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        check_mask(mask, "mask", (*batch, lq, lk))
        mask = mask.expand(*batch, lq, lk)  # a view: no (Lq, Lk) copy is made
    scale = 1.0 / math.sqrt(q.size(-1))
    opts = {"dtype": q.dtype, "device": q.device}
    m = torch.full((*batch, lq, 1), float("-inf"), **opts)
    total = torch.zeros((*batch, lq, 1), **opts)  # running sum of weights
    acc = torch.zeros((*batch, lq, v.size(-1)), **opts)
    for start in range(0, lk, block_size):
        stop = min(start + block_size, lk)
        k_blk = k[..., start:stop, :]
        s = (q @ k_blk.transpose(-2, -1)) * scale  # (..., Lq, block)
        if mask is not None:
            s = s.masked_fill(~mask[..., start:stop], float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        # m_new is -inf only while every key seen so far is masked: shift by 0
        shift = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - shift)  # (..., Lq, block), unnormalised weights
        rescale = torch.exp(m - shift)  # how much the old running sums shrink
        total = total * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:stop, :]
        m = m_new
    # total == 0 only for rows with nothing visible: their output stays 0
    return acc / torch.where(total > 0, total, torch.ones_like(total))
