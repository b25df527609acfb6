"""What diagrams draw on a canvas: labelled boxes, arrows with shape
labels, tensors as grids of cells."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from utils.checks import check_number
from .base import COLORS, EDGE, Box, _fontsize, _kind, _point


def box(
    ax: plt.Axes,
    xy,
    text: str,
    *,
    w: float = 1.4,
    h: float = 0.5,
    kind: str = "plain",
    fontsize: float = 11,
    rounded: bool = True,
) -> Box:
    """A labelled box centred at ``xy``; returns its geometry for arrows."""
    x, y = _point(xy, "xy")
    w = check_number(w, "w", minimum=0.05)
    h = check_number(h, "h", minimum=0.05)
    style = "round,pad=0,rounding_size=0.08" if rounded else "square,pad=0"
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle=style,
            facecolor=_kind(kind),
            edgecolor=EDGE,
            linewidth=1.2,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=_fontsize(fontsize))
    return Box(x, y, w, h)


def arrow(
    ax: plt.Axes,
    start,
    end,
    *,
    text: str | None = None,
    offset: tuple[float, float] = (0.08, 0.0),
    fontsize: float = 11,
    color: str = EDGE,
    style: str = "-|>",
    connection: str = "arc3",
) -> None:
    """An arrow from ``start`` to ``end`` (points or Box anchors such as
    ``b.top``).

    ``text`` (e.g. a tensor shape) is written beside the arrow's midpoint,
    shifted by
    ``offset`` inches, left-aligned when shifted right and centred otherwise.
    ``connection`` is a matplotlib connection style, e.g.
    ``"angle,angleA=0,angleB=90"``.
    """
    (x0, y0), (x1, y1) = _point(start, "start"), _point(end, "end")
    ax.add_patch(
        FancyArrowPatch(
            (x0, y0),
            (x1, y1),
            arrowstyle=style,
            color=color,
            mutation_scale=12,
            linewidth=1.2,
            shrinkA=0,
            shrinkB=0,
            connectionstyle=connection,
        )
    )
    if text:
        dx, dy = offset
        ax.text(
            (x0 + x1) / 2 + dx,
            (y0 + y1) / 2 + dy,
            text,
            ha="left" if dx > 0 else "center",
            va="center",
            fontsize=_fontsize(fontsize),
            color="#1f3b73",
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
        )


def _entry(fmt: str, value) -> str:
    """``fmt.format(value)``, without the sign of a value that rounds to zero
    ("-0.00")."""
    text = fmt.format(value)
    if (
        text.startswith("-")
        and text.lstrip("-").replace("0", "").strip(".") == ""
    ):
        return text[1:]
    return text


def tensor(
    ax: plt.Axes,
    xy,
    values=None,
    *,
    shape: Sequence[int] | None = None,
    cell: float = 0.28,
    kind: str = "input",
    title: str | None = None,
    fmt: str = "{:.2f}",
    fontsize: float = 11,
    colors=None,
) -> Box:
    """A 2-D tensor drawn as a grid of cells centred at ``xy``.

    Give ``values`` (a 2-D array or tensor, rows x columns; a 1-D one is drawn
    as one row) to write each entry with ``fmt``, or only ``shape=(rows,
    cols)`` for an empty grid. Boolean values are drawn as filled (True) and
    empty (False) cells, as the masks chapter draws them. ``colors`` (rows x
    cols of colour strings) overrides the fill per cell. ``title`` is written
    above the grid (e.g. ``"K (3, 4)"``). Cells are ``cell`` inches high and
    widen so the longest written entry fits.
    """
    if values is not None:
        m = (
            values.detach().cpu().numpy()
            if isinstance(values, torch.Tensor)
            else np.asarray(values)
        )
        if m.ndim == 1:
            m = m[None, :]
        if m.ndim != 2:
            raise ValueError(
                f"values must be 1-D or 2-D, got shape {tuple(m.shape)}"
            )
        rows, cols = m.shape
    elif shape is not None:
        if len(shape) != 2:
            raise ValueError(f"shape must be (rows, cols), got {tuple(shape)}")
        rows, cols, m = int(shape[0]), int(shape[1]), None
    else:
        raise TypeError("tensor needs values or shape")
    if colors is not None and np.shape(colors)[:2] != (rows, cols):
        raise ValueError(
            f"colors must be {rows} x {cols}, got {np.shape(colors)[:2]}"
        )
    x, y = _point(xy, "xy")
    cell = check_number(cell, "cell", minimum=0.05)
    fill = _kind(kind)
    size = _fontsize(fontsize)
    texts = None
    if m is not None and m.dtype != bool:
        texts = [[_entry(fmt, v) for v in row] for row in m.tolist()]
    longest = (
        max((len(t) for row in texts for t in row), default=0) if texts else 0
    )
    # about 0.6 em per character, plus a margin, so entries never overlap
    cell_w = max(cell, longest * 0.6 * size / 72 + 0.08)
    x0, y0 = x - cols * cell_w / 2, y + rows * cell / 2
    for i in range(rows):
        for j in range(cols):
            face = fill
            if m is not None and m.dtype == bool:
                face = COLORS["attention"] if m[i, j] else COLORS["plain"]
            if colors is not None:
                face = colors[i][j]
            ax.add_patch(
                Rectangle(
                    (x0 + j * cell_w, y0 - (i + 1) * cell),
                    cell_w,
                    cell,
                    facecolor=face,
                    edgecolor=EDGE,
                    linewidth=0.8,
                )
            )
            if texts is not None:
                ax.text(
                    x0 + (j + 0.5) * cell_w,
                    y0 - (i + 0.5) * cell,
                    texts[i][j],
                    ha="center",
                    va="center",
                    fontsize=size,
                )
    if title:
        ax.text(x, y0 + 0.06, title, ha="center", va="bottom", fontsize=11)
    return Box(x, y, cols * cell_w, rows * cell)
