"""The pytest plugin that makes ``make test`` honest on every machine.

Where the portable numeric mode cannot reproduce the stored outputs bit for
bit (``numeric_mode.exact_comparison()`` says why: a Mac with Apple
silicon, Windows, an ARM server), it says so in one line at the top of the
run and at its end, turns ``--nbval`` into ``--nbval-lax`` (every notebook
still runs and fails on any error or failed assert, its outputs not
compared) and skips the tests marked ``exact`` with that reason. Everything
else runs as usual. ``conftest.py`` loads it; ``tests/test_numeric_mode.py``
runs it with a faked platform.
"""

from __future__ import annotations

import pytest

from tools.numerics import numeric_mode

_REASON = numeric_mode.exact_comparison()


def notice() -> str | None:
    """The one line a run prints where outputs are not compared."""
    if _REASON is None:
        return None
    return (
        f"claims mode: {_REASON}, so stored outputs are not compared bit for "
        "bit; every notebook runs with every assert (nbval-lax), tests "
        "marked 'exact' are skipped"
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "exact: compares results bit for bit with stored ones (needs Linux "
        "on x86-64; skipped, with the reason, elsewhere)",
    )
    if _REASON is not None and getattr(config.option, "nbval", False):
        config.option.nbval = False
        config.option.nbval_lax = True


def pytest_report_header(config):
    return notice()


def pytest_collection_modifyitems(config, items):
    if _REASON is None:
        return
    skip = pytest.mark.skip(reason=f"exact comparison: {_REASON}")
    for item in items:
        if "exact" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    line = notice()
    if line is not None:
        terminalreporter.write_line(line)
