"""Shared helpers for the notebook tooling: the canonical setup cell and the _toc.yml reader.

Used by `make refresh` (tests/refresh.py), conftest.py and the tests, so that the setup cell
and the list of chapters are each defined once.
"""
from __future__ import annotations

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]

SETUP_MARKER = "# Setup, the same in every chapter"

SETUP_CELL = '''\
# Setup, the same in every chapter: make `utils` importable from a checkout or, alone
# (as in Colab), by cloning the course next to the notebook; seed; pick the device.
import os, pathlib, subprocess, sys

REPO_URL = os.environ.get("COURSE_REPO_URL", "{url}")
IN_COLAB = "google.colab" in sys.modules
here = pathlib.Path.cwd().resolve()
root = next((p for p in (here, *here.parents) if (p / "utils" / "__init__.py").is_file()), None)
if root is None:  # not inside a checkout: fetch the course (Colab installs nothing else)
    root = here / "transformer-course"
    if not (root / "utils").is_dir():
        subprocess.run(["git", "clone", "--depth", "1", "--quiet", REPO_URL, str(root)], check=True)
sys.path.insert(0, str(root))

import utils
device = utils.setup(seed=0)'''


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def repo_url() -> str:
    return config()["repository"]["url"]


def setup_source() -> str:
    return SETUP_CELL.format(url=repo_url())


def toc_files() -> list[str]:
    """Every `file:`/`root:` entry of _toc.yml, relative to the repository root, no suffix."""
    text = (ROOT / "_toc.yml").read_text()
    return [m.group(1) for m in re.finditer(r"^\s*(?:-\s*)?(?:file|root):\s*(\S+)", text, re.M)]


def toc_notebooks() -> list[pathlib.Path]:
    """The notebooks listed in _toc.yml (the ones nbval must test)."""
    return [ROOT / f"{f}.ipynb" for f in toc_files() if (ROOT / f"{f}.ipynb").exists()]
