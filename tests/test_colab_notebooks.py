"""The Colab notebooks (tools/editions/colab_notebooks.py): current, free of
raw MyST, folded as the site folds, the sources' code and outputs."""

from __future__ import annotations

import re
import sys
import types
import urllib.parse

import nbformat
import pytest
from proof import colab as boot
from tools.editions import build_book, code_comments, zh_notebooks
from tools.editions import colab_notebooks as colab
from tools.editions.notebooks import ROOT, config, toc_notebooks
from tests.conftest import raises

PAGES = toc_notebooks()
CASES = [(p, lang) for p in PAGES for lang in colab.LANGUAGES]
IDS = [f"{lang}-{p.stem}" for p, lang in CASES]
# What the site shows and a notebook viewer does not: a role is {...}`,
# looked for outside inline code (read left to right, a span is a role or
# code: `y_{T-1}` is code, and so is ``{glue:text}`name` ``).
ROLE_OR_CODE = re.compile(
    r"\{[^{}\s]*\}`[^`]*`|(?<!`)(`+)(?s:.*?[^`])?\1(?!`)"
)
FENCE = re.compile(r"^\s*:::", re.MULTILINE)
LABEL = re.compile(r"^\s*\([\w.:-]+\)=\s*$", re.MULTILINE)
TITLE = re.compile(r"^#@title \S.*$")


def _read(path):
    return nbformat.read(path, as_version=4)


def _roles(text: str) -> list[str]:
    return [m[0] for m in ROLE_OR_CODE.finditer(text) if m[0].startswith("{")]


def _markdown(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "markdown"]


def test_there_is_one_colab_notebook_per_chapter_and_language():
    want = {colab.colab_path(p, lang) for p, lang in CASES}
    found = set(colab.COLAB.glob("**/*.ipynb"))
    assert found == want, (
        f"stray: {sorted(map(str, found - want))}, "
        f"missing: {sorted(map(str, want - found))}; run make colab"
    )


@pytest.mark.parametrize(("page", "language"), CASES, ids=IDS)
def test_colab_notebook_is_current(page, language):
    problems = colab.problems(page, language)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("page", "language"), CASES, ids=IDS)
def test_no_myst_syntax_left(page, language):
    nb = _read(colab.colab_path(page, language))
    found = []
    for cell in _markdown(nb):
        found += [f"{cell.id}: raw role {r!r}" for r in _roles(cell.source)]
        for pattern, what in ((FENCE, "::: fence"), (LABEL, "(label)= line")):
            found += [
                f"{cell.id}: {what} {m!r}"
                for m in pattern.findall(cell.source)
            ]
    assert not found, "\n".join(found[:20])


def test_a_role_is_found_and_code_is_not():
    said = "a {term}`mask` and {term}`key`, `code` {cite:p}`x`"
    assert _roles(said) == ["{term}`mask`", "{term}`key`", "{cite:p}`x`"]
    assert _roles("`<bos> y_{T-1}` and `y_T`") == []
    shown = "a role's syntax: `` {glue:text}`name` `` and {term}`mask`"
    assert _roles(shown) == ["{term}`mask`"]
    assert _roles("`f(...,\ninit=...)` then {term}`decoder`") == [
        "{term}`decoder`"
    ]  # a code span may go on over a line break
    # the renderer leaves that code span alone too (the template shows one)
    ctx = {"language": "en", "glue": {}}
    rendered = colab.render_roles(shown.replace(" and {term}`mask`", ""), ctx)
    assert rendered == "a role's syntax: `` {glue:text}`name` ``"


def test_the_sources_had_roles_to_render():
    """The check above could pass on notebooks that never had roles."""
    before = sum(colab.raw_roles(_read(p)) for p in PAGES)
    assert before > 100, f"only {before} roles in the English chapters"


@pytest.mark.parametrize(("page", "language"), CASES, ids=IDS)
def test_code_and_outputs_are_the_sources(page, language):
    """Every code cell but the setup: the source's code and outputs."""
    source = _read(colab.source_path(page, language))
    ours = _read(colab.colab_path(page, language))
    theirs = [c for c in source.cells if c.cell_type == "code"]
    mine = [c for c in ours.cells if c.cell_type == "code"]
    assert [c.id for c in mine] == [c.id for c in theirs]
    problems = []
    for a, b in zip(theirs[1:], mine[1:]):
        code = b.source
        if b.metadata.get("cellView") == "form":
            first, _, code = code.partition("\n")
            if not TITLE.match(first):
                problems.append(f"{b.id}: folded, but no #@title line")
            if code_comments.width(first) > 79:
                problems.append(f"{b.id}: its title is wider than 79")
        if code != a.source:
            problems.append(f"{b.id}: code differs from the source")
        if b.outputs != a.outputs:
            problems.append(f"{b.id}: outputs differ from the source")
    # the setup cell keeps its outputs, not its plumbing
    if mine[0].outputs != theirs[0].outputs:
        problems.append("setup cell: outputs differ from the source")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("page", "language"), CASES, ids=IDS)
