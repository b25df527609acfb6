"""The course's conventions, checked on the stored notebooks and the
configuration.

The notebooks checked are the chapters in _toc.yml plus the author template,
which is kept out of the reader's navigation but must stay a correct model
(tools/editions/notebooks.py).
"""

from __future__ import annotations

import json
import pathlib
import re
import unicodedata

import pytest
from tools.editions.notebooks import (
    EXTRA_NOTEBOOKS,
    ROOT,
    SETUP_MARKER,
    config,
    course_notebooks,
    setup_source,
    toc_files,
)

NOTEBOOKS = course_notebooks()
IDS = [p.stem for p in NOTEBOOKS]
# what the site's code column shows whole (see _static/course.css)
MAX_COLUMNS = 79
SOLUTION_PROMPTS = {
    "code_prompt_show": "Show solution",
    "code_prompt_hide": "Hide solution",
}


def _cells(path: pathlib.Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _code(path: pathlib.Path) -> list[tuple[int, dict]]:
    """The code cells, each with its index among all the cells."""
    cells = enumerate(_cells(path))
    return [(i, c) for i, c in cells if c["cell_type"] == "code"]


def test_toc_entries_exist():
    missing = [
        f
        for f in toc_files()
        if not any((ROOT / f"{f}{ext}").exists() for ext in (".ipynb", ".md"))
    ]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_every_notebook_is_in_the_toc():
    """Every notebook is a chapter in _toc.yml or a tested extra (the
    template)."""
    listed = {p.resolve() for p in NOTEBOOKS}
    strays = [
        str(p.relative_to(ROOT))
        for p in ROOT.glob("book/**/*.ipynb")
        if p.resolve() not in listed
        and ".ipynb_checkpoints" not in p.parts
        and "transformer-course" not in p.parts
    ]
    assert not strays, (
        f"notebooks missing from _toc.yml (untested and unpublished): {strays}"
    )


def test_extra_notebooks_stay_out_of_the_navigation():
    listed = set(toc_files())
    inside = [f for f in EXTRA_NOTEBOOKS if f in listed]
    assert not inside, f"author-only notebooks in _toc.yml: {inside}"
    assert all((ROOT / f"{f}.ipynb").exists() for f in EXTRA_NOTEBOOKS)


def test_config_is_strict_and_points_at_main():
    cfg = config()
    assert cfg["repository"]["branch"] == "main"
    assert cfg["execute"]["execute_notebooks"] == "off", (
        "outputs are stored and proven by nbval"
    )
    assert cfg["launch_buttons"]["colab_url"].startswith(
        "https://colab.research.google.com"
    )
    assert "book/references.bib" in cfg["bibtex_bibfiles"]


def test_colab_installs_no_pinned_torch():
    deps = (ROOT / "pyproject.toml").read_text()
    assert "torch==" not in deps, (
        "pyproject.toml (what an installer outside this repo sees) must not "
        "pin torch"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_setup_cell_is_the_canonical_one(path):
    code = [c for _, c in _code(path)]
    source = "".join(code[0]["source"])
    assert source.startswith(SETUP_MARKER), (
        f"{path.name}: first code cell is not the setup cell"
    )
    assert source == setup_source(), (
        f"{path.name}: setup cell differs from tools/editions/notebooks.py; "
        "run make refresh"
    )
    assert "hide-input" in code[0]["metadata"].get("tags", []), (
        f"{path.name}: setup cell not folded; run make refresh"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_outputs_are_clean_and_in_order(path):
    code = [c for _, c in _code(path) if "".join(c["source"]).strip()]
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: not run top to bottom once: {counts}"
    )
    for i, c in enumerate(code):
        for out in c["outputs"]:
            assert out["output_type"] != "error", (
                f"{path.name} cell {i} stores an error"
            )
            text = json.dumps(out)
            for fragment in ("/work/", "/home/", "/root/"):
                assert fragment not in text, (
                    f"{path.name} cell {i} shows a machine path ({fragment})"
                )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_figures_have_caption_and_alt_text(path):
    for i, c in _code(path):
        images = [
            o
            for o in c["outputs"]
            if {"image/png", "image/svg+xml"} & set(o.get("data", {}))
        ]
        if not images:
            continue
        meta = c["metadata"].get("mystnb", {})
        assert meta.get("figure", {}).get("caption"), (
            f"{path.name} cell {i}: figure without a caption"
        )
        assert meta.get("image", {}).get("alt"), (
            f"{path.name} cell {i}: figure without alt text"
        )
        assert len(images) == 1, (
            f"{path.name} cell {i}: one figure per cell (use subplots)"
        )


def _is_chapter_or_template(path: pathlib.Path) -> bool:
    return path.stem[:2].isdigit() or path.stem == "template"


def _solution_cells(cells: list[dict]) -> list[dict]:
    return [
        c
        for c in cells
        if c["cell_type"] == "code"
        and "solution" in c["metadata"].get("tags", [])
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapter_structure(path):
    cells = _cells(path)
    text = "\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
    )
    for needle in ("Learning goals", "Summary"):
        assert needle in text, f"{path.name}: no '{needle}' section"
    if not _is_chapter_or_template(path):
        return
    exercises = re.findall(r"^### Exercise \d+", text, re.M)
    assert 2 <= len(exercises) <= 4, (
        f"{path.name}: {len(exercises)} '### Exercise N: title' headings, "
        "expected 2 to 4"
    )
    solutions = _solution_cells(cells)
    assert len(solutions) >= 2, (
        f"{path.name}: {len(solutions)} solution cells (code cells tagged "
        "'solution'), expected one per exercise, at least 2"
    )
    for c in solutions:
        first = "".join(c["source"]).splitlines()[:1]
        where = f"{path.name}: solution cell {first}"
        assert "hide-cell" in c["metadata"]["tags"], f"{where} is not folded"
        prompts = c["metadata"].get("mystnb", {})
        wrong = {
            k: prompts.get(k)
            for k, v in SOLUTION_PROMPTS.items()
            if prompts.get(k) != v
        }
        assert not wrong, (
            f"{where}: mystnb prompts {wrong}, want {SOLUTION_PROMPTS}"
        )
    checked = sum("assert" in "".join(c["source"]) for c in solutions)
    assert checked > len(solutions) / 2, (
        f"{path.name}: only {checked} of {len(solutions)} solutions assert "
        "their answer"
    )
    asserts = sum(
        "assert" in "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and c not in solutions
    )
    assert asserts >= 1, f"{path.name}: no cell checks a claim with assert"


_ADMONITION_START = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{admonition\}\s*Solution\b.*$", re.M
)


def _solution_admonitions(markdown: str) -> list[str]:
    """The bodies of the `{admonition} Solution ...` blocks in a markdown
    cell."""
    bodies = []
    for start in _ADMONITION_START.finditer(markdown):
        fence = start.group("fence")
        end = re.compile(rf"^{re.escape(fence)}\s*$", re.M)
        close = end.search(markdown, start.end())
        stop = close.start() if close else len(markdown)
        bodies.append(markdown[start.end() : stop])
    return bodies


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_code_inside_solution_admonitions(path):
    """Solutions are executed code cells; an admonition after one explains in
    prose."""
    fenced = re.compile(r"^\s*(```|~~~)", re.M)
    for i, c in enumerate(_cells(path)):
        if c["cell_type"] != "markdown":
            continue
        for body in _solution_admonitions("".join(c["source"])):
            assert not fenced.search(body), (
                f"{path.name} cell {i}: a fenced code block inside a solution "
                "admonition; make it a solution code cell (tags hide-cell, "
                "solution)"
            )


def _text_outputs(cell: dict) -> list[str]:
    """The text a reader sees under a code cell (not the text/plain of a
    figure)."""
    texts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            texts.append("".join(out["text"]))
        elif out["output_type"] in ("execute_result", "display_data"):
            data = out.get("data", {})
            if not any(k.startswith(("image/", "text/html")) for k in data):
                texts.append("".join(data.get("text/plain", "")))
    return texts


def _columns(line: str) -> int:
    """Display width: a wide (Chinese) character takes two columns of a
    monospace font."""
    return sum(
        2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_code_and_outputs_fit_79_columns(path):
    """Every code line and printed line fits the site's code column whole."""
    long = []
    for i, c in _code(path):
        blocks = [("code", "".join(c["source"]))]
        blocks += [("output", t) for t in _text_outputs(c)]
        for kind, block in blocks:
            for n, line in enumerate(block.splitlines(), 1):
                # tqdm redraws with \r: the reader sees the last segment.
                shown = line.split("\r")[-1].rstrip()
                if _columns(shown) > MAX_COLUMNS:
                    long.append(
                        f"cell {i} {kind} line {n} "
                        f"({_columns(shown)} columns): {shown[:60]}"
                    )
    assert not long, (
        f"{path.name}: {len(long)} lines wider than {MAX_COLUMNS} columns "
        "(ruff format; wrap prints by hand):\n" + "\n".join(long[:40])
    )


def test_every_reference_has_a_doi_or_url():
    bib = (ROOT / "book" / "references.bib").read_text()
    entries = re.findall(r"^@\w+\{([^,]+),(.*?)^\}", bib, re.M | re.S)
    assert entries, "no entries parsed from book/references.bib"
    bare = [
        key
        for key, body in entries
        if not re.search(r"^\s*(doi|url)\s*=", body, re.M)
    ]
    assert not bare, f"references without a DOI or URL: {bare}"


def test_site_is_self_contained_and_licensed():
    """What keeps the site offline-complete and licensed, as configured."""
    cfg = config()
    assert "sphinx-mathjax-offline" in cfg["sphinx"]["extra_extensions"], (
        "MathJax must ship with the site (no CDN)"
    )
    favicon = cfg["html"]["favicon"]
    assert (ROOT / favicon).is_file(), f"favicon {favicon} missing"
    footer = cfg["html"]["extra_footer"]
    assert "creativecommons.org/licenses/by-sa/4.0" in footer
    assert "LICENSE" in footer
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY-SA 4.0" in (ROOT / "LICENSE-CONTENT.md").read_text()
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    for package in ("playwright", "sphinx-mathjax-offline"):
        assert any(line.startswith(f"{package}==") for line in pins), (
            f"{package} is not pinned in requirements.txt"
        )


# the chapters and the template (a new chapter starts as its copy)
CHAPTERS = [p for p in NOTEBOOKS if _is_chapter_or_template(p)]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_first_use_of_each_glossary_term_is_linked(path):
    from tools.editions.glossary_links import link_notebook

    missing = link_notebook(path, write=False)
    assert not missing, (
        f"{path.name}: first uses not linked to the glossary: {missing}; "
        f"run `make link-terms`"
    )


# A difference between two computations printed as a tiny number in scientific
# notation (2.4e-07) is rounding noise: its digits change with the CPU. Print
# the bound it is checked at instead ("max |difference| < 1e-6"). Tiny numbers
# that are findings (a vanishing gradient's size) are not about a difference
# and stay.
FLOAT_NOISE = re.compile(
    r"(?i)(?:differ|error|mismatch)[^\n]*?(?<![<≤])\s(\d(?:\.\d+)?e-(?:0?[5-9]|[1-9]\d))\b"
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_float_noise_in_outputs(path):
    """No stored output prints a difference below the tolerance it is checked
    at."""
    noisy = [
        f"cell {i}: {m.group(0).strip()[:70]}"
        for i, c in _code(path)
        for text in _text_outputs(c)
        for m in FLOAT_NOISE.finditer(text)
    ]
    assert not noisy, (
        f"{path.name}: differences printed as float noise (print the bound):\n"
        + "\n".join(noisy)
    )


def _adam_calls(text: str) -> list[str]:
    """Every ``torch.optim.Adam(...)`` call in ``text``, with its arguments
    (balanced parentheses)."""
    calls = []
    for m in re.finditer(r"optim\.Adam\(", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        calls.append(text[m.start() : i])
    return calls


def test_every_adam_is_fused():
    """Adam's default path takes its square root in MKL's vector maths, whose
    last bits differ between Intel and AMD CPUs
    (tools/numerics/numeric_mode.py): a stored training run must use the fused
    kernel (``utils.training.adam``).
    """
    sources = {
        str(p.relative_to(ROOT)): p.read_text()
        for folder in ("utils", "tools")
        for p in (ROOT / folder).rglob("*.py")
    }
    for path in NOTEBOOKS:
        sources[path.name] = "\n".join(
            "".join(c["source"]) for _, c in _code(path)
        )
    unfused = {
        name: call
        for name, text in sources.items()
        for call in _adam_calls(text)
        if "fused=True" not in call
    }
    assert unfused == {}
    calls = sum(len(_adam_calls(t)) for t in sources.values())
    assert calls >= 4  # training.adam and three notebooks: the scan works


# stored data that nothing here computed (numbers copied from the sources)
NOT_COMPUTED = {"g2p_published.json"}


@pytest.mark.exact
def test_every_stored_sweep_was_made_in_the_portable_mode():
    """A sweep records the numeric mode it ran in; one stored in an older
    mode cannot be replayed exactly, so it fails here by name."""
    from tools.numerics import numeric_mode

    now = numeric_mode.stamp()
    assert now["mode"] == "portable"  # conftest.py set it

    def recorded(data: dict):  # at the top, or in the file's meta/config
        for where in (data, data.get("meta", {}), data.get("config", {})):
            if "numeric_mode" in where:
                return where["numeric_mode"]
        return None

    stale = {
        p.name: recorded(json.loads(p.read_text()))
        for p in sorted((ROOT / "book" / "data").glob("*.json"))
        if p.name not in NOT_COMPUTED
    }
    assert len(stale) >= 6
    assert {k: v for k, v in stale.items() if v != now} == {}
