"""Cross-entropy over padded sequences, averaged over real tokens only."""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["masked_cross_entropy"]


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                         label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean token cross-entropy over positions where ``mask`` is True.

    logits ``(B, T, V)``, targets ``(B, T)`` integer classes, mask ``(B, T)`` bool (True = real
    token). Equal to ``F.cross_entropy(logits.transpose(1, 2), targets.masked_fill(~mask, -100),
    label_smoothing=...)``. Targets at masked positions are never read, so padding may hold any id.

    A batch with no real token returns ``0.0`` (still attached to the graph, with zero
    gradient) rather than PyTorch's NaN: there is nothing to learn from it, and a NaN would
    poison the parameters at the next optimiser step.
    """
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or not logits.is_floating_point():
        raise ValueError(f"logits must be a float tensor of shape (batch, length, vocab), "
                         f"got {getattr(logits, 'shape', type(logits).__name__)}")
    b, t, v = logits.shape
    if not isinstance(targets, torch.Tensor) or targets.shape != (b, t):
        raise ValueError(f"targets must have shape {(b, t)} to match logits {tuple(logits.shape)}, "
                         f"got {getattr(targets, 'shape', type(targets).__name__)}")
    if targets.dtype.is_floating_point or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer class ids, got dtype {targets.dtype}")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != (b, t):
        raise ValueError(f"mask must be a bool tensor of shape {(b, t)}, "
                         f"got {getattr(mask, 'dtype', None)} {getattr(mask, 'shape', None)}")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
    real = targets[mask]
    if real.numel() and (real.min() < 0 or real.max() >= v):
        bad = real[(real < 0) | (real >= v)][0].item()
        raise ValueError(f"targets at real positions must be in [0, {v}), found {bad}")
    if not mask.any():
        return logits.sum() * 0.0
    log_p = F.log_softmax(logits[mask].float(), dim=-1)                    # (N, V) real tokens only
    nll = -log_p.gather(1, real[:, None]).squeeze(1)                        # (N,)
    if label_smoothing > 0:
        uniform = -log_p.mean(dim=-1)                                       # CE against a uniform target
        nll = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    return nll.mean()
