"""A key/value cache for incremental decoding with ``utils.model.Transformer``.

Generating token ``t`` needs the decoder state at position ``t`` only. Without a
cache, ``model.decode(ys)`` recomputes all ``t`` positions of every layer at each
step. With one, each decoder layer keeps the keys and values of its
self-attention for the positions already seen and appends one position per
step; the cross-attention keys and values depend only on the encoder memory, so
they are computed once. A step then costs O(t) (one query against t keys)
instead of O(t^2) (t queries against up to t keys), and a whole sequence of T
tokens O(T^2) instead of O(T^3) in attention; the projections and FFN go from
O(T^2) to O(T) rows.

The step reuses the model's own sublayers and weights (embedding, positional
encoding, projections, the attention's head split and merge, residual +
LayerNorm wrappers, FFN), so it computes the same function as ``model.decode``; ``tests/test_cache.py`` proves they agree.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .checks import check_int

__all__ = ["KVCache", "supports_cache", "start_cache", "decode_step"]


class KVCache:
    """Per decoder layer: self-attention ``keys``/``values`` ``(B, h, t, d_head)``
    growing by one position per step, cross-attention ``cross_keys``/
    ``cross_values`` ``(B, h, S, d_head)`` fixed, and ``keep`` ``(B, t)``
    (False where the cached target token is padding)."""

    def __init__(self, num_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.cross_keys: list[torch.Tensor] = []
        self.cross_values: list[torch.Tensor] = []
        self.keep: torch.Tensor | None = None
        self.src_mask: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """How many target positions are cached."""
        return 0 if self.keep is None else self.keep.size(1)

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep batch rows ``rows`` (B',) in that order (beam search's parents).

        The cross-attention entries are left alone: the caller must only pick
        rows that share a source (beam search picks parents within a source).
        """
        for store in (self.keys, self.values):
            for i, t in enumerate(store):
                if t is not None:
                    store[i] = t.index_select(0, rows)
        if self.keep is not None:
            self.keep = self.keep.index_select(0, rows)

    def num_bytes(self) -> int:
        """Memory held by the cached tensors."""
        tensors = [
            *self.keys,
            *self.values,
            *self.cross_keys,
            *self.cross_values,
        ]
        return sum(
            t.numel() * t.element_size() for t in tensors if t is not None
        )


def supports_cache(model) -> bool:
    """True for models built like ``utils.model.Transformer`` (a ``decoder``
    whose layers have ``self_attn``, ``cross_attn`` and residual sublayers)."""
    layers = getattr(getattr(model, "decoder", None), "layers", None)
    return (
        layers is not None
        and len(layers) > 0
        and all(
            hasattr(layer, a)
            for layer in layers
            for a in ("self_attn", "cross_attn", "sub1", "sub2", "sub3")
        )
        and hasattr(model, "tgt_embed")
        and hasattr(model, "pos")
    )


def start_cache(
    model: nn.Module, memory: torch.Tensor, src_mask: torch.Tensor
) -> KVCache:
    """An empty cache for ``memory`` ``(B, S, d_model)`` and ``src_mask``
    ``(B, 1, 1, S)``, with every layer's cross-attention keys and values
    computed once."""
    if not supports_cache(model):
        raise TypeError(
            f"model must be built like utils.model.Transformer to be cached, "
            f"got {type(model).__name__}"
        )
    if not isinstance(memory, torch.Tensor) or memory.dim() != 3:
        raise ValueError(
            f"memory must be (batch, src_len, d_model), "
            f"got {getattr(memory, 'shape', type(memory).__name__)}"
        )
    cache = KVCache(len(model.decoder.layers))
    for layer in model.decoder.layers:
        attn = layer.cross_attn
        cache.cross_keys.append(attn._split(attn.w_k(memory)))
        cache.cross_values.append(attn._split(attn.w_v(memory)))
    cache.src_mask = src_mask
    return cache


def decode_step(
    model: nn.Module, cache: KVCache, tokens: torch.Tensor
) -> torch.Tensor:
    """Decoder states for ``tokens`` ``(B, n)`` placed after the ``cache.length``
    cached positions -> ``(B, n, d_model)``; appends their keys and values.

    ``n = 1`` is one generation step; a longer block (causal within itself)
    fills the cache with a prefix in one call.
    """
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        raise ValueError(
            f"tokens must be a (batch, n) tensor of ids, "
            f"got {getattr(tokens, 'shape', type(tokens).__name__)}"
        )
    b, n = tokens.shape
    check_int(n, "tokens.size(1)", 1)
    if cache.cross_keys and cache.cross_keys[0].size(0) != b:
        raise ValueError(
            f"tokens batch size {b} differs from the cache's "
            f"{cache.cross_keys[0].size(0)}"
        )
    t0 = cache.length
    pad_id = getattr(model, "pad_id", None)
    keep_new = (
        tokens != pad_id
        if pad_id is not None
        else torch.ones_like(tokens, dtype=torch.bool)
    )
    cache.keep = (
        keep_new
        if cache.keep is None
        else torch.cat([cache.keep, keep_new], 1)
    )
    # query i (position t0 + i) sees cached keys and new keys up to itself
    q_pos = torch.arange(t0, t0 + n, device=tokens.device)[:, None]
    k_pos = torch.arange(t0 + n, device=tokens.device)[None, :]
    self_mask = (k_pos <= q_pos)[None, None] & cache.keep[:, None, None, :]

    emb = model.tgt_embed(tokens)  # (B, n, d_model)
    pe = model.pos.pe[t0 : t0 + n].to(emb.dtype)
    x = model.pos.dropout(emb + pe)
    for i, layer in enumerate(model.decoder.layers):

        def self_attend(y, i=i, attn=layer.self_attn):
            k_new, v_new = attn._split(attn.w_k(y)), attn._split(attn.w_v(y))
            if cache.keys[i] is not None:
                k_new = torch.cat([cache.keys[i], k_new], dim=2)
                v_new = torch.cat([cache.values[i], v_new], dim=2)
            cache.keys[i], cache.values[i] = k_new, v_new  # (B, h, t, d_head)
            q = attn._split(attn.w_q(y))
            out, _ = scaled_dot_product_attention(
                q, k_new, v_new, self_mask, dropout=attn._dropout_p()
            )
            return attn._merge(out)

        def cross_attend(y, i=i, attn=layer.cross_attn):
            q = attn._split(attn.w_q(y))
            out, _ = scaled_dot_product_attention(
                q,
                cache.cross_keys[i],
                cache.cross_values[i],
                cache.src_mask,
                dropout=attn._dropout_p(),
            )
            return attn._merge(out)

        x = layer.sub1(x, self_attend)
        x = layer.sub2(x, cross_attend)
        x = layer.sub3(x, layer.ffn)
    return model.decoder.norm(x)
