"""Autoregressive decoding (chapter 9): greedy, beam, sampling, for any model
with ``encode``, ``decode`` and ``generator`` (a ``Transformer`` uses its KV
cache). Scores are summed log-probs of the generated tokens, EOS included.
Helpers run in eval mode, no grad, and restore the model's mode.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_at_most, check_ids, check_int, check_number
from .layers import evaluating
from .sampling import sample

__all__ = [
    "greedy_decode",
    "beam_search",
    "sample_decode",
    "sequence_log_prob",
    "BigramModel",
]


def _vocab_size(model) -> int | None:
    gen = getattr(model, "generator", None)
    return getattr(gen, "out_features", None)


def _check(model, src, max_len, bos_id, eos_id, pad_id) -> int:
    # Any model with the Transformer's three calls (BigramModel too).
    missing = [
        a for a in ("encode", "decode", "generator") if not hasattr(model, a)
    ]
    if missing:
        kind = type(model).__name__
        raise TypeError(
            f"model must have encode/decode/generator, {kind} lacks {missing}"
        )
    check_ids(src, "src", ndim=2)
    vocab = _vocab_size(model)
    for name, value in (
        ("bos_id", bos_id),
        ("eos_id", eos_id),
        ("pad_id", pad_id),
    ):
        check_int(value, name, 0)
        if vocab is not None and value >= vocab:
            raise ValueError(
                f"{name}={value} is outside the vocabulary [0, {vocab})"
            )
    if bos_id == eos_id:
        raise ValueError(
            f"bos_id and eos_id must differ, got {bos_id} for both"
        )
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        if value == pad_id:  # PAD fills finished rows and is never generated
            raise ValueError(
                f"pad_id must differ from {name}, got {pad_id} for both"
            )
    return check_int(max_len, "max_len", 1)


class _Stepper:
    """Next-token log-probs for growing prefixes, cached or not."""

    def __init__(self, model, src, pad_id: int, repeat: int, use_cache: bool):
        self.model, self.pad_id = model, pad_id
        memory, src_mask = model.encode(src)  # (B, S, d), (B, 1, 1, S)
        if repeat > 1:  # k copies of each row, for the beams
            memory = memory.repeat_interleave(repeat, dim=0)
            src_mask = src_mask.repeat_interleave(repeat, dim=0)
        self.memory, self.src_mask = memory, src_mask
        # the course's Transformer (and an Ensemble of them) has a decoder
        # cache, BigramModel none
        self.cache = (
            model.start_cache()
            if use_cache and hasattr(model, "start_cache")
            else None
        )
        self.calls = 0

    def log_probs(self, ys: torch.Tensor) -> torch.Tensor:
        """ys ``(B, t)`` -> log p(next | ys) ``(B, V)``, PAD at -inf."""
        self.calls += 1
        if self.cache is None:
            states = self.model.decode(ys, self.memory, self.src_mask)
        else:  # only the positions not cached yet
            new = ys[:, self.cache.length :]
            states = self.model.decode(
                new, self.memory, self.src_mask, cache=self.cache
            )
        logits = self.model.generator(states[:, -1]).float()
        log_p = F.log_softmax(logits, dim=-1)
        log_p[:, self.pad_id] = float("-inf")
        return log_p

    def reorder(self, rows: torch.Tensor) -> None:
        if self.cache is not None:
            self.cache.reorder(rows)


def greedy_decode(
    model,
    src: torch.Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    pad_id: int = 0,
    use_cache: bool = True,
) -> torch.Tensor:
    """The most probable token at every step: src ``(B, S)`` -> ids ``(B, <=
    1 + max_len)``, BOS first, PAD after a row's EOS (never chosen)."""
    return sample_decode(
        model, src, max_len, bos_id, eos_id, pad_id, 0.0, use_cache=use_cache
    )


