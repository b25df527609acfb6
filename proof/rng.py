"""The live page's seeded random generator and the draw it drives, written
the same in JavaScript (``_static/gpt/gpt.js``), so a seeded sample drawn in
the browser can be checked against PyTorch token for token (book/gpt_live.md,
tests/test_gpt_export.py, tests/test_live_gpt.py). Not the lesson: chapter
11 samples with ``utils.sampling``; this exists to prove the page.

Mulberry32 (Tommy Ettinger, 2017, public domain) keeps one 32-bit integer
of state: each call adds ``0x6D2B79F5`` to it and scrambles a copy by
shifts, xors and two multiplications, all mod 2**32, so both languages give
the same integers (JavaScript: ``Math.imul``, ``>>>``). ``random()`` is one
integer divided by 2**32: exact in both, in ``[0, 1)``. For reproducible
examples, not statistics at scale or secrets (its period is 2**32).

``generate_seeded`` is ``utils.gpt.GPT.generate`` with this draw in place of
``utils.sampling.sample``: it drives the model's own steps
(``GPT.start_window``, ``GPT.next_logits``), so the window and the cache
are the ones ``generate`` uses.
"""

from __future__ import annotations

import math

import torch

from utils.checks import check_ids, check_instance, check_int
from utils.checks import check_number, check_tensor
from utils.gpt import GPT
from utils.layers import evaluating

__all__ = ["Mulberry32", "draw_token", "generate_seeded"]

MASK32 = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    return (a * b) & MASK32  # JavaScript's Math.imul, unsigned


class Mulberry32:
    """``next_uint32()`` in ``[0, 2**32)``, ``random()`` in ``[0, 1)``;
    ``seed``: an int in ``[0, 2**32)``."""

    def __init__(self, seed: int):
        self.state = check_int(seed, "seed", 0)
        if seed > MASK32:
            raise ValueError(f"seed must be an int below 2**32, got {seed}")

    def next_uint32(self) -> int:
        self.state = t = (self.state + 0x6D2B79F5) & MASK32
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & MASK32
        return t ^ (t >> 14)

    def random(self) -> float:
        return self.next_uint32() / 4294967296.0


def draw_token(
    logits: torch.Tensor,
    rng: Mulberry32,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> int:
    """One id drawn from ``logits`` ``(V,)`` with ``rng`` (a Mulberry32), in
    double precision: temperature 0 takes the first largest logit (no
    draw). Else ``z = logits / temperature``; the ids sorted by ``z``
    (largest first, equal: lower id first); top-k keeps the first ``k``;
    ``e = exp(z - z_max)``; top-p keeps each id while the probability of the
    ids before it is below ``top_p`` (as ``utils.sampling.top_p_filter``);
    then the first id whose cumulative probability exceeds ``rng.random()``.
    Sums run in that order, in a plain loop (Python's ``sum`` compensates,
    JavaScript's loop does not)."""
    check_tensor(logits, "logits", floating=True, ndim=1)
    check_instance(rng, "rng", Mulberry32)
    t = check_number(temperature, "temperature", 0.0, finite=True)
    z = logits.double().tolist()
    if t == 0:
        return max(range(len(z)), key=lambda i: (z[i], -i))
    z = [x / t for x in z]
    order = sorted(range(len(z)), key=lambda i: (-z[i], i))
    if top_k is not None:
        order = order[: check_int(top_k, "top_k", 1)]
    e = [math.exp(z[i] - z[order[0]]) for i in order]

    def total(values) -> float:
        out = 0.0
        for x in values:
            out += x
        return out

    if top_p is not None:
        top_p = check_number(top_p, "top_p", 0.0, 1.0, min_inclusive=False)
        kept, before, mass = 0, 0.0, total(e)
        while kept < len(e) and (kept == 0 or before < top_p):
            before += e[kept] / mass
            kept += 1
        order, e = order[:kept], e[:kept]
    u, cdf, mass = rng.random(), 0.0, total(e)
    for i, x in zip(order, e):
        cdf += x / mass
        if u < cdf:
            return i
    return order[-1]


@torch.no_grad()
def generate_seeded(
    model: GPT, ids: list[int], new_tokens: int, rng: Mulberry32, **kwargs
) -> list[int]:
    """``model.generate`` from the prompt ``ids``, each token drawn by
    ``draw_token(logits, rng, **kwargs)`` (temperature, top_k, top_p): as
    the live page draws them (book/gpt_live.md)."""
    check_instance(model, "model", GPT)
    check_instance(rng, "rng", Mulberry32)
    draw_token(torch.zeros(1), Mulberry32(0), **kwargs)  # check the settings
    out = torch.tensor([list(ids)])
    check_ids(out, "ids", model.config.vocab_size, ndim=2)
    check_int(out.size(1), "ids' length", 1)
    new_tokens = check_int(new_tokens, "new_tokens", 0)
    with evaluating(model):  # eval mode, no grad; the mode restored after
        window = model.start_window(out)
        for _ in range(new_tokens):
            logits = model.next_logits(out, window)  # (1, V)
            nxt = [draw_token(row, rng, **kwargs) for row in logits]
            out = torch.cat([out, torch.tensor(nxt)[:, None]], dim=1)
    return out[0].tolist()
