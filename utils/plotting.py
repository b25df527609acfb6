"""Plotting helpers: one style, labelled heatmaps and line plots."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch


def use_course_style() -> None:
    """The figure style (``utils.setup``): 6 in wide, 11 pt, for a phone."""
    plt.rcParams.update(
        {
            "figure.figsize": (6.0, 3.4),
            "figure.dpi": 100,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "image.cmap": "viridis",
            # none: a heatmap's cells go into the SVG as one pixel each,
            # drawn pixelated by the browser: sharp at any zoom, tiny files
            "image.interpolation": "none",
            "svg.hashsalt": "transformer-course",  # stable ids in saved SVG
            "svg.fonttype": "none",  # text as text: a tenth of the bytes
        }
    )


def _to_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def heatmap(
    matrix,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    ax: plt.Axes | None = None,
    annotate: bool = False,
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
) -> plt.Axes:
    """A labelled matrix (rows = queries / y, columns = keys / x)."""
    m = _to_numpy(matrix)
    if m.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {tuple(m.shape)}")
    if ax is None:
        _, ax = plt.subplots(
            figsize=(
                max(3.0, 0.45 * m.shape[1] + 1.5),
                max(2.5, 0.4 * m.shape[0] + 1.2),
            )
        )
    im = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.grid(False)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for labels, n, setter, ticks in (
        (xticklabels, m.shape[1], ax.set_xticklabels, ax.set_xticks),
        (yticklabels, m.shape[0], ax.set_yticklabels, ax.set_yticks),
    ):
        if labels is not None:
            if len(labels) != n:
                raise ValueError(
                    f"got {len(labels)} tick labels for an axis of length {n}"
                )
            ticks(range(n))
            setter(
                list(labels),
                rotation=45 if setter == ax.set_xticklabels else 0,
            )
    if annotate:
        _annotate(ax, m)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def _annotate(ax: plt.Axes, m: np.ndarray) -> None:
    """Each cell's value written on it, white on the darker half of the
    colour scale (viridis runs dark to light), black on the lighter."""
    lo, hi = np.nanmin(m), np.nanmax(m)
    for (i, j), value in np.ndenumerate(m):
        light = (value - lo) < 0.5 * (hi - lo) if hi > lo else True
        color = "white" if light else "black"
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=10,
                color=color)  # fmt: skip
