"""The run's surroundings, set and given back: the seed ``make robust`` picks,
the numeric mode a result depends on, the optimiser that computes alike on
every CPU, the thread count and the train/eval
mode. Each is written once here and used by the modules that train or
evaluate.
"""

from __future__ import annotations

import contextlib
import os

import torch
from torch import nn

from .checks import check_int

__all__ = [
    "course_seed",
    "numeric_fingerprint",
    "numeric_stamp",
    "adam",
    "threads",
    "evaluating",
]


def course_seed(default: int = 0) -> int:
    """The training seed: ``COURSE_SEED`` when set (``make robust`` sets it),
    else ``default``.

    Chapters 8 and 9 both call it, so they build the same splits and load the
    same model.
    """
    value = os.environ.get("COURSE_SEED")
    if value is None:
        return check_int(default, "default", 0)
    try:
        return check_int(int(value), "COURSE_SEED", 0)
    except ValueError:
        raise ValueError(f"COURSE_SEED={value!r} is not an int >= 0") from None


def numeric_fingerprint() -> dict:
    """What decides the last bits of a training run besides its settings and
    seed: the torch version, the CPU code path (``get_cpu_capability``: AVX2
    in the portable mode, AVX512 natively on such a CPU), MKL's
    reproducibility branch and the device. A cached model is keyed by them,
    so a model trained natively is never loaded by a portable-mode run.
    """
    return {
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
        "threads": 1,  # the translator trains on one CPU thread, always
        "cuda": torch.version.cuda if torch.cuda.is_available() else None,
    }


def numeric_stamp() -> dict:
    """The numerics a stored sweep was computed with, as it records them:
    MKL's branch, ATen's CPU path, the thread count and the torch version.
    A chapter compares its live run with a stored row exactly only when the
    stamps agree (``make test``'s portable mode); elsewhere (Colab, ``make
    robust``) it compares by the spread over seeds."""
    return {
        "MKL_CBWR": os.environ.get("MKL_CBWR", "unset"),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__.split("+")[0],
    }


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
