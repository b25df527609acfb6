"""Cross-entropy over padded sequences, averaged over real tokens only, plus small helpers.

Shapes are batch-first: logits ``(B, T, V)``, targets ``(B, T)`` integer ids, mask ``(B, T)``
bool with **True = real token** (the course's mask convention).
"""
from __future__ import annotations

import math
from numbers import Real

import torch
import torch.nn.functional as F

__all__ = [
    "masked_cross_entropy", "token_cross_entropy", "sequence_cross_entropy",
    "perplexity", "stable_softmax",
]


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax along ``dim`` computed as ``exp(x - max) / sum(exp(x - max))``.

    Subtracting the maximum changes nothing mathematically (softmax ignores a shift) but keeps
    every exponent <= 0, so ``exp`` cannot overflow to ``inf`` (float32 overflows past ~88.7).
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {getattr(x, 'dtype', type(x).__name__)}")
    shifted = x - x.amax(dim=dim, keepdim=True).detach()  # a constant shift: no gradient needed
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


def _check(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
           label_smoothing: float) -> None:
    """Raise a ValueError/TypeError naming the bad argument; return quietly if all is well."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or not logits.is_floating_point():
        raise ValueError(f"logits must be a float tensor of shape (batch, length, vocab), "
                         f"got {getattr(logits, 'shape', type(logits).__name__)}")
    b, t, v = logits.shape
    if not isinstance(targets, torch.Tensor) or targets.shape != (b, t):
        raise ValueError(f"targets must have shape {(b, t)} to match logits {tuple(logits.shape)}, "
                         f"got {getattr(targets, 'shape', type(targets).__name__)}")
    if targets.dtype.is_floating_point or targets.dtype.is_complex or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer class ids, got dtype {targets.dtype}")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != (b, t):
        raise ValueError(f"mask must be a bool tensor of shape {(b, t)} (True = real token), "
                         f"got {getattr(mask, 'dtype', None)} {getattr(mask, 'shape', type(mask).__name__)}")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, Real):
        raise TypeError(f"label_smoothing must be a float in [0, 1), got {label_smoothing!r}")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
    real = targets[mask]
    if real.numel() and (real.min() < 0 or real.max() >= v):
        bad = real[(real < 0) | (real >= v)][0].item()
        raise ValueError(f"targets at real positions must be in [0, {v}), found {bad}")


def _real_token_losses(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                       label_smoothing: float) -> torch.Tensor:
    """Loss of each real token, ``(N,)`` with N = mask.sum(). Padded positions are never read,
    so their logits (even inf) and their target ids (any value) cannot leak into the loss."""
    x = logits[mask]                                                        # (N, V)
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()                                                       # log-softmax in fp32
    log_p = F.log_softmax(x, dim=-1)
    nll = -log_p.gather(1, targets[mask][:, None]).squeeze(1)               # (N,)
    if label_smoothing > 0:
        uniform = -log_p.mean(dim=-1)                                       # CE against a uniform target
        nll = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    return nll


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                         label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean token cross-entropy over positions where ``mask`` is True.

    logits ``(B, T, V)``, targets ``(B, T)`` integer classes, mask ``(B, T)`` bool (True = real
    token). Equal to ``F.cross_entropy(logits.transpose(1, 2), targets.masked_fill(~mask, -100),
    label_smoothing=...)``. Targets at masked positions are never read, so padding may hold any id.

    A batch with no real token returns ``0.0`` (still attached to the graph, with zero
    gradient) rather than PyTorch's NaN: there is nothing to learn from it, and a NaN would
    poison running averages, logs and anything the loss is added to.
    """
    _check(logits, targets, mask, label_smoothing)
    if not mask.any():
        # sum of an empty selection: exactly 0, connected to logits, gradient exactly 0
        return logits[mask].sum() * 0.0
    return _real_token_losses(logits, targets, mask, label_smoothing).mean()


def token_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                        label_smoothing: float = 0.0) -> torch.Tensor:
    """Per-token losses ``(B, T)``: the cross-entropy at real tokens, exactly 0 at padding."""
    _check(logits, targets, mask, label_smoothing)
    per_real = _real_token_losses(logits, targets, mask, label_smoothing)
    out = torch.zeros(mask.shape, dtype=per_real.dtype, device=logits.device)
    return out.masked_scatter(mask, per_real)                               # (B, T)


def sequence_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                           label_smoothing: float = 0.0) -> torch.Tensor:
    """Per-sequence averaging: mean over the sequences of each one's mean token loss.

    Every sequence counts equally, however long. Sequences with no real token are left out;
    if there is none at all, returns 0.0 with zero gradient, like ``masked_cross_entropy``.
    """
    per_token = token_cross_entropy(logits, targets, mask, label_smoothing)  # (B, T)
    counts = mask.sum(dim=1)                                                 # (B,)
    has_tokens = counts > 0
    if not has_tokens.any():
        return per_token.sum() * 0.0
    per_seq = per_token.sum(dim=1)[has_tokens] / counts[has_tokens]         # (B',)
    return per_seq.mean()


def perplexity(mean_token_loss: torch.Tensor | float) -> torch.Tensor:
    """Perplexity = exp(mean token cross-entropy in nats). A uniform guess over V classes gives V."""
    loss = torch.as_tensor(mean_token_loss, dtype=torch.get_default_dtype()) \
        if not isinstance(mean_token_loss, torch.Tensor) else mean_token_loss
    if loss.numel() != 1 or not loss.is_floating_point():
        raise ValueError(f"mean_token_loss must be one float (a mean loss in nats), got {mean_token_loss!r}")
    value = float(loss.detach())
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"mean_token_loss must be a finite number >= 0, got {value}")
    return loss.exp()