def sample_decode(
    model,
    src: torch.Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    pad_id: int = 0,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> torch.Tensor:
    """``greedy_decode`` drawing tokens after temperature, top-k, top-p."""
    max_len = _check(model, src, max_len, bos_id, eos_id, pad_id)
    with evaluating(model):
        step = _Stepper(model, src, pad_id, 1, use_cache)
        b = src.size(0)
        ys = torch.full((b, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            log_p = step.log_probs(ys)  # (B, V)
            nxt = sample(log_p, temperature, top_k, top_p, generator)  # (B,)
            nxt = nxt.masked_fill(done, pad_id)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == eos_id
            if done.all():
                break
    return ys


def sequence_log_prob(
    model, src: torch.Tensor, ys: torch.Tensor, eos_id: int, pad_id: int = 0
) -> torch.Tensor:
    """Teacher-forced log p of ``ys[:, 1:]`` up to the first EOS ``(B,)``."""
    check_ids(src, "src", ndim=2)
    check_ids(ys, "ys", _vocab_size(model), ndim=2)
    if ys.size(0) != src.size(0) or ys.size(1) < 2:
        raise ValueError(
            f"ys must be (batch={src.size(0)}, length >= 2) starting with "
            f"BOS, got {tuple(ys.shape)}"
        )
    with evaluating(model):
        memory, src_mask = model.encode(src)
        states = model.decode(ys[:, :-1], memory, src_mask)
        log_p = F.log_softmax(model.generator(states).float(), dim=-1)
    picked = log_p.gather(-1, ys[:, 1:, None]).squeeze(-1)  # (B, T-1)
    is_eos = (ys[:, 1:] == eos_id).long()
    ended_before = is_eos.cumsum(dim=1) - is_eos
    keep = (ended_before == 0) & (ys[:, 1:] != pad_id)  # up to the first EOS
    return (picked * keep).sum(dim=1)


def beam_search(
    model,
    src: torch.Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    beam_size: int = 4,
    num_return: int = 1,
    alpha: float = 0.0,
    pad_id: int = 0,
    use_cache: bool = True,
    trace: list | None = None,
) -> list[list[tuple[torch.Tensor, float]]]:
    """The ``beam_size`` best prefixes per step -> per source row,
    ``num_return`` ``(ids (L,), score)``, finished ones best first, then cut
    ones (fewer, with a ``RuntimeWarning``, if the vocabulary is tiny).

    score = sum of log-probs / ``length ** alpha``; finished hypotheses stay
    in the beam, so ``beam_size=1`` is greedy. ``trace``: a list that gets
    each step's ``parent``, ``token`` ``(B, k)`` and ``score``.
    """
    max_len = _check(model, src, max_len, bos_id, eos_id, pad_id)
    k = check_int(beam_size, "beam_size", 1)
    num_return = check_int(num_return, "num_return", 1)
    check_at_most(num_return, "num_return", k, f"beam_size={beam_size}")
    alpha = check_number(alpha, "alpha", 0.0, finite=True)
    b, dev = src.size(0), src.device
    with evaluating(model):
        step = _Stepper(model, src, pad_id, k, use_cache)
        ys = torch.full((b * k, 1), bos_id, dtype=torch.long, device=dev)
        raw = torch.full((b, k), float("-inf"), device=dev)
        raw[:, 0] = 0.0  # one live beam at the start, so the k beams differ
        length = torch.zeros(b, k, device=dev)
        done = torch.zeros(b, k, dtype=torch.bool, device=dev)

        def normalised(score, n):
            return score / n.clamp(min=1) ** alpha if alpha else score

        for _ in range(max_len):
            log_p = step.log_probs(ys).view(b, k, -1)  # (B, k, V)
            v = log_p.size(-1)
            # a finished beam may only "continue" with PAD at no cost
            stay = torch.full_like(log_p, float("-inf"))
            stay[..., pad_id] = 0.0
            log_p = torch.where(done[..., None], stay, log_p)
            cand_raw = raw[..., None] + log_p  # (B, k, V)
            cand_len = (length + (~done).float())[..., None].expand(b, k, v)
            cand = normalised(cand_raw, cand_len).view(b, k * v)
            top, idx = cand.topk(k, dim=1)  # (B, k)
            parent, token = idx // v, idx % v
            raw = cand_raw.view(b, k * v).gather(1, idx)
            length = cand_len.reshape(b, k * v).gather(1, idx)
            done = (
                done.gather(1, parent) | (token == eos_id) | torch.isinf(top)
            )
            if trace is not None:
                trace.append(
                    {
                        "parent": parent.clone(),
                        "token": token.clone(),
                        "score": raw.clone(),
                    }
                )
            # flat index of each new beam's parent row
            rows = (parent + torch.arange(b, device=dev)[:, None] * k).view(-1)
            ys = torch.cat([ys[rows], token.view(-1, 1)], dim=1)
            step.reorder(rows)
            if done.all():
                break
    final = normalised(raw, length)
    last = ys[:, -1].view(b, k)
    ended = (last == pad_id) | (last == eos_id)  # EOS came at some step
    # finished hypotheses first (an unfinished one is cut at max_len)
    order = (final - ended.logical_not() * 1e9).argsort(dim=1, descending=True)
    results = []
    for i in range(b):
        beams = []
        for j in order[i].tolist():
            if torch.isinf(final[i, j]) or len(beams) == num_return:
                continue
            seq = ys[i * k + j][: 1 + int(length[i, j])]  # drop PAD after EOS
            beams.append((seq, final[i, j].item()))
        if len(beams) < num_return:
            warnings.warn(
                f"source row {i} has only {len(beams)} hypotheses, fewer "
                f"than num_return={num_return}",
                RuntimeWarning,
                stacklevel=2,
            )
        results.append(beams)
    return results


class BigramModel(nn.Module):
    """A fixed next-token table ``log_probs (V, V)``, the source ignored."""

    def __init__(self, log_probs: torch.Tensor):
        super().__init__()
        if log_probs.dim() != 2 or log_probs.size(0) != log_probs.size(1):
            raise ValueError(
                f"log_probs must be a square (V, V) table, "
                f"got {tuple(log_probs.shape)}"
            )
        v = log_probs.size(0)
        self.generator = nn.Linear(v, v, bias=False)
        # one-hot state of the last token @ table row = that row's log-probs
        with torch.no_grad():
            self.generator.weight.copy_(log_probs.T)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        memory = torch.zeros(src.size(0), 1, 1)
        return memory, torch.ones(src.size(0), 1, 1, 1, dtype=torch.bool)

    def decode(self, tgt, memory, src_mask) -> torch.Tensor:
        return F.one_hot(tgt, self.generator.in_features).float()  # (B, T, V)
