"""Chapter 5's figure: the same logits in the three layouts
``F.cross_entropy`` is given, with the correct label's score outlined."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils.checks import check_tensor


def _panel(ax, m, picks, title, xlabel, ylabel, xticks, yticks) -> list:
    """One annotated heatmap (NaN = gap); outlines ``picks`` (row, col) and
    returns the outlined values."""
    ax.imshow(m, cmap="coolwarm", vmin=-2.5, vmax=2.5, aspect="auto")
    ax.grid(False)
    for (i, j), value in np.ndenumerate(m):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", size=11)
    for i, j in picks:
        corner = (j - 0.5, i - 0.5)
        ax.add_patch(plt.Rectangle(corner, 1, 1, fill=False, lw=2, ec="k"))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set_xticks(range(m.shape[1]), xticks, fontsize=11)
    ax.set_yticks(range(m.shape[0]), yticks, fontsize=11)
    return [float(m[i, j]) for i, j in picks]


def _with_gaps(blocks: list, axis: int) -> np.ndarray:
    """Blocks joined along ``axis`` with a NaN row (0) or column (1)
    between them."""
    parts = []
    for block in blocks:
        gap_shape = (1, block.shape[1]) if axis == 0 else (block.shape[0], 1)
        parts += [block, np.full(gap_shape, np.nan)]
    return np.concatenate(parts[:-1], axis=axis)


def logit_layouts(
    logits: torch.Tensor, labels: torch.Tensor
) -> tuple[plt.Figure, dict[str, list[float]]]:
    """Draw logits ``(B, T, V)`` stored, as ``reshape(B*T, V)`` and as
    ``transpose(1, 2)``, outlining each position's score of its label
    ``(B, T)``. Returns the figure and, per layout, the outlined values in
    (b, t) order, read back from the drawn matrices."""
    logits = check_tensor(logits, "logits", ndim=3)
    B, T, V = logits.shape
    labels = check_tensor(labels, "labels", shape=(B, T))
    x, y = logits.detach().numpy(), labels.numpy()
    bt = [f"{b},{t}" for b in range(B) for t in range(T)]
    bt_gap = sum(([*bt[b * T : (b + 1) * T], ""] for b in range(B)), [])[:-1]
    fig = plt.figure(figsize=(6.0, 6.6))
    grid = fig.add_gridspec(2, 2, height_ratios=[7, 4])
    pairs = [(b, t) for b in range(B) for t in range(T)]
    outlined = {
        "stored": _panel(
            fig.add_subplot(grid[0, 0]),
            _with_gaps(list(x), axis=0),
            [(t + (T + 1) * b, y[b, t]) for b, t in pairs],
            "stored: (B, T, V)",
            "vocabulary id (dim 2)",
            "b, t",
            range(V),
            bt_gap,
        ),
        "reshape": _panel(
            fig.add_subplot(grid[0, 1]),
            x.reshape(B * T, V),
            [(b * T + t, y[b, t]) for b, t in pairs],
            "reshape: (B*T, V)",
            "class = vocabulary id (dim 1)",
            "row n = b*T + t",
            range(V),
            range(B * T),
        ),
        "transpose": _panel(
            fig.add_subplot(grid[1, :]),
            _with_gaps([x[b].T for b in range(B)], axis=1),
            [(y[b, t], t + (T + 1) * b) for b, t in pairs],
            "transpose(1, 2): (B, V, T)",
            "b, t",
            "class (dim 1)",
            bt_gap,
            range(V),
        ),
    }
    fig.suptitle(
        "The same logits in three layouts; outlined: the correct label"
    )
    fig.tight_layout()
    return fig, outlined
