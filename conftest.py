"""pytest configuration for the whole repository.

nbval collects only the notebooks the book tests (tools/editions/notebooks.py:
the chapters in _toc.yml plus the author template), the site is built once per
run and shared by the tests that need it, and the run ends with a table of how
long each notebook took to execute, then the main-path words of chapters 1-7
and the visible code lines per chapter.
"""

from __future__ import annotations

import collections
import pathlib

import pytest

from tools.numerics import numeric_mode
from tools.editions.notebooks import course_notebooks

# Before anything imports torch: the unit tests and every kernel nbval starts
# run in the portable numeric mode the stored outputs were made in
# (tools/numerics/numeric_mode.py).
numeric_mode.apply("portable")
# Where bits cannot match (not Linux on x86-64), notebooks run with every
# assert but are not compared, and say so (tools/numerics/claims_mode.py).
pytest_plugins = ["tools.numerics.claims_mode"]

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
def built_site(tmp_path_factory, worker_id):
    """Build both editions once per pytest run (strict, every page) and return
    the result.

    English into _build/html/, Chinese into _build/html/zh/
    (tools/editions/build_book.py; the result holds both logs).
    tests/test_book.py checks the build itself; tests/test_browser.py reads the
    pages of both. Under ``make test``'s two workers (pytest-xdist) the first
    worker to ask builds, under a lock, and the other reuses its result.
    """
    import pickle

    from filelock import FileLock

    from tools.editions.build_book import build

    if worker_id == "master":  # one process: nothing to share
        return build()
    shared = tmp_path_factory.getbasetemp().parent
    with FileLock(shared / "built_site.lock"):
        stored = shared / "built_site.pickle"
        if stored.is_file():
            return pickle.loads(stored.read_bytes())
        result = build()
        stored.write_bytes(pickle.dumps(result))
        return result


@pytest.fixture
def one_thread():
    """Tiny models train faster on one thread, and far faster on a busy
    machine (``pytestmark = pytest.mark.usefixtures("one_thread")``)."""
    from utils.training import threads

    with threads(1):
        yield


def pytest_configure(config):
    # pytest-xdist's loadscope would hand out files by their number of
    # tests, a notebook of 90 quick cells before a file of one long test:
    # it keeps the order below instead
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """The long files first (every notebook and each test file with a test
    marked slow), the quick ones after: the two workers of ``make test``
    take files in this order, so the quick ones fill the gaps at the end
    instead of a long notebook starting last. The order within a file is
    kept. Among the long ones: the emulated fingerprints first (8 minutes
    whenever a source they read changed, a fresh clone's run; seconds
    otherwise), then the site's build (``built_site``), then the other
    long files, those that read the site last, so that no worker waits on
    the build's lock while the other builds; the two files that start two
    processes each (the launcher's test first, the GPT's last of the
    others) at opposite ends, so they do not run side by side."""

    def path(item):
        return item.nodeid.split("::")[0]

    long = {
        path(i)
        for i in items
        if path(i).endswith(".ipynb") or i.get_closest_marker("slow")
    }
    site = {  # site_url asks for built_site inside
        path(i)
        for i in items
        if {"built_site", "site_url"} & set(getattr(i, "fixturenames", ()))
    }
    early = [
        "tests/test_numeric_mode.py",
        "tests/test_book.py",
        "tests/test_ddp.py",
    ]

    def rank(item):
        if path(item) in early:
            return early.index(path(item))
        if path(item) not in long:
            return 6
        if path(item) in site:
            return 5
        return 4 if path(item) == "tests/test_gpt.py" else 3

    items.sort(key=rank)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _NOTEBOOK_SECONDS[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if _NOTEBOOK_SECONDS:
        terminalreporter.section("notebook execution times (nbval)")
        for path, seconds in sorted(_NOTEBOOK_SECONDS.items()):
            terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
        # the lean main path of chapters 1-7 (tools/budgets/main_path_words.py)
        from tools.budgets import main_path_words

        terminalreporter.section("main-path words, chapters 1-7")
        lines, _ = main_path_words.table(main_path_words.lean_notebooks())
        for line in lines:
            terminalreporter.write_line(line)
        # the code shown open per chapter (tools/budgets/visible_code.py)
        from tools.budgets import visible_code

        terminalreporter.section("visible code lines per chapter")
        lines, _ = visible_code.table(visible_code.chapters())
        for line in lines:
            terminalreporter.write_line(line)
