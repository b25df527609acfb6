"""Fixtures the tests share. Browser (test_browser, test_phone,
test_live_*): ``site_url`` serves the built site (both editions) on
127.0.0.1; ``chromium`` is the system's headless Chromium under Playwright,
one per module; ``new_context`` / ``open_page`` block and report every
request outside the site; ``screenshot`` saves a JPEG to _build/screenshots/.
Node (the export tests, test_translations): ``node``. Without Chromium,
Playwright or Node those tests skip with a hint, except under CI=true, where
they fail. Unit tests: ``seeded``, ``raises`` (an expected error in one
line), ``raising`` (a table of bad calls as parametrized cases)."""

from __future__ import annotations

import builtins
import contextlib
import functools
import http.server
import os
import re
import shutil
import threading

import pytest

from tools import ROOT

HTML = ROOT / "_build" / "html"  # tools/editions/build_book.py's
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium phones home at start; blocked here, they fail.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL_HINT = (
    "no Chromium found: install it (Debian/Ubuntu: `sudo apt-get install "
    "chromium`; .ci/run does this) or set CHROMIUM=/path/to/chromium"
)


def _chromium() -> str | None:
    if path := os.environ.get("CHROMIUM"):
        return path
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


def skip_or_fail(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true, so this may not skip: {reason}")
    pytest.skip(reason)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site_url(request):
    # Asked for here, not as an argument: a run without Chromium skips before
    # building.
    built_site = request.getfixturevalue("built_site")
    if built_site.returncode != 0:
        pytest.fail("the site did not build (see test_book.py)")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()
    server.server_close()


@contextlib.contextmanager
def launched_chromium():
    """Headless Chromium; skips (fails under CI=true) where there is no
    Chromium or no Playwright."""
    executable = _chromium()
    if executable is None:
        skip_or_fail(INSTALL_HINT)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: make venv")
    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=executable, args=CHROMIUM_FLAGS
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def chromium():
    with launched_chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def new_context(chromium, site_url):
    """new_context(width, height, problems, fetched=None, base=None): a
    browser context at that viewport in which every request outside
    ``base`` (default: the served site) is aborted and listed in
    ``problems``; the requests inside it go on, listed in ``fetched``."""

    def make(width, height, problems, fetched=None, base=None):
        base = base or site_url + "/"
        context = chromium.new_context(
            viewport={"width": width, "height": height},
            device_scale_factor=1,
            service_workers="block",
        )

        def route(r):
            if r.request.url.startswith(base):
                if fetched is not None:
                    fetched.append(r.request.url)
                r.continue_()
            else:
                problems.append(f"external request blocked: {r.request.url}")
                r.abort()

        context.route("**/*", route)
        return context

    return make


@pytest.fixture(scope="module")
def open_page(new_context):
    """open_page(url, width, height, base=None) -> (context, page,
    problems, fetched): ``url`` loaded in a new_context; a failed request,
    a console error and an uncaught error are problems too."""

    def open_(url, width, height, base=None):
        problems: list[str] = []
        fetched: list[str] = []
        context = new_context(width, height, problems, fetched, base)
        page = context.new_page()
        page.on("requestfailed", lambda q: problems.append(f"failed: {q.url}"))
        page.on(
            "console",
            lambda m: (
                m.type == "error" and problems.append(f"console: {m.text}")
            ),
        )
        page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
        page.goto(url, wait_until="load")
        return context, page, problems, fetched

    return open_


@pytest.fixture(scope="session")
def screenshot():
    """screenshot(page, name): the whole page as _build/screenshots/
    name.jpeg, when COURSE_SCREENSHOTS=1 (``make screenshots``; a page's
    shot costs about 2 s, most of its test; JPEG: as PNG, seconds more)."""

    def shoot(page, name: str) -> None:
        if os.environ.get("COURSE_SCREENSHOTS") != "1":
            return
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(
            path=SHOTS / f"{name}.jpeg",
            full_page=True,
            type="jpeg",
            quality=80,
        )

    shoot.folder = SHOTS
    return shoot


@pytest.fixture(scope="session")
def node() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if found is None:
        skip_or_fail(
            "Node.js not found (Debian: apt-get install nodejs): the live "
            "pages' JavaScript cannot be run"
        )
    return found


@pytest.fixture
def seeded():
    """Every test that asks (``pytestmark = pytest.mark.usefixtures``)
    starts from the same random state, so a failure reproduces."""
    import torch

    torch.manual_seed(0)


def raises(error, match, call, /, *args, **kwargs) -> None:
    """``call(*args, **kwargs)`` raises ``error`` with a message in which
    ``match`` is found (``pytest.raises`` in one line; the arguments are
    worked out before, outside it)."""
    with pytest.raises(error, match=match):
        call(*args, **kwargs)


def raising(table: str) -> list:
    """Cases of bad input from rows ``Error | match | call``, one a line (an
    indented line goes on with the call above): params (call, error, match),
    each named by its call, which the test evaluates in its module."""
    cases = []
    rows = re.sub(r"\n\s+", " ", table.strip()).replace("( ", "(")
    for row in rows.splitlines():
        error, match, call = (part.strip() for part in row.split(" | ", 2))
        error = getattr(builtins, error)
        cases.append(pytest.param(call, error, match, id=call))
    return cases
