"""Autoregressive decoding: greedy search and beam search.

Both work with any model that has ``encode(src) -> (memory, src_mask)``,
``decode(tgt, memory, src_mask) -> states (B, T, d)`` and ``generator(states) -> logits``,
such as ``utils.model.Transformer`` or the hand-made ``BigramModel`` below.
A sequence's score is the sum of the log-probabilities of its generated tokens (EOS included);
with length normalisation it is divided by ``length ** alpha``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["greedy_decode", "beam_search", "sequence_log_prob", "BigramModel"]


def _check(model, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int) -> None:
    for attr in ("encode", "decode", "generator"):
        if not hasattr(model, attr):
            raise TypeError(f"model must have encode/decode/generator, {type(model).__name__} has no {attr!r}")
    if not isinstance(src, torch.Tensor) or src.dim() != 2:
        raise ValueError(f"src must be a (batch, length) tensor of ids, got {getattr(src, 'shape', type(src).__name__)}")
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len must be a positive int, got {max_len!r}")
    if bos_id == eos_id:
        raise ValueError(f"bos_id and eos_id must differ, got {bos_id} for both")


def _next_log_probs(model, ys: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
                    pad_id: int) -> torch.Tensor:
    """Log-probabilities of the next token after each prefix: ys ``(B, t)`` -> ``(B, V)``.

    PAD is never a real next token (the decoder would mask it out of its own input), so its
    log-probability is set to -inf; the others keep the model's values (no renormalising).
    """
    states = model.decode(ys, memory, src_mask)             # (B, t, d); only the last state is new
    log_p = F.log_softmax(model.generator(states[:, -1]).float(), dim=-1)
    log_p[:, pad_id] = float("-inf")
    return log_p


@torch.no_grad()
def greedy_decode(model, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int,
                  pad_id: int = 0) -> torch.Tensor:
    """Pick the most probable token at every step. src ``(B, S)`` -> ids ``(B, <= 1 + max_len)``.

    Rows start with BOS; a row that has produced EOS is filled with ``pad_id`` afterwards
    (PAD itself is never chosen as a next token).
    Stops when every row has ended or after ``max_len`` generated tokens.
    """
    _check(model, src, max_len, bos_id, eos_id)
    if isinstance(model, nn.Module):
        model.eval()
    memory, src_mask = model.encode(src)
    ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        nxt = _next_log_probs(model, ys, memory, src_mask, pad_id).argmax(dim=-1)   # (B,)
        nxt = nxt.masked_fill(done, pad_id)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == eos_id
        if done.all():
            break
    return ys


@torch.no_grad()
def sequence_log_prob(model, src: torch.Tensor, ys: torch.Tensor, eos_id: int, pad_id: int = 0) -> torch.Tensor:
    """Sum of log p(token | prefix) over ``ys[:, 1:]`` up to and including the first EOS. -> ``(B,)``.

    One teacher-forced pass, so it scores any sequence, whoever produced it.
    """
    if ys.dim() != 2 or ys.size(0) != src.size(0) or ys.size(1) < 2:
        raise ValueError(f"ys must be (batch={src.size(0)}, length >= 2) starting with BOS, got {tuple(ys.shape)}")
    if isinstance(model, nn.Module):
        model.eval()
    memory, src_mask = model.encode(src)
    log_p = F.log_softmax(model.generator(model.decode(ys[:, :-1], memory, src_mask)).float(), dim=-1)
    picked = log_p.gather(-1, ys[:, 1:, None]).squeeze(-1)               # (B, T-1)
    ended_before = (ys[:, 1:] == eos_id).long().cumsum(dim=1) - (ys[:, 1:] == eos_id).long()
    keep = (ended_before == 0) & (ys[:, 1:] != pad_id)                    # up to the first EOS
    return (picked * keep).sum(dim=1)


@torch.no_grad()
def beam_search(model, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int, beam_size: int = 4,
                num_return: int = 1, alpha: float = 0.0,
                pad_id: int = 0) -> list[list[tuple[torch.Tensor, float]]]:
    """Keep the ``beam_size`` best prefixes at every step; return the ``num_return`` best per source.

    Returns, for each source row, a list of ``(ids (L,), score)``: hypotheses that ended with
    EOS first, best score first, then (only if needed to fill ``num_return``) ones cut off at
    ``max_len`` generated tokens. ``ids`` start with BOS. PAD is never generated.
    score = sum of log-probs / ``length ** alpha`` (length = generated tokens, EOS included):
    ``alpha=0`` is the raw log-probability, which favours short outputs; ``alpha=1`` is the
    mean log-probability per token. Finished hypotheses stay in the beam and compete with
    unfinished ones on that score, so ``beam_size=1`` is exactly greedy decoding.
    """
    _check(model, src, max_len, bos_id, eos_id)
    for name, value in (("beam_size", beam_size), ("num_return", num_return)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if num_return > beam_size:
        raise ValueError(f"num_return={num_return} cannot exceed beam_size={beam_size}")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if isinstance(model, nn.Module):
        model.eval()
    b, k, dev = src.size(0), beam_size, src.device
    memory, src_mask = model.encode(src)                                   # (B, S, d), (B, 1, 1, S)
    memory = memory.repeat_interleave(k, dim=0)                            # (B*k, S, d): k copies per row
    src_mask = src_mask.repeat_interleave(k, dim=0)
    ys = torch.full((b * k, 1), bos_id, dtype=torch.long, device=dev)      # (B*k, t)
    raw = torch.full((b, k), float("-inf"), device=dev)
    raw[:, 0] = 0.0                           # one live beam at the start, so the k beams differ
    length = torch.zeros(b, k, device=dev)
    done = torch.zeros(b, k, dtype=torch.bool, device=dev)

    def normalised(score, n):
        return score / n.clamp(min=1) ** alpha if alpha else score

    for _ in range(max_len):
        log_p = _next_log_probs(model, ys, memory, src_mask, pad_id).view(b, k, -1)    # (B, k, V)
        v = log_p.size(-1)
        # a finished beam may only "continue" with PAD at no cost, so it keeps its score
        stay = torch.full_like(log_p, float("-inf"))
        stay[..., pad_id] = 0.0
        log_p = torch.where(done[..., None], stay, log_p)
        cand_raw = raw[..., None] + log_p                                       # (B, k, V)
        cand_len = (length + (~done).float())[..., None].expand(b, k, v)
        cand = normalised(cand_raw, cand_len).view(b, k * v)
        top, idx = cand.topk(k, dim=1)                                          # (B, k)
        parent, token = idx // v, idx % v
        raw = cand_raw.view(b, k * v).gather(1, idx)
        length = cand_len.reshape(b, k * v).gather(1, idx)
        done = done.gather(1, parent) | (token == eos_id) | torch.isinf(top)
        rows = (parent + torch.arange(b, device=dev)[:, None] * k).view(-1)     # flat parent index
        ys = torch.cat([ys[rows], token.view(-1, 1)], dim=1)
        if done.all():
            break
    final = normalised(raw, length)
    ended = ys[:, -1].view(b, k) == pad_id                                  # EOS came before the last step
    ended |= ys[:, -1].view(b, k) == eos_id
    # finished hypotheses first (an unfinished one is cut at max_len), each group best first
    order = (final - ended.logical_not() * 1e9).argsort(dim=1, descending=True)
    results = []
    for i in range(b):
        beams = []
        for j in order[i].tolist():
            if torch.isinf(final[i, j]) or len(beams) == num_return:
                continue
            seq = ys[i * k + j]
            seq = seq[: 1 + int(length[i, j])]   # drop the PAD that followed EOS
            beams.append((seq, final[i, j].item()))
        results.append(beams)
    return results


class BigramModel(nn.Module):
    """A hand-made next-token model: p(next | last token) is a fixed table, the source is ignored.

    ``log_probs (V, V)``: row = last token, column = next token (rows are log-distributions).
    It offers encode/decode/generator like ``utils.model.Transformer``, so the decoders run on it.
    """

    def __init__(self, log_probs: torch.Tensor):
        super().__init__()
        if log_probs.dim() != 2 or log_probs.size(0) != log_probs.size(1):
            raise ValueError(f"log_probs must be a square (V, V) table, got {tuple(log_probs.shape)}")
        v = log_probs.size(0)
        self.generator = nn.Linear(v, v, bias=False)
        with torch.no_grad():   # one-hot state of the last token @ table row = that row's log-probs
            self.generator.weight.copy_(log_probs.T)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros(src.size(0), 1, 1), torch.ones(src.size(0), 1, 1, 1, dtype=torch.bool)

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        return F.one_hot(tgt, self.generator.in_features).float()            # (B, T, V)
