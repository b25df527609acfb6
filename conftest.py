"""pytest configuration for the whole repository.

nbval collects only the notebooks the book tests (tools/notebooks.py: the
chapters in _toc.yml plus the author template), the site is built once per run
and shared by the tests that need it, and the run ends with a table of how long
each notebook took to execute.
"""

from __future__ import annotations

import collections
import pathlib

import pytest

from tools import numeric_mode
from tools.notebooks import course_notebooks

# Before anything imports torch: the unit tests and every kernel nbval starts
# run in the portable numeric mode the stored outputs were made in
# (tools/numeric_mode.py).
numeric_mode.apply("portable")
# Where bits cannot match (not Linux on x86-64), notebooks run with every
# assert but are not compared, and say so (tools/claims_mode.py).
pytest_plugins = ["tools.claims_mode"]

_LISTED = {p.resolve() for p in course_notebooks()}
_NOTEBOOK_SECONDS: dict[str, float] = collections.defaultdict(float)
collect_ignore_glob = ["_build/*", ".venv/*", "book/transformer-course/*"]


def pytest_ignore_collect(collection_path: pathlib.Path, config):
    if (
        collection_path.suffix == ".ipynb"
        and collection_path.resolve() not in _LISTED
    ):
        # not in the book, so not tested (tests/test_repo.py flags strays)
        return True
    return None


@pytest.fixture(scope="session")
def built_site():
    """Build both editions once per pytest run (strict, every page) and return
    the result.

    English into _build/html/, Chinese into _build/html/zh/
    (tools/build_book.py; the result's output holds both logs).
    tests/test_book.py checks the build itself; tests/test_browser.py reads the
    pages of both.
    """
    from tools.build_book import build

    return build()


@pytest.fixture
def one_thread():
    """Tiny models train faster on one thread, and far faster on a busy
    machine (``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    from utils.runtime import threads

    with threads(1):
        yield


def pytest_collection_finish(session):
    """Start the emulated-CPU fingerprints at once, in the background, when
    their test is selected: they take a core-minute or more each and would
    otherwise wait for their turn (tests/test_numeric_mode.py)."""
    import shutil

    from tools import claims_mode

    wanted = any("emulated" in item.nodeid for item in session.items)
    if wanted and shutil.which("qemu-x86_64") and claims_mode.notice() is None:
        from tools import fingerprint

        for cpu in fingerprint.QEMU_CPUS:
            fingerprint.start(cpu, numeric_mode.environment("portable"))


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _NOTEBOOK_SECONDS[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if _NOTEBOOK_SECONDS:
        terminalreporter.section("notebook execution times (nbval)")
        for path, seconds in sorted(_NOTEBOOK_SECONDS.items()):
            terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
