"""Attention masks (chapter 3). A bool mask is **True where attention is
allowed** (a real token, a visible position) and broadcasts to ``(B, heads,
Lq, Lk)``. PyTorch disagrees with itself, hence the converters:
``F.scaled_dot_product_attention`` reads True as attend,
``nn.MultiheadAttention`` as **ignore**; both add a float mask to the scores.
"""

from __future__ import annotations

import torch

from .checks import (
    check_bool,
    check_choice,
    check_at_most,
    check_ids,
    check_int,
    check_mask,
    check_tensor,
)

__all__ = [
    "band_mask",
    "padding_mask",
    "causal_mask",
    "decoder_mask",
    "lengths_to_mask",
    "to_mha_mask",
    "to_sdpa_mask",
    "to_additive_mask",
    "to_key_padding_mask",
    "to_mha_attn_mask",
    "prefix_lm_mask",
    "attention_pattern",
]

PATTERNS = ("bidirectional", "causal", "prefix")

Device = torch.device | str | None


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """True at real tokens: ids ``(B, S)`` -> ``(B, 1, 1, S)``."""
    check_ids(ids, "ids", ndim=2)
    pad_id = check_int(pad_id, "pad_id")
    return (ids != pad_id)[:, None, None, :]


def causal_mask(size: int, device: Device = None) -> torch.Tensor:
    """``(size, size)``: query t sees keys 0..t (lower triangle)."""
    size = check_int(size, "size", 1)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def decoder_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Padding AND look-ahead: ids ``(B, T)`` -> ``(B, 1, T, T)``."""
    keep = padding_mask(ids, pad_id)  # (B, 1, 1, T), checks ids and pad_id
    check_int(ids.size(1), "ids must hold at least one position: length", 1)
    return keep & causal_mask(ids.size(1), device=ids.device)


def lengths_to_mask(lengths, max_len: int | None = None) -> torch.Tensor:
    """Lengths ``(B,)`` -> ``(B, max_len)``, True below the length."""
    try:
        lengths = torch.as_tensor(lengths)
    except (TypeError, ValueError, RuntimeError) as err:
        msg = (
            f"lengths must be a 1-D tensor or a list of ints, got {lengths!r}"
        )
        raise TypeError(msg) from err
    check_ids(lengths, "lengths", ndim=1)  # integers (not bool), rank 1
    check_int(int(lengths.min()) if len(lengths) else 0, "lengths' min", 0)
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    max_len = check_int(max_len, "max_len", 0)
    if max_len < longest:
        raise ValueError(
            f"lengths {lengths.tolist()} contain {longest} > max_len={max_len}"
        )
    positions = torch.arange(max_len, device=lengths.device)
    return positions < lengths[:, None]


def to_mha_mask(keep: torch.Tensor) -> torch.Tensor:
    """Negated: ``nn.MultiheadAttention``'s bool mask, True = **ignore**."""
    check_mask(keep, "keep")
    return ~keep


def to_sdpa_mask(keep: torch.Tensor) -> torch.Tensor:
    """``F.scaled_dot_product_attention``'s mask: the same polarity, as is."""
    check_mask(keep, "keep")
    return keep


def to_additive_mask(
    keep: torch.Tensor, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Float mask added to the scores: 0 where kept, -inf where masked."""
    check_mask(keep, "keep")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype!r}")
    out = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return out.masked_fill(~keep, float("-inf"))


def to_key_padding_mask(keep: torch.Tensor) -> torch.Tensor:
    """``(B, 1, 1, S)`` or ``(B, S)`` -> ``key_padding_mask (B, S)``."""
    check_mask(keep, "keep")
    if keep.dim() == 4 and keep.shape[1:3] == (1, 1):
        keep = keep[:, 0, 0, :]
    check_tensor(keep, "keep", ndim=2, layout="(B, S) or (B, 1, 1, S)")
    return ~keep


def to_mha_attn_mask(keep: torch.Tensor, num_heads: int) -> torch.Tensor:
    """-> ``nn.MultiheadAttention``'s ``attn_mask``: ``(Lq, Lk)`` or
    ``(B * num_heads, Lq, Lk)``, True = **ignore**."""
    check_mask(keep, "keep")
    num_heads = check_int(num_heads, "num_heads", 1)
    if keep.dim() == 2:
        return ~keep
    check_tensor(keep, "keep", ndim=4, layout="(Lq, Lk) or (B, h, Lq, Lk)")
    b, _, lq, lk = keep.shape
    check_mask(keep, "keep", (b, num_heads, lq, lk))
    return ~keep.expand(b, num_heads, lq, lk).reshape(b * num_heads, lq, lk)


def prefix_lm_mask(
    size: int, prefix_len: int, device: Device = None
) -> torch.Tensor:
    """``(size, size)``: all see the first ``prefix_len`` keys, then causal."""
    causal = causal_mask(size, device=device)
    prefix_len = check_int(prefix_len, "prefix_len", 0)
    check_at_most(prefix_len, "prefix_len", size, f"size={size}")
    in_prefix = torch.arange(size, device=device) < prefix_len  # over keys
    return causal | in_prefix[None, :]


def band_mask(
    n: int, window: int, causal: bool = False, device: Device = None
) -> torch.Tensor:
    """Local window ``(n, n)`` (chapters 1, 6): i sees j when ``|i - j| <=
    window`` (causal: ``0 <= i - j <= window``), so at most
    ``r = 2 * window + 1`` keys (``window + 1`` causal)."""
    n = check_int(n, "n", 1)
    window = check_int(window, "window", 0)
    check_bool(causal, "causal")
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    if causal:
        return (i - j >= 0) & (i - j <= window)
    return (i - j).abs() <= window


def attention_pattern(
    kind: str, lengths, prefix_len: int = 0, max_len: int | None = None
) -> torch.Tensor:
    """Padding AND a ``kind`` of pattern -> ``(B, 1, L, L)``:
    ``"bidirectional"``, ``"causal"`` or ``"prefix"``."""
    check_choice(kind, "kind", PATTERNS)
    keys = lengths_to_mask(lengths, max_len)  # (B, L)
    size = check_int(keys.size(1), "L (an empty sequence?)", 1)
    if kind == "bidirectional":
        pattern = torch.ones(size, size, dtype=torch.bool, device=keys.device)
    elif kind == "causal":
        pattern = causal_mask(size, device=keys.device)
    else:
        pattern = prefix_lm_mask(size, prefix_len, device=keys.device)
    return keys[:, None, None, :] & pattern  # (B, 1, L, L)
