"""The visible code per chapter: the counter, and the staged budgets of
issue #49 (tools/budgets/visible_code.py says how the staging works)."""

from __future__ import annotations

import json

import pytest

from tools.budgets import visible_code as vc


def _cell(source, tags=(), cell_type="code", cell_id=None):
    cell = {"cell_type": cell_type, "metadata": {}, "source": source}
    if tags:
        cell["metadata"]["tags"] = list(tags)
    if cell_id:
        cell["id"] = cell_id
    return cell


def test_counter_counts_non_blank_lines_of_cells_shown_open():
    cells = [
        _cell("# setup\nimport x\n", ["hide-input"], cell_id="setup"),
        _cell(
            ["a = 1\n", "\n", "   \n", "b = 2\n", "print(a + b)"],
            cell_id="one",
        ),
        _cell("x = 1\n\n\ny = 2\n", ["hide-output"], cell_id="two"),
        _cell("answer = 42\n", ["hide-cell", "solution"], cell_id="sol"),
        _cell("gone = 1\n", ["remove-cell"], cell_id="r1"),
        _cell(
            "gone = 2\n", ["remove-input", "nbval-ignore-output"], cell_id="r2"
        ),
        _cell("```python\nnot = code\n```\n", cell_type="markdown"),
        _cell("", cell_id="empty"),
        _cell("z = 3\n", ["nbval-ignore-output"]),  # no id: its position
    ]
    c = vc.count_cells(cells)
    assert c.cells == (("one", 3), ("two", 2), ("empty", 0), ("#8", 1))
    assert c.lines == 6
    assert c.longest == ("one", 3)
    assert (c.over(1), c.over(2), c.over(3)) == (2, 1, 0)


def test_counter_on_a_notebook_file(tmp_path):
    long = "".join(f"v{i} = {i}\n\n" for i in range(31))  # 31 lines, 31 blank
    nb = {
        "cells": [
            _cell(long, cell_id="long"),
            _cell("p = 1\n", ["hide-cell"]),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "12_x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    c = vc.count(path)
    assert (c.lines, c.longest, c.over(25), c.over(30)) == (
        31,
        ("long", 31),
        1,
        1,
    )
    assert vc.chapter_number(path) == 12
    lines, counts = vc.table([path])
    assert counts[path] == c
    assert lines[1].split() == ["12_x.ipynb", "31", "long", "(31)", "1", "1"]
    assert lines[-1].split() == ["total", "31", "1", "1"]


def test_every_chapter_has_a_budget_and_a_target():
    paths = vc.chapters()
    assert len(paths) >= 10
    assert all(b.group in vc.TARGETS for b in vc.BUDGETS.values())
    for path in paths:  # a new chapter's default: its own group, the target
        group = vc.budget(vc.chapter_number(path)).group
        assert group in vc.groups() and vc.target(group) > 0
    assert vc.budget(99) == vc.Budget("99", None, vc.CELL_LIMIT, 0)
    assert vc.target("99") == vc.NEW_CHAPTER_TARGET


@pytest.mark.parametrize("group", vc.groups())
def test_visible_code_within_its_staged_budget(group):
    """No chapter grows; a group within its target stays there, and its cells
    keep to 25 lines but for the long cells it is allowed (none, at last)."""
    counts = {
        n: vc.count(p)
        for p in vc.chapters()
        if vc.budget(n := vc.chapter_number(p)).group == group
    }  # none yet for a chapter still to be written: nothing to check
    problems = []
    total, target = sum(c.lines for c in counts.values()), vc.target(group)
    within = total <= target
    for number, c in sorted(counts.items()):
        b = vc.budget(number)
        cell_id, longest = c.longest
        n_long = c.over(vc.CELL_LIMIT)
        say = f"chapter {number}:"
        if b.ceiling is not None and c.lines > b.ceiling:
            problems.append(f"{say} {c.lines} lines > ceiling {b.ceiling}")
        if longest > max(b.longest, vc.CELL_LIMIT):
            problems.append(f"{say} cell {cell_id}: {longest} > {b.longest}")
        if n_long > b.long_cells:
            problems.append(
                f"{say} {n_long} cells over {vc.CELL_LIMIT} lines"
                f" > long_cells={b.long_cells}"
            )
        if within and b.ceiling is not None:
            problems.append(
                f"{say} group {group} is within its target ({total} <="
                f" {target}): set ceiling=None in BUDGETS"
            )
        if within and n_long < b.long_cells:
            problems.append(
                f"{say} {n_long} cells over {vc.CELL_LIMIT} lines now:"
                f" set long_cells={n_long} in BUDGETS"
            )
    if not within and any(vc.budget(n).ceiling is None for n in counts):
        # held to the target (no ceiling), and over it
        problems.append(f"group {group}: {total} lines > target {target}")
    assert not problems, "\n".join(problems)
