"""A notebook runs alone, outside the checkout, the way Colab runs it.

The notebook is copied into an empty temporary folder; its setup cell finds no
`utils` above it and clones the course. Instead of the network, COURSE_REPO_URL
points the clone at a local git repository made from this working tree, so the
test sees uncommitted changes. The author template runs so, and one Colab
notebook of each language (colab/, tools/editions/colab_notebooks.py: what the
site's Colab buttons open), whose printed outputs must equal the stored ones.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import nbformat
import pytest

from tools.editions import colab_notebooks, zh_notebooks
from tools.editions.notebooks import ROOT, notebook_client, setup_source

NOTEBOOK = ROOT / "book" / "template.ipynb"
# The Colab notebooks run alone: a short chapter, in both languages.
COLAB_CHAPTER = ROOT / "book" / "05_masked_loss.ipynb"


def _git(*args, cwd):
    subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@localhost", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _origin(tmp_path) -> pathlib.Path:
    """A git repository holding what a clone of the course needs."""
    source = tmp_path / "origin"
    source.mkdir()
    for name in (
        "utils",
        "proof",
        "locale",
        "requirements.txt",
        "pyproject.toml",
    ):
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name,
                source / name,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    _git("init", "-q", "-b", "main", cwd=source)
    _git("add", ".", cwd=source)
    _git("commit", "-q", "-m", "snapshot", cwd=source)
    return source


@pytest.mark.slow
def test_notebook_runs_alone_like_in_colab(tmp_path, monkeypatch):
    source = _origin(tmp_path)
    work = (
        tmp_path / "content"
    )  # like Colab's /content: nothing but the notebook
    work.mkdir()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "print(pathlib.Path(utils.__file__).resolve())"
        )
    )
    monkeypatch.setenv("COURSE_REPO_URL", source.as_uri())
    monkeypatch.setenv(
        "PYTHONPATH", ""
    )  # the kernel must not see the checkout through the environment
    notebook_client(nb, work / NOTEBOOK.name, timeout=300).execute()

    clone = work / "transformer-course"
    assert (clone / "utils" / "__init__.py").is_file(), (
        "the setup cell did not clone the course"
    )
    printed = nb.cells[-1].outputs[0]["text"].strip()
    assert printed == str((clone / "utils" / "__init__.py").resolve()), (
        f"utils came from {printed}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("language", colab_notebooks.LANGUAGES)
def test_colab_notebook_runs_alone_and_prints_what_it_stores(
    tmp_path, monkeypatch, language
):
    """The Colab notebook's short setup cell clones the course, and every
    cell prints what the stored notebook shows (nbval's sanitisers, the
    cells nbval ignores left out)."""
    source = _origin(tmp_path)
    work = tmp_path / "content"
    work.mkdir()
    stored = nbformat.read(
        colab_notebooks.colab_path(COLAB_CHAPTER, language), as_version=4
    )
    nb = nbformat.read(
        colab_notebooks.colab_path(COLAB_CHAPTER, language), as_version=4
    )
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import utils\nprint(pathlib.Path(utils.__file__).resolve())"
        )
    )
    monkeypatch.setenv("COURSE_REPO_URL", source.as_uri())
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.delenv("COURSE_LANGUAGE", raising=False)
    # the runner chapters use: an interact's Output widget cannot stall it
    client = notebook_client(nb, work / COLAB_CHAPTER.name, timeout=300)
    client.startup_timeout = 300  # a busy machine starts kernels slowly
    client.execute()

    clone = work / "transformer-course"
    printed = nb.cells[-1].outputs[0]["text"].strip()
    assert printed == str((clone / "utils" / "__init__.py").resolve())
    sanitisers = zh_notebooks._sanitisers()
    differ = [
        ran.id
        for ran, kept in zip(nb.cells, stored.cells)
        if ran.cell_type == "code"
        and "nbval-ignore-output" not in kept.metadata.get("tags", [])
        and zh_notebooks.text_outputs(ran, sanitisers)
        != zh_notebooks.text_outputs(kept, sanitisers)
    ]
    assert not differ, f"cells printing what they do not store: {differ}"
    images = sum(zh_notebooks.images(c) for c in nb.cells)
    assert images == sum(zh_notebooks.images(c) for c in stored.cells) > 0


def test_setup_cell_loads_the_course_utils_over_a_foreign_one(tmp_path):
    """Colab (or a user's kernel) may already have imported another `utils`."""
    foreign = tmp_path / "elsewhere" / "utils"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("ORIGIN = 'foreign'\n")
    (foreign / "helpers.py").write_text("ORIGIN = 'foreign helpers'\n")
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(foreign.parent)!r})
        import utils, utils.helpers
        assert utils.ORIGIN == "foreign", "the fake utils did not load first"
        os.chdir({str(ROOT / "book")!r})
        exec(compile({setup_source()!r}, "setup-cell", "exec"))
        import utils.masks
        print(utils.__file__)
        print(utils.masks.__file__)
        print("utils.helpers" in sys.modules)
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                            env=env, capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    init, masks, stale = result.stdout.split()[-3:]
    assert init == str(ROOT / "utils" / "__init__.py"), (
        f"utils came from {init}"
    )
    assert masks == str(ROOT / "utils" / "masks.py"), (
        f"utils.masks came from {masks}"
    )
    assert stale == "False", (
        "the foreign utils.helpers is still in sys.modules"
    )
