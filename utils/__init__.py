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

from . import runtime
from .checks import check_int

__all__ = ["setup", "seed_everything", "pick_device", "glue"]


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


def setup(seed: int = 0, language: str = "en") -> torch.device:
    """What every chapter's first cell calls: seed, fix print and plot styles,
    pick the device.

    Prints are rounded (4 decimals, no scientific notation) so stored outputs
    stay stable, and wrapped at 79 characters so the website shows them whole.
    The environment variable ``COURSE_SEED``, when set, replaces ``seed``:
    ``make robust`` runs every chapter with another seed to prove its asserts
    do not depend on one. ``language`` ("en" or "zh") is the language of the
    figures' text; ``COURSE_LANGUAGE``, when set, replaces it (the Chinese
    notebooks are the English ones run with ``COURSE_LANGUAGE=zh``). Every
    figure shown is checked for phone legibility and overlapping text
    (``utils.figures``).
    """
    seed = runtime.course_seed(seed)
    language = os.environ.get("COURSE_LANGUAGE", language)
    seed_everything(seed)
    torch.set_printoptions(precision=4, sci_mode=False, linewidth=79)
    np.set_printoptions(precision=4, suppress=True, linewidth=79)
    from . import plotting  # noqa: F401  (applies the figure style)

    plotting.use_course_style(language)
    return pick_device()


def glue(name: str, value, display: bool = False) -> None:
    """Store ``value`` under ``name`` for the prose (MyST-NB's
    ``{glue:text}`name``` role).

    On the website the number in the sentence is the one this cell computed.
    Where MyST-NB is not installed (Colab, plain Jupyter) the prose shows the
    raw role, so the value is printed instead, one short line ``name = value``,
    and the reader still sees every number the text refers to. Round floats
    before gluing so the stored output stays exact.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        print(f"{name} = {value}")
        return
    myst_glue(name, value, display=display)
