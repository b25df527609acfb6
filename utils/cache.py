"""The decoder's key/value cache for generating one token at a time
(chapter 9).

Generating token ``t`` needs the decoder state at position ``t`` only.
Without a cache, ``model.decode(ys, ...)`` recomputes all ``t`` positions of
every layer at each step. With one, each decoder layer's self-attention keeps
the keys and values of the positions already seen and appends the new ones;
its cross-attention projects the encoder memory once. A step then costs O(t)
in attention (one query against t keys) instead of O(t^2), and the
projections and FFN run on one row instead of t.

The cache only stores: the computing is the model's own code path,
``Transformer.decode(tokens, memory, src_mask, cache=cache)``, which runs the
same layers on the new positions (``MultiHeadAttention`` reads and extends
each layer's ``AttentionCache``). ``tests/test_cache.py`` proves the result
equals full recomputation.
"""

from __future__ import annotations

import torch

from .attention import AttentionCache
from .checks import check_ids, check_int, check_tensor

__all__ = ["KVCache"]


class KVCache:
    """What the decoder keeps between steps: for every layer a
    ``(self, cross)`` pair of ``AttentionCache`` (keys and values
    ``(B, h, t, d_head)`` and ``(B, h, S, d_head)``), and ``keep`` ``(B, t)``,
    False where a cached target token is padding.

    ``Transformer.decode(tokens, memory, src_mask, cache=KVCache(n))`` fills
    it and reads it; the memory is passed on every call, as without a cache.
    """

    def __init__(self, num_layers: int):
        num_layers = check_int(num_layers, "num_layers", 1)
        self.layers = [
            (AttentionCache(), AttentionCache(static=True))
            for _ in range(num_layers)
        ]
        self.keep: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """How many target positions are cached."""
        return 0 if self.keep is None else self.keep.size(1)

    def extend(self, tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
        """Record ``tokens`` ``(B, n)`` as the next positions; return the
        self-attention mask ``(B, 1, n, length)`` of their queries: causal
        (position ``p`` sees keys ``<= p``) and never a padded key."""
        check_ids(tokens, "tokens", ndim=2)
        if self.keep is not None:
            rows = (self.keep.size(0), "length")  # the cache's batch
            check_tensor(tokens, "tokens (the cache's batch)", shape=rows)
        b, n = tokens.shape
        t0 = self.length
        new = tokens != pad_id  # (B, n)
        self.keep = (
            new if self.keep is None else torch.cat([self.keep, new], 1)
        )
        q_pos = torch.arange(t0, t0 + n, device=tokens.device)[:, None]
        k_pos = torch.arange(t0 + n, device=tokens.device)[None, :]
        causal = (k_pos <= q_pos)[None, None]  # (1, 1, n, t0 + n)
        return causal & self.keep[:, None, None, :]

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep batch rows ``rows`` ``(B',)`` in that order (beam search's
        parents), in both attentions' entries."""
        for own, cross in self.layers:
            own.reorder(rows)
            cross.reorder(rows)
        if self.keep is not None:
            self.keep = self.keep.index_select(0, rows)

    def num_bytes(self) -> int:
        """Memory held by the cached keys and values, both attentions."""
        return sum(c.num_bytes() for pair in self.layers for c in pair)
