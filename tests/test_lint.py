"""The library, the tooling and the tests stay formatted and lint-clean at
the project's 79 columns (pyproject.toml: pycodestyle, E501 among it, and
pyflakes, F401 among it), so the code the chapters show and import reads like
the rest; and argument checks stay a small part of the library."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tools import ROOT, validation_share

# Test files other helpers are editing now: linted once their work is merged
# (then this list is emptied).
LATER = {
    "test_training.py",
    "test_translation.py",
    "test_sweep_ch08.py",
    "test_decoding.py",
    "test_sampling.py",
    "test_bleu.py",
    "test_cache.py",
    "test_diagrams.py",
    "test_browser.py",
}
TESTS = sorted(
    f"tests/{p.name}"
    for p in (ROOT / "tests").glob("*.py")
    if p.name not in LATER
)
CHECKED = ["utils", "tools", "conftest.py", *TESTS]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which(
        "ruff", path=str(ROOT / ".venv" / "bin")
    ) or shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run(
        [*cmd, *args, *CHECKED], cwd=ROOT, capture_output=True, text=True
    )


def test_the_tests_are_linted():
    assert "tests/test_lint.py" in TESTS
    assert not LATER & {p.rsplit("/", 1)[1] for p in TESTS}


@pytest.mark.parametrize("args", [("check",), ("format", "--check")])
def test_ruff_is_clean(args):
    done = _ruff(*args)
    command = " ".join(["ruff", *args, "utils tools conftest.py tests"])
    assert done.returncode == 0, f"{command}:\n{done.stdout}{done.stderr}"


def _share() -> tuple[float, str]:
    table = validation_share.shares()
    checks = sum(c for c, _ in table.values())
    lines = sum(n for _, n in table.values())
    worst = sorted(table, key=lambda m: -table[m][0] / table[m][1])[:3]
    return checks / lines, (
        f"validation is {checks / lines:.1%} of utils' executable lines "
        f"({checks} of {lines}); the most checked modules: {worst}"
    )


# Issue #22's target. Reached once the modules other helpers edit now
# (training, decoding, sampling, bleu, cache, translation) check at their
# entry points through utils.checks as the rest of utils does; strict: the
# marker must go as soon as the target holds.
@pytest.mark.xfail(strict=True, reason="until the pending modules are done")
def test_validation_is_at_most_15_percent_of_utils():
    """Checks belong at the public entry points, written once with
    ``utils.checks``: counted by ``python -m tools.validation_share`` (its
    docstring states the rule)."""
    share, summary = _share()
    assert share <= validation_share.LIMIT, summary


def test_validation_share_does_not_grow():
    """A ratchet meanwhile: 23.2% before issue #22's clean-up, 15.6% after
    it in the modules it could touch."""
    share, summary = _share()
    assert share <= 0.16, summary


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
