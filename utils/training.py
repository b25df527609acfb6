"""The course's one training loop, ``train`` (nanoGPT's, with hooks), and
around it: CPU-portable Adam, the warm-up schedule of Vaswani et al.,
losses, held-out scores, checkpoints, a progress bar."""

from __future__ import annotations

import contextlib
import math
import pathlib
import sys
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch
from torch import nn

from .checks import check_bool, check_ids, check_int, check_number
from .layers import evaluating
from .loss import masked_cross_entropy

__all__ = [
    "train",
    "adam",
    "adamw",
    "threads",
    "noam_lr",
    "noam_scheduler",
    "linear_scheduler",
    "paper_adam",
    "teacher_forced_loss",
    "evaluate_loss",
    "evaluate_perplexity",
    "save_checkpoint",
    "load_checkpoint",
    "Progress",
]


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: Iterator,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    steps: int,
    *,
    scheduler=None,
    clip: float | None = None,
    start: int = 0,
    hooks: Sequence[Callable[[int, float], bool | None]] = (),
    progress: bool = True,
    desc: str = "training",
    parallel=None,
) -> list[float]:
    """Steps ``start + 1`` to ``steps``: each takes ``next(batches)``,
    computes ``loss_fn(model, batch)`` (a scalar), backpropagates, clips the
    gradient norm to ``clip`` (if given), steps the optimiser and the
    scheduler. Then every ``hook(step, loss)`` is called (all of them; one
    returning True stops the loop after this step). The model is in train
    mode (dropout on); a hook that evaluates uses ``evaluating``, which
    gives it back. ``parallel`` (``utils.parallel.DataParallel``): each
    batch is ``{part: batch}``, and the step is taken on the parts' mean
    gradient, as data-parallel processes take it. Returns the loss of
    every step taken."""
    check_int(steps, "steps", 1)
    check_int(start, "start", 0)
    if clip is not None:
        check_number(clip, "clip", 0.0, min_inclusive=False)
    bar = Progress(steps, desc, enabled=check_bool(progress, "progress"))
    bar.update(start)
    model.train()
    losses = []
    for step in range(start + 1, steps + 1):
        batch = next(batches)
        optimizer.zero_grad(set_to_none=True)
        if parallel is None:
            loss = loss_fn(model, batch)
            loss.backward()
        else:
            loss = parallel.backward(model, loss_fn, batch)
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
        bar.update()
        if any([hook(step, losses[-1]) for hook in hooks]):  # call them all
            break
    bar.close()
    return losses


def adam(params, lr: float = 1e-3, **kwargs) -> torch.optim.Adam:
    """``torch.optim.Adam(params, lr, fused=True, **kwargs)``: the default
    path's ``torch.sqrt`` (MKL) differs in the last bits between Intel and
    AMD, and training amplifies that."""
    return torch.optim.Adam(params, lr=lr, fused=True, **kwargs)


def adamw(
    model: nn.Module, lr: float, weight_decay: float = 0.1, betas=(0.9, 0.95)
) -> torch.optim.AdamW:
    """GPT's optimiser (nanoGPT's settings): AdamW, fused as ``adam``, the
    weights decayed on the matrices only (not biases, norms' gains)."""
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2]},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups, lr=lr, betas=betas, weight_decay=weight_decay, fused=True
    )