def test_what_the_site_folds_colab_folds(page, language):
    nb = _read(colab.colab_path(page, language))
    code = [c for c in nb.cells if c.cell_type == "code"]
    solutions = [c for c in code if "solution" in c.metadata.get("tags", [])]
    assert solutions, "no solution cells: nothing to check"
    unfolded = [
        c.id
        for c in code
        if {"hide-cell", "hide-input"} & set(c.metadata.get("tags", []))
        and not (
            c.metadata.get("cellView") == "form"
            and TITLE.match(c.source.split("\n", 1)[0])
        )
    ]
    assert not unfolded, f"folded on the site, not in Colab: {unfolded}"


@pytest.mark.parametrize("language", colab.LANGUAGES)
def test_setup_cell_is_short_and_starts_the_course(language):
    page = PAGES[0]
    nb = _read(colab.colab_path(page, language))
    setup = next(c for c in nb.cells if c.cell_type == "code")
    lines = setup.source.splitlines()
    assert len(lines) <= 14, f"{len(lines)} lines"
    assert max(len(line) for line in lines) <= 79
    assert "utils" in setup.source and "colab.py" in setup.source
    start = "seed=0)" if language == "en" else 'seed=0, language="zh")'
    assert lines[-2].endswith(start)
    # the names the chapters' cells use, bound once the course is on the path
    assert lines[-1].startswith("import proof, utils")
    # the English setup cell, with its long plumbing, is what it replaces
    english = next(c for c in _read(page).cells if c.cell_type == "code")
    assert len(english.source.splitlines()) > 2 * len(lines)


def test_glued_numbers_appear_as_their_values():
    """Chapter 5's glued numbers are in its Colab notebooks' prose."""
    page = next(p for p in PAGES if p.stem.startswith("05"))
    values = colab.glued(_read(page))
    english = "\n".join(c.source for c in _markdown(_read(page)))
    names = set(re.findall(r"\{glue:text\}`([\w]+)`", english))
    assert names, "chapter 5 glues nothing"
    for language in colab.LANGUAGES:
        nb = _read(colab.colab_path(page, language))
        prose = "\n".join(c.source for c in _markdown(nb))
        missing = [n for n in names if values[n].strip("'") not in prose]
        assert not missing, f"{language}: glued values not shown: {missing}"


def test_roles_become_links_to_the_published_site():
    site = colab.site_url()
    assert site == "https://transformer-course.github.io/transformer-course/"
    ctx = {"language": "zh", "glue": {"n": "12", "x": "0.125"}}
    said = colab.render_markdown(
        "(lbl)=\n## T\n{glue:text}`n` and {glue:text}`x:.1%` "
        "{term}`掩码 <mask>` {cite:p}`vaswani2017attention` "
        "{numref}`fig-ch8-loss` [next](04_positional_encoding.ipynb)",
        ctx,
    )
    assert said.startswith("## T\n12 and 12.5% [掩码]("), said
    assert f"({site}zh/book/glossary.html#term-mask)" in said
    assert (
        f"([Vaswani et al., 2017]({site}zh/book/bibliography.html"
        "#cite-vaswani2017attention))"
    ) in said
    assert re.search(
        r"\[图 8\.\d+\]\(\S+08_training_pronouncer\.html#fig-ch8", said
    )
    assert "/blob/main/colab/zh/book/04_positional_encoding.ipynb)" in said


def test_admonitions_become_markdown():
    ctx = {"language": "en", "glue": {}}
    said = colab.render_markdown(
        ":::{admonition} Solution 1, explained\n:class: dropdown\n"
        "Body with {term}`mask`.\n:::\n\n"
        ":::{admonition} Errata\n:class: warning\nLine one\nline two\n:::",
        ctx,
    )
    assert said.startswith(
        "<details>\n<summary>Solution 1, explained</summary>\n\n"
        "Body with [mask]("
    ), said
    assert said.endswith(
        "</details>\n\n> **Errata**\n>\n> Line one\n> line two"
    )
    raises(colab.Unrendered, "never closed", colab.render_markdown,
           ":::{note}\nopen", ctx)  # fmt: skip
    raises(colab.Unrendered, "not in the glossary", colab.render_markdown,
           "{term}`no such term`", ctx)  # fmt: skip


