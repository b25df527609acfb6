"""Chapter 8's teacher-forcing figure: the decoder input, the prediction and
the label of one word, one grid row each, aligned by position."""

from __future__ import annotations

from collections.abc import Sequence

from .base import COLORS, canvas, label
from .shapes import arrow, tensor

X0 = 2.3  # left edge of the grids (inches); the row names sit left of it


def _width(ax, tokens) -> float:
    """A grid row's width: drawn once to measure, then removed again."""
    before = set(ax.get_children())
    width = tensor(ax, (1, 1), [tokens], fmt="{}", fontsize=11).w
    for artist in set(ax.get_children()) - before:
        artist.remove()
    return width


def teacher_forcing(
    title: str,
    decoder_in: Sequence[str],
    predicted: Sequence[str],
    labels: Sequence[str],
):
    """Three rows of tokens, one per position: ``decoder_in`` (bottom),
    ``predicted`` (middle, red where it differs from the label) and
    ``labels`` (top), with one arrow per position for the single pass.
    Returns the figure."""
    n = len(labels)
    if not (len(decoder_in) == len(predicted) == n > 0):
        raise ValueError(
            "decoder_in, predicted and labels must have the same length "
            f"> 0, got {len(decoder_in)}, {len(predicted)} and {n}"
        )
    fig, ax = canvas(7.0, 3.0, title=title)
    rows = [
        (0.55, "decoder input", decoder_in, "input"),
        (1.55, "prediction", predicted, "attention"),
        (2.3, "label = target", labels, "output"),
    ]
    grids = {}
    for y, name, tokens, kind in rows:
        right = [
            kind != "attention" or p == t for p, t in zip(predicted, labels)
        ]
        colors = [[COLORS[kind] if r else COLORS["mask"] for r in right]]
        tokens = [t.strip("<>") for t in tokens]  # bos, eos: narrower cells
        width = _width(ax, tokens)
        grids[name] = tensor(
            ax,
            (X0 + width / 2, y),
            [tokens],
            fmt="{}",
            fontsize=11,
            colors=colors,
        )
        label(ax, (X0 - 0.12, y), name, ha="right", fontsize=11)
    grid = grids["decoder input"]
    for j in range(n):  # one arrow per position, all computed in one pass
        x = X0 + (j + 0.5) * grid.w / n
        arrow(ax, (x, 0.55 + grid.h / 2), (x, 1.55 - grid.h / 2))
    label(
        ax,
        (X0 - 0.12, 1.05),
        "decoder, one pass",
        ha="right",
        fontsize=11,
        color="#1f3b73",
    )
    return fig
