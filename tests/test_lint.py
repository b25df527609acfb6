"""The library, tooling, tests and the notebooks' code cells stay formatted
and lint-clean at 79 columns (``make format`` fixes them); argument checks
stay a small part of the library. (The generated notebooks are not checked.)"""

from __future__ import annotations

import subprocess

import pytest

from tools import ROOT
from tools.budgets import validation_share
from tools.editions.format_notebooks import ruff
from tools.editions.notebooks import course_notebooks

TESTS = sorted(f"tests/{p.name}" for p in (ROOT / "tests").glob("*.py"))
NOTEBOOKS = [str(p.relative_to(ROOT)) for p in course_notebooks()]
CHECKED = ["utils", "proof", "tools", "conftest.py", *TESTS, *NOTEBOOKS]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ruff(), *args, *CHECKED], cwd=ROOT, capture_output=True, text=True
    )


@pytest.mark.parametrize("args", [("check",), ("format", "--check")])
def test_ruff_is_clean(args):
    done = _ruff(*args)
    command = " ".join(["ruff", *args, "utils proof tools conftest.py tests"])
    hint = "\nthe notebooks: make format" if ".ipynb" in done.stdout else ""
    assert done.returncode == 0, (
        f"{command} book/*.ipynb:\n{done.stdout}{done.stderr}{hint}"
    )


def _share() -> tuple[float, str]:
    table = validation_share.shares()
    checks = sum(c for c, _ in table.values())
    lines = sum(n for _, n in table.values())
    worst = sorted(table, key=lambda m: -table[m][0] / table[m][1])[:3]
    return checks / lines, (
        f"validation is {checks / lines:.1%} of utils' executable lines "
        f"({checks} of {lines}); the most checked modules: {worst}"
    )


# Issue #22's target: checks belong at the public entry points, written once
# with utils.checks (23.2% of the lines before the clean-up).
def test_validation_is_at_most_15_percent_of_utils():
    """Counted by ``python -m tools.budgets.validation_share`` (its docstring
    states the rule)."""
    share, summary = _share()
    assert share <= validation_share.LIMIT, summary


def test_the_counting_rule_on_a_known_module():
    source = '''"""Docstring: not counted."""


def f(x, n):
    # a comment: not counted
    x = check_tensor(x, "x")
    if n > 3:
        raise ValueError(
            f"n must be at most 3, got {n}"
        )
    if n < 0:
        n = -n
    return x * n
'''
    # executable: def, check, if, raise (3 lines), if, assignment, return
    assert validation_share.count(source) == (5, 9)
