"""Training helpers any sequence-to-sequence model uses: the warm-up
schedule, the paper's Adam, one training step, held-out scores, a progress bar.

- ``noam_lr(step, d_model, warmup_steps, factor)``: the schedule of Vaswani et
  al. (2017), ``factor * d_model^-0.5 * min(step^-0.5, step *
  warmup_steps^-1.5)`` (linear rise, then ``step^-0.5`` decay);
  ``noam_scheduler`` wraps it in a ``LambdaLR``.
- ``paper_adam(params)``: Adam with betas (0.9, 0.98) and eps 1e-9, as in the
  paper.
- ``train_step`` / ``evaluate_loss`` / ``evaluate_perplexity``: one
  teacher-forced update and held-out scores (the evaluators restore the
  train/eval mode they found).
- ``save_checkpoint`` / ``load_checkpoint``: everything a run needs to
  continue bit for bit where it stopped.
- ``Progress``: a progress bar that a notebook stores as one final line of at
  most 79 columns.

Chapter 8's translator (its config, model and training run) is built on these
in ``utils.translator``.
"""

from __future__ import annotations

import math
import pathlib
import sys
import time
from typing import Iterable

import torch
from torch import nn

from .checks import check_bool, check_ids, check_int, check_number
from .loss import masked_cross_entropy
from .runtime import adam, evaluating

__all__ = [
    "noam_lr",
    "noam_scheduler",
    "paper_adam",
    "train_step",
    "evaluate_loss",
    "evaluate_perplexity",
    "save_checkpoint",
    "load_checkpoint",
    "Progress",
]


