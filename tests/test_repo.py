"""The course's conventions, checked on the stored notebooks and the configuration."""
from __future__ import annotations

import json
import pathlib

import pytest

from notebook_tools import ROOT, SETUP_MARKER, config, setup_source, toc_files, toc_notebooks

NOTEBOOKS = toc_notebooks()
IDS = [p.stem for p in NOTEBOOKS]


def _cells(path: pathlib.Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def test_toc_entries_exist():
    missing = [f for f in toc_files() if not any((ROOT / f"{f}{ext}").exists() for ext in (".ipynb", ".md"))]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_every_notebook_is_in_the_toc():
    listed = {p.resolve() for p in NOTEBOOKS}
    strays = [str(p.relative_to(ROOT)) for p in ROOT.glob("book/**/*.ipynb")
              if p.resolve() not in listed and ".ipynb_checkpoints" not in p.parts
              and "transformer-course" not in p.parts]
    assert not strays, f"notebooks missing from _toc.yml (untested and unpublished): {strays}"


def test_config_is_strict_and_points_at_main():
    cfg = config()
    assert cfg["repository"]["branch"] == "main"
    assert cfg["execute"]["execute_notebooks"] == "off", "outputs are stored and proven by nbval"
    assert cfg["launch_buttons"]["colab_url"].startswith("https://colab.research.google.com")
    assert "book/references.bib" in cfg["bibtex_bibfiles"]


def test_colab_installs_no_pinned_torch():
    deps = (ROOT / "pyproject.toml").read_text()
    assert "torch==" not in deps, "pyproject.toml (what an installer outside this repo sees) must not pin torch"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_setup_cell_is_the_canonical_one(path):
    code = [c for c in _cells(path) if c["cell_type"] == "code"]
    source = "".join(code[0]["source"])
    assert source.startswith(SETUP_MARKER), f"{path.name}: first code cell is not the setup cell"
    assert source == setup_source(), f"{path.name}: setup cell differs from tests/notebook_tools.py; run make refresh"
    assert "hide-input" in code[0]["metadata"].get("tags", []), f"{path.name}: setup cell not folded; run make refresh"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_outputs_are_clean_and_in_order(path):
    code = [c for c in _cells(path) if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: not run top to bottom once: {counts}"
    for i, c in enumerate(code):
        for out in c["outputs"]:
            assert out["output_type"] != "error", f"{path.name} cell {i} stores an error"
            text = json.dumps(out)
            for fragment in ("/work/", "/home/", "/root/"):
                assert fragment not in text, f"{path.name} cell {i} shows a machine path ({fragment})"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_figures_have_caption_and_alt_text(path):
    for i, c in enumerate(_cells(path)):
        if c["cell_type"] != "code":
            continue
        images = [o for o in c["outputs"] if "image/png" in o.get("data", {})]
        if not images:
            continue
        meta = c["metadata"].get("mystnb", {})
        assert meta.get("figure", {}).get("caption"), f"{path.name} cell {i}: figure without a caption"
        assert meta.get("image", {}).get("alt"), f"{path.name} cell {i}: figure without alt text"
        assert len(images) == 1, f"{path.name} cell {i}: one figure per cell (use subplots)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapter_structure(path):
    text = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")
    for needle in ("Learning goals", "Summary"):
        assert needle in text, f"{path.name}: no '{needle}' section"
    if path.stem[:2].isdigit():
        assert "Exercise" in text, f"{path.name}: no exercises"
        assert ":class: dropdown" in text, f"{path.name}: exercise solutions are not folded"
        asserts = sum("assert" in "".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code")
        assert asserts >= 1, f"{path.name}: no cell checks a claim with assert"
