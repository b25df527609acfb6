"""Chapter 9's figures: a beam search tree replayed from its trace, next-token
distributions before and after the sampling filters, quality against
diversity, and learning curves with their spread over seeds.

Every figure is at most 6 inches wide with text of at least 10 points, so it
stays readable on a phone.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt

from .. import diagrams

__all__ = [
    "trace_nodes",
    "best_path",
    "draw_beam_tree",
    "sampling_panels",
    "quality_diversity",
    "learning_curves",
]


def trace_nodes(steps) -> list:
    """``beam_search(..., trace=steps)`` of one source -> ``nodes[t][j] =
    (token, score, parent index in column t - 1)``, column 0 being BOS."""
    nodes = [[("<bos>", 0.0, None)]]
    for st in steps:
        nodes.append(
            [
                (
                    st["token"][0, j].item(),
                    st["score"][0, j].item(),
                    st["parent"][0, j].item(),
                )
                for j in range(st["token"].size(1))
            ]
        )
    return nodes


def _path_of(nodes, t: int, j: int) -> list[int]:
    out = []
    while t > 0:
        out.append(j)
        j = nodes[t][j][2]
        t -= 1
    return out[::-1]


def best_path(nodes, best, score: float, eos_id: int) -> set:
    """The (column, beam) boxes of the returned hypothesis ``best`` (ids,
    BOS first) with summed log-probability ``score``."""
    n = len(best) - 1  # the column where it emitted EOS
    want = best[1:].tolist()
    end = next(
        j
        for j, (tok, s, _) in enumerate(nodes[n])
        if tok == eos_id
        and abs(s - score) < 1e-4
        and [nodes[t + 1][p][0] for t, p in enumerate(_path_of(nodes, n, j))]
        == want
    )
    return set(zip(range(1, n + 1), _path_of(nodes, n, end)))


def draw_beam_tree(nodes, path, token_text, eos_id, pad_id, footer: str):
    """Columns of boxes (token and score) linked parent -> child, one row
    per beam; the boxes in ``path`` highlighted; ``footer`` written below."""
    cols, rows = len(nodes), max(len(col) for col in nodes)
    width, dy = 6.0, 0.72
    dx, height = (width - 0.3) / cols, 1.14 + rows * dy
    title = f"Beam search, beam of {rows}"
    fig, ax = diagrams.canvas(width, height, title=title)
    place = {}
    for t, col in enumerate(nodes):
        for j, (tok, score, parent) in enumerate(col):
            done_before = t > 1 and nodes[t - 1][parent][0] in (eos_id, pad_id)
            if tok == pad_id or done_before or math.isinf(score):
                continue  # a finished beam carried along: not a new node
            xy = (0.3 + (t + 0.5) * dx, height - 0.9 - j * dy)
            kind = "attention" if (t, j) in path else "input"
            text = "BOS" if t == 0 else f"{token_text(tok)}\n{score:.1f}"
            place[t, j] = diagrams.box(
                ax, xy, text, w=dx * 0.86, h=0.58, kind=kind, fontsize=10
            )
            if t > 0:
                diagrams.arrow(
                    ax, place[t - 1, parent].right, place[t, j].left
                )
    diagrams.label(ax, (width / 2, 0.2), footer, fontsize=10)
    return fig


def sampling_panels(panels, labels):
    """Four bar charts, two per row: ``panels`` = [(title, heights)]."""
    fig, axes = plt.subplots(2, 2, figsize=(6.0, 4.8), sharey=True)
    labels = [t.strip("<>") for t in labels]  # "<eos>" crowds its neighbours
    for ax, (title, heights) in zip(axes.flat, panels):
        ax.bar(range(len(labels)), heights, color="tab:blue")
        ax.set_xticks(range(len(labels)), labels, fontsize=10)
        ax.set_title(title, fontsize=11)
        ax.set_ylim(0, 1)
    for ax in axes[:, 0]:
        ax.set_ylabel("probability", fontsize=10)
    fig.supxlabel("next token (the 8 most probable)", fontsize=10)
    fig.tight_layout()
    return fig


def _spread(rows, key):
    """(min, median, max) per setting over seeds: rows[s][key][i] = value."""
    cols = list(zip(*(r[key] for r in rows)))
    out = []
    for c in cols:
        c = sorted(c)
        out.append((c[0], c[len(c) // 2], c[-1]))
    return out


def quality_diversity(curves, greedy_point, seed_rows):
    """Two panels (temperature, top-p): quality (share valid) against
    diversity (distinct valid outputs per source). ``seed_rows`` =
    [{"temperature": [[q, d], ...], "top_p": ...}] gives the line (median
    over seeds) and its min-max bars; ``curves`` = {"temperature":
    [(setting, quality, diversity)], "top_p": [...]} is this run, drawn as
    hollow circles; ``greedy_point`` = (quality, diversity)."""
    fig, axes = plt.subplots(1, 2, figsize=(6.0, 3.4), sharey=True)
    names = {"temperature": "T", "top_p": "p"}
    for ax, (key, points) in zip(axes, curves.items()):
        q = _spread([{"v": [v[0] for v in r[key]]} for r in seed_rows], "v")
        d = _spread([{"v": [v[1] for v in r[key]]} for r in seed_rows], "v")
        xs, ys = [m for _, m, _ in d], [m for _, m, _ in q]
        ax.errorbar(
            xs,
            ys,
            xerr=[[m - lo for lo, m, _ in d], [hi - m for _, m, hi in d]],
            yerr=[[m - lo for lo, m, _ in q], [hi - m for _, m, hi in q]],
            fmt="o-",
            color="tab:blue",
            ecolor="tab:gray",
            label="median, min-max of 5 seeds",
        )
        ax.plot(
            [p[2] for p in points],
            [p[1] for p in points],
            "o",
            mfc="none",
            color="black",
            label="this run",
        )
        for i, (s, _, _) in enumerate(points):
            if i in (0, len(points) - 1):
                ax.annotate(
                    f"{names[key]}={s:g}",
                    (xs[i], ys[i]),
                    textcoords="offset points",
                    xytext=(-8, -16) if i == 0 else (6, 6),
                    ha="right" if i == 0 else "left",
                    fontsize=10,
                )
        ax.plot(*greedy_point[::-1], "s", color="tab:orange", label="greedy")
        ax.set_xlim(0, 2.2)
        ax.set_ylim(0, 1.1)
        ax.set_title(f"sampling over {key.replace('_', '-')}", fontsize=11)
        ax.set_xlabel("distinct valid outputs per input", fontsize=10)
    axes[0].set_ylabel("share of samples valid", fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def learning_curves(curves, seed_rows=None):
    """Share of validation numbers decoded validly against training step,
    one line per decoder; ``curves`` = {label: [(step, rate)]};
    ``seed_rows`` = {label: [[(step, rate)], ...]} adds a min-max band."""
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for label, points in curves.items():
        steps = [s for s, _ in points]
        line = ax.plot(steps, [r for _, r in points], "o-", label=label)
        if seed_rows and label in seed_rows:
            by_step = list(zip(*([r for _, r in c] for c in seed_rows[label])))
            ax.fill_between(
                steps,
                [min(v) for v in by_step],
                [max(v) for v in by_step],
                color=line[0].get_color(),
                alpha=0.2,
            )
    ax.set(ylim=(-0.02, 1.02))
    ax.set_title("Valid outputs during training (band: 5 seeds)", fontsize=11)
    ax.set_xlabel("training step", fontsize=10)
    ax.set_ylabel("share valid", fontsize=10)
    fig.legend(loc="lower center", ncol=len(curves), fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
