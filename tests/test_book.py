"""The strict site build: every page rebuilt, any warning fails, one HTML page per TOC entry.

The build itself runs once per pytest run (the `built_site` fixture in conftest.py), shared
with the browser test.
"""

from __future__ import annotations

import pytest

from build_book import missing_pages

pytestmark = pytest.mark.slow


def test_book_builds_without_warnings(built_site):
    log = built_site.stdout + built_site.stderr
    assert built_site.returncode == 0, (
        f"jupyter-book build failed:\n{log[-6000:]}"
    )
    assert "WARNING" not in log, f"the build printed warnings:\n{log[-6000:]}"
    assert not missing_pages(), (
        f"pages missing from _build/html: {missing_pages()}"
    )
