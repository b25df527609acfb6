"""Sampling the next token (chapter 9): filters map logits ``(..., V)`` to
the same shape, removed tokens at ``-inf``; draws take a seeded generator."""

from __future__ import annotations

import torch

from .checks import check_instance, check_int, check_number, check_tensor

__all__ = [
    "apply_temperature",
    "top_k_filter",
    "top_p_filter",
    "next_token_probs",
    "sample",
]


def _check_logits(logits) -> None:
    check_tensor(logits, "logits", floating=True, min_ndim=1)
    check_int(logits.size(-1), "the vocabulary size V of logits", 1)


def apply_temperature(
    logits: torch.Tensor, temperature: float
) -> torch.Tensor:
    """``logits / temperature`` (> 0): below 1 sharpens, above flattens."""
    _check_logits(logits)
    t = check_number(
        temperature, "temperature", 0.0, min_inclusive=False, finite=True
    )
    return logits / t


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep exactly the ``k`` largest logits, the rest -inf."""
    _check_logits(logits)
    k = check_int(k, "k", 1)
    if k >= logits.size(-1):
        return logits.clone()
    keep = torch.zeros_like(logits, dtype=torch.bool)
    keep.scatter_(-1, logits.topk(k, dim=-1).indices, True)
    return logits.masked_fill(~keep, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the nucleus, the fewest top tokens of mass >= ``p``; rest -inf."""
    _check_logits(logits)
    p = check_number(p, "p", 0.0, 1.0, min_inclusive=False)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    # a token is kept while the mass ranked strictly above it is below p
    before = probs.cumsum(dim=-1) - probs
    keep_sorted = before < p
    keep_sorted[..., 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """Probabilities ``(..., V)`` after temperature, top-k, top-p."""
    _check_logits(logits)
    t = check_number(temperature, "temperature", 0.0, finite=True)
    if t == 0:
        greedy = logits.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(logits).scatter(-1, greedy, 1.0)
    logits = apply_temperature(logits, t)
    if top_k is not None:  # checked here: errors name top_k, not k
        logits = top_k_filter(logits, check_int(top_k, "top_k", 1))
    if top_p is not None:
        top_p = check_number(top_p, "top_p", 0.0, 1.0, min_inclusive=False)
        logits = top_p_filter(logits, top_p)
    return logits.float().softmax(dim=-1)


def sample(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One id per row: logits ``(..., V)`` -> ids ``(...)``."""
    if generator is not None:
        check_instance(generator, "generator", torch.Generator)
    probs = next_token_probs(logits, temperature, top_k, top_p)
    if temperature == 0:  # greedy: no random draw, the generator is untouched
        return probs.argmax(dim=-1)
    flat = probs.reshape(-1, probs.size(-1))
    ids = torch.multinomial(flat, 1, generator=generator)
    return ids.view(probs.shape[:-1])
