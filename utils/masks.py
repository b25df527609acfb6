"""Attention masks. Convention: a boolean mask is **True where attention is
allowed** (a real token, a visible position) and broadcasts to
``(B, heads, query_len, key_len)``.

PyTorch's own modules disagree with each other, so converters are here too:

==================================  ====================  ===================
who                                 boolean True means    float mask
==================================  ====================  ===================
``utils`` (and the course notes)    attend / keep         n/a
``F.scaled_dot_product_attention``  attend                added to the scores
``nn.MultiheadAttention``           **ignore**            added to the scores
==================================  ====================  ===================
"""

from __future__ import annotations

import torch

from .checks import check_ids, check_int, check_tensor
from .checks import check_mask as _check_mask

__all__ = [
    "band_mask",
    "padding_mask",
    "causal_mask",
    "decoder_mask",
    "lengths_to_mask",
    "to_mha_mask",
    "to_sdpa_mask",
    "to_additive_mask",
    "check_mask",
    "to_key_padding_mask",
    "to_mha_attn_mask",
    "bidirectional_mask",
    "prefix_lm_mask",
    "attention_pattern",
]

PATTERNS = ("bidirectional", "causal", "prefix")

Device = torch.device | str | None


def padding_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """True at real tokens. ids ``(B, S)`` -> mask ``(B, 1, 1, S)``, which
    broadcasts over heads and queries."""
    check_ids(ids, "ids", ndim=2)
    pad_id = check_int(pad_id, "pad_id")
    return (ids != pad_id)[:, None, None, :]


def causal_mask(size: int, device: Device = None) -> torch.Tensor:
    """Look-ahead mask ``(size, size)``: query t may see keys 0..t (the
    lower triangle, diagonal included)."""
    size = check_int(size, "size", 1)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def decoder_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Padding AND look-ahead for decoder self-attention:
    ids ``(B, T)`` -> ``(B, 1, T, T)``."""
    check_ids(ids, "ids", ndim=2)
    if ids.size(1) == 0:
        raise ValueError(
            f"ids must hold at least one position, got shape "
            f"{tuple(ids.shape)}"
        )
    causal = causal_mask(ids.size(1), device=ids.device)
    return padding_mask(ids, pad_id) & causal


def lengths_to_mask(lengths, max_len: int | None = None) -> torch.Tensor:
    """True at positions ``< length``: lengths ``(B,)`` -> ``(B, max_len)``.

    ``lengths`` is an integer tensor or a list of ints. ``max_len`` defaults
    to the longest length; a length above it is an error, not a silent cut.
    """
    if not isinstance(lengths, torch.Tensor):
        try:
            lengths = torch.as_tensor(lengths)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(
                f"lengths must be a 1-D tensor or a list of ints, "
                f"got {lengths!r}"
            ) from err
    kind = lengths.dtype
    if kind == torch.bool or kind.is_floating_point or kind.is_complex:
        raise TypeError(f"lengths must be integers, got dtype {kind}")
    check_tensor(lengths, "lengths", ndim=1)
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    else:
        max_len = check_int(max_len, "max_len", 0)
        if max_len < longest:
            raise ValueError(
                f"lengths {lengths.tolist()} contain {longest} "
                f"> max_len={max_len}"
            )
    positions = torch.arange(max_len, device=lengths.device)
    return positions < lengths[:, None]


def check_mask(
    mask: torch.Tensor, target: tuple[int, ...], name: str = "mask"
) -> torch.Tensor:
    """Validate a keep-mask against the score shape ``target``; return it.

    The rule of ``utils.checks.check_mask(mask, name, target)``, kept here
    with this argument order for code written before ``utils.checks``.
    """
    return _check_mask(mask, name, target)


def to_mha_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course mask -> ``nn.MultiheadAttention`` boolean mask (True =
    **ignore**): just the negation.

    Use it for ``key_padding_mask`` (pass a ``(B, S)`` keep-mask) or
    ``attn_mask`` (``(Lq, Lk)``).
    """
    _check_mask(keep, "keep")
    return ~keep


def to_sdpa_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course mask -> ``F.scaled_dot_product_attention`` boolean mask: the
    same polarity (True = attend), returned as it is."""
    _check_mask(keep, "keep")
    return keep


def to_additive_mask(
    keep: torch.Tensor, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Course mask -> float mask to add to the scores: 0 where kept, -inf
    where masked."""
    _check_mask(keep, "keep")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype!r}")
    out = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return out.masked_fill(~keep, float("-inf"))


