"""Temporary: optimiser, thread and eval-mode helpers (to utils.training)."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from .checks import check_int


def adam(params, lr: float = 1e-3, **kwargs) -> torch.optim.Adam:
    """``torch.optim.Adam(params, lr, fused=True, **kwargs)``.

    The fused kernel takes Adam's square root in ATen's own code. The
    default (foreach) path calls ``torch.sqrt``, which goes to MKL's vector
    maths: its last bits differ between Intel and AMD CPUs even on MKL's
    vendor-neutral branch, and a training run amplifies them (README,
    "numeric modes"). Every model the course trains uses this.
    """
    return torch.optim.Adam(params, lr=lr, fused=True, **kwargs)


@contextlib.contextmanager
def threads(num_threads: int):
    """``torch.set_num_threads(num_threads)`` inside the block; the previous
    count after."""
    num_threads = check_int(num_threads, "num_threads", 1)
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def evaluating(model):
    """Eval mode and no gradients inside the block; the model's own mode
    after. Objects that are not modules (a hand-made model) pass through."""
    was_training = getattr(model, "training", None)
    if isinstance(model, nn.Module):
        model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        if isinstance(model, nn.Module):
            model.train(was_training)
