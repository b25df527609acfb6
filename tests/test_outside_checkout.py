"""A notebook runs alone, outside the checkout, the way Colab runs it.

The notebook is copied into an empty temporary folder; its setup cell finds no `utils`
above it and clones the course. Instead of the network, COURSE_REPO_URL points the clone at
a local git repository made from this working tree, so the test sees uncommitted changes.
"""
from __future__ import annotations

import shutil
import subprocess

import nbformat
import pytest
from nbclient import NotebookClient

from notebook_tools import ROOT

pytestmark = pytest.mark.slow
NOTEBOOK = ROOT / "book" / "template.ipynb"


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=ci", "-c", "user.email=ci@localhost", *args],
                   cwd=cwd, check=True, capture_output=True)


def test_notebook_runs_alone_like_in_colab(tmp_path, monkeypatch):
    source = tmp_path / "origin"
    source.mkdir()
    for name in ("utils", "requirements.txt", "pyproject.toml"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    _git("init", "-q", "-b", "main", cwd=source)
    _git("add", ".", cwd=source)
    _git("commit", "-q", "-m", "snapshot", cwd=source)

    work = tmp_path / "content"  # like Colab's /content: nothing but the notebook
    work.mkdir()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print(pathlib.Path(utils.__file__).resolve())"))
    monkeypatch.setenv("COURSE_REPO_URL", source.as_uri())
    monkeypatch.setenv("PYTHONPATH", "")  # the kernel must not see the checkout through the environment
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(work)}}).execute()

    clone = work / "transformer-course"
    assert (clone / "utils" / "__init__.py").is_file(), "the setup cell did not clone the course"
    printed = nb.cells[-1].outputs[0]["text"].strip()
    assert printed == str((clone / "utils" / "__init__.py").resolve()), f"utils came from {printed}"