@contextlib.contextmanager
def threads(num_threads: int):
    """``torch.set_num_threads`` inside the block, restored after."""
    num_threads = check_int(num_threads, "num_threads", 1)
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def noam_lr(
    step: int, d_model: int, warmup_steps: int, factor: float = 1.0
) -> float:
    """The paper's learning rate at ``step`` (from 1), peaking at
    ``warmup_steps``."""
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
    scales: tuple[float, ...] | None = None,
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` setting every group's lr to ``noam_lr``;
    ``warmup=False``: the peak until ``warmup_steps``; ``cooldown_steps``
    (needs ``steps``): a linear fall towards 0 at the end; ``scales``: one
    factor per group (a lower rate for pre-trained weights)."""
    noam_lr(1, d_model, warmup_steps, factor)  # validate now, not later
    check_bool(warmup, "warmup")
    check_int(cooldown_steps, "cooldown_steps", 0)
    if cooldown_steps:
        if steps is None:
            raise ValueError("cooldown_steps needs steps, the run's length")
        check_int(steps, "steps", cooldown_steps + 1)
    scales = _group_scales(optimizer, scales)
    first = 1 if warmup else warmup_steps
    last = None if not cooldown_steps else steps - cooldown_steps

    def rate(step: int) -> float:
        if last is None or step <= last:
            return noam_lr(max(step, first), d_model, warmup_steps, factor)
        left = (steps - step + 1) / (cooldown_steps + 1)  # 1 > left > 0
        return noam_lr(max(last, first), d_model, warmup_steps, factor) * left

    lambdas = []
    for group, scale in zip(optimizer.param_groups, scales):
        base = group["lr"]
        if not base > 0:
            raise ValueError(
                f"the optimizer's lr must be > 0 (it is divided out), "
                f"got {base!r}"
            )
        lambdas.append(lambda i, b=base, s=scale: rate(i + 1) * s / b)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def _group_scales(optimizer, scales) -> tuple[float, ...]:
    """One rate factor per parameter group (all 1.0 if ``scales`` is None)."""
    n = len(optimizer.param_groups)
    scales = (1.0,) * n if scales is None else tuple(scales)
    if len(scales) != n or not all(x > 0 for x in scales):
        raise ValueError(f"scales must be {n} factors > 0, got {scales!r}")
    return scales


def linear_scheduler(
    optimizer: torch.optim.Optimizer,
    warmup_steps: int,
    steps: int,
    scales: tuple[float, ...] | None = None,
) -> torch.optim.lr_scheduler.LambdaLR:
    """The schedule of the public recipes (nanoGPT, fairseq's, BERT's):
    the rate rises linearly to the optimiser's ``lr`` over
    ``warmup_steps``, then falls linearly, reaching 0 just after ``steps``;
    ``scales``: one factor per group."""
    check_int(warmup_steps, "warmup_steps", 1)
    check_int(steps, "steps", warmup_steps)
    scales = _group_scales(optimizer, scales)

    def rate(step: int) -> float:  # step from 1
        if step <= warmup_steps:
            return step / warmup_steps
        return (steps - step + 1) / (steps - warmup_steps + 1)

    lambdas = [lambda i, s=scale: rate(i + 1) * s for scale in scales]
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def paper_adam(params, lr: float = 1.0) -> torch.optim.Adam:
    """Adam with the paper's betas (0.9, 0.98), eps 1e-9."""
    return adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9)


def _check_batch(src, tgt) -> None:
    check_ids(src, "src", ndim=2)
    check_ids(tgt, "tgt", ndim=2)
    check_int(tgt.size(1), "tgt's length (BOS and at least one token)", 2)


def teacher_forced_loss(
    model: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
    label_smoothing: float = 0.0,
    pad_id: int = 0,
) -> torch.Tensor:
    """Mean cross-entropy per real token of ``batch = (src (B, S), tgt (B,
    T))``: the decoder reads ``tgt[:, :-1]``, is scored on ``tgt[:, 1:]``."""
    src, tgt = batch
    _check_batch(src, tgt)
    dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]  # shifted right / the answers
    logits = model(src, dec_in)  # (B, T - 1, V)
    return masked_cross_entropy(
        logits, dec_out, dec_out != pad_id, label_smoothing
    )


def evaluate_loss(
    model: nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    label_smoothing: float = 0.0,
    pad_id: int = 0,
) -> float:
    """Mean cross-entropy per real target token over ``batches``."""
    check_number(label_smoothing, "label_smoothing", 0.0, 1.0)
    total = count = 0.0
    with evaluating(model):
        for src, tgt in batches:
            loss = teacher_forced_loss(
                model, (src, tgt), label_smoothing, pad_id
            )
            n = int((tgt[:, 1:] != pad_id).sum())
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
    """``exp`` of ``evaluate_loss`` without label smoothing."""
    return math.exp(evaluate_loss(model, batches, 0.0, pad_id))


def save_checkpoint(path, model, optimizer, scheduler=None, **extra) -> None:
    """Write the run's state (weights, optimiser, schedule, random state,
    ``extra``) to ``path``, replaced whole: a kill keeps the old file."""
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
    """Restore what ``save_checkpoint`` wrote; returns its ``extra``."""
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
    """A progress bar a notebook stores as ONE line of <= 79 columns."""

    def __init__(
        self,
        total: int,
        desc: str = "training",
        enabled: bool = True,
        ncols: int = 79,
        every: float = 0.5,
    ):
        check_int(total, "total", 1)
        self.total, self.desc, self.enabled = total, desc, enabled
        self.ncols, self.every = ncols, every
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
        """The bar as text: ``training: 100%|####| 900/900 [00:20, ...]``."""
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
