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

import numbers

import torch

from .checks import check_int as _check_int

__all__ = [
    "band_mask",
    "padding_mask", "causal_mask", "decoder_mask", "lengths_to_mask",
    "to_mha_mask", "to_sdpa_mask", "to_additive_mask", "check_mask",
    "to_key_padding_mask", "to_mha_attn_mask",
    "bidirectional_mask", "prefix_lm_mask", "attention_pattern",
]

PATTERNS = ("bidirectional", "causal", "prefix")




def _check_keep(keep, name: str = "keep") -> None:
    if not isinstance(keep, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(keep).__name__}")
    if keep.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = attend), got dtype {keep.dtype}")


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
    _check_int(pad_id, "pad_id", minimum=None)
    return (ids != pad_id)[:, None, None, :]


def causal_mask(size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Look-ahead mask ``(size, size)``: query t may see keys 0..t (lower triangle incl. diagonal)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"size must be a positive int, got {type(size).__name__} {size!r}")
    size = int(size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def decoder_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Padding AND look-ahead for decoder self-attention: ids ``(B, T)`` -> ``(B, 1, T, T)``."""
    _check_ids(ids)
    if ids.size(1) == 0:
        raise ValueError(f"ids must hold at least one position, got shape {tuple(ids.shape)}")
    return padding_mask(ids, pad_id) & causal_mask(ids.size(1), device=ids.device)


def lengths_to_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """True at positions ``< length``: lengths ``(B,)`` -> mask ``(B, max_len)``.

    ``max_len`` defaults to the longest length; a length above it is an error, not a silent cut.
    """
    if not isinstance(lengths, torch.Tensor):
        try:
            lengths = torch.as_tensor(lengths)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"lengths must be a 1-D tensor or list of ints, got {lengths!r}") from err
    if lengths.dtype.is_floating_point or lengths.dtype.is_complex or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be integers, got dtype {lengths.dtype}")
    if lengths.dim() != 1:
        raise ValueError(f"lengths must have shape (batch,), got shape {tuple(lengths.shape)}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is not None:
        _check_int(max_len, "max_len", 0)
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
    _check_keep(keep)
    return ~keep


def to_sdpa_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course mask -> ``F.scaled_dot_product_attention`` boolean mask: same polarity (True = attend)."""
    _check_keep(keep)
    return keep


def to_additive_mask(keep: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Course mask -> float mask to add to the scores: 0 where kept, -inf where masked."""
    _check_keep(keep)
    out = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return out.masked_fill(~keep, float("-inf"))


def to_key_padding_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course padding mask ``(B, 1, 1, S)`` or ``(B, S)`` -> ``nn.MultiheadAttention``'s
    ``key_padding_mask`` ``(B, S)``, True = **ignore** (a padded key)."""
    _check_keep(keep)
    if keep.dim() == 4 and keep.shape[1:3] == (1, 1):
        keep = keep[:, 0, 0, :]
    if keep.dim() != 2:
        raise ValueError(f"keep must have shape (B, 1, 1, S) or (B, S), got {tuple(keep.shape)}")
    return ~keep


def to_mha_attn_mask(keep: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Course mask -> ``nn.MultiheadAttention``'s ``attn_mask`` (True = **ignore**).

    ``(Lq, Lk)`` stays ``(Lq, Lk)``; a per-example ``(B, 1, Lq, Lk)`` or ``(B, h, Lq, Lk)``
    becomes ``(B * num_heads, Lq, Lk)``, the 3-D layout that module expects (batch-major).
    """
    _check_keep(keep)
    _check_int(num_heads, "num_heads", minimum=1)
    if keep.dim() == 2:
        return ~keep
    if keep.dim() != 4 or keep.size(1) not in (1, num_heads):
        raise ValueError(f"keep must have shape (Lq, Lk), (B, 1, Lq, Lk) or (B, {num_heads}, Lq, Lk), "
                         f"got {tuple(keep.shape)}")
    b, _, lq, lk = keep.shape
    return ~keep.expand(b, num_heads, lq, lk).reshape(b * num_heads, lq, lk)


def bidirectional_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Encoder / BERT pattern: every query sees every real key. lengths ``(B,)`` -> ``(B, 1, 1, L)``."""
    return lengths_to_mask(lengths, max_len)[:, None, None, :]


def prefix_lm_mask(size: int, prefix_len: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Prefix-LM / seq2seq pattern in one stack (UniLM): ``(size, size)``.

    Every query sees the first ``prefix_len`` keys (the source, read bidirectionally);
    the rest is causal (the target, generated left to right). ``prefix_len=0`` or ``1`` is
    the causal mask, ``prefix_len=size`` the full (bidirectional) one.
    """
    causal = causal_mask(size, device=device)
    _check_int(prefix_len, "prefix_len", 0)
    if prefix_len > size:
        raise ValueError(f"prefix_len={prefix_len} is longer than size={size}")
    in_prefix = torch.arange(size, device=device) < prefix_len  # (size,) over keys
    return causal | in_prefix[None, :]


def band_mask(n: int, window: int, causal: bool = False,
              device: torch.device | str | None = None) -> torch.Tensor:
    """Keep-mask ``(n, n)`` of a local window (restricted attention, chapters 1 and 6): query i sees key j when ``|i - j| <= window``
    (``causal=True``: when ``0 <= i - j <= window``). Each query sees at most
    ``r = 2 * window + 1`` keys (``window + 1`` when causal)."""
    _check_int(n, "n", 1)
    _check_int(window, "window", 0)
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    if causal:
        return (i - j >= 0) & (i - j <= window)
    return (i - j).abs() <= window


def attention_pattern(kind: str, lengths, prefix_len: int = 0, max_len: int | None = None) -> torch.Tensor:
    """The mask zoo in one call: padding (from ``lengths``) AND a pattern, shape ``(B, 1, L, L)``.

    ``kind``: ``"bidirectional"`` (BERT), ``"causal"`` (GPT) or ``"prefix"`` (UniLM seq2seq,
    the first ``prefix_len`` positions visible to all). Padded keys are hidden; padded query
    rows still see the real keys (their outputs are ignored by the loss).
    """
    if kind not in PATTERNS:
        raise ValueError(f"kind must be one of {PATTERNS}, got {kind!r}")
    keys = lengths_to_mask(lengths, max_len)  # (B, L)
    size = keys.size(1)
    if size == 0:
        raise ValueError("lengths and max_len give an empty sequence (L = 0); nothing to mask")
    if kind == "bidirectional":
        pattern = torch.ones(size, size, dtype=torch.bool, device=keys.device)
    elif kind == "causal":
        pattern = causal_mask(size, device=keys.device)
    else:
        pattern = prefix_lm_mask(size, prefix_len, device=keys.device)
    return keys[:, None, None, :] & pattern  # (B, 1, L, L)
