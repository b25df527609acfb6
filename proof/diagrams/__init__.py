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

from .architecture import transformer_architecture
from .base import COLORS, Box, bracket, canvas, label, shape_text
from .shapes import arrow, box, tensor

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
    "transformer_architecture",
]
