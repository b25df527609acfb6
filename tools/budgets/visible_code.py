"""Count the code a reader sees without opening anything, per chapter.

A chapter's visible code is every non-blank source line of its code cells
that the book shows open: a cell tagged ``hide-input``, ``hide-cell``,
``remove-input`` or ``remove-cell`` (the setup cell, the solutions, the
folded proof) does not count; ``hide-output`` folds only the output.

    python -m tools.budgets.visible_code [book/08_x.ipynb ...]

prints, per chapter of _toc.yml, the visible lines, the longest visible
cell and how many are over 25 and over 30 lines (``make test`` prints it).

Budgets (issue #49): chapters 1-7 together at most 2,000 visible lines,
chapters 8, 9 and 11 at most 450 each, chapter 10 at most 350 (``TARGETS``),
no visible cell over ``CELL_LIMIT`` lines. They were reached in stages,
which tests/test_visible_code.py holds with ``BUDGETS``: a chapter may have
a ``ceiling`` (its visible lines when its group was over its target), a
``longest`` cell and a number of ``long_cells`` allowed, none of which may
grow; a group within its target is held to it, its ceilings ``None``. Every
group is within its target now. A chapter without an entry (``make
new-chapter``) is a group of its own with ``NEW_CHAPTER_TARGET`` lines.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

from tools.editions.notebooks import toc_notebooks

FOLDING_TAGS = frozenset(
    {"hide-input", "hide-cell", "remove-input", "remove-cell"}
)
CELL_LIMIT = 25  # lines: the longest visible cell the budgets allow
_CHAPTER = re.compile(r"^(\d\d)_.*\.ipynb$")


@dataclasses.dataclass(frozen=True)
class Budget:
    """One chapter's staged budget (see the module docstring)."""

    group: str  # the key of its target in TARGETS ("1-7" for chapters 1-7)
    ceiling: int | None = None  # visible lines at most; None: the target only
    longest: int = CELL_LIMIT  # lines of its longest visible cell, at most
    long_cells: int = 0  # visible cells over CELL_LIMIT lines, at most


# The groups' targets (issue #49), in visible lines.
TARGETS = {"1-7": 2_000, "8": 450, "9": 450, "10": 350, "11": 450}

# Every group is within its target (chapters 1-7: 1,748 lines when it was
# reached, chapter 8: 450, 9: 442, 10: 214): no ceilings, no long cells.
BUDGETS: dict[int, Budget] = {
    n: Budget("1-7" if n <= 7 else str(n)) for n in range(1, 12)
}
NEW_CHAPTER_TARGET = 450  # a chapter without an entry in BUDGETS


def budget(number: int) -> Budget:
    """Chapter ``number``'s budget: its entry in BUDGETS, else the default."""
    return BUDGETS.get(number) or Budget(str(number))


def target(group: str) -> int:
    """A group's target in visible lines (a new chapter's: the default)."""
    return TARGETS.get(group, NEW_CHAPTER_TARGET)


@dataclasses.dataclass(frozen=True)
class Count:
    """The visible code of one notebook."""

    lines: int  # non-blank source lines of the visible code cells
    cells: tuple[tuple[str, int], ...]  # (cell id, lines) of each visible cell

    @property
    def longest(self) -> tuple[str, int]:
        """(cell id, lines) of the longest visible cell; ("-", 0) if none."""
        return max(self.cells, key=lambda c: c[1], default=("-", 0))

    def over(self, limit: int) -> int:
        """How many visible cells are longer than ``limit`` lines."""
        return sum(n > limit for _, n in self.cells)


def visible(cell: dict) -> bool:
    """Whether a reader sees this cell's code without opening anything."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    return cell["cell_type"] == "code" and not tags & FOLDING_TAGS


def code_lines(source: str | list[str]) -> int:
    """Non-blank lines of a cell's source (a string or nbformat's list)."""
    text = source if isinstance(source, str) else "".join(source)
    return sum(bool(line.strip()) for line in text.splitlines())


def count_cells(cells: list[dict]) -> Count:
    """The visible code of a notebook's cells."""
    shown = [
        (cell.get("id", f"#{i}"), code_lines(cell["source"]))
        for i, cell in enumerate(cells)
        if visible(cell)
    ]
    return Count(sum(n for _, n in shown), tuple(shown))


def count(path: pathlib.Path) -> Count:
    """The visible code of one notebook file."""
    return count_cells(json.loads(path.read_text(encoding="utf-8"))["cells"])


def chapter_number(path: pathlib.Path) -> int | None:
    """12 for book/12_x.ipynb; None for a notebook that is not a chapter."""
    m = _CHAPTER.match(path.name)
    return int(m.group(1)) if m else None


def chapters() -> list[pathlib.Path]:
    """The chapter notebooks of _toc.yml (book/NN_*.ipynb), in its order."""
    return [p for p in toc_notebooks() if chapter_number(p) is not None]


def groups() -> list[str]:
    """The groups to check: those of TARGETS, then each chapter's own group
    that has none there (a new chapter's)."""
    found = dict.fromkeys(TARGETS)
    for path in chapters():
        found.setdefault(budget(chapter_number(path)).group)
    return list(found)


def _row(name: str, lines: str, longest: str, over: tuple[str, str]) -> str:
    return f"{name:<34} {lines:>7}  {longest:<22} {over[0]:>3} {over[1]:>3}"


def table(
    paths: list[pathlib.Path],
) -> tuple[list[str], dict[pathlib.Path, Count]]:
    """Lines of the table and each notebook's count."""
    lines = [
        _row("chapter", "visible", "longest cell (lines)", (">25", ">30"))
    ]
    counts = {}
    for path in paths:
        c = counts[path] = count(path)
        cell_id, n = c.longest
        over = (str(c.over(25)), str(c.over(30)))
        lines.append(_row(path.name, f"{c.lines:,}", f"{cell_id} ({n})", over))
    total = sum(c.lines for c in counts.values())
    over = tuple(
        str(sum(c.over(n) for c in counts.values())) for n in (25, 30)
    )
    lines.append(_row("total", f"{total:,}", "", over))
    return lines, counts


if __name__ == "__main__":
    from tools.budgets import print_table

    print_table(__doc__, table, chapters)
