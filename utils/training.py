"""Training helpers: the warm-up learning-rate schedule, the paper's Adam, a toy task and a loop.

- ``noam_lr(step, d_model, warmup_steps, factor)``: the schedule of Vaswani et al. (2017),
  ``factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)`` (linear rise, then
  ``step^-0.5`` decay); ``noam_scheduler`` wraps it in a ``LambdaLR``.
- ``paper_adam(params)``: Adam with betas (0.9, 0.98) and eps 1e-9, as in the paper.
- ``reverse_batch``: synthetic "reverse the digits" pairs with PAD / BOS / EOS ids.
- ``train``: a compact teacher-forcing loop with a tqdm progress bar; ``perplexity``.
"""
from __future__ import annotations

import sys
from typing import Callable

import torch
from torch import nn

from .checks import check_int as _check_int
from .loss import masked_cross_entropy, perplexity as _perplexity_of

__all__ = [
    "PAD", "BOS", "EOS", "DIGIT_OFFSET", "VOCAB_SIZE",
    "noam_lr", "noam_scheduler", "paper_adam", "reverse_batch", "digits_to_ids", "ids_to_digits",
    "train_step", "train", "perplexity",
]

# Token ids of the toy task: 0 = padding, 1 = begin, 2 = end, 3..12 = the digits 0..9.
PAD, BOS, EOS, DIGIT_OFFSET = 0, 1, 2, 3
VOCAB_SIZE = DIGIT_OFFSET + 10




def noam_lr(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """Learning rate at ``step`` (counted from 1): rises linearly to ``warmup_steps``, then decays.

    ``factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)``; the peak, at
    ``step == warmup_steps``, is ``factor / sqrt(d_model * warmup_steps)``.
    """
    _check_int(step, "step", 1)
    _check_int(d_model, "d_model", 1)
    _check_int(warmup_steps, "warmup_steps", 1)
    if not factor > 0:
        raise ValueError(f"factor must be > 0, got {factor!r}")
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


def noam_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets every group's learning rate to ``noam_lr`` exactly.

    ``LambdaLR`` multiplies each group's initial lr by the lambda and counts from 0, so the
    lambda divides by that initial lr and shifts the count by one (the formula starts at 1).
    Call ``scheduler.step()`` after each ``optimizer.step()``.
    """
    noam_lr(1, d_model, warmup_steps, factor)  # validates the arguments now, not at the first step
    lambdas = []
    for group in optimizer.param_groups:
        base = group["lr"]
        if not base > 0:
            raise ValueError(f"the optimizer's lr must be > 0 (it is divided out), got {base!r}")
        lambdas.append(lambda i, base=base: noam_lr(i + 1, d_model, warmup_steps, factor) / base)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def paper_adam(params, lr: float = 1.0) -> torch.optim.Adam:
    """Adam with the paper's betas (0.9, 0.98) and eps 1e-9; ``lr`` is overwritten by a scheduler."""
    return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9)


def reverse_batch(n: int, generator: torch.Generator | None = None, min_len: int = 3,
                  max_len: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random digit strings and their reversals, padded.

    Returns ``src (n, 1 + max_len)`` = BOS, digits, PAD... (BOS doubles as a [CLS] token) and
    ``tgt (n, 2 + max_len)`` = BOS, reversed digits, EOS, PAD...; the decoder reads
    ``tgt[:, :-1]`` and is trained to predict ``tgt[:, 1:]``.
    """
    _check_int(n, "n", 1)
    _check_int(min_len, "min_len", 1)
    _check_int(max_len, "max_len", 1)
    if min_len > max_len:
        raise ValueError(f"min_len={min_len} must be <= max_len={max_len}")
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator)         # (n,)
    digits = torch.randint(0, 10, (n, max_len), generator=generator) + DIGIT_OFFSET  # (n, max_len)
    pos = torch.arange(max_len)
    real = pos < lengths[:, None]                                                    # (n, max_len)
    digits = digits.masked_fill(~real, PAD)
    # position i of the reversal holds digit length-1-i; padding positions read anything, then re-pad
    backwards = digits.gather(1, (lengths[:, None] - 1 - pos).clamp(min=0)).masked_fill(~real, PAD)
    bos = torch.full((n, 1), BOS)
    src = torch.cat([bos, digits], dim=1)
    tgt = torch.cat([bos, backwards, torch.full((n, 1), PAD)], dim=1)
    tgt[torch.arange(n), lengths + 1] = EOS
    return src, tgt


def digits_to_ids(text: str, bos: bool = True) -> torch.Tensor:
    """``"123"`` -> ``tensor([BOS, 4, 5, 6])`` (a 1-D source sequence)."""
    if not isinstance(text, str) or not text.isdigit():
        raise ValueError(f"text must be a non-empty string of digits, got {text!r}")
    ids = [DIGIT_OFFSET + int(c) for c in text]
    return torch.tensor(([BOS] if bos else []) + ids)


def ids_to_digits(ids) -> str:
    """Digits of a sequence of ids as a string; stops at EOS, skips PAD and BOS."""
    out = []
    for i in (ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)):
        if i == EOS:
            break
        if i >= DIGIT_OFFSET:
            out.append(str(i - DIGIT_OFFSET))
    return "".join(out)


def train_step(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor, optimizer: torch.optim.Optimizer,
               scheduler=None, label_smoothing: float = 0.0, pad_id: int = 0) -> float:
    """One teacher-forced update: all target positions are predicted in parallel. Returns the loss."""
    if tgt.dim() != 2 or tgt.size(1) < 2:
        raise ValueError(f"tgt must be (batch, length >= 2) with BOS first, got {tuple(tgt.shape)}")
    model.train()
    dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]                      # shifted right / the answers
    logits = model(src, dec_in)                                     # (B, T, V)
    loss = masked_cross_entropy(logits, dec_out, dec_out != pad_id, label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def train(model: nn.Module, make_batch: Callable[[], tuple[torch.Tensor, torch.Tensor]], steps: int,
          optimizer: torch.optim.Optimizer, scheduler=None, label_smoothing: float = 0.0,
          pad_id: int = 0, progress: bool = True, desc: str = "training") -> list[float]:
    """Run ``steps`` teacher-forced updates on batches from ``make_batch()``; return the losses.

    The progress bar is plain tqdm on stderr (text, so it also shows in a saved notebook).
    """
    _check_int(steps, "steps", 1)
    from tqdm import tqdm

    losses = []
    bar = tqdm(range(steps), desc=desc, disable=not progress, file=sys.stderr,
               mininterval=10.0, ncols=80, ascii=True)
    for _ in bar:
        src, tgt = make_batch()
        losses.append(train_step(model, src, tgt, optimizer, scheduler, label_smoothing, pad_id))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    bar.close()
    return losses


@torch.no_grad()
def perplexity(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor, pad_id: int = 0) -> float:
    """``exp`` of the mean cross-entropy (no smoothing) per real target token, teacher-forced."""
    model.eval()
    dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]
    nll = masked_cross_entropy(model(src, dec_in), dec_out, dec_out != pad_id)
    return float(_perplexity_of(nll))