def to_key_padding_mask(keep: torch.Tensor) -> torch.Tensor:
    """Course padding mask ``(B, 1, 1, S)`` or ``(B, S)`` ->
    ``nn.MultiheadAttention``'s ``key_padding_mask`` ``(B, S)``, True =
    **ignore** (a padded key)."""
    _check_mask(keep, "keep")
    if keep.dim() == 4 and keep.shape[1:3] == (1, 1):
        keep = keep[:, 0, 0, :]
    if keep.dim() != 2:
        raise ValueError(
            f"keep must have shape (B, 1, 1, S) or (B, S), "
            f"got {tuple(keep.shape)}"
        )
    return ~keep


def to_mha_attn_mask(keep: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Course mask -> ``nn.MultiheadAttention``'s ``attn_mask`` (True =
    **ignore**).

    ``(Lq, Lk)`` stays ``(Lq, Lk)``; a per-example ``(B, 1, Lq, Lk)`` or
    ``(B, h, Lq, Lk)`` becomes ``(B * num_heads, Lq, Lk)``, the 3-D layout
    that module expects (batch-major, heads inner).
    """
    _check_mask(keep, "keep")
    num_heads = check_int(num_heads, "num_heads", 1)
    if keep.dim() == 2:
        return ~keep
    if keep.dim() != 4 or keep.size(1) not in (1, num_heads):
        raise ValueError(
            f"keep must have shape (Lq, Lk), (B, 1, Lq, Lk) or "
            f"(B, {num_heads}, Lq, Lk), got {tuple(keep.shape)}"
        )
    b, _, lq, lk = keep.shape
    return ~keep.expand(b, num_heads, lq, lk).reshape(b * num_heads, lq, lk)


def bidirectional_mask(lengths, max_len: int | None = None) -> torch.Tensor:
    """Encoder / BERT pattern: every query sees every real key.
    lengths ``(B,)`` -> ``(B, 1, 1, L)``."""
    return lengths_to_mask(lengths, max_len)[:, None, None, :]


def prefix_lm_mask(
    size: int, prefix_len: int, device: Device = None
) -> torch.Tensor:
    """Prefix-LM / seq2seq pattern in one stack (UniLM): ``(size, size)``.

    Every query sees the first ``prefix_len`` keys (the source, read
    bidirectionally); the rest is causal (the target, generated left to
    right). ``prefix_len=0`` or ``1`` is the causal mask,
    ``prefix_len=size`` the full (bidirectional) one.
    """
    causal = causal_mask(size, device=device)
    prefix_len = check_int(prefix_len, "prefix_len", 0)
    if prefix_len > size:
        raise ValueError(f"prefix_len={prefix_len} is longer than size={size}")
    in_prefix = torch.arange(size, device=device) < prefix_len  # over keys
    return causal | in_prefix[None, :]


def band_mask(
    n: int, window: int, causal: bool = False, device: Device = None
) -> torch.Tensor:
    """Keep-mask ``(n, n)`` of a local window (restricted attention,
    chapters 1 and 6).

    Query i sees key j when ``|i - j| <= window`` (``causal=True``: when
    ``0 <= i - j <= window``). Each query sees at most
    ``r = 2 * window + 1`` keys (``window + 1`` when causal).
    """
    n = check_int(n, "n", 1)
    window = check_int(window, "window", 0)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {causal!r}")
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(n, device=device)[None, :]
    if causal:
        return (i - j >= 0) & (i - j <= window)
    return (i - j).abs() <= window


def attention_pattern(
    kind: str, lengths, prefix_len: int = 0, max_len: int | None = None
) -> torch.Tensor:
    """The mask zoo in one call: padding (from ``lengths``) AND a pattern,
    shape ``(B, 1, L, L)``.

    ``kind``: ``"bidirectional"`` (BERT), ``"causal"`` (GPT) or
    ``"prefix"`` (UniLM seq2seq, the first ``prefix_len`` positions visible
    to all). Padded keys are hidden; padded query rows still see the real
    keys (their outputs are ignored by the loss).
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, one of {PATTERNS}, got {kind!r}")
    if kind not in PATTERNS:
        raise ValueError(f"kind must be one of {PATTERNS}, got {kind!r}")
    keys = lengths_to_mask(lengths, max_len)  # (B, L)
    size = keys.size(1)
    if size == 0:
        raise ValueError(
            "lengths and max_len give an empty sequence (L = 0); "
            "nothing to mask"
        )
    if kind == "bidirectional":
        pattern = torch.ones(size, size, dtype=torch.bool, device=keys.device)
    elif kind == "causal":
        pattern = causal_mask(size, device=keys.device)
    else:
        pattern = prefix_lm_mask(size, prefix_len, device=keys.device)
    return keys[:, None, None, :] & pattern  # (B, 1, L, L)