def test_site_colab_buttons_open_the_colab_notebooks():
    """The launch buttons' ``path_to_book`` leads to the Colab notebooks."""
    cfg = config()
    assert cfg["repository"]["path_to_book"] == "colab"
    assert build_book.ZH_PATH_TO_BOOK == "colab/zh"
    repo = urllib.parse.urlparse(cfg["repository"]["url"]).path
    for page in PAGES:
        docname = page.relative_to(ROOT).with_suffix("").as_posix()
        for language, prefix in (("en", "colab"), ("zh", "colab/zh")):
            button = (
                f"{cfg['launch_buttons']['colab_url']}/github{repo}/blob/"
                f"{cfg['repository']['branch']}/{prefix}/{docname}.ipynb"
            )
            assert button == colab.colab_url(page.stem, language)
            assert (ROOT / prefix / f"{docname}.ipynb").is_file(), button


def test_chinese_colab_notebooks_are_chinese():
    for page in PAGES:
        nb = _read(colab.colab_path(page, "zh"))
        made = nb.metadata["course_colab"]
        assert made == {
            "source": zh_notebooks.shown(zh_notebooks.zh_path(page)),
            "language": "zh",
        }
        prose = "".join(c.source for c in _markdown(nb))
        han = len(re.findall(r"[\u4e00-\u9fff]", prose))
        assert han > len(prose) / 10, f"{page.stem}: {han} Chinese characters"


def test_colab_start_checks_its_arguments(tmp_path):
    """proof/colab.py (the Colab setup cell's plumbing)."""
    raises(TypeError, "root must be a path", boot.start, 3)
    raises(ValueError, "holds no utils", boot.start, tmp_path)
    with pytest.raises(ValueError, match="language must be one of"):
        boot.start(ROOT, language="fr")
    assert boot.install_missing(ROOT, "yaml") is False  # importable
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n")
    missing = "surely_not_a_package_here"
    raises(ValueError, "no pin", boot.install_missing, tmp_path, missing)


def test_colab_start_drops_a_foreign_utils(tmp_path, monkeypatch):
    fake = types.ModuleType("utils.fake")
    fake.__file__ = str(tmp_path / "utils" / "fake.py")
    monkeypatch.setitem(sys.modules, "utils.fake", fake)
    assert boot._forget_foreign_utils(ROOT) == ["utils.fake"]
    assert "utils.fake" not in sys.modules
    assert "utils" in sys.modules  # the course's own stays


@pytest.mark.slow
def test_every_site_link_lands_on_a_built_page_and_anchor(built_site):
    """Every link to the site lands on a page and anchor of the strict
    build; every built page's Colab button opens its notebook."""
    assert built_site.returncode == 0
    html = ROOT / "_build" / "html"
    site = colab.site_url()
    link = re.compile(re.escape(site) + r"([^)#\s]+)(?:#([^)\s]+))?\)")
    pages: dict = {}
    problems, seen = [], 0
    for page, language in CASES:
        nb = _read(colab.colab_path(page, language))
        for cell in _markdown(nb):
            for path, anchor in link.findall(cell.source):
                seen += 1
                target = html / path
                if not target.is_file():
                    problems.append(f"{page.stem} {language}: no {path}")
                    continue
                text = pages.setdefault(target, target.read_text())
                if anchor and f'id="{anchor}"' not in text:
                    problems.append(f"{page.stem} {language}: {path}#{anchor}")
        docname = page.relative_to(ROOT).with_suffix("").as_posix()
        built = html / ("zh/" if language == "zh" else "") / f"{docname}.html"
        button = colab.colab_url(page.stem, language)
        if f'href="{button}"' not in built.read_text():
            problems.append(
                f"{built.relative_to(html)}: no button to {button}"
            )
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(
        problems[:30]
    )
    assert seen > 500, f"only {seen} links to the site"


def test_the_chinese_setup_cell_has_chinese_comments():
    zh, en = colab.setup_cell("zh"), colab.setup_cell("en")
    body = zh.split("\n", 1)[1]  # after the #@title line
    said = [c.text for c in code_comments.comments(body)]
    english = [t for t in said if not re.search(r"[\u4e00-\u9fff]", t)]
    assert len(said) == 3 and not english, english
    strip = code_comments.strip_comments  # the same code, other comments
    got = strip(zh.split("\n", 1)[1]).replace(', language="zh"', "")
    assert got == strip(en.split("\n", 1)[1])
