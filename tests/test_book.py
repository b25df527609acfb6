"""The strict site build: every page rebuilt, any warning fails, one HTML page per TOC entry."""
from __future__ import annotations

import pytest

from build_book import build, missing_pages

pytestmark = pytest.mark.slow


def test_book_builds_without_warnings():
    result = build()
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"jupyter-book build failed:\n{log[-6000:]}"
    assert "WARNING" not in log, f"the build printed warnings:\n{log[-6000:]}"
    assert not missing_pages(), f"pages missing from _build/html: {missing_pages()}"
