"""The figure helpers chapters 5 and 6 call from folded cells:
proof.diagrams.logit_layouts and proof.diagrams.paths."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

from proof.diagrams.logit_layouts import logit_layouts  # noqa: E402
from proof.diagrams.paths import RED, recurrence_and_attention  # noqa: E402
from tests.conftest import raises  # noqa: E402


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 5, 3), (3, 2, 6)])
def test_logit_layouts_outline_the_labels_scores(shape):
    B, T, V = shape
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(*shape, generator=gen)
    labels = torch.randint(0, V, (B, T), generator=gen)
    fig, outlined = logit_layouts(logits, labels)
    want = logits.gather(-1, labels.unsqueeze(-1)).flatten().tolist()
    assert set(outlined) == {"stored", "reshape", "transpose"}
    for values in outlined.values():
        assert values == pytest.approx(want)
    patches = [p for ax in fig.axes for p in ax.patches]
    boxes = [p for p in patches if isinstance(p, Rectangle)]
    assert len(boxes) == 3 * B * T  # one outline per position and layout
    plt.close(fig)


def test_logit_layouts_checks_its_arguments():
    three, one = torch.zeros(3, dtype=torch.long), torch.zeros(1, 1).long()
    raises(ValueError, "logits", logit_layouts, torch.zeros(3, 4), three)
    raises(ValueError, "labels", logit_layouts, torch.zeros(2, 3, 4), three)
    raises(TypeError, "logits", logit_layouts, [[[0.0]]], one)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_paths_draws_the_edges_it_returns(n):
    fig, edges = recurrence_and_attention(n, n - 1, 1)
    rnn = {(i, j) for i, j, _ in edges["recurrent"]}
    chain = {(t, t - 1) for t in range(1, n)}
    assert rnn == {(t, t) for t in range(n)} | chain
    attention = {(i, j) for i, j, _ in edges["attention"]}
    assert attention == {(i, j) for i in range(n) for j in range(n)}
    red = [red for name in edges for *_, red in edges[name]]
    drawn = [p for p in fig.axes[0].patches if isinstance(p, FancyArrowPatch)]
    assert len(drawn) == len(red)  # one arrow per returned edge
    same = matplotlib.colors.same_color
    reds = sum(same(p.get_edgecolor(), RED) for p in drawn)
    assert reds == sum(red) == n  # n - 1 along the chain, 1 in attention
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"{n - 1} steps" in texts and "1 step" in texts
    plt.close(fig)


@pytest.mark.parametrize(
    "args,error",
    [
        ((7, 6, 1), ValueError),
        ((1, 0, 1), ValueError),
        ((3.0, 2, 1), TypeError),
    ],
)
def test_paths_checks_its_arguments(args, error):
    with pytest.raises(error, match="n"):
        recurrence_and_attention(*args)
