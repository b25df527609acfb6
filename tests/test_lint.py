"""The library and the tooling stay formatted and lint-clean at the project's
79 columns (pyproject.toml: pycodestyle, E501 among it, and pyflakes, F401
among it), so the code the chapters show and import reads like the rest."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tools import ROOT

CHECKED = ["utils", "tools", "conftest.py"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which(
        "ruff", path=str(ROOT / ".venv" / "bin")
    ) or shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run(
        [*cmd, *args, *CHECKED], cwd=ROOT, capture_output=True, text=True
    )


@pytest.mark.parametrize("args", [("check",), ("format", "--check")])
def test_ruff_is_clean(args):
    done = _ruff(*args)
    command = " ".join(["ruff", *args, *CHECKED])
    assert done.returncode == 0, f"{command}:\n{done.stdout}{done.stderr}"
