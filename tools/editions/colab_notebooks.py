"""The Colab notebooks: each chapter as Colab (or any Jupyter) shows it well,
in English and in Chinese.

    python -m tools.editions.colab_notebooks [book/03_masks.ipynb ...]
        (or: make colab; no argument: every chapter in _toc.yml, both
        languages)
    python -m tools.editions.colab_notebooks --check
        (write nothing; list what is not current, exit 1 if anything)

``book/NN_name.ipynb`` becomes ``colab/book/NN_name.ipynb`` and its Chinese
notebook ``zh/book/NN_name.ipynb`` becomes ``colab/zh/book/NN_name.ipynb``
(committed), which the site's Colab buttons open (``repository.path_to_book``
is ``colab`` in _config.yml, ``colab/zh`` in the Chinese build). Nothing is
executed: each is its source notebook (the executed English or Chinese one)
with

- every MyST role rendered as Markdown a notebook viewer shows: a glued
  number as the value the notebook glued; a term, a figure or section
  reference and a citation as links to the published site (``html.baseurl``);
  a link to another chapter opens that chapter's Colab notebook;
- admonitions as Markdown: a dropdown as ``<details><summary>``, any other
  as a block quote with its title in bold; ``(label)=`` lines removed;
- each figure's caption, numbered as on the site, in a Markdown cell below
  its figure;
- the folded cells (solutions, figure code, the setup cell) in Colab's form
  view (``#@title <what it is>``); the setup cell short (``SETUP_CELL``).

Code and outputs are otherwise the source's (tests/test_colab_notebooks.py
checks it against the source notebooks, and that every file is current).
"""

from __future__ import annotations

import functools
import itertools
import pathlib
import re
import runpy
import sys
import urllib.parse

import nbformat

from tools import ROOT
from tools.editions import code_comments, translations, zh_notebooks
from tools.editions.glossary_links import GLOSSARY, glossary_names
from tools.editions.notebooks import config, notebook_args, repo_url, toc_files

COLAB = ROOT / "colab"
LANGUAGES = ("en", "zh")
COMMAND = "python -m tools.editions.colab_notebooks"
COLAB_URL = "https://colab.research.google.com/github"

