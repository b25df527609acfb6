"""The website as readers see it, in headless Chromium (the system's,
driven by Playwright: no `playwright install`; without it the test skips,
and fails under CI=true). The site is built once and served on 127.0.0.1
(tests/conftest.py); every page of both editions (English at /, Chinese
at /zh/) is opened at 1280x800 and 390x844 with outside requests blocked,
and must show: no failed or external request, no console error, all maths
typeset, every image loaded, no block wider than its column (1280 px) nor
page wider than its window, a Colab link to the chapter's own notebook in
the page's language, a language switch to the same page, and no CJK
character drawn as a missing-glyph box (compared on a canvas with the box
of U+0378). A Chinese page shows none of the theme's English strings that
the edition translates, and no other English in its header, footer,
buttons, menus, tooltips, labels or alt text (file types, "Ctrl", licence
and brand names excepted); the same probe finds them on the English pages,
so it is known to see them. Screenshots (make screenshots) go to
_build/screenshots/."""

from __future__ import annotations

import pathlib
import shutil
import urllib.parse

import pytest
from babel.messages.pofile import read_po

from tools.editions.notebooks import ROOT, config, toc_files

pytestmark = pytest.mark.slow

VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}
# index.html only redirects to the root page. "zh/...": the Chinese edition.
EN_PAGES = [*toc_files(), "search"]
PAGES = [*EN_PAGES, *(f"zh/{page}" for page in EN_PAGES)]


def _localised_english() -> list[str]:
    """The English UI strings the Chinese edition translates, as a page shows
    them."""
    found = []
    for po in sorted(
        (ROOT / "_ext" / "locale").glob("zh_CN/LC_MESSAGES/*.po")
    ):
        with po.open("rb") as f:
            found += [m.id for m in read_po(f) if m.id and m.string]
    copyright = str(config()["copyright"])
    found = [m.replace("%(copyright)s", copyright) for m in found]
    # Shown only inside longer strings: the Colab button's alt text is
    # "Colab" + "logo".
    found += ["Colab logo"]
    # Not from a catalogue: sphinx-togglebutton's hints
    # (tools/editions/build_book.py sets them) and the label of folded cells
    # and dropdowns (_ext/course_site.py relabels it).
    found += ["Click to show", "Click to hide", "Toggle hidden content"]
    return sorted(set(found)) + [
        "列印成 PDF"
    ]  # the theme's zh_CN, Taiwan usage


LOCALISED = _localised_english()
assert len(LOCALISED) > 10 and "Repository" in LOCALISED, LOCALISED
# Latin-script UI text a Chinese page may keep: file types, a key, licences,
# brands.
UI_KEEP = {
    "Ctrl",
    "K",
    "Colab",
    "MIT",
    "CC BY-SA 4.0",
    ".ipynb",
    ".md",
    ".pdf",
}


# Runs in the page (tests/inspect_page.js): what a reader would see wrong.
INSPECT = (pathlib.Path(__file__).parent / "inspect_page.js").read_text()


def _is_chapter(page: str) -> bool:
    page = page.removeprefix("zh/")
    return page.startswith("book/") and (ROOT / f"{page}.ipynb").exists()


def _language_problems(site_url: str, page: str, found: list[dict]) -> list:
    """The page's language switch must lead to the same page in the other
    edition."""
    if page.startswith("zh/"):
        want, text = f"{site_url}/{page.removeprefix('zh/')}.html", "English"
    else:
        want, text = f"{site_url}/zh/{page}.html", "中文"
    if len(found) != 1:
        return [f"{len(found)} language switches (want 1)"]
    switch = found[0]
    problems = []
    if switch["href"] != want:
        problems.append(
            f"language switch leads to {switch['href']}, not {want}"
        )
    if switch["text"] != text:
        problems.append(
            f"language switch reads {switch['text']!r}, not {text!r}"
        )
    if not switch["visible"]:
        problems.append("language switch not visible at the top of the window")
    return problems


