"""The one funnel every figure a notebook shows passes through.

``proof.setup`` installs it in IPython under the test harness (and, without
the checks, in a Chinese notebook). Before a figure is shown, ``finish``
translates its text (Chinese mode, ``proof.labels``), draws it and checks it:

- **legible**: its smallest text is at least ``MIN_CSS_PX`` CSS pixels on a
  390 px phone, where the figure is shrunk to the content column
  (``COLUMN_PX``, measured in Chromium);
- **no overlaps**: no two texts (tick labels, titles, axis labels, legends,
  annotations, diagram labels) cover each other.

A failure raises ``FigureError`` in the cell, naming the figure and the
texts. Figures are then encoded once, as SVG (text as text, a heatmap's
cells as one pixel each, drawn pixelated), with the smallest font and the
width recorded in the file for the browser test.
"""

from __future__ import annotations

import io
import json
import os
import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.spines import Spine
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from . import labels

# The text column of a chapter page in a 390 px wide window (Chromium,
# sphinx-book-theme 1.3): a figure wider than this is shrunk to it.
COLUMN_PX = 342
MIN_CSS_PX = 8.0
OVERLAP_PX = 1.0  # texts may touch by this much (at 100 dpi)
PAD_IN = 0.05  # inches of margin around what is saved
# The record the browser test reads back from each image file.
RECORD = "course-figure min-font-pt={pt:.2f} width-in={width:.3f}"
RECORD_RE = re.compile(r"course-figure min-font-pt=([\d.]+) width-in=([\d.]+)")
# For authors: with COURSE_FIGURE_REPORT=file.jsonl, problems are written
# there (one line per figure: size, errors, missing Chinese labels) instead
# of raised, so one run lists them all.
REPORT = "COURSE_FIGURE_REPORT"


class FigureError(AssertionError):
    """A figure is illegible on a phone or has overlapping texts."""


def _name(fig: Figure) -> str:
    titles = [t.get_text() for t in fig.findobj(Text) if t.get_text()]
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        return repr(suptitle.get_text())
    for ax in fig.axes:
        if ax.get_title():
            return repr(ax.get_title())
    return repr(titles[0]) if titles else f"figure {fig.number}"


def texts(fig: Figure) -> list[Text]:
    """The texts a draw of ``fig`` shows: visible, non-empty, with only the
    tick labels of drawn ticks (call after ``fig.canvas.draw()``)."""
    ticks, drawn = set(), []
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update({id(tick.label1), id(tick.label2)})
            for tick in axis._update_ticks():
                drawn += [lab for lab in (tick.label1, tick.label2)]
    found = [t for t in fig.findobj(Text) if id(t) not in ticks] + drawn
    return [
        t
        for t in found
        if t.get_visible() and t.get_text().strip() and _shown(t)
    ]


def _shown(t: Text) -> bool:
    """False for texts of a hidden axes."""
    return t.axes is None or t.axes.get_visible()


def saved_box(fig: Figure) -> Bbox:
    """The part of ``fig`` that is saved, in inches, before padding: the
    tight box, or for a diagram (no axes shows its axis) what is drawn on
    it, so blank canvas margins do not shrink the text on a phone."""
    renderer = fig.canvas.get_renderer()
    if not fig.axes or any(ax.axison for ax in fig.axes):
        return fig.get_tightbbox(renderer)
    drawn = [t for t in fig.texts if t.get_visible()]
    for ax in fig.axes:
        drawn += [a for a in ax.get_children() if a is not ax.patch]
    boxes = [
        a.get_window_extent(renderer)
        for a in drawn
        if a.get_visible() and not isinstance(a, Spine)
    ]
    box = Bbox.union([b for b in boxes if b.width > 0 or b.height > 0])
    whole = fig.bbox
    return Bbox.intersection(box, whole).transformed(
        fig.dpi_scale_trans.inverted()
    )


def width_in(fig: Figure) -> float:
    """The width of the saved figure, inches."""
    return saved_box(fig).width + 2 * PAD_IN


