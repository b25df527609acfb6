"""Cross-entropy over padded sequences (chapter 5), over real tokens only
(mask True = real token). The mask selects them *before* the log-softmax,
so padding, even inf or NaN logits, touches neither value nor gradient."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .checks import (
    check_at_most,
    check_ids,
    check_int,
    check_mask,
    check_number,
    check_probability,
    check_tensor,
)

__all__ = [
    "masked_cross_entropy",
    "token_cross_entropy",
    "sequence_cross_entropy",
    "perplexity",
    "stable_softmax",
]


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax of ``x - max``: exponents <= 0 cannot overflow."""
    check_tensor(x, "x", floating=True, min_ndim=1)
    dim = check_int(dim, "dim", -x.dim())
    check_at_most(dim, "dim", x.dim() - 1, f"the last dim of {tuple(x.shape)}")
    # a constant shift: no gradient needed
    shifted = x - x.amax(dim=dim, keepdim=True).detach()
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


def _check(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    label_smoothing: float,
) -> float:
    """Check the arguments; return the label smoothing as a float."""
    shape = ("batch", "length", "vocab")
    check_tensor(logits, "logits", floating=True, shape=shape)
    b, t, v = logits.shape
    check_ids(targets, "targets")
    check_tensor(targets, "targets", shape=(b, t), device=logits.device)
    check_mask(mask, "mask")
    check_tensor(mask, "mask", shape=(b, t), device=logits.device)
    label_smoothing = check_probability(label_smoothing, "label_smoothing")
    # padding may hold any id; only the real positions must be classes
    check_ids(targets[mask], "targets at real positions", v)
    return label_smoothing


def _real_token_losses(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    label_smoothing: float,
) -> torch.Tensor:
    """Loss of each real token ``(N,)``; padding is never read."""
    x = logits[mask]  # (N, V)
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()  # log-softmax in float32
    log_p = F.log_softmax(x, dim=-1)
    nll = -log_p.gather(1, targets[mask][:, None]).squeeze(1)  # (N,)
    if label_smoothing > 0:
        uniform = -log_p.mean(dim=-1)  # CE against a uniform target
        nll = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    return nll


def masked_cross_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Mean token cross-entropy where ``mask (B, T)`` is True: logits ``(B, T,
    V)``, targets ``(B, T)``. Equals ``F.cross_entropy`` with ``ignore_index``
    for finite logits; no real token gives 0.0 with zero gradient, not NaN."""
    eps = _check(logits, targets, mask, label_smoothing)
    if not mask.any():
        # an empty sum: exactly 0, connected to logits, gradient exactly 0
        return logits[mask].sum() * 0.0
    return _real_token_losses(logits, targets, mask, eps).mean()


def token_cross_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Per-token losses ``(B, T)``, exactly 0 at padding."""
    eps = _check(logits, targets, mask, label_smoothing)
    per_real = _real_token_losses(logits, targets, mask, eps)
    out = torch.zeros(mask.shape, dtype=per_real.dtype, device=logits.device)
    return out.masked_scatter(mask, per_real)  # (B, T)


def sequence_cross_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Mean over sequences (with a real token) of each one's mean loss."""
    per_token = token_cross_entropy(logits, targets, mask, label_smoothing)
    counts = mask.sum(dim=1)  # (B,)
    has_tokens = counts > 0
    if not has_tokens.any():
        return per_token.sum() * 0.0
    per_seq = per_token.sum(dim=1)[has_tokens] / counts[has_tokens]  # (B',)
    return per_seq.mean()


def perplexity(mean_token_loss: torch.Tensor | float) -> torch.Tensor:
    """``exp(mean_token_loss)``: a uniform guess over V classes gives V."""
    if isinstance(mean_token_loss, torch.Tensor):
        loss = check_tensor(mean_token_loss, "mean_token_loss", floating=True)
        check_tensor(loss.reshape(-1), "mean_token_loss", shape=(1,))
        check_number(float(loss.detach()), "mean_token_loss", 0.0, finite=True)
        return loss.exp()
    value = check_number(mean_token_loss, "mean_token_loss", 0.0, finite=True)
    return torch.tensor(value, dtype=torch.get_default_dtype()).exp()
