"""The publisher's machinery, apart from the learner's library ``utils``.

What a reader needs to follow the lesson is in ``utils``. What exists to prove,
store, replay, glue, translate and check figures is here, loaded by the
chapters' folded setup and proof cells, by ``tests/`` and by ``tools/``:

- ``glue``: a computed number into the prose (MyST-NB's ``glue``);
- ``figures`` and ``funnel``: every figure the test harness shows is checked
  for a phone (legible, no overlapping text) and stored as SVG;
- ``labels``: the Chinese edition's figure text;
- ``runtime``: ``make robust``'s seed, the numeric stamp a stored run records,
  the CJK font;
- ``diagrams``: the course's diagrams, drawn by code;
- ``colab``: the Colab notebooks' setup (finding and importing the course);
- ``rng``: the live GPT page's seeded generator and draw, the same in
  JavaScript, and ``generate_seeded``, which samples with them.
- ``heads``: the previous-letter and next-letter heads measured on every
  stored pronouncer (chapters 2 and 4).

``setup`` is what the chapters' setup cell calls. In a reader's own kernel
(Colab, ``jupyter lab``) it does what ``utils.setup`` does and, in a Chinese
notebook, translates the figures' text; it installs no check that could fail a
reader's own figure. Under the test harness (``make test``, ``make refresh``,
``make robust``: ``tools.numerics.numeric_mode`` sets ``COURSE_CHECK_FIGURES``)
every figure shown is also checked and a failed check fails its cell.
"""

from __future__ import annotations

import os
import re

import torch

import utils

from . import runtime

__all__ = ["setup", "glue", "checking_figures"]

CHECK_FIGURES = "COURSE_CHECK_FIGURES"


def checking_figures() -> bool:
    """Whether figures are checked: only under the test harness."""
    return os.environ.get(CHECK_FIGURES) == "1"


def setup(seed: int = 0, language: str = "en") -> torch.device:
    """The chapters' setup: ``utils.setup`` with ``make robust``'s seed
    (``COURSE_SEED``), the figures' language (``COURSE_LANGUAGE`` when set:
    the Chinese notebooks are the English ones run with ``zh``), and the
    figure funnel where it is wanted (module docstring)."""
    from . import labels

    seed = runtime.course_seed(seed)
    language = os.environ.get("COURSE_LANGUAGE", language)
    labels.set_language(language)
    device = utils.setup(seed)
    check = checking_figures()
    if check or language != "en":
        try:
            from IPython import get_ipython
        except ImportError:  # plain Python: nothing is displayed inline
            return device
        if get_ipython() is not None:
            from . import funnel

            funnel.install(get_ipython(), check=check)
    return device


# a glued range of two numbers, as the English writes it
_RANGE = re.compile(r"^([-+]?[\d.,]+%?) to ([-+]?[\d.,]+%?)$")


def glue(name: str, value, display: bool = False, zh=None) -> None:
    """Store ``value`` under ``name`` for the prose (MyST-NB's
    ``{glue:text}`name``` role).

    ``zh``: the value the Chinese edition's sentence needs, where ``value``
    is words ("2.3 points behind", "below"), not a bare number: a Chinese
    notebook (``proof.setup`` in Chinese) glues it instead.

    On the website the number in the sentence is the one this cell computed.
    Where MyST-NB is not installed (Colab, plain Jupyter) the prose shows the
    raw role, so the value is printed instead, one short line ``name = value``,
    and the reader still sees every number the text refers to. Round floats
    before gluing so the stored output stays exact.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    from . import labels

    if zh is not None:
        if not isinstance(zh, str) or not zh:
            raise TypeError(f"zh must be a non-empty str, got {zh!r}")
        if labels.language() == "zh":
            value = zh
    elif isinstance(value, str) and labels.language() == "zh":
        # a range of two numbers ("0.29 to 0.30") reads 0.29 至 0.30
        value = _RANGE.sub(r"\1 至 \2", value)
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        print(f"{name} = {value}")
        return
    myst_glue(name, value, display=display)