def css_px(pt: float, width: float, column: float = COLUMN_PX) -> float:
    """Size in CSS px of ``pt``-point text in a figure ``width`` inches wide
    (shown at 96 px per inch) on a phone whose column is ``column`` px."""
    return pt * min(96 / 72, column / (72 * width))


def smallest(fig: Figure) -> tuple[float, str]:
    """The smallest font size (points) among the drawn texts, and one text
    of that size."""
    sizes = [(t.get_fontsize(), t.get_text()) for t in texts(fig)]
    return min(sizes) if sizes else (12.0, "")


def check_legible(fig: Figure) -> None:
    """Raise ``FigureError`` if the smallest text is under ``MIN_CSS_PX``
    CSS px on a 390 px phone (call after ``fig.canvas.draw()``)."""
    width = width_in(fig)
    pt, text = smallest(fig)
    px = css_px(pt, width)
    if px < MIN_CSS_PX:
        small = sorted(
            {t.get_text() for t in texts(fig) if t.get_fontsize() == pt}
        )[:5]
        need = MIN_CSS_PX * 72 * width / COLUMN_PX
        raise FigureError(
            f"figure {_name(fig)}: text of {pt:g} pt in a {width:.2f} in "
            f"wide figure shows at {px:.1f} CSS px on a 390 px phone (< "
            f"{MIN_CSS_PX:g}); texts {small}: use >= {need:.1f} pt or a "
            "narrower figure"
        )


def _corners(t: Text, renderer) -> np.ndarray:
    """The four corners (display pixels) of a text's rotated rectangle: its
    upright size turned by its angle about the centre of its window box."""
    box = t.get_window_extent(renderer)
    angle = t.get_rotation()
    if angle % 90 == 0:
        return np.array(
            [
                [box.x0, box.y0],
                [box.x1, box.y0],
                [box.x1, box.y1],
                [box.x0, box.y1],
            ]
        )
    t.set_rotation(0)
    upright = t.get_window_extent(renderer)
    t.set_rotation(angle)
    w, h = upright.width / 2, upright.height / 2
    c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    half = np.array([[-w, -h], [w, -h], [w, h], [-w, h]])
    turned = half @ np.array([[c, s], [-s, c]])
    return turned + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _apart(a: np.ndarray, b: np.ndarray, margin: float) -> bool:
    """True if two convex quadrilaterals are separated along an edge normal
    (or overlap by at most ``margin`` pixels)."""
    for quad in (a, b):
        for i in range(4):
            edge = quad[(i + 1) % 4] - quad[i]
            normal = np.array([-edge[1], edge[0]])
            norm = np.hypot(*normal)
            if norm == 0:
                continue
            pa, pb = a @ normal / norm, b @ normal / norm
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= margin:
                return True
    return False


