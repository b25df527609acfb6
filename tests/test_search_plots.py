"""Chapter 9's figures: the beam tree is replayed from a real trace, and
every figure fits a phone (at most 6 inches wide, text of 10 points or
more)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from proof.diagrams import search as search_plots  # noqa: E402
from utils.decoding import BigramModel, beam_search  # noqa: E402


def _readable(fig):
    assert fig.get_size_inches()[0] <= 6.0
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert texts and min(t.get_fontsize() for t in texts) >= 10
    plt.close(fig)


def _toy():
    p = torch.full((6, 6), 1e-9)
    p[1, 3], p[1, 4] = 0.6, 0.4  # BOS -> A or B
    p[3, 2], p[3, 5] = 0.4, 0.6  # A -> EOS or C
    p[4, 2] = p[5, 2] = 1.0
    p[0, 0] = p[2, 2] = 1.0
    return BigramModel((p / p.sum(1, keepdim=True)).log())


def test_the_tree_replays_the_trace_and_its_path_spells_the_output():
    steps = []
    src = torch.zeros(1, 1, dtype=torch.long)
    [(best, score)] = beam_search(_toy(), src, 4, 1, 2, 3, trace=steps)[0]
    nodes = search_plots.trace_nodes(steps)
    assert len(nodes) == len(steps) + 1 and nodes[0][0][2] is None
    path = search_plots.best_path(nodes, best, score, 2)
    assert [nodes[t][j][0] for t, j in sorted(path)] == best[1:].tolist()
    fig = search_plots.draw_beam_tree(
        nodes, path, lambda t: "ABCDEF"[t], 2, 0, "greedy output: A"
    )
    _readable(fig)


def test_the_other_figures_fit_a_phone():
    labels = list("abcdefgh")
    panels = [(f"panel {i}", [0.1] * 8) for i in range(4)]
    _readable(search_plots.sampling_panels(panels, labels))
    curves = dict(
        temperature=[(0.5, 0.8, 1.5), (1.0, 0.4, 1.4)],
        top_p=[(0.3, 0.8, 0.8), (1.0, 0.4, 1.4)],
    )
    row = dict(
        temperature=[[0.8, 1.5], [0.4, 1.4]], top_p=[[0.8, 0.8], [0.4, 1.4]]
    )
    _readable(search_plots.quality_diversity(curves, (0.8, 0.8), [row] * 3))
    lc = {"a": [(50, 0.1), (100, 0.5)], "b": [(50, 0.0), (100, 0.0)]}
    twice = {k: [v, v] for k, v in lc.items()}
    _readable(search_plots.learning_curves(lc, twice))
