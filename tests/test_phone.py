"""Light and legible on a phone: every page of both editions in headless
Chromium at 390x844 (pixel ratio 2). Weight: a chapter's HTML and images
at most ``BUDGET_KIB`` (shared, cached scripts and fonts apart). Figure
text: at least 8 CSS px as shown, from the smallest font size (points) and
width (inches) ``proof.figures`` records in each image, so ``points *
shown_width / (72 * width_in)``; an image with no record fails. ``pytest -s
tests/test_phone.py`` prints every page's row."""

from __future__ import annotations

import re
import urllib.parse

import pytest

from tests.test_browser import PAGES
from tools.editions.build_book import HTML
from proof.figures import MIN_CSS_PX, RECORD_RE

pytestmark = pytest.mark.slow

BUDGET_KIB = 400
# Chapter 8 teaches two recipes, the ensemble, distillation and the
# diagnosis of both recipes: 350 KiB of HTML, half of it highlighted code
# (the folded proofs download with the page), and 119 KiB of figures.
HEAVY_KIB = {"08_training_pronouncer": 480}
PHONE = {"width": 390, "height": 844}

# Runs in the page: every image's source and shown width, every resource.
MEASURE = """
async () => {
  await document.fonts.ready;
  const images = [...document.images];
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null :
    new Promise((done) => { img.onload = img.onerror = done; })));
  const main = document.querySelector("main article, .bd-article, main");
  return {
    images: images.map((img) => ({
      src: img.currentSrc || img.src,
      width: img.getBoundingClientRect().width,
      figure: !!img.closest(".cell_output, .output"),
    })),
    column: main ? main.getBoundingClientRect().width : 0,
    resources: performance.getEntriesByType("resource").map(
      (r) => ({url: r.name, type: r.initiatorType})),
  };
}
"""


def _file(url: str):
    path = urllib.parse.urlparse(url).path.lstrip("/")
    return HTML / urllib.parse.unquote(path)


def _html(page: str):
    return HTML / f"{page}.html"


def record(path) -> tuple[float, float] | None:
    """(smallest font pt, width in) recorded by proof.figures in an image
    file, or None."""
    head = path.read_bytes()
    if path.suffix == ".svg":
        head = head[:4000]
    match = RECORD_RE.search(head.decode("latin-1"))
    return (float(match[1]), float(match[2])) if match else None


def measure(browser_page, site: str, page: str) -> dict:
    """Weight (KiB) and the smallest figure text (CSS px) of one page."""
    browser_page.goto(f"{site}/{page}.html", wait_until="load")
    found = browser_page.evaluate(MEASURE)
    html = _html(page).stat().st_size
    images, smallest, bad = {}, [], []
    for img in found["images"]:
        path = _file(img["src"])
        if not path.is_file():
            continue
        images[path] = path.stat().st_size
        if not img["figure"] or img["width"] == 0:
            continue
        rec = record(path)
        if rec is None:
            bad.append(f"{path.name}: no figure record")
            continue
        pt, width_in = rec
        px = pt * img["width"] / (72 * width_in)
        smallest.append((round(px, 2), path.name))
    first = {}
    for r in found["resources"]:
        path = _file(r["url"])
        if path.is_file():
            first[path] = path.stat().st_size
    return {
        "html": html / 1024,
        "images": sum(images.values()) / 1024,
        "smallest": min(smallest) if smallest else None,
        "unrecorded": bad,
        "column": found["column"],
        "first": (html + sum(first.values())) / 1024,
    }


@pytest.fixture(scope="module")
def phone(chromium):
    """A 390x844 page at device pixel ratio 2."""
    context = chromium.new_context(
        viewport=PHONE, device_scale_factor=2, service_workers="block"
    )
    yield context.new_page()
    context.close()


def _is_chapter(page: str) -> bool:
    return bool(re.match(r"(zh/)?book/\d\d_", page))


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.endswith("search") is False]
)
def test_page_is_light_and_legible(phone, site_url, page):
    m = measure(phone, site_url, page)
    total = m["html"] + m["images"]
    small = m["smallest"][0] if m["smallest"] else "-"
    print(  # the page's row (pytest -s)
        f"{page} | HTML {m['html']:.0f} KiB | images {m['images']:.0f} | "
        f"total {total:.0f} | smallest {small} px | column "
        f"{m['column']:.0f} | first load {m['first']:.0f} KiB"
    )
    if _is_chapter(page):
        budget = HEAVY_KIB.get(page.rsplit("/", 1)[-1], BUDGET_KIB)
        assert total <= budget, (
            f"{page}: {total:.0f} KiB (HTML {m['html']:.0f} + images "
            f"{m['images']:.0f}) > {budget} KiB"
        )
    assert not m["unrecorded"], f"{page}: {m['unrecorded']}"
    if m["smallest"] is not None:
        px, name = m["smallest"]
        assert px >= MIN_CSS_PX, (
            f"{page}: figure {name} shows its smallest text at {px} CSS px "
            f"at 390 px (< {MIN_CSS_PX})"
        )