def overlaps(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose rectangles overlap by more than
    ``OVERLAP_PX`` (call after ``fig.canvas.draw()``)."""
    renderer = fig.canvas.get_renderer()
    margin = OVERLAP_PX * fig.dpi / 100
    shown = [(t.get_text(), _corners(t, renderer)) for t in texts(fig)]
    found = []
    for i, (a, qa) in enumerate(shown):
        for b, qb in shown[i + 1 :]:
            if not _apart(qa, qb, margin):
                found.append((a, b))
    return found


def check_overlaps(fig: Figure) -> None:
    """Raise ``FigureError`` naming the texts that cover each other."""
    found = overlaps(fig)
    if found:
        pairs = "; ".join(f"{a!r} / {b!r}" for a, b in found[:6])
        raise FigureError(
            f"figure {_name(fig)}: {len(found)} overlapping text pair(s): "
            f"{pairs}"
        )


def finish(fig: Figure, check: bool = True) -> None:
    """Translate (Chinese mode), draw and (``check``) check ``fig``, once."""
    if getattr(fig, "_course_finished", False):
        return
    fig._course_finished = True
    report = os.environ.get(REPORT)
    if not check:  # a reader's kernel: translated, never failed
        labels.translate_figure(fig, strict=False)
        return
    if not report:
        labels.translate_figure(fig)
        fig.canvas.draw()
        check_legible(fig)
        check_overlaps(fig)
        return
    missing = labels.translate_figure(fig, strict=False)
    fig.canvas.draw()
    errors = []
    for check in (check_legible, check_overlaps):
        try:
            check(fig)
        except FigureError as error:
            errors.append(str(error))
    pt, _ = smallest(fig)
    width = width_in(fig)
    row = {"figure": _name(fig), "pt": pt, "width_in": round(width, 3)}
    row.update(px=round(css_px(pt, width), 2), errors=errors)
    with open(report, "a", encoding="utf-8") as f:
        used = sorted(labels.used())
        print(json.dumps({**row, "missing": missing, "used": used}), file=f)
    picture = re.sub(r"\W+", "_", row["figure"])[:40] + f"_{id(fig)}.png"
    box = saved_box(fig).padded(PAD_IN)
    fig.savefig(f"{report}.{picture}", dpi=72, bbox_inches=box)


_NUMBER = re.compile(r"scale\([^)]*\)|(?<![\w.#-])-?\d+\.\d{3,}(?!\d)")


def _round(match: re.Match) -> str:
    if match[0].startswith("scale"):  # scale factors keep their digits
        return match[0]
    text = f"{float(match[0]):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _compact(svg: str, record: str) -> str:
    """matplotlib's SVG, lighter and the same picture: coordinates to
    0.01 pt, no indentation or unreferenced group ids, no spaces around path
    commands, no zero rotations; the record as the description."""
    svg = re.sub(r"<metadata>.*?</metadata>", "<desc/>", svg, flags=re.S)
    svg = re.sub(r"<\?xml[^>]*>|<!DOCTYPE[^>]*>", "", svg)
    svg = re.sub(r'<g id="[^"]*">', "<g>", svg)
    svg = re.sub(r' transform="rotate\(-?0 [^"]*\)"', "", svg)
    svg = svg.replace("xlink:href=", "href=")
    # coordinates (not scale factors) to 0.01 pt: inside tags only, never
    # the text a reader sees (a title's 0.00625, a tick's 0.0125)
    svg = re.sub(r"<[^<>]*>", lambda tag: _NUMBER.sub(_round, tag[0]), svg)
    svg = re.sub(r">\s+<", "><", re.sub(r"\s*\n\s*", " ", svg))
    svg = re.sub(
        r' d="([^"]*)"',
        lambda m: ' d="%s"' % re.sub(r" ?([MLQCZz]) ?", r"\1", m[1]).strip(),
        svg,
    )
    svg = re.sub(r"translate\((-?[\d.]+) 0\)", r"translate(\1)", svg)
    if labels.language() == "zh":
        svg = labels.generic_fonts(svg)
    svg = _classes(svg)
    return svg.replace("<desc/>", f"<desc>{record}</desc>", 1)


def _classes(svg: str) -> str:
    """Inline styles used three times or more (grid lines, ticks, glyph
    groups) become one CSS class each in the SVG's own style sheet."""
    counts: dict[str, int] = {}
    for style in re.findall(r' style="([^"]*)"', svg):
        counts[style] = counts.get(style, 0) + 1
    common = [s for s, n in sorted(counts.items()) if n >= 3]
    names = {style: f"s{i}" for i, style in enumerate(common)}
    svg = re.sub(
        r' style="([^"]*)"',
        lambda m: f' class="{names[m[1]]}"' if m[1] in names else m[0],
        svg,
    )
    sheet = "".join(f".{n}{{{s}}}" for s, n in names.items())
    return svg.replace("</style>", sheet + "</style>", 1)


def encode(fig: Figure) -> tuple[dict, dict]:
    """The figure as a display bundle: SVG with text as text and images
    (heatmaps) as their own pixels, the smallest font and the width recorded
    in the file."""
    fig.canvas.draw()
    record = RECORD.format(pt=smallest(fig)[0], width=width_in(fig))
    buf = io.BytesIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # text as text
        fig.savefig(
            buf,
            format="svg",
            bbox_inches=saved_box(fig).padded(PAD_IN),
            metadata={"Date": None, "Description": record},
        )
    return {"image/svg+xml": _compact(buf.getvalue().decode(), record)}, {}