# A MyST role: {name}`content` (names start with a lower-case letter, so
# maths such as $x_{T-1}$ followed by code is not one).
ROLE = re.compile(r"\{([a-z][\w.-]*(?::[a-z][\w.-]*)?)\}`([^`]*)`")
# A code span as CommonMark reads it: closed by as many backticks as open it,
# on the same line or a later one (``{glue:text}`name` `` shows a role's
# syntax, it is not a role).
CODE_SPAN = r"(?<!`)(`+)(?s:.*?[^`])?\1(?!`)"
CODE_OR_ROLE = re.compile(CODE_SPAN + "|" + ROLE.pattern)
# What tests/test_colab_notebooks.py calls a raw role: any {...}` outside
# inline code (read left to right: a role, or a code span such as
# `y_{T-1}`).
ROLE_OR_CODE = re.compile(r"\{[^{}\s]*\}`[^`]*`|" + CODE_SPAN)
LABEL = re.compile(r"^\(([\w.:-]+)\)=\s*$", re.MULTILINE)
FENCE = re.compile(r"^(\s*)(:{3,}|`{3,})\{([\w-]+)\}\s*(.*?)\s*$")
OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*?)\s*$")
CHAPTER_LINK = re.compile(r"\]\((\d\d_[\w-]+)\.ipynb(#[^)]*)?\)")
PAGE_LINK = re.compile(r"\]\(([\w-]+)\.md(#[^)]*)?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.MULTILINE)
EXERCISE = re.compile(r"^(Exercise|练习)\s*\d+")
FOLDED = ("hide-cell", "hide-input")

# What the Colab notebooks add, in English and in Chinese
_WORDS = {
    "figure": ("Fig. {}", "图 {}"),
    "setup": (
        "Setup: the course's utils, seed and device",
        "准备：课程的 utils、随机种子与设备",
    ),
    "solution": ("Solution to {}", "答案（{}）"),
    "solution_n": ("Solution {}", "答案 {}"),
    "draws": ("The code that draws Fig. {}", "绘制图 {} 的代码"),
    "hidden": ("Hidden code", "隐藏的代码"),
    "hidden_about": ("Hidden code: {}", "隐藏的代码：{}"),
}
WORDS = {
    language: {key: pair[i] for key, pair in _WORDS.items()}
    for i, language in enumerate(LANGUAGES)
}

SETUP_CELL = """\
#@title {title}
# Setup: the course's utils (cloned when alone, as in Colab), seed, device.
import os, pathlib, runpy, subprocess
REPO_URL = "{url}"
here = pathlib.Path.cwd().resolve()
found = [p for p in (here, *here.parents) if (p / "proof/colab.py").is_file()]
root = found[0] if found else here / "transformer-course"
if not root.is_dir():  # alone: fetch the course (nothing is installed)
    url = os.environ.get("COURSE_REPO_URL", REPO_URL)
    git = ["git", "clone", "--depth", "1", "--quiet", url, str(root)]
    subprocess.run(git, check=True)
start = runpy.run_path(str(root / "proof" / "colab.py"))["start"]
device = start(root, seed=0{language})
import proof, utils  # the course's library, and the machinery beside it"""


# -- where things are ---------------------------------------------------------


def colab_path(page: pathlib.Path, language: str) -> pathlib.Path:
    rel = page.resolve().relative_to(ROOT)
    return COLAB / rel if language == "en" else COLAB / "zh" / rel


def source_path(page: pathlib.Path, language: str) -> pathlib.Path:
    """The executed notebook a Colab notebook is made from."""
    return page if language == "en" else zh_notebooks.zh_path(page)


def site_url() -> str:
    """The published site's address (``html.baseurl``), ending in ``/``."""
    url = str(config().get("html", {}).get("baseurl") or "")
    if not url.startswith("https://"):
        raise ValueError(f"_config.yml html.baseurl={url!r}: no https address")
    return url.rstrip("/") + "/"


def page_url(docname: str, language: str, anchor: str = "") -> str:
    """The published page of ``docname`` (e.g. ``book/glossary``)."""
    edition = "" if language == "en" else "zh/"
    hash_ = f"#{anchor}" if anchor else ""
    return f"{site_url()}{edition}{docname}.html{hash_}"


def colab_url(page_name: str, language: str) -> str:
    """The Colab address of chapter ``page_name``'s Colab notebook."""
    repo = urllib.parse.urlparse(repo_url()).path.rstrip("/")
    branch = config()["repository"]["branch"]
    folder = "colab" if language == "en" else "colab/zh"
    return f"{COLAB_URL}{repo}/blob/{branch}/{folder}/book/{page_name}.ipynb"


# -- what the roles refer to ------------------------------------------------


def _markdown_of(page: pathlib.Path, language: str) -> str:
    """A page's Markdown text in ``language`` (a notebook's cells joined)."""
    if page.suffix == ".ipynb":
        nb = nbformat.read(source_path(page, language), as_version=4)
        cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
        return "\n\n".join(cells)
    return translations.zh_page(page) if language == "zh" else page.read_text()


@functools.cache
def glossary_terms(language: str) -> dict[str, str]:
    """Each glossary term, lower-cased (Sphinx finds terms so), mapped to
    its entry's anchor on the glossary page."""
    from sphinx.util.nodes import _make_id

    names = glossary_names(_markdown_of(GLOSSARY, language))
    return {name.lower(): "term-" + _make_id(name) for name, _ in names}


@functools.cache
def labels(language: str) -> dict[str, tuple[str, str]]:
    """Each ``(label)=`` of the book: its page and the heading it names."""
    found = {}
    for page in translations.pages():
        docname = page.relative_to(ROOT).with_suffix("").as_posix()
        text = _markdown_of(page, language)
        for m in LABEL.finditer(text):
            heading = HEADING.search(text, m.end())
            title = heading.group(2) if heading else m.group(1)
            found[m.group(1)] = (docname, title)
    return found


def _figure(cell) -> dict:
    """A code cell's figure metadata (empty: it shows none)."""
    return cell.metadata.get("mystnb", {}).get("figure", {})


@functools.cache
def figure_numbers() -> dict[str, tuple[str, str]]:
    """Each named figure: its page and its number as the site numbers it
    (chapter.n, per chapter; only named, captioned figures get a number)."""
    found = {}
    chapter = re.compile(r"book/\d\d_[\w-]+")
    chapters = [f for f in toc_files() if chapter.fullmatch(f)]
    for chapter, docname in enumerate(chapters, start=1):
        nb = nbformat.read(ROOT / f"{docname}.ipynb", as_version=4)
        figures = [_figure(c) for c in nb.cells if c.cell_type == "code"]
        named = [f for f in figures if f.get("caption") and f.get("name")]
        for n, figure in enumerate(named, start=1):
            found[figure["name"]] = (docname, f"{chapter}.{n}")
    return found


@functools.cache
def bibliography() -> dict[str, tuple[str, str, str]]:
    """Each entry of book/references.bib: (authors, year) as the site's
    author-year style writes them (_ext/course_site.py's ``author_year``),
    and its anchor (``bibtex_cite_id`` in _config.yml)."""
    from docutils.nodes import make_id
    from pybtex.database import parse_file

    site = runpy.run_path(str(ROOT / "_ext" / "course_site.py"))
    entries = parse_file(ROOT / "book" / "references.bib").entries
    anchor = config()["sphinx"]["config"]["bibtex_cite_id"]
    return {
        key: (
            *site["author_year"](e),
            make_id(anchor.format(key=key, bibliography_count=1)),
        )
        for key, e in entries.items()
    }


def glued(nb) -> dict[str, str]:
    """The text/plain value of everything the notebook glued, by name."""
    found = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            book = out.get("metadata", {}).get("scrapbook", {})
            if "name" in book:
                prefix = book.get("mime_prefix", "")
                data = out.get("data", {})
                found[book["name"]] = data.get(f"{prefix}text/plain", "")
    return found


# -- Markdown -----------------------------------------------------------------


class Unrendered(ValueError):
    """A role or directive the tool cannot render (or a dangling target)."""


def render_role(name: str, content: str, ctx: dict) -> str:
    """One MyST role as Markdown (see the module's doc)."""
    language, role = ctx["language"], f"{{{name}}}`{content}`"
    text, target = content, content
    if m := re.fullmatch(r"(.*?)\s*<([^<>]+)>", content, re.DOTALL):
        text, target = m.group(1), m.group(2)
    if name in ("glue", "glue:text", "glue:md"):
        from myst_nb.core.variables import format_plain_text

        key, _, fmt = content.partition(":")
        if key not in ctx["glue"]:
            raise Unrendered(f"{role}: nothing glued as {key!r}")
        return format_plain_text(ctx["glue"][key], fmt or "s")
    if name == "term":
        anchor = glossary_terms(language).get(target.strip().lower())
        if anchor is None:
            raise Unrendered(f"{role}: not in the glossary")
        return f"[{text}]({page_url('book/glossary', language, anchor)})"
    if name == "numref":
        if target not in figure_numbers():
            raise Unrendered(f"{role}: no such figure")
        docname, number = figure_numbers()[target]
        shown = WORDS[language]["figure"].format(number)
        if text != target:
            shown = text.replace("%s", number).replace("{number}", number)
        return f"[{shown}]({page_url(docname, language, target)})"
    if name == "ref":
        if target not in labels(language):
            raise Unrendered(f"{role}: no such label")
        docname, title = labels(language)[target]
        shown = text if text != target else title
        return f"[{shown}]({page_url(docname, language, target)})"
    if name in ("cite:p", "cite:t", "cite"):
        parts = []
        for key in [k.strip() for k in target.split(",") if k.strip()]:
            if key not in bibliography():
                raise Unrendered(f"{role}: no such entry")
            who, year, anchor = bibliography()[key]
            url = page_url("book/bibliography", language, anchor)
            said = f"{who} ({year})" if name == "cite:t" else f"{who}, {year}"
            parts.append(f"[{said}]({url})")
        joined = "; ".join(parts)
        return joined if name == "cite:t" else f"({joined})"
    raise Unrendered(f"{role}: no Markdown for this role")


def render_roles(text: str, ctx: dict) -> str:
    """Every role of ``text`` rendered; code spans are left as they are."""

    def one(m: re.Match) -> str:
        if m.group(1):  # a code span
            return m.group(0)
        return render_role(m.group(2), m.group(3), ctx)

    return CODE_OR_ROLE.sub(one, text)


def _html_inline(text: str) -> str:
    """Markdown links and emphasis as HTML (inside ``<summary>``)."""
    text = re.sub(r"\[([^\]]*)\]\(([^)]*)\)", r'<a href="\2">\1</a>', text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def render_directive(name, title, options, body, ctx) -> str:
    """An admonition (the one directive the book uses) as Markdown."""
    if name != "admonition":
        raise Unrendered(f"directive {{{name}}}: no Markdown for it")
    title = render_roles(title, ctx)
    if "dropdown" in options.get("class", "").split():
        summary = f"<summary>{_html_inline(title)}</summary>"
        return f"<details>\n{summary}\n\n{body}\n\n</details>"
    quoted = "\n".join(f"> {line}".rstrip() for line in body.splitlines())
    return f"> **{title}**\n>\n{quoted}"


def render_markdown(text: str, ctx: dict) -> str:
    """A MyST Markdown cell as plain Markdown (see the module's doc)."""
    lines = LABEL.sub("", text).split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent, fence, name, title = m.groups()
        end = i + 1
        closing = re.compile(
            rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$"
        )
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if end == len(lines):
            raise Unrendered(f"directive {{{name}}} is never closed")
        body, options = lines[i + 1 : end], {}
        while body and (o := OPTION.match(body[0])):
            options[o.group(1)] = o.group(2)
            body = body[1:]
        inner = render_markdown("\n".join(body).strip("\n"), ctx)
        block = render_directive(name, title, options, inner, ctx)
        out += [indent + line if line else line for line in block.split("\n")]
        i = end + 1
    language = ctx["language"]
    text = render_roles("\n".join(out), ctx)
    text = CHAPTER_LINK.sub(lambda m: f"]({colab_url(m[1], language)})", text)

    def page(m: re.Match) -> str:
        anchor = (m.group(2) or "#")[1:]
        return f"]({page_url(f'book/{m.group(1)}', language, anchor)})"

    text = PAGE_LINK.sub(page, text)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


# -- the notebook -------------------------------------------------------------


def setup_cell(language: str) -> str:
    """The first code cell; its comments in ``language`` (the Chinese ones
    from locale/zh/code/comments.yml, as every chapter's code)."""
    extra = "" if language == "en" else f', language="{language}"'
    source = SETUP_CELL.format(
        title=WORDS[language]["setup"], url=repo_url(), language=extra
    )
    if language == "en":
        return source
    title, body = source.split("\n", 1)  # the #@title line is Chinese
    body, missing = code_comments.translate(body, code_comments.load())
    if missing:
        raise ValueError(
            f"the setup cell's comments {missing} have no translation in "
            "locale/zh/code/comments.yml"
        )
    return f"{title}\n{body}"


def _title(cell, heading: str, ctx: dict) -> str:
    """What a folded cell is, for its ``#@title`` line."""
    words, name = WORDS[ctx["language"]], _figure(cell).get("name")
    if "solution" in cell.metadata.get("tags", []):
        if EXERCISE.match(heading):  # plain text: Colab shows it as it is
            return words["solution"].format(re.sub(r"[*_`$]", "", heading))
        ctx["solutions"] += 1
        return words["solution_n"].format(ctx["solutions"])
    if name in figure_numbers():
        return words["draws"].format(figure_numbers()[name][1])
    first = cell.source.split("\n", 1)[0]
    if first.startswith("#") and not first.startswith("#@"):
        about = first.lstrip("# ").rstrip(":")
        return words["hidden_about"].format(about)
    return words["hidden"]


def _short(title: str, room: int = 79 - len("#@title ")) -> str:
    """``title`` cut (at a space when it can) to fit a 79-column line."""
    width = code_comments.width
    if width(title) <= room:
        return title
    while width(title + "…") > room:
        title = title[:-1]
    cut = title.rstrip().rsplit(" ", 1)[0]
    return (cut if len(cut) > len(title) / 2 else title).rstrip(" ,:;") + "…"


def caption_cell(cell, ctx: dict):
    """A Markdown cell with the figure's number and caption, shown below it."""
    figure = cell.metadata["mystnb"]["figure"]
    caption = render_markdown(figure["caption"], ctx)
    if (name := figure.get("name")) in figure_numbers():
        number = WORDS[ctx["language"]]["figure"]
        caption = f"**{number.format(figure_numbers()[name][1])}** {caption}"
    new = nbformat.v4.new_markdown_cell(f"<small>{caption}</small>")
    new.id = f"{cell.id}-caption"[-64:]
    return new


def convert(page: pathlib.Path, language: str) -> nbformat.NotebookNode:
    """The Colab notebook of ``page`` in ``language`` (module doc)."""
    source = source_path(page, language)
    nb, where = nbformat.read(source, as_version=4), zh_notebooks.shown(source)
    ctx = {"language": language, "glue": glued(nb), "solutions": 0}
    cells, heading, setup_done = [], "", False
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "markdown":
            try:
                cell.source = render_markdown(cell.source, ctx)
            except Unrendered as e:
                raise Unrendered(f"{where} {cell.id}: {e}")
            headings = HEADING.findall(cell.source)
            heading = headings[-1][1] if headings else heading
        elif cell.cell_type == "code":
            tags = cell.metadata.get("tags", [])
            if not setup_done:
                cell.source, setup_done = setup_cell(language), True
                cell.metadata["cellView"] = "form"
            elif any(t in tags for t in FOLDED):
                title = _short(_title(cell, heading, ctx))
                cell.source = f"#@title {title}\n{cell.source}"
                cell.metadata["cellView"] = "form"
            if _figure(cell).get("caption"):
                cells.append(caption_cell(cell, ctx))
    nb.cells = cells
    nb.metadata.pop("course_zh", None)
    nb.metadata["colab"] = {"provenance": [], "toc_visible": True}
    nb.metadata["course_colab"] = {"source": where, "language": language}
    return nb


def text(nb) -> str:
    return nbformat.writes(nb) + "\n"


def problems(page: pathlib.Path, language: str) -> list[str]:
    """Why the Colab notebook of ``page`` is not current (empty: it is)."""
    target = colab_path(page, language)
    if not target.is_file():
        return [f"{zh_notebooks.shown(target)} is missing"]
    if target.read_text() != text(convert(page, language)):
        rel = page.resolve().relative_to(ROOT)
        return [
            f"{zh_notebooks.shown(target)} is not current: {COMMAND} {rel}"
            " (all: make colab)"
        ]
    return []


def write(page: pathlib.Path, language: str) -> pathlib.Path:
    target = colab_path(page, language)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text(convert(page, language)))
    return target


def raw_roles(nb) -> int:
    """How many raw MyST roles a notebook's Markdown holds."""
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    found = [m.group(0) for s in markdown for m in ROLE_OR_CODE.finditer(s)]
    return sum(f.startswith("{") for f in found)


def main(argv: list[str]) -> int:
    """Write the Colab notebooks (or, with --check, say which are stale)."""
    pages, check = notebook_args(argv, "--check")
    stale = 0
    for page, language in itertools.product(pages, LANGUAGES):
        if check:
            for problem in problems(page, language):
                stale += 1
                print(problem, file=sys.stderr)
            continue
        target = write(page, language)
        before = raw_roles(nbformat.read(source_path(page, language), 4))
        after = raw_roles(nbformat.read(target, 4))
        print(f"{zh_notebooks.shown(target)}: raw roles {before} -> {after}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
