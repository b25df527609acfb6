"""Trained Transformers decoded as one model: an ensemble, the mean of
their next-token probabilities; and one model taught by it (distillation,
chapter 8)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_probability
from .loss import masked_cross_entropy
from .model import Transformer

__all__ = ["Ensemble", "pair_key", "distill_loss"]


class _Caches(list):
    """The members' key/value caches, grown and reordered together."""

    @property
    def length(self) -> int:
        return self[0].length

    def reorder(self, rows: torch.Tensor) -> None:
        for cache in self:
            cache.reorder(rows)


class Ensemble(nn.Module):
    """Trained Transformers as one model: the mean of their next-token
    probabilities. The members' states sit side by side on the last axis,
    so ``utils.decoding`` (greedy, beam) decodes it unchanged."""

    def __init__(self, members) -> None:
        super().__init__()
        ok = isinstance(members, (list, tuple)) and len(members) > 0
        if not ok or not all(isinstance(m, Transformer) for m in members):
            kinds = [type(m).__name__ for m in members] if ok else members
            raise TypeError(f"members must be a list of Transformers: {kinds}")
        sizes = {(m.generator.out_features, m.pad_id) for m in members}
        if len(sizes) > 1:
            raise ValueError(
                f"members must share the output vocabulary "
                f"and PAD, got (size, pad) {sorted(sizes)}"
            )
        self.members = nn.ModuleList(members)
        self.widths = [m.d_model for m in members]

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src ``(B, S)`` -> memories ``(B, S, sum of d_model)``, mask."""
        out = [m.encode(src) for m in self.members]
        return torch.cat([memory for memory, _ in out], dim=-1), out[0][1]

    def decode(self, tgt, memory, src_mask, cache=None) -> torch.Tensor:
        """-> each member's states, side by side ``(B, T, sum of d_model)``;
        ``cache``: ``start_cache()``'s, one per member."""
        caches = cache if cache is not None else [None] * len(self.members)
        parts = zip(self.members, memory.split(self.widths, dim=-1), caches)
        states = [m.decode(tgt, x, src_mask, cache=c) for m, x, c in parts]
        return torch.cat(states, dim=-1)

    def start_cache(self) -> _Caches:
        return _Caches(m.start_cache() for m in self.members)

    def generator(self, states: torch.Tensor) -> torch.Tensor:
        """-> log of the members' mean probability ``(..., V)``."""
        parts = zip(self.members, states.split(self.widths, dim=-1))
        logs = [F.log_softmax(m.generator(x).float(), -1) for m, x in parts]
        return torch.logsumexp(torch.stack(logs), dim=0) - math.log(len(logs))


def pair_key(src: torch.Tensor, tgt: torch.Tensor, pads) -> bytes:
    """A (source, target) pair's key in a teacher's table: their ids
    without the padding (``pads``: the two PAD ids)."""
    return (
        src[src != pads[0]].cpu().numpy().tobytes()
        + b"|"
        + tgt[tgt != pads[1]].cpu().numpy().tobytes()
    )


def distill_loss(table, alpha: float, smoothing: float, pads):
    """Token-level distillation (Kim & Rush 2016; an ensemble as the
    teacher, Sun et al. 2019) -> ``loss(model, (src, tgt))``: ``1 - alpha``
    of the label-smoothed cross-entropy on the targets and ``alpha`` of the
    cross-entropy against the teacher's probabilities, both per real target
    token. ``table[pair_key(...)]``: the teacher's rows for a pair,
    teacher-forced, ``(len(target) + 1, V)`` (EOS last)."""
    check_probability(alpha, "alpha", allow_one=True)
    check_probability(smoothing, "smoothing")

    def loss(model, batch):
        src, tgt = batch
        logits = model(src, tgt[:, :-1])  # (B, T - 1, V)
        answers = tgt[:, 1:]
        real = answers != pads[1]
        soft = torch.zeros_like(logits)
        for i, (s, t) in enumerate(zip(src, tgt)):
            rows = table[pair_key(s, t, pads)]
            soft[i, : len(rows)] = rows.float()
        hard = masked_cross_entropy(logits, answers, real, smoothing)
        taught = -(soft * logits.log_softmax(-1)).sum(-1)[real].mean()
        return (1 - alpha) * hard + alpha * taught

    return loss
