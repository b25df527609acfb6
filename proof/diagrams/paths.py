"""Chapter 6's figure: a recurrent layer and self-attention drawn as
computation graphs, with the longest path in red."""

from __future__ import annotations

import matplotlib.pyplot as plt

from utils.checks import check_int

from .base import bracket, canvas, label
from .shapes import arrow, box

RED, GREY = "#c0392b", "#8a8a8a"
STEP = 0.6  # inches between neighbouring positions


def recurrence_and_attention(
    n: int, rnn_path: int, attn_path: int
) -> tuple[plt.Figure, dict[str, list[tuple[int, int, bool]]]]:
    """Draw ``n`` positions of a recurrent layer (left: ``x_t -> h_t`` and
    ``h_(t-1) -> h_t``) and of self-attention (right: every ``x_j -> y_i``);
    the brackets quote ``rnn_path`` and ``attn_path``. Returns the figure and,
    per panel, the drawn edges ``(i, j, red)``: output ``i`` reads input
    ``j``, red when on the drawn longest path."""
    if check_int(n, "n", 2) > 6:
        raise ValueError(f"n must be at most 6 to fit the canvas, got {n}")
    edges: dict[str, list[tuple[int, int, bool]]] = {
        "recurrent": [],
        "attention": [],
    }
    fig, ax = canvas(6.4, 2.9)
    # left: the recurrent layer, a chain of n steps
    label(ax, (1.6, 2.7), "recurrent layer: n steps in a chain", fontsize=11)
    xs, tokens, states = _rows(ax, n, 0.4, "h")
    for t in range(n):
        arrow(ax, tokens[t].top, states[t].bottom, color=GREY)
        edges["recurrent"].append((t, t, False))
        if t:  # h_t reads h_(t-1): the chain the first input travels
            arrow(ax, states[t - 1].right, states[t].left, color=RED)
            edges["recurrent"].append((t, t - 1, True))
    text = f"path $h_1 \\to h_{n}$: {rnn_path} steps"
    bracket(ax, (xs[0], 2.0), (xs[-1], 2.0), text, side="above")
    # right: self-attention, one step over all n x n pairs
    label(ax, (4.75, 2.7), "self-attention: one step, n x n pairs")
    xs, inputs, outputs = _rows(ax, n, 3.55, "y")
    for i in range(n):
        for j in range(n):
            red = (i, j) == (n - 1, 0)  # the pair furthest apart
            colour = RED if red else GREY
            arrow(
                ax, inputs[j].top, outputs[i].bottom, style="-", color=colour
            )
            edges["attention"].append((i, j, red))
    text = f"path $x_1 \\to y_{n}$: {attn_path} step"
    bracket(ax, (xs[0], 2.0), (xs[-1], 2.0), text, side="above")
    return fig, edges


def _rows(ax, n: int, left: float, out: str) -> tuple[list, list, list]:
    """A panel's n positions from ``left``, the inputs ``x_t`` and above
    them the outputs (``out``: h or y); both panels share this layout."""
    xs = [left + STEP * t for t in range(n)]
    inputs = [
        box(ax, (x, 0.5), f"$x_{t + 1}$", w=0.46, h=0.42, kind="input")
        for t, x in enumerate(xs)
    ]
    outputs = [
        box(ax, (x, 1.75), f"${out}_{t + 1}$", w=0.5, h=0.42, kind="attention")
        for t, x in enumerate(xs)
    ]
    return xs, inputs, outputs
