"""The course library: each idea of the Transformer written once, imported
by the chapters.

Modules, one per topic, in the order the chapters introduce them:
``toy_tasks`` and ``priors`` (ch. 1: the tasks, then the models with their
priors), ``attention`` and ``scoring`` (2), ``masks`` (3), ``positional`` and
``position_probe`` (4: the encodings, then the experiment comparing them),
``loss`` (5), ``efficient_attention`` and ``complexity`` (6: cheaper
attention, then how cost is counted and measured), ``layers`` and ``model``
(7: the layers, then the assembled Transformer), ``batches``,
``pronunciation``, ``training`` and ``pronouncer`` (8: vocabularies and
batches, the task, the one training loop every chapter's model trains with,
the pronouncer's config and run), ``decoding``, ``cache``, ``sampling``,
``bleu`` and ``numerals`` (9: the last writes the numbers of the chapter's
two-answer experiment), ``objectives`` and ``pretraining`` (10), plus
the shared ``plotting`` (plots of numbers), ``diagrams`` (a package: diagrams
drawn by code), ``figures``, ``funnel`` and ``labels`` (every figure shown is
checked for a phone, translated in the Chinese notebooks and encoded),
``runtime`` (seed, numeric mode, CJK font) and ``checks``.
Boolean masks mean **True = may attend / is a real token** and broadcast to
``(batch, heads, query_len, key_len)``. Bad arguments raise a ``TypeError``
(wrong kind) or a ``ValueError`` (wrong value) that names the argument; the
rules live in ``utils.checks``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from .checks import check_int

__all__ = ["setup", "seed_everything", "pick_device"]


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA) so reruns print the same
    numbers."""
    seed = check_int(seed, "seed", 0)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    os.environ["PYTHONHASHSEED"] = str(seed)


def pick_device() -> torch.device:
    """CUDA when present (Colab with a GPU), otherwise CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def setup(seed: int = 0) -> torch.device:
    """Seed everything, round prints (4 decimals, 79 columns: stored outputs
    stay stable and fit the page), apply the figure style; returns the
    device (CUDA when present)."""
    seed_everything(seed)
    torch.set_printoptions(precision=4, sci_mode=False, linewidth=79)
    np.set_printoptions(precision=4, suppress=True, linewidth=79)
    from . import plotting

    plotting.use_course_style()
    return pick_device()
