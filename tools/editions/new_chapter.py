"""Add a chapter: one command instead of a dozen edits.

    python -m tools.editions.new_chapter 12_example "An example" [--about ...]
    (or: make new-chapter NAME=12_example TITLE="An example" [ABOUT=...])

NAME is ``NN_snake_case``, NN the next chapter's number. It makes
``book/NAME.ipynb`` from ``book/template.ipynb`` (title set, fresh cell ids,
the template's outputs: the same code, so nbval proves them), adds it to
``_toc.yml`` (every tool and test reads the chapters from there) and to
``book/intro.md``'s table, makes its translation units (``locale/zh/NAME.yml``,
``zh`` empty; intro.md's unit gets ``en_now``), its Chinese notebook
(executed) and its Colab notebooks, then prints what is left to the author.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import uuid

import nbformat

from tools import ROOT
from tools.editions.notebooks import toc_files

TEMPLATE = ROOT / "book" / "template.ipynb"
NAME = re.compile(r"(\d\d)_[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
TOC_CHAPTER = re.compile(r"^(\s*)- file: book/(\d\d)_\S+\s*$", re.M)
INTRO_ROW = re.compile(r"^\| (\d+) \| \[.*\|\s*$", re.M)
ABOUT = "(to be written: what a reader will be able to do)"


def next_number() -> int:
    toc = (ROOT / "_toc.yml").read_text()
    return max(int(m.group(2)) for m in TOC_CHAPTER.finditer(toc)) + 1


def check(name: str, title: str) -> int:
    """The chapter's number; a ValueError says what is wrong with the
    arguments."""
    m = NAME.fullmatch(name)
    if not m:
        raise ValueError(
            f"NAME {name!r} is not NN_snake_case (two digits, an underscore, "
            "lower-case words joined by underscores: 12_example)"
        )
    number = m.group(1)
    taken = sorted(
        {f"book/{p.stem}" for p in (ROOT / "book").glob(f"{number}_*.ipynb")}
        | {f for f in toc_files() if f.startswith(f"book/{number}_")}
    )
    if taken:
        raise ValueError(f"chapter {number} exists already: {taken}")
    if int(number) != next_number():
        raise ValueError(
            f"NAME {name!r}: the next chapter is number {next_number():02d} "
            "(chapters are numbered by their place in _toc.yml)"
        )
    if not title.strip() or "\n" in title or "|" in title:
        raise ValueError(f"TITLE {title!r}: one line of text, without '|'")
    return int(number)


def make_notebook(name: str, title: str, number: int) -> pathlib.Path:
    """book/NAME.ipynb: the template with its title, fresh ids and its
    figures named for the chapter (fig-chN-...)."""
    nb = nbformat.read(TEMPLATE, as_version=4)
    first = nb.cells[0]
    first.source = re.sub(
        r"^# .*$", f"# {title}", first.source, count=1, flags=re.M
    )
    for cell in nb.cells:
        cell.id = f"c{number}-{uuid.uuid4().hex[:8]}"
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        if "name" in figure:
            figure["name"] = figure["name"].replace(
                "fig-template-", f"fig-ch{number}-"
            )
    path = ROOT / "book" / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _insert_after_last(
    path: pathlib.Path, pattern: re.Pattern, line: str
) -> None:
    text = path.read_text()
    last = list(pattern.finditer(text))[-1]
    path.write_text(text[: last.end()] + "\n" + line + text[last.end() :])


def register(name: str, title: str, number: int, about: str) -> None:
    """The chapter in _toc.yml and in book/intro.md's table."""
    toc = ROOT / "_toc.yml"
    indent = list(TOC_CHAPTER.finditer(toc.read_text()))[-1].group(1)
    _insert_after_last(toc, TOC_CHAPTER, f"{indent}- file: book/{name}")
    row = f"| {number} | [{title}]({name}.ipynb) | {about} |"
    _insert_after_last(ROOT / "book" / "intro.md", INTRO_ROW, row)


def editions(page: pathlib.Path) -> int:
    """The Chinese units of ``page`` (and intro.md's changed one), its
    Chinese notebook (executed) and its Colab notebooks; 0 if all is well."""
    from tools.editions import colab_notebooks, translations, zh_notebooks

    for each in (page, ROOT / "book" / "intro.md"):
        added, changed = translations.sync(each)
        where = translations.store_path(each).relative_to(ROOT)
        print(f"{where}: {added} units to translate, {changed} changed")
    return zh_notebooks.main([str(page)]) or colab_notebooks.main([str(page)])


def todo(name: str, number: int) -> str:
    """What the command leaves to the author, with the commands."""
    from tools.budgets.visible_code import (
        CELL_LIMIT,
        NEW_CHAPTER_TARGET as lines,
    )

    nb = f"book/{name}.ipynb"
    return f"""Left to you:
  1. Write the chapter: {nb}
     (keep the template's parts, replace their content; under 60 s to run;
     visible code at most {lines} lines, no visible cell over {CELL_LIMIT}).
     In book/intro.md: its table row, what chapter {number} needs in the
     reading order; and a link to it at the end of chapter {number - 1}.
  2. Execute it: make refresh NB={nb}
     then link the glossary terms: make link-terms
  3. Translate: make translations, then fill every empty `zh` of
     locale/zh/{name}.yml, intro.md's en_now and the new code comments
     (locale/zh/code/comments.yml); then make colab after
     make zh-notebooks ZH={nb}
  4. make test (until 3 is done, the translation checks list this page)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="NN_snake_case, NN the next chapter")
    parser.add_argument("title", help="the chapter's title (its H1)")
    parser.add_argument("--about", default="", help="book/intro.md's row")
    args = parser.parse_args(argv)
    try:
        number = check(args.name, args.title)
    except ValueError as error:
        parser.exit(2, f"make new-chapter: {error}\n")
    title = args.title.strip()
    page = make_notebook(args.name, title, number)
    register(args.name, title, number, args.about.strip() or ABOUT)
    print(f"made {page.relative_to(ROOT)} from {TEMPLATE.relative_to(ROOT)}")
    print(f"registered in _toc.yml and book/intro.md (chapter {number})")
    failed = editions(page)
    print(todo(args.name, number))
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
