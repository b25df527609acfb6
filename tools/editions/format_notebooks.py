"""Ruff over the notebooks' code cells, as over utils: the canonical setup
cell (as make refresh puts it), ``ruff check --fix`` (safe fixes: one import
per line, unused imports), then ``ruff format``. Nothing is executed.

    python -m tools.editions.format_notebooks [book/03_masks.ipynb ...]
        (make format; no argument: the chapters of _toc.yml and the template)

Ruff runs on a copy; only code cells' sources are taken from it, and the
notebook is written as nbformat writes it, so outputs, ids and metadata stay
byte for byte. The Chinese notebook follows a cell whose English code changed
in layout only (the same syntax tree, ``import a, b`` as two imports): it
takes the new layout with its Chinese comments and keeps its outputs. Other
changes are reported (make zh-notebooks ZH=...), as is what ruff cannot fix.
The Colab notebooks are regenerated (no execution either).
"""

from __future__ import annotations

import ast
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import nbformat

from tools import ROOT
from tools.editions import code_comments, colab_notebooks, zh_notebooks
from tools.editions.notebooks import (
    SETUP_MARKER,
    course_notebooks,
    setup_source,
    toc_notebooks,
)


def ruff() -> list[str]:
    """The command that runs ruff: the project's .venv's, else PATH's."""
    venv = str(ROOT / ".venv" / "bin")
    exe = shutil.which("ruff", path=venv) or shutil.which("ruff")
    return [exe] if exe else [sys.executable, "-m", "ruff"]


def dumps(nb: dict) -> str:
    """A notebook's text as the repository stores it."""
    return colab_notebooks.text(nbformat.from_dict(nb))


def ruffed(nb: dict, name: str) -> tuple[dict, str]:
    """Notebook ``nb`` (named ``name``) after ruff's fixes and formatting,
    and what ruff could not fix (empty: nothing)."""
    config = ["--config", str(ROOT / "pyproject.toml")]
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / pathlib.Path(name).name
        copy.write_text(dumps(nb))
        fix = [*ruff(), "check", "--fix", "--quiet", *config, str(copy)]
        left = subprocess.run(fix, capture_output=True, text=True)
        fmt = [*ruff(), "format", "--quiet", *config, str(copy)]
        subprocess.run(fmt, check=True)
        text = left.stdout.replace(str(copy), name)
        return json.loads(copy.read_text()), text


class _OneImportPerStatement(ast.NodeTransformer):
    def visit_Import(self, node):
        return [ast.Import(names=[alias]) for alias in node.names]


def tree(source: str) -> str | None:
    """The syntax tree of a cell, ``import a, b`` as two imports (None:
    not plain Python, e.g. a cell magic)."""
    try:
        parsed = ast.parse(source)
    except SyntaxError:
        return None
    return ast.dump(_OneImportPerStatement().visit(parsed))


def follow_in_chinese(page: pathlib.Path, changed: list[str]) -> None:
    """Give the Chinese notebook of ``page`` the new layout of the cells
    ``changed`` (ids), keeping its outputs."""
    target = zh_notebooks.zh_path(page)
    if not target.is_file() or not changed:
        return
    want = {
        c.id: c.source
        for c in zh_notebooks.expected(page).cells
        if c.cell_type == "code"
    }
    nb = json.loads(target.read_text())
    for cell in nb["cells"]:
        if cell.get("id") in changed:
            cell["source"] = want[cell["id"]].splitlines(keepends=True)
    target.write_text(dumps(nb))


def format_notebook(path: pathlib.Path) -> tuple[int, str]:
    """Format one notebook in place; returns how many code cells changed
    and what ruff could not fix."""
    path = path.resolve()
    nb = json.loads(path.read_text())
    work = json.loads(json.dumps(nb))
    code = [c for c in work["cells"] if c["cell_type"] == "code"]
    if code and "".join(code[0]["source"]).startswith(SETUP_MARKER):
        code[0]["source"] = setup_source().splitlines(keepends=True)
    new, left = ruffed(work, str(path.relative_to(ROOT)))
    layout, more = [], []
    for cell, done in zip(nb["cells"], new["cells"], strict=True):
        if cell["cell_type"] != "code" or cell["source"] == done["source"]:
            continue
        old = "".join(cell["source"])
        cell["source"] = done["source"]
        same = tree(old) is not None and tree(old) == tree(
            "".join(done["source"])
        )
        (layout if same else more).append(cell.get("id"))
    if layout or more:
        path.write_text(dumps(nb))
    if path in toc_notebooks():
        try:
            follow_in_chinese(path, layout)
        except code_comments.TooWide as error:
            left += f"{path.name}: a Chinese comment no longer fits: {error}\n"
        for language in colab_notebooks.LANGUAGES:
            colab_notebooks.write(path, language)
    if more:
        left += (
            f"{path.name}: cells {more} changed in more than layout: "
            f"make zh-notebooks ZH={path.relative_to(ROOT)}\n"
        )
    return len(layout) + len(more), left


def main(argv: list[str]) -> int:
    pages = [pathlib.Path(p) for p in argv] or course_notebooks()
    failed = False
    for page in pages:
        changed, left = format_notebook(page)
        print(f"{page.name}: {changed} code cells reformatted")
        if left.strip():
            failed = True
            print(left.rstrip(), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
