"""The course's conventions, checked on the stored notebooks (the chapters
and the author template, out of the navigation) and the configuration."""

from __future__ import annotations

import json
import pathlib
import re
import unicodedata

import pytest
from tools.editions.notebooks import EXTRA_NOTEBOOKS, ROOT, SETUP_MARKER
from tools.editions.notebooks import config, course_notebooks, setup_source
from tools.editions.notebooks import toc_files

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
    """Every notebook is a chapter or a tested extra (the template)."""
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
    # outputs are stored and proven by nbval
    assert cfg["execute"]["execute_notebooks"] == "off"
    colab = cfg["launch_buttons"]["colab_url"]
    assert colab.startswith("https://colab.research.google.com")
    assert "book/references.bib" in cfg["bibtex_bibfiles"]


def test_colab_installs_no_pinned_torch():
    # pyproject.toml is what an installer outside this repo sees
    assert "torch==" not in (ROOT / "pyproject.toml").read_text()


# The tests a notebook at a time name it in their ids: the messages say what.
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_setup_cell_is_the_canonical_one(path):
    first = _code(path)[0][1]
    source = "".join(first["source"])
    assert source.startswith(SETUP_MARKER), "first code cell: not the setup"
    # else it differs from tools/editions/notebooks.py's: run make refresh
    assert source == setup_source()
    tags = first["metadata"].get("tags", [])
    assert "hide-input" in tags, "setup cell not folded; run make refresh"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_outputs_are_clean_and_in_order(path):
    code = [c for _, c in _code(path) if "".join(c["source"]).strip()]
    counts = [c["execution_count"] for c in code]
    # run top to bottom once
    assert counts == list(range(1, len(code) + 1)), counts
    for i, c in enumerate(code):
        for out in c["outputs"]:
            assert out["output_type"] != "error", f"cell {i} stores an error"
            text = json.dumps(out)
            for path_part in ("/work/", "/home/", "/root/"):
                assert path_part not in text, f"cell {i} shows {path_part}"


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
        caption = meta.get("figure", {}).get("caption")
        assert caption, f"cell {i}: figure without a caption"
        assert meta.get("image", {}).get("alt"), f"cell {i}: no alt text"
        assert len(images) == 1, f"cell {i}: two figures (use subplots)"


def _is_chapter_or_template(path: pathlib.Path) -> bool:
    return path.stem[:2].isdigit() or path.stem == "template"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapter_structure(path):
    cells = _cells(path)
    text = "\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
    )
    for needle in ("Learning goals", "Summary"):
        assert needle in text, f"no '{needle}' section"
    if not _is_chapter_or_template(path):
        return
    # 2 to 4 "### Exercise N: title" headings
    exercises = re.findall(r"^### Exercise \d+", text, re.M)
    assert 2 <= len(exercises) <= 4, len(exercises)
    # code cells tagged "solution": one per exercise, at least 2
    solutions = [
        c
        for c in cells
        if c["cell_type"] == "code"
        and "solution" in c["metadata"].get("tags", [])
    ]
    assert len(solutions) >= 2, len(solutions)
    for c in solutions:
        first = "".join(c["source"]).splitlines()[:1]
        where = f"solution cell {first}"
        assert "hide-cell" in c["metadata"]["tags"], f"{where} is not folded"
        prompts = c["metadata"].get("mystnb", {})
        got = {k: prompts.get(k) for k in SOLUTION_PROMPTS}
        assert got == SOLUTION_PROMPTS, f"{where}: mystnb prompts {got}"
    # most solutions assert their answer
    checked = sum("assert" in "".join(c["source"]) for c in solutions)
    assert checked > len(solutions) / 2, (checked, len(solutions))
    asserts = sum(
        "assert" in "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and c not in solutions
    )
    assert asserts >= 1, "no cell checks a claim with assert"


_ADMONITION_START = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{admonition\}\s*Solution\b.*$", re.M
)


def _solution_admonitions(markdown: str) -> list[str]:
    """The bodies of a markdown cell's `{admonition} Solution` blocks."""
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
        # else: make it a solution code cell (tags hide-cell, solution)
        for body in _solution_admonitions("".join(c["source"])):
            assert not fenced.search(body), f"cell {i}: code in a solution"


def _text_outputs(cell: dict) -> list[str]:
    """The text shown under a code cell (not a figure's text/plain)."""
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
    """Display width: a wide (Chinese) character takes two columns."""
    wide = sum(unicodedata.east_asian_width(ch) in "WF" for ch in line)
    return len(line) + wide


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
                if (width := _columns(shown)) > MAX_COLUMNS:
                    long.append(f"cell {i} {kind} {n} ({width}): {shown[:60]}")
    # wider than the column: ruff format; wrap prints by hand
    assert not long, "\n".join(long[:40])


def test_every_reference_has_a_doi_or_url():
    bib = (ROOT / "book" / "references.bib").read_text()
    entries = re.findall(r"^@\w+\{([^,]+),(.*?)^\}", bib, re.M | re.S)
    assert entries, "no entries parsed from book/references.bib"
    doi = re.compile(r"^\s*(doi|url)\s*=", re.M)
    bare = [key for key, body in entries if not doi.search(body)]
    assert not bare, f"references without a DOI or URL: {bare}"


def test_site_is_self_contained_and_licensed():
    """What keeps the site offline-complete and licensed, as configured."""
    cfg = config()
    # MathJax ships with the site (no CDN)
    assert "sphinx-mathjax-offline" in cfg["sphinx"]["extra_extensions"]
    favicon = cfg["html"]["favicon"]
    assert (ROOT / favicon).is_file(), f"favicon {favicon} missing"
    footer = cfg["html"]["extra_footer"]
    assert "creativecommons.org/licenses/by-sa/4.0" in footer
    assert "LICENSE" in footer
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY-SA 4.0" in (ROOT / "LICENSE-CONTENT.md").read_text()
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    for package in ("playwright", "sphinx-mathjax-offline"):
        assert any(x.startswith(f"{package}==") for x in pins), package


# the chapters and the template (a new chapter starts as its copy)
CHAPTERS = [p for p in NOTEBOOKS if _is_chapter_or_template(p)]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_first_use_of_each_glossary_term_is_linked(path):
    from tools.editions.glossary_links import link_notebook

    missing = link_notebook(path, write=False)
    # first uses not linked to the glossary: run `make link-terms`
    assert not missing, missing


# A difference printed as 2.4e-07 is rounding noise (its digits change with
# the CPU): print the bound instead. Tiny findings (a gradient's size) stay.
FLOAT_NOISE = re.compile(
    r"(?i)(?:differ|error|mismatch)[^\n]*?(?<![<≤])\s(\d(?:\.\d+)?e-(?:0?[5-9]|[1-9]\d))\b"
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_float_noise_in_outputs(path):
    """No stored output prints a difference below its tolerance."""
    noisy = [
        f"cell {i}: {m.group(0).strip()[:70]}"
        for i, c in _code(path)
        for text in _text_outputs(c)
        for m in FLOAT_NOISE.finditer(text)
    ]
    # differences printed as float noise: print the bound
    assert not noisy, "\n".join(noisy)


def _adam_calls(text: str) -> list[str]:
    """Every ``torch.optim.Adam(...)`` call in ``text``, with its arguments."""
    calls = []
    for m in re.finditer(r"optim\.Adam\(", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        calls.append(text[m.start() : i])
    return calls


def test_every_adam_is_fused():
    """Adam's default path differs in the last bits between Intel and AMD
    CPUs (tools/numerics/numeric_mode.py): a stored run uses the fused one."""
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
    """A sweep stored in an older mode cannot be replayed exactly."""
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
