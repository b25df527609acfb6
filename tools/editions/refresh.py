"""Re-execute notebooks in place, top to bottom in a fresh kernel, with clean
metadata.

    python -m tools.editions.refresh book/03_masks.ipynb [more.ipynb ...]
        (or: make refresh NB=...)

It first rewrites the setup cell from tools/editions/notebooks.py (so every
chapter carries the same one, with the repository URL from _config.yml), drops
execution timestamps, widget views and widget state, keeps cell tags and
MyST-NB metadata, and prints how long each notebook took.
"""

from __future__ import annotations

import pathlib
import sys
import time

import nbformat

from tools.numerics import numeric_mode
from tools.editions.notebooks import (
    SETUP_MARKER,
    notebook_client,
    setup_source,
)

KEEP_CELL_METADATA = {"tags", "mystnb", "jupyter"}
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}
LANGUAGE = {"name": "python", "pygments_lexer": "ipython3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def clean(nb: nbformat.NotebookNode) -> None:
    """Keep only what the site and nbval need; widget views are dropped (the
    static figure beside each widget is what the website shows, and their state
    is not stored)."""
    metadata = {"kernelspec": KERNEL, "language_info": LANGUAGE}
    nb.metadata = nbformat.from_dict(metadata)
    for cell in nb.cells:
        cell.metadata = nbformat.from_dict(
            {k: v for k, v in cell.metadata.items() if k in KEEP_CELL_METADATA}
        )
        if cell.cell_type == "code" and any(
            WIDGET_VIEW in o.get("data", {}) for o in cell.outputs
        ):
            # the live widget (and interact's returned function) means
            # nothing offline
            cell.outputs = []


def execute(
    nb: nbformat.NotebookNode,
    path: pathlib.Path,
    timeout: int = 600,
    setup: str | None = None,
) -> float:
    """Run ``nb`` in place as ``path`` (its folder is the working directory):
    the setup cell rewritten (``setup``, default the canonical one), outputs
    cleared, a fresh kernel top to bottom, metadata cleaned. Returns seconds.

    The kernel inherits this process's environment (the numeric mode,
    ``COURSE_LANGUAGE``); tools/editions/zh_notebooks.py runs the Chinese
    notebooks through it too.
    """
    code = [c for c in nb.cells if c.cell_type == "code"]
    # a caller that passes ``setup`` has put it there (the Chinese notebooks'
    # setup cell has Chinese comments): only the canonical one is checked
    marked = (
        setup is not None or code and code[0].source.startswith(SETUP_MARKER)
    )
    if not code or not marked:
        raise SystemExit(
            f"{path}: the first code cell must be the setup cell "
            f"(starts with {SETUP_MARKER!r})"
        )
    code[0].source = setup_source() if setup is None else setup
    # The setup cell is plumbing: fold it on the website (Jupyter Book's
    # hide-input tag).
    code[0].metadata["tags"] = sorted(
        {*code[0].metadata.get("tags", []), "hide-input"}
    )
    for cell in code:
        cell.outputs, cell.execution_count = [], None
    start = time.perf_counter()
    # notebook_client never stalls on widgets (see its docstring)
    notebook_client(nb, path, timeout).execute()
    took = time.perf_counter() - start
    clean(nb)
    nbformat.validate(nb)
    return took


if __name__ == "__main__":
    numeric_mode.apply("portable")  # the mode make test compares in
    paths = [pathlib.Path(p) for p in sys.argv[1:]]
    if not paths:
        raise SystemExit(__doc__)
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        took = execute(nb, p)
        nbformat.write(nb, p)
        print(f"{p}: executed in {took:.1f} s", flush=True)
