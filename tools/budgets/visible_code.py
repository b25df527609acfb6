"""Count the code a reader sees without opening anything, per chapter.

A chapter's visible code is every non-blank source line of its code cells that
the book shows open: a code cell tagged ``hide-input``, ``hide-cell``,
``remove-input`` or ``remove-cell`` is folded (or gone) and does not count.
``hide-output`` folds only the output, so its input counts. The exercises'
solutions are code cells tagged ``hide-cell`` and ``solution`` (a "Show
solution" button): folded, so not counted. The setup cell is ``hide-input``:
not counted. Code inside markdown cells (fenced blocks) is prose's business
(tools/budgets/main_path_words.py) and is not counted here either.

    python -m tools.budgets.visible_code [book/08_x.ipynb ...]

prints, per chapter notebook of _toc.yml (``book/NN_*.ipynb``), the visible
lines, the longest visible cell (id and lines) and how many visible cells are
over 25 and over 30 lines, then the total; ``make test`` prints the same table
at its end.

Budgets (issue #49): chapters 1-7 together at most 2,000 visible lines,
chapters 8, 9 and 11 at most 450 each, chapter 10 at most 350, and no visible
cell over 25 lines. Those are targets that later work reaches chapter by
chapter, so tests/test_visible_code.py stages them with BUDGETS:

* every chapter has a ``ceiling`` (its visible lines when the budget was set,
  rounded up a little), a ``longest`` (its longest visible cell then) and a
  ``long_cells`` (how many of its visible cells were over 25 lines then). The
  test fails when a chapter grows beyond any of them: nothing gets worse while
  the targets are being reached.
* every group of chapters (1-7 together, each later chapter alone) has a
  target in TARGETS. A group within its target is held to it: its chapters
  must have ``ceiling=None`` (the test says so when a cut lands a group within
  its target and the ceilings were left as they were), so the target, not a
  ceiling, is then their limit; and the 25-line cell limit holds for each of
  its cells but the ``long_cells`` left (chapter 10 is within its target today
  with three such cells), a number that must then follow every cut down to 0.
* after cutting a chapter that is still over its target, lower its ceiling
  here so it cannot grow back (not enforced: parallel cuts need not edit
  this file).

A chapter in _toc.yml without an entry in BUDGETS (a new one: ``make
new-chapter``) is held to ``budget()``'s default: a group of its own with
NEW_CHAPTER_TARGET visible lines (the target of chapters 8, 9 and 11) and the
cell limit, with no ceiling. Give it an entry here to set another.
"""

from __future__ import annotations

import argparse
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

# Set on 2026-11-27 after the glue, stamps and diagrams were folded: ceiling =
# visible lines rounded up to the next ten; longest and long_cells as they
# are. Lower them as chapters are cut. Chapters 1-7 (1,748 lines together),
# 8 (450) and 9 (442) reached their targets the same day: the targets hold
# them now.
BUDGETS: dict[int, Budget] = {
    1: Budget("1-7"),  # 217 lines
    2: Budget("1-7"),  # 353
    3: Budget("1-7"),  # 258
    4: Budget("1-7"),  # 213
    5: Budget("1-7"),  # 202
    6: Budget("1-7"),  # 227
    7: Budget("1-7"),  # 278
    8: Budget("8"),  # 450
    9: Budget("9"),  # 442
    10: Budget("10"),  # 214: within its target
    11: Budget("11"),  # the target and the cell limit from the start
}
# A chapter with no entry in BUDGETS: its own group, this target, the cell
# limit (chapter 11 started so).
NEW_CHAPTER_TARGET = 450


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path)
    args = parser.parse_args()
    paths = [p.resolve() for p in args.notebooks] or chapters()
    lines, _ = table(paths)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
