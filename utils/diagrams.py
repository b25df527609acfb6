"""Diagrams drawn by code: labelled boxes, arrows, tensors as grids, brackets.

A diagram is a matplotlib figure like any plot, so it is reproducible,
reviewable in a diff and redrawn when a shape changes. Coordinates are in
inches: ``canvas(7, 3)`` gives an axes from (0, 0) at the bottom left to (7, 3)
at the top right, so sizes and font sizes (points) relate directly. This is not
a general diagram library: it has what the chapters need.

    fig, ax = canvas(6, 2, title="Scores")
    q = box(ax, (1, 1), "query", kind="input")
    s = box(ax, (4, 1), "q . k", kind="attention")
    arrow(ax, q.right, s.left, text="(1, 4)")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from .checks import check_number

__all__ = [
    "COLORS",
    "Box",
    "arrow",
    "box",
    "bracket",
    "canvas",
    "label",
    "shape_text",
    "tensor",
]

# One fill colour per role, used across all chapters so a reader learns them
# once.
COLORS = {
    "plain": "#ffffff",
    "input": "#dbe9f6",  # embeddings, tokens, tensors entering a block
    "attention": "#fde2c4",  # anything that mixes positions
    "ffn": "#d5f0d5",  # position-wise layers (mix features)
    "norm": "#efe0f5",  # LayerNorm, softmax, scaling
    "mask": "#f8d7da",  # masks and what they remove
    "output": "#e8e8e8",  # logits, losses, results
}
EDGE = "#333333"
# inches: wider figures are shrunk on the site and their text gets small
MAX_WIDTH = 7.2
MIN_FONT = (
    9  # points: the smallest text the site shows legibly at natural size
)


@dataclass(frozen=True)
class Box:
    """A drawn rectangle: centre ``(x, y)``, width ``w`` and height ``h`` in
    inches."""

    x: float
    y: float
    w: float
    h: float

    @property
    def center(self) -> tuple[float, float]:
        return (self.x, self.y)

    @property
    def top(self) -> tuple[float, float]:
        return (self.x, self.y + self.h / 2)

    @property
    def bottom(self) -> tuple[float, float]:
        return (self.x, self.y - self.h / 2)

    @property
    def left(self) -> tuple[float, float]:
        return (self.x - self.w / 2, self.y)

    @property
    def right(self) -> tuple[float, float]:
        return (self.x + self.w / 2, self.y)


def _point(p, name: str) -> tuple[float, float]:
    if isinstance(p, Box):
        return p.center
    if not isinstance(p, (tuple, list)) or len(p) != 2:
        raise TypeError(f"{name} must be an (x, y) pair or a Box, got {p!r}")
    return (check_number(p[0], f"{name}[0]"), check_number(p[1], f"{name}[1]"))


def _kind(kind: str) -> str:
    if kind not in COLORS:
        raise ValueError(f"kind must be one of {sorted(COLORS)}, got {kind!r}")
    return COLORS[kind]


def _fontsize(fontsize, name: str = "fontsize") -> float:
    size = check_number(fontsize, name)
    if size < MIN_FONT:
        raise ValueError(
            f"{name} must be >= {MIN_FONT} pt to stay legible, got {size}"
        )
    return size


def canvas(
    width: float, height: float, *, title: str | None = None
) -> tuple[plt.Figure, plt.Axes]:
    """A blank figure ``width`` x ``height`` inches whose data units are
    inches."""
    width = check_number(width, "width", minimum=0.5)
    height = check_number(height, "height", minimum=0.5)
    if width > MAX_WIDTH:
        raise ValueError(
            f"width must be <= {MAX_WIDTH} inches so the site shows it at "
            f"natural size, got {width}"
        )
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    if title is not None:
        ax.text(
            width / 2,
            height - 0.08,
            title,
            ha="center",
            va="top",
            fontsize=12,
            fontweight="bold",
        )
    return fig, ax


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
    fontsize: float = 10,
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
    fontsize: float = 9,
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
        ax.text(x, y0 + 0.06, title, ha="center", va="bottom", fontsize=10)
    return Box(x, y, cols * cell_w, rows * cell)


def bracket(
    ax: plt.Axes,
    start,
    end,
    text: str,
    *,
    side: str = "left",
    depth: float = 0.12,
    fontsize: float = 11,
) -> None:
    """A square bracket from ``start`` to ``end`` (a vertical or horizontal
    span), with ``text`` outside it, e.g. ``"N x"`` beside a stack of layers.
    """
    (x0, y0), (x1, y1) = _point(start, "start"), _point(end, "end")
    if side not in ("left", "right", "above", "below"):
        raise ValueError(
            f"side must be left, right, above or below, got {side!r}"
        )
    sign = -1 if side in ("left", "below") else 1
    if side in ("left", "right"):
        xs = [
            x0 + sign * depth,
            x0 + 2 * sign * depth,
            x1 + 2 * sign * depth,
            x1 + sign * depth,
        ]
        ys = [y0, y0, y1, y1]
        tx, ty = x0 + 2.6 * sign * depth, (y0 + y1) / 2
        ha, va = ("right" if sign < 0 else "left"), "center"
    else:
        xs = [x0, x0, x1, x1]
        ys = [
            y0 + sign * depth,
            y0 + 2 * sign * depth,
            y1 + 2 * sign * depth,
            y1 + sign * depth,
        ]
        tx, ty = (x0 + x1) / 2, y0 + 2.6 * sign * depth
        ha, va = "center", ("top" if sign < 0 else "bottom")
    ax.plot(xs, ys, color=EDGE, linewidth=1.2)
    ax.text(tx, ty, text, ha=ha, va=va, fontsize=_fontsize(fontsize))


def label(
    ax: plt.Axes, xy, text: str, *, fontsize: float = 10, **kwargs
) -> None:
    """Free text at ``xy`` (centred unless ``ha``/``va`` are given)."""
    x, y = _point(xy, "xy")
    kwargs.setdefault("ha", "center")
    kwargs.setdefault("va", "center")
    ax.text(x, y, text, fontsize=_fontsize(fontsize), **kwargs)


def shape_text(shape, names: Sequence[str] | None = None) -> str:
    """``(2, 5, 16)`` or, with names, ``(B=2, T=5, d=16)``: the label written
    on arrows.

    ``shape`` may be a ``torch.Size``, a tensor (its shape is used) or a tuple
    of ints, so a diagram's labels come from running the code rather than being
    typed by hand.
    """
    if isinstance(shape, torch.Tensor):
        shape = shape.shape
    dims = [int(d) for d in shape]
    if names is None:
        return "(" + ", ".join(map(str, dims)) + ")"
    if len(names) != len(dims):
        raise ValueError(
            f"names has {len(names)} entries for a shape of rank {len(dims)}"
        )
    return "(" + ", ".join(f"{n}={d}" for n, d in zip(names, dims)) + ")"
