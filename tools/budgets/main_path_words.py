"""Count the prose a reader meets without opening anything: the main path.

A chapter's words are those of its markdown cells; a word inside a folded box
(an admonition or ``dropdown`` directive with ``:class: dropdown``) is folded,
every other word is on the main path. Code cells, outputs, math, MyST labels,
HTML comments and directive options are not words. A word is what a reader
counts: a whitespace-separated token of the source, math and roles included.

    python -m tools.budgets.main_path_words [book/01_x.ipynb ...]

prints a table per chapter (main path, folded); ``LEAN_LIMIT`` is the
budget of chapters 1-7 (tests/test_main_path_words.py).
"""

from __future__ import annotations

import json
import pathlib
import re

from tools import ROOT

LEAN_CHAPTERS = [f"book/0{i}_" for i in range(1, 8)]
LEAN_LIMIT = 19_000

_FENCE = re.compile(r"^(\s*)(:{3,}|`{3,})\s*(\{[^}]*\})?(.*)$")


def _words(text: str) -> int:
    """Whitespace-separated tokens (the yardstick the review used)."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return len(text.split())


def _folds(name: str, lines: list[str], j: int) -> tuple[bool, int]:
    """Whether the directive ``name`` opened before ``lines[j]`` is folded
    (a dropdown, or ``:class: dropdown`` among its options, the ":key:
    value" lines from ``j``), and the index of its first line after them."""
    options = []
    while j < len(lines) and lines[j].lstrip().startswith(":"):
        options.append(lines[j])
        j += 1
    fold = name == "{dropdown}" or any(
        re.match(r"\s*:class:.*\bdropdown\b", o) for o in options
    )
    return fold, j


def split_markdown(source: str) -> tuple[int, int]:
    """(main-path words, folded words) of one markdown cell's source."""
    main = folded = 0
    stack: list[tuple[str, bool]] = []  # open fences: (marker, folded?)
    block: list[str] = []
    lines = source.splitlines()
    i = 0

    def flush() -> None:
        nonlocal main, folded, block
        n = _words("\n".join(block))
        if any(f for _, f in stack):
            folded += n
        else:
            main += n
        block = []

    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if (
            m
            and stack
            and m.group(2) == stack[-1][0]
            and not m.group(3)
            and not m.group(4).strip()
        ):
            flush()
            stack.pop()
        elif m and m.group(3):
            flush()
            fold, j = _folds(m.group(3), lines, i + 1)
            block.append(m.group(4))  # the box's title: seen even when folded
            flush()  # where the box stands, before it opens
            stack.append((m.group(2), fold))
            i = j
            continue
        elif re.match(r"^\s*\([\w:-]+\)=\s*$", line):
            pass  # a MyST label
        else:
            block.append(line)
        i += 1
    flush()
    return main, folded


def count(path: pathlib.Path) -> tuple[int, int]:
    """(main-path words, folded words) of one notebook."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    counts = [
        split_markdown("".join(c["source"]))
        for c in cells
        if c["cell_type"] == "markdown"
    ]
    return sum(a for a, _ in counts), sum(b for _, b in counts)


def lean_notebooks() -> list[pathlib.Path]:
    """Chapters 1-7, the notebooks the main-path limit applies to."""
    return [
        path
        for prefix in LEAN_CHAPTERS
        for path in sorted(ROOT.glob(prefix + "*.ipynb"))
    ]


def table(paths: list[pathlib.Path]) -> tuple[list[str], int]:
    """Lines of the table and the main-path total."""
    lines = [f"{'chapter':<36} {'main path':>9} {'folded':>7}"]
    total = total_folded = 0
    for path in paths:
        main, folded = count(path)
        total, total_folded = total + main, total_folded + folded
        lines.append(f"{path.name:<36} {main:>9,} {folded:>7,}")
    lines.append(f"{'total':<36} {total:>9,} {total_folded:>7,}")
    return lines, total


if __name__ == "__main__":
    from tools.budgets import print_table

    print_table(__doc__, table, lean_notebooks)
