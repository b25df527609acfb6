"""The diagrams' ground: colours, geometry (``Box``), the canvas, free
labels, brackets and shape labels. Coordinates are inches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from utils.checks import check_number

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
MIN_FONT = (  # proof.figures checks the size each text shows at on a phone
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
    ax: plt.Axes, xy, text: str, *, fontsize: float = 11, **kwargs
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