def noam_lr(
    step: int, d_model: int, warmup_steps: int, factor: float = 1.0
) -> float:
    """Learning rate at ``step`` (counted from 1): rises linearly to
    ``warmup_steps``, then decays.

    ``factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)``;
    the peak, at ``step == warmup_steps``, is ``factor / sqrt(d_model *
    warmup_steps)``.
    """
    check_int(step, "step", 1)
    check_int(d_model, "d_model", 1)
    check_int(warmup_steps, "warmup_steps", 1)
    factor = check_number(factor, "factor", 0, min_inclusive=False)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def noam_scheduler(
    optimizer: torch.optim.Optimizer,
    d_model: int,
    warmup_steps: int,
    factor: float = 1.0,
    warmup: bool = True,
    steps: int | None = None,
    cooldown_steps: int = 0,
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets every group's learning rate to ``noam_lr``
    exactly.

    ``LambdaLR`` multiplies each group's initial lr by the lambda and counts
    from 0, so the lambda divides by that initial lr and shifts the count by
    one (the formula starts at 1). Call ``scheduler.step()`` after each
    ``optimizer.step()``. ``warmup=False`` (for an ablation) starts at the
    peak and keeps it until ``warmup_steps``: the same peak and decay,
    without the ramp. ``cooldown_steps`` (needs ``steps``, the length of
    the run): over the last ``cooldown_steps`` steps the rate falls linearly
    from where the decay left it towards 0 (a run's noisy last steps
    settled); the steps before are the plain schedule, whatever the length.
    """
    noam_lr(1, d_model, warmup_steps, factor)  # validate now, not later
    check_bool(warmup, "warmup")
    check_int(cooldown_steps, "cooldown_steps", 0)
    if cooldown_steps:
        if steps is None:
            raise ValueError("cooldown_steps needs steps, the run's length")
        check_int(steps, "steps", cooldown_steps + 1)
    first = 1 if warmup else warmup_steps
    last = None if not cooldown_steps else steps - cooldown_steps

    def rate(step: int) -> float:
        if last is None or step <= last:
            return noam_lr(max(step, first), d_model, warmup_steps, factor)
        left = (steps - step + 1) / (cooldown_steps + 1)  # 1 > left > 0
        return noam_lr(max(last, first), d_model, warmup_steps, factor) * left

    lambdas = []
    for group in optimizer.param_groups:
        base = group["lr"]
        if not base > 0:
            raise ValueError(
                f"the optimizer's lr must be > 0 (it is divided out), "
                f"got {base!r}"
            )
        lambdas.append(lambda i, base=base: rate(i + 1) / base)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def paper_adam(params, lr: float = 1.0) -> torch.optim.Adam:
    """Adam with the paper's betas (0.9, 0.98) and eps 1e-9; a scheduler
    overwrites ``lr``."""
    return adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9)


def _check_batch(src, tgt) -> None:
    check_ids(src, "src", ndim=2)
    check_ids(tgt, "tgt", ndim=2)
    check_int(tgt.size(1), "tgt's length (BOS and at least one token)", 2)


def train_step(
    model: nn.Module,
    src: torch.Tensor,
    tgt: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    scheduler=None,
    label_smoothing: float = 0.0,
    pad_id: int = 0,
) -> float:
    """One teacher-forced update (all target positions in parallel). Returns
    the loss.

    The model is put in train mode (dropout on): that is what a training step
    means.
    """
    _check_batch(src, tgt)
    model.train()
    dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]  # shifted right / the answers
    logits = model(src, dec_in)  # (B, T, V)
    loss = masked_cross_entropy(
        logits, dec_out, dec_out != pad_id, label_smoothing
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def evaluate_loss(
    model: nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    label_smoothing: float = 0.0,
    pad_id: int = 0,
) -> float:
    """Mean cross-entropy per real target token over ``batches``,
    teacher-forced, dropout off.

    Every token weighs the same (batches are summed, not averaged). The model's
    train/eval mode is restored afterwards.
    """
    check_number(label_smoothing, "label_smoothing", 0.0, 1.0)
    total = count = 0.0
    with evaluating(model):
        for src, tgt in batches:
            _check_batch(src, tgt)
            dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]
            real = dec_out != pad_id
            n = int(real.sum())
            loss = masked_cross_entropy(
                model(src, dec_in), dec_out, real, label_smoothing
            )
            total += loss.item() * n
            count += n
    if count == 0:
        raise ValueError("batches hold no real target token")
    return total / count


def evaluate_perplexity(
    model: nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    pad_id: int = 0,
) -> float:
    """``exp`` of the unsmoothed mean cross-entropy per real target token
    (``evaluate_loss``)."""
    return math.exp(evaluate_loss(model, batches, 0.0, pad_id))


def save_checkpoint(path, model, optimizer, scheduler=None, **extra) -> None:
    """Write the state of a training run to ``path``: the weights, the
    optimiser's and the schedule's state, torch's random state (dropout
    draws from it; CUDA's too when the model is there) and ``extra`` (the
    caller's place in its data, its history). The file is replaced whole,
    so a run killed while saving keeps the previous one."""
    device = next(model.parameters()).device
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "rng": torch.get_rng_state(),
        "cuda_rng": (
            torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        ),
        "extra": extra,
    }
    tmp = pathlib.Path(f"{path}.tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def load_checkpoint(path, model, optimizer, scheduler=None) -> dict:
    """Restore what ``save_checkpoint`` wrote into ``model``, ``optimizer``,
    ``scheduler`` and torch's random state; returns its ``extra``."""
    device = next(model.parameters()).device
    state = torch.load(path, map_location=device, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"].cpu())
    if state["cuda_rng"] is not None:
        torch.cuda.set_rng_state(state["cuda_rng"].cpu(), device)
    return state["extra"]


class Progress:
    """A progress bar for loops, stored by a notebook as ONE line of at most 79
    columns.

    In a Jupyter kernel it is a display that is updated in place (so the saved
    notebook keeps only its final state); elsewhere it writes tqdm's line to
    stderr. ``update(n=1)`` advances; ``close()`` draws the final line.
    ``enabled=False`` shows nothing.
    """

    def __init__(
        self,
        total: int,
        desc: str = "training",
        enabled: bool = True,
        ncols: int = 79,
        every: float = 0.5,
    ):
        check_int(total, "total", 1)
        self.total, self.desc, self.enabled, self.ncols, self.every = (
            total,
            desc,
            enabled,
            ncols,
            every,
        )
        self.n, self.start, self.last = 0, time.perf_counter(), -math.inf
        self._handle = self._bar = None
        if not enabled:
            return
        try:
            from IPython import get_ipython
            from IPython.display import Pretty, display

            in_kernel = get_ipython() is not None and hasattr(
                get_ipython(), "kernel"
            )
        except ImportError:
            in_kernel = False
        if in_kernel:
            self._pretty = Pretty
            self._handle = display(Pretty(self.line()), display_id=True)
        else:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=desc,
                ncols=ncols,
                ascii=True,
                file=sys.stderr,
            )

    def line(self) -> str:
        """The bar as text, e.g. ``training: 100%|####| 900/900 [00:20<00:00,
        45.0it/s]``."""
        from tqdm import tqdm

        return tqdm.format_meter(
            self.n,
            self.total,
            time.perf_counter() - self.start,
            ncols=self.ncols,
            prefix=self.desc,
            ascii=True,
        )

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif (
            self._handle is not None
            and time.perf_counter() - self.last > self.every
        ):
            self.last = time.perf_counter()
            self._handle.update(self._pretty(self.line()))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._handle is not None:
            self._handle.update(self._pretty(self.line()))
