"""The decoder's key/value cache (chapter 9): a step costs O(t), not
O(t^2). It only stores; ``Transformer.decode(..., cache=cache)`` computes
with the same layers (``tests/test_cache.py``: equal to recomputing)."""

from __future__ import annotations

import torch

from .attention import AttentionCache
from .checks import check_ids, check_int, check_tensor

__all__ = ["KVCache"]


class KVCache:
    """Per layer a ``(self, cross)`` ``AttentionCache`` pair, and ``keep (B,
    t)``: False at cached padding."""

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
        """Record ``tokens (B, n)`` -> causal mask ``(B, 1, n, length)``."""
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
        """Keep batch rows ``rows (B',)`` in order (beam search's parents)."""
        for own, cross in self.layers:
            own.reorder(rows)
            cross.reorder(rows)
        if self.keep is not None:
            self.keep = self.keep.index_select(0, rows)

    def num_bytes(self) -> int:
        """Memory held by the cached keys and values, both attentions."""
        return sum(c.num_bytes() for pair in self.layers for c in pair)