@pytest.fixture(scope="module")
def contexts(new_context, screenshot):
    """One browser context per viewport, shared by the pages (so the HTTP
    cache is too); `blocked` collects the requests its route refused, per
    page."""
    # no stale pictures of old pages
    shutil.rmtree(screenshot.folder, ignore_errors=True)
    made = {}
    for name, (width, height) in VIEWPORTS.items():
        blocked: list[str] = []
        made[name] = (new_context(width, height, blocked), blocked)
    yield made
    for context, _ in made.values():
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("page", PAGES)
def test_page_as_a_reader_sees_it(
    contexts, site_url, screenshot, page, viewport
):
    width, height = VIEWPORTS[viewport]
    context, bad_requests = contexts[viewport]
    bad_requests.clear()
    console_errors: list[str] = []
    browser_page = context.new_page()
    browser_page.on(
        "requestfailed",
        lambda req: bad_requests.append(f"failed: {req.url} ({req.failure})"),
    )
    browser_page.on(
        "response",
        lambda res: (
            res.status >= 400
            and bad_requests.append(f"HTTP {res.status}: {res.url}")
        ),
    )
    browser_page.on(
        "console",
        lambda msg: (
            msg.type == "error"
            and console_errors.append(f"{msg.text} @ {msg.location}")
        ),
    )
    browser_page.on(
        "pageerror", lambda exc: console_errors.append(f"uncaught: {exc}")
    )
    try:
        browser_page.goto(f"{site_url}/{page}.html", wait_until="load")
        report = browser_page.evaluate(
            INSPECT,
            {
                "checkOverflow": viewport == "desktop",
                "localised": LOCALISED,
                "keep": sorted(UI_KEEP),
            },
        )
        screenshot(browser_page, f"{page.replace('/', '_')}-{width}")
    finally:
        browser_page.close()

    problems = sorted(set(bad_requests))  # an aborted request is also "failed"
    problems += [f"console error: {e}" for e in console_errors]
    problems += _report_problems(site_url, page, viewport, report)
    where = f"{page}.html at {width}x{height}, {len(problems)} problems"
    assert not problems, where + ":\n" + "\n".join(problems)


def _report_problems(site_url, page: str, viewport: str, report) -> list:
    """What the page's inspection (``INSPECT``) found wrong."""
    problems, chinese = [], page.startswith("zh/")
    labels = {
        "untypeset": "maths left untypeset",
        "mathErrors": "MathJax error",
        "rawTex": "raw TeX delimiters in the text",
        "images": "image not loaded",
        "overflow": "block wider than the column",
        "pageOverflow": "page wider than the window",
    }
    tofu = report.pop("tofu")
    for key, label in labels.items():
        problems += [f"{label}: {item}" for item in report[key]]
    if tofu:
        chars = "".join(sorted({t[0] for t in tofu}))
        problems.append(
            f"{len(tofu)} CJK characters drawn as missing-glyph boxes (is a "
            f"CJK font installed? Debian: fonts-noto-cjk): {chars[:60]}; "
            f"first in {tofu[0].split(' in ', 1)[1][:80]}"
        )
    if chinese and viewport == "desktop" and not report["cjkChecked"]:
        problems.append("no Chinese character checked on a Chinese page")
    problems += _language_problems(site_url, page, report["language"])
    if chinese:
        problems += [
            f"English UI string the Chinese edition translates: {item}"
            for item in report["localised"]
        ]
        problems += [f"English UI text: {item}" for item in report["english"]]
    elif "Repository" not in " ".join(report["localised"]):
        # every page has the GitHub dropdown: the probe must see its English
        problems.append(
            "the English UI probe found no 'Repository' on an English page: "
            f"{report['localised']}"
        )
    if _is_chapter(page):
        # Each edition opens its own notebook (see _colab_problems).
        problems += _colab_problems(page, report["colab"])
    return problems


def _colab_problems(page: str, links: list[str]) -> list[str]:
    """A chapter's Colab links must all open the Colab notebook of the
    page's own language: colab/book/NN_name.ipynb, or, on a Chinese page,
    colab/zh/book/NN_name.ipynb (which must exist and be Chinese; see
    tools/editions/colab_notebooks.py)."""
    import json

    chinese = page.startswith("zh/")
    notebook = "colab/" + page.removeprefix("zh/") + ".ipynb"
    if chinese:
        notebook = "colab/zh/" + notebook.removeprefix("colab/")
    repo = urllib.parse.urlparse(config()["repository"]["url"]).path
    colab = "https://colab.research.google.com/github"
    own = f"{colab}{repo}/blob/main/{notebook}"
    problems = [f"Colab link not to {own}: {h}" for h in links if h != own]
    if not links:
        problems.append("no Colab launch link")
    target = ROOT / notebook
    if not target.is_file():
        problems.append(f"{notebook} (the Colab link's) is not in the repo")
    elif chinese:
        meta = json.loads(target.read_text())["metadata"]
        made = meta.get("course_colab", {})
        if made.get("language") != "zh":
            problems.append(f"{notebook} is not a Chinese notebook: {made}")
    return problems
