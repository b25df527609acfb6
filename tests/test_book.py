"""The strict site build of both editions: every page rebuilt, any warning fails, one HTML
page per TOC entry in _build/html/ (English) and _build/html/zh/ (Chinese).

The build itself runs once per pytest run (the `built_site` fixture in conftest.py), shared
with the browser test.
"""

from __future__ import annotations

import pytest
from tools.build_book import missing_pages

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_book_builds_without_warnings(built_site, edition):
    run = built_site.editions[edition]
    log = run.stdout + run.stderr
    assert run.returncode == 0, (
        f"jupyter-book build ({edition}) failed:\n{log[-6000:]}"
    )
    assert "WARNING" not in log, (
        f"the {edition} build printed warnings:\n{log[-6000:]}"
    )


def test_every_page_is_built_in_both_editions(built_site):
    assert not missing_pages(), (
        f"pages missing from _build/html: {missing_pages()}"
    )
