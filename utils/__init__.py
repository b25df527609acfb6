"""The course library: each idea of the Transformer written once, one module
per topic, imported by the chapters (``utils.setup`` starts each one). Bool
masks mean **True = may attend / is a real token** and broadcast to ``(batch,
heads, query_len, key_len)``; bad arguments raise a ``TypeError`` (wrong kind)
or ``ValueError`` (wrong value) naming the argument (``utils.checks``)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .checks import check_int

__all__ = ["setup", "seed_everything", "pick_device"]


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and torch (CPU, CUDA): reruns print the same."""
    seed = check_int(seed, "seed", 0)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    os.environ["PYTHONHASHSEED"] = str(seed)


def pick_device() -> torch.device:
    """CUDA when present (Colab with a GPU), otherwise CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def setup(seed: int = 0) -> torch.device:
    """Seed, round prints (4 decimals, 79 columns), style figures -> device."""
    seed_everything(seed)
    torch.set_printoptions(precision=4, sci_mode=False, linewidth=79)
    np.set_printoptions(precision=4, suppress=True, linewidth=79)
    from . import plotting

    plotting.use_course_style()
    return pick_device()
