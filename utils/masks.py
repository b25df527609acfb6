"""Attention masks. Convention: a boolean mask is **True where attention is allowed**
(a real token, a visible position) and broadcasts to ``(B, heads, query_len, key_len)``.

PyTorch's own modules disagree with each other, so converters are here too:

=================================  ==========================  =====================
who                                boolean True means           float mask
=================================  ==========================  =====================
``utils`` (and the course notes)   attend / keep                n/a
``F.scaled_dot_product_attention`` attend                       added to the scores
``nn.MultiheadAttention``          **ignore**                   added to the scores
=================================  ==========================  =====================
"""
from __future__ import annotations

import torch

__all__ = [
    "padding_mask", "causal_mask", "decoder_mask", "lengths_to_mask",
    "to_mha_mask", "to_sdpa_mask", "to_additive_mask", "check_mask",
]


def _check_ids(ids: torch.Tensor, name: str = "ids") -> None:
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, seq_len), got shape {tuple(ids.shape)}")


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """True at real tokens. ids ``(B, S)`` -> mask ``(B, 1, 1, S)`` (broadcasts over heads and queries)."""
    _check_ids(ids)
    return (ids != pad_id)[:, None, None, :]


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Look-ahead mask ``(size, size)``: query t may see keys 0..t (lower triangle incl. diagonal)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be a positive int, got {size!r}")
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def decoder_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Padding AND look-ahead for decoder self-attention: ids ``(B, T)`` -> ``(B, 1, T, T)``."""
    _check_ids(ids)
    return padding_mask(ids, pad_id) & causal_mask(ids.size(1), device=ids.device)


def lengths_to_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """True at positions ``< length``: lengths ``(B,)`` -> mask ``(B, max_len)``.

    ``max_len`` defaults to the longest length; a length above it is an error, not a silent cut.
    """
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.as_tensor(lengths)
    if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be integers, got dtype {lengths.dtype}")
    if lengths.dim() != 1:
        raise ValueError(f"lengths must have shape (batch,), got shape {tuple(lengths.shape)}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    elif max_len < longest:
        raise ValueError(f"lengths {lengths.tolist()} contain {longest} > max_len={max_len}")
    return torch.arange(max_len, device=lengths.device) < lengths[:, None]


def check_mask(mask: torch.Tensor, target: tuple[int, ...], name: str = "mask") -> torch.Tensor:
    """Validate a keep-mask against the score shape ``target`` = (B, h, Lq, Lk); return it as bool."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = attend), got dtype {mask.dtype}")
    try:
        shape = torch.broadcast_shapes(mask.shape, target)
    except RuntimeError:
        shape = None
    if shape != torch.Size(target):
        raise ValueError(f"{name} of shape {tuple(mask.shape)} does not broadcast to the "
                         f"attention scores of shape {tuple(target)} (batch, heads, query_len, key_len)")
    return mask


def to_mha_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course mask -> ``nn.MultiheadAttention`` boolean mask (True = **ignore**): just the negation.

    Use it for ``key_padding_mask`` (pass a ``(B, S)`` keep-mask) or ``attn_mask`` (``(Lq, Lk)``).
    """
    if keep.dtype != torch.bool:
        raise TypeError(f"keep must be a bool tensor, got dtype {keep.dtype}")
    return ~keep


def to_sdpa_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course mask -> ``F.scaled_dot_product_attention`` boolean mask: same polarity (True = attend)."""
    if keep.dtype != torch.bool:
        raise TypeError(f"keep must be a bool tensor, got dtype {keep.dtype}")
    return keep


def to_additive_mask(keep: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Course mask -> float mask to add to the scores: 0 where kept, -inf where masked."""
    if keep.dtype != torch.bool:
        raise TypeError(f"keep must be a bool tensor, got dtype {keep.dtype}")
    out = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return out.masked_fill(~keep, float("-inf"))
