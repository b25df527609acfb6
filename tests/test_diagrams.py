"""proof.diagrams: geometry, labels from code, legibility limits and argument
checks."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from proof import diagrams as D  # noqa: E402
from proof.diagrams.rows import teacher_forcing  # noqa: E402
from tests.conftest import raises, raising


@pytest.fixture
def ax():
    fig, ax = D.canvas(6, 3)
    yield ax
    plt.close(fig)


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_canvas_units_are_inches():
    fig, ax = D.canvas(5, 2, title="T")
    assert tuple(fig.get_size_inches()) == (5, 2)
    assert ax.get_xlim() == (0, 5) and ax.get_ylim() == (0, 2)
    assert "T" in _texts(ax)
    plt.close(fig)


def test_box_anchors(ax):
    b = D.box(ax, (2, 1), "FFN", w=1.0, h=0.4, kind="ffn")
    assert b.left == (1.5, 1) and b.right == (2.5, 1)
    assert b.top == (2, 1.2) and b.bottom == (2, 0.8)
    assert "FFN" in _texts(ax)


def test_tensor_writes_every_entry_and_widens_cells(ax):
    values = torch.tensor([[1.5, -22.25], [0.0, 3.0]])
    b = D.tensor(ax, (3, 1.5), values, fmt="{:.2f}", title="S (2, 2)")
    assert {"1.50", "-22.25", "0.00", "3.00", "S (2, 2)"} <= set(_texts(ax))
    assert b.h == pytest.approx(2 * 0.28)
    assert b.w > 2 * 0.28  # "-22.25" does not fit a square 0.28-inch cell


def test_tensor_draws_booleans_as_filled_cells(ax):
    D.tensor(ax, (3, 1.5), torch.tensor([[True, False]]))
    faces = [p.get_facecolor() for p in ax.patches]
    assert len(faces) == 2 and faces[0] != faces[1]
    assert _texts(ax) == []


def test_arrow_label_and_bracket(ax):
    a, b = D.box(ax, (1, 1), "a"), D.box(ax, (4, 1), "b")
    D.arrow(ax, a.right, b.left, text=D.shape_text(torch.zeros(2, 7)))
    D.bracket(ax, (0.2, 0.5), (0.2, 2.5), "N x")
    assert "(2, 7)" in _texts(ax) and "N x" in _texts(ax)


def test_shape_text_names_dimensions():
    assert D.shape_text(torch.Size([2, 5, 16])) == "(2, 5, 16)"
    assert D.shape_text((2, 5), ["B", "T"]) == "(B=2, T=5)"


def test_tensor_writes_no_negative_zero(ax):
    D.tensor(ax, (3, 1.5), torch.tensor([[-0.001, -0.5]]), fmt="{:.2f}")
    assert _texts(ax) == ["0.00", "-0.50"]


SHAPES = dict(src_ids=(2, 6), tgt_ids=(2, 5), src_embed=(2, 6, 16),
              tgt_embed=(2, 5, 16), src_pos=(2, 6, 16),
              tgt_pos=torch.Size([2, 5, 16]), encoder=(2, 6, 16),
              decoder=torch.zeros(2, 5, 16), generator=(2, 5, 13))  # fmt: skip


def test_architecture_writes_the_shapes_it_is_given():
    fig, ax = D.transformer_architecture(SHAPES, 2)
    texts = _texts(ax)
    assert "memory (2, 6, 16)" in texts and "logits (2, 5, 13)" in texts
    assert "src ids (2, 6)" in texts and "2 x" in texts
    assert texts.count("Add & LayerNorm") == 5  # 2 encoder + 3 decoder
    assert "cross-attention" in texts and "masked self-attention" in texts
    plt.close(fig)


def test_architecture_as_the_course_map_tags_each_part():
    chapters = {"self-attention": "2, 3", "positional": 4, "loss": 5}
    fig, ax = D.transformer_architecture(None, 6, chapters=chapters)
    texts = _texts(ax)
    assert texts.count("2, 3") == 1 and texts.count("4") == 2  # both stacks
    assert "5" in texts and "softmax + loss" in texts and "6 x" in texts
    assert "memory" in texts and "logits" in texts  # no shapes: no numbers
    assert "src ids" in texts
    plt.close(fig)
    # without chapters: no tags, the drawing as chapter 7 shows it
    fig, ax = D.transformer_architecture(SHAPES, 2)
    assert "softmax + loss" not in _texts(ax)
    plt.close(fig)


def test_teacher_forcing_marks_wrong_predictions():
    tokens = ["<bos>", "A", "B"], ["A", "X", "<eos>"], ["A", "B", "<eos>"]
    ax = (fig := teacher_forcing("T", *tokens)).axes[0]
    texts = _texts(ax)
    # every token drawn once per row, angle brackets dropped
    assert texts.count("A") == 3 and "X" in texts and "bos" in texts
    red = matplotlib.colors.to_rgb(D.COLORS["mask"])
    # the one wrong prediction
    assert [p.get_facecolor()[:3] for p in ax.patches].count(red) == 1
    plt.close(fig)


BAD = r"""
ValueError | width must be <= 7.2 | D.canvas(9, 3)
ValueError | kind must be one of | D.box(ax, (1, 1), "x", kind="purple")
ValueError | fontsize must be >= 9 | D.box(ax, (1, 1), "x", fontsize=6)
TypeError | xy must be an | D.box(ax, 1.0, "x")
TypeError | values or shape | D.tensor(ax, (1, 1))
ValueError | 1-D or 2-D | D.tensor(ax, (1, 1), torch.zeros(2, 2, 2))
ValueError | colors must be 2 x 3 | D.tensor(ax, (1, 1), shape=(2, 3),
    colors=[["red"] * 3])
ValueError | side must be | D.bracket(ax, (0, 0), (0, 1), "x", side="middle")
ValueError | rank 2 | D.shape_text((2, 5), ["B"])
ValueError | shapes lacks \['generator'\] | D.transformer_architecture(
    {k: v for k, v in SHAPES.items() if k != "generator"}, 2)
TypeError | shapes must be a mapping | D.transformer_architecture([(2, 6)], 2)
ValueError | num_layers must be an int >= 1 | D.transformer_architecture(
    SHAPES, 0)
ValueError | norm must be 'Post-Norm' | D.transformer_architecture(SHAPES, 2,
    norm="Pre")
TypeError | chapters must be a mapping | D.transformer_architecture(SHAPES, 2,
    chapters=["loss"])
ValueError | unknown parts \['decoder'\] | D.transformer_architecture(SHAPES,
    2, chapters={"decoder": 7})
TypeError | chapters\['loss'\] must be | D.transformer_architecture(SHAPES, 2,
    chapters={"loss": 5.0})
ValueError | same length | teacher_forcing("T", ["<bos>"], ["A", "B"], ["A"])
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name, ax):
    raises(exc, name, eval, call, globals(), {"ax": ax})
