"""proof.figures and proof.labels: the funnel every figure the harness shows
passes through (in a reader's plain kernel, none); the Chinese mode."""

from __future__ import annotations

import os
import pathlib
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from proof import diagrams, figures, labels  # noqa: E402
from utils import plotting  # noqa: E402
from tests.conftest import raises


@pytest.fixture(autouse=True)
def english():
    labels.set_language("en")
    plotting.use_course_style()
    yield
    labels.set_language("en")
    plt.rcParams.update(matplotlib.rcParamsDefault)
    plotting.use_course_style()
    plt.close("all")


def _line(fontsize=11, width=6.0):
    fig, ax = plt.subplots(figsize=(width, 3))
    ax.plot([0, 1, 2], [0, 1, 4], label="loss")
    ax.set(title="Training loss", xlabel="step", ylabel="loss")
    ax.legend(fontsize=fontsize)
    ax.tick_params(labelsize=fontsize)
    return fig


def test_css_px_follows_the_column():
    # 12 pt in a 6 in figure shrunk to 342 px: 12 * 342 / 432 = 9.5 px.
    assert figures.css_px(12, 6.0) == pytest.approx(12 * 342 / 432)
    # A narrow figure is not enlarged: 12 pt at 96 dpi is 16 px.
    assert figures.css_px(12, 2.0) == pytest.approx(16)


def test_a_legible_figure_passes_and_a_small_one_fails():
    good = _line()
    figures.finish(good)  # raises nothing
    bad = _line(fontsize=6, width=7.0)
    raises(figures.FigureError, r"6 pt .* CSS px", figures.finish, bad)


def test_a_wide_figure_fails_even_with_normal_text():
    wide = _line(fontsize=10, width=9.0)
    raises(figures.FigureError, "narrower figure", figures.finish, wide)


def test_overlapping_texts_fail_and_name_both():
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.set_title("apart")
    ax.text(0.5, 0.5, "first label", fontsize=11)
    ax.text(0.52, 0.5, "second label", fontsize=11)
    raises(figures.FigureError, "'first label'.*'second", figures.finish, fig)


def test_crowded_tick_labels_fail():
    fig, ax = plt.subplots(figsize=(3, 2))
    words = [f"word{i}" for i in range(12)]
    ax.set_xticks(range(12), words)
    raises(figures.FigureError, "overlapping", figures.finish, fig)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_xticks(range(3), words[:3])
    figures.finish(fig)


def test_a_diagram_is_checked_like_a_plot():
    fig, ax = diagrams.canvas(5, 2, title="Scores")
    q = diagrams.box(ax, (1, 1), "query", kind="input")
    s = diagrams.box(ax, (4, 1), "q . k", kind="attention")
    diagrams.arrow(ax, q.right, s.left, text="(1, 4)")
    figures.finish(fig)
    fig, ax = diagrams.canvas(5, 2)
    diagrams.box(ax, (1, 1), "one box", kind="input")
    diagrams.label(ax, (1.1, 1), "on top")
    raises(figures.FigureError, "'one box' / 'on top'", figures.finish, fig)


def test_figures_are_light_svg_with_a_record():
    data, meta = figures.encode(_line())
    svg = data["image/svg+xml"]
    # text as text (a tenth of the bytes of glyph outlines), no glyph defs
    assert "<text" in svg and "DejaVuSans-" not in svg
    assert "rotate(-0" not in svg
    assert "dc:date" not in svg  # the same figure gives the same bytes
    assert svg == figures.encode(_line())[0]["image/svg+xml"]
    pt, width = map(float, figures.RECORD_RE.search(svg).groups())
    assert pt == 11 and 4 < width < 6.5
    ax = plotting.heatmap(
        [[0.1, 0.9], [0.5, 0.5]], title="w", xlabel="key", ylabel="query"
    )
    data, meta = figures.encode(ax.figure)
    svg = data["image/svg+xml"]
    # the 2 x 2 matrix goes in as 2 x 2 pixels, scaled up without smoothing
    assert 'width="2" height="2"' in svg and "pixelated" in svg
    assert figures.RECORD_RE.search(svg) and meta == {}


def test_figures_keep_every_number_their_text_shows():
    """Coordinates are rounded to 0.01 pt, the text shown never is."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([0, 1000], [0.00625, 0.0125])
    ax.set(title="peak learning rate 0.00625", xlabel="step 12.3456")
    ax.set_yticks([0.00625, 0.0125])
    ax.set_yticklabels(["0.00625", "0.0125"])
    svg = figures.encode(fig)[0]["image/svg+xml"]
    plt.close(fig)
    shown = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    for text in ("peak learning rate 0.00625", "step 12.3456", "0.0125"):
        assert text in shown, shown
    # and the coordinates are still rounded: no 3-decimal number in a tag
    tags = re.sub(r"scale\([^)]*\)", "", " ".join(re.findall("<[^<>]*>", svg)))
    assert not re.search(r"(?<![\w.#-])\d+\.\d{3,}(?!\d)", tags)


def _chinese(monkeypatch, entries, patterns=()):
    """Chinese mode with this label table; skips without a CJK font."""
    if labels.cjk_font() is None:
        pytest.skip("no CJK font installed")
    monkeypatch.setattr(labels, "table", lambda: (entries, tuple(patterns)))
    assert labels.set_language("zh") == "zh"


def test_chinese_mode_translates_and_refuses_missing_entries(monkeypatch):
    seed = (re.compile(r"^seed (?P<n>[^A-Za-z\s]+)$"), "seed {n}", "种子 {n}")
    table = {"Training loss": "训练损失", "step": "步", "loss": "损失"}
    _chinese(monkeypatch, table, [seed])
    fig = _line()
    fig.axes[0].set_xticks([0, 1], ["step", "seed 3"])
    figures.finish(fig)
    shown = {t.get_text() for t in figures.texts(fig)}
    assert {"训练损失", "步", "损失", "种子 3"} <= shown
    assert not any(labels.needs_translation(t) for t in shown)
    fig = _line()
    fig.axes[0].set_title("Validation loss")
    raises(KeyError, "'Validation loss'", figures.finish, fig)


def test_categorical_ticks_are_translated_and_checked(monkeypatch):
    """A categorical axis makes its ticks only when drawn; every font stack
    ends with the generic sans-serif."""
    table = {"shared embedding": "共享嵌入", "output bias": "输出偏置"}
    _chinese(monkeypatch, table)
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.barh(["shared embedding", "output bias"], [1, 200])
    ax.set_xscale("log")  # mathtext ticks ($10^{2}$) name their own font
    figures.finish(fig)
    shown = [t.get_text() for t in ax.get_yticklabels()]
    assert shown == ["共享嵌入", "输出偏置"]
    assert ax.yaxis.convert_units("output bias") == 1
    svg = figures.encode(fig)[0]["image/svg+xml"]
    stacks = set(re.findall(r"font-family: ([^;}]*)", svg))
    assert stacks and all(s.endswith("sans-serif") for s in stacks), stacks
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.barh(["shared embedding", "decoder (6 layers)"], [1, 2])
    raises(KeyError, "'decoder \\(6 layers\\)'", figures.finish, fig)


def test_no_chinese_entry_mixes_maths_and_cjk(caplog):
    """mathtext has no font fallback: Chinese beside $maths$ draws boxes."""
    if labels.cjk_font() is None:
        pytest.skip("no CJK font installed")
    cjk = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
    mixed = [zh for _, zh in labels.entries() if "$" in zh and cjk.search(zh)]
    assert not mixed
    labels.set_language("zh")  # the check can fail: a mixed text warns
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.set_title("路径 $h_1$")
    fig.canvas.draw()
    assert "does not have a glyph" in caplog.text


def test_maths_numbers_and_symbols_stay():
    for text in ["0.25", "$d_{model}$", "(2, 5, 16)", "x", "Q", "×2", "-1"]:
        assert not labels.needs_translation(text)
        assert labels.translate(text) == text
    assert labels.needs_translation("$x$ value")


def test_the_table_maps_strings_to_strings():
    """Flat maps of strings (``by figure``: one per figure name)."""
    raw = yaml.safe_load(labels.TABLE.read_text(encoding="utf-8"))
    scoped = raw.pop(labels.BY_FIGURE, {})
    assert isinstance(scoped, dict)
    for table in (raw, *scoped.values()):
        assert table
        assert all(isinstance(x, str) for row in table.items() for x in row)
    for en, zh in labels.entries():
        # slots keep their names, so a pattern cannot lose a number
        slots = sorted(re.findall(r"\{\w+\}", en))
        assert slots == sorted(re.findall(r"\{\w+\}", zh)), en


def _sentence_heads(title: str, words: list[str]):
    """Chapter 2's example sentence as the ticks of a weight map."""
    n = len(words)
    weights = [[float(i == j + 1) for j in range(n)] for i in range(n)]
    ax = plotting.heatmap(weights, title=title, xlabel="key", ylabel="query",
                          xticklabels=words, yticklabels=words,
                          colorbar=False)  # fmt: skip
    return ax.figure


def test_an_english_example_stays_english_beside_a_translated_label():
    """The real table: "robot" in chapter 2's sentence is kept, the toy in
    its first diagram is translated."""
    from tools.editions import zh_notebooks as zh

    if labels.cjk_font() is None:
        pytest.skip("no CJK font installed")
    assert labels.set_language("zh") == "zh"
    words = "the robot must obey the orders given it".split()
    fig = _sentence_heads("head 2: pronoun -> noun", words)
    figures.finish(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == words
    assert ax.get_title() == "头 2：代词 -> 名词"
    lines = zh.figure_lines(figures.encode(fig)[0]["image/svg+xml"])
    assert " ".join(words) in lines
    assert not any(zh.chinese_inside_english(t) for t in lines)

    fig, ax = diagrams.canvas(4.0, 2.0, title="One query against three keys")
    for j, toy in enumerate(["ball", "car", "robot"]):
        diagrams.label(ax, (1.0 + j, 1.0), toy)
    figures.finish(fig)
    shown = {t.get_text() for t in figures.texts(fig)}
    assert {"一个查询对三个键", "球", "小汽车", "机器人"} <= shown


def test_entries_under_a_figure_hold_in_that_figure_only(monkeypatch):
    """A ``by figure`` entry holds in the figure of that title only."""
    table = {"Toys": "玩具", "Words": "单词", "key": "键", "query": "查询"}
    _chinese(monkeypatch, table)
    toy = labels._compile({"robot": "机器人"})
    monkeypatch.setattr(labels, "figure_tables", lambda: {"Toys": toy})
    fig = _sentence_heads("Toys", ["a", "robot"])
    figures.finish(fig)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "机器人"]
    fig = _sentence_heads("Words", ["a", "robot"])
    raises(KeyError, "'robot'", figures.finish, fig)


def _run_cells(cells, env_check: str | None):
    """Run ``cells`` in a fresh kernel, COURSE_CHECK_FIGURES=``env_check``
    (None: not "1", as in Colab)."""
    from nbclient import NotebookClient

    env = {**os.environ, "COURSE_CHECK_FIGURES": env_check or "0"}
    cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(nb, allow_errors=True, timeout=120).execute(env=env)
    return nb


_ROOT = str(pathlib.Path(figures.__file__).resolve().parents[1])
_BAD_CELLS = [
    f"import sys; sys.path.insert(0, {_ROOT!r})\n"
    "import matplotlib.pyplot as plt, proof\n_ = proof.setup(0)",
    "fig, ax = plt.subplots(figsize=(4, 3))\nax.plot([1, 2])\n6 * 7",
    "fig, ax = plt.subplots(figsize=(4, 3))\n"
    "ax.set_title('tiny', fontsize=4)\nplt.show()",
    "fig, ax = plt.subplots(figsize=(4, 3))\n"
    "ax.text(0, 0, 'same'); ax.text(0, 0, 'same')",
    "ip = get_ipython()\n"
    "print(sorted(type(t).__name__ for t in ip.ast_transformers))",
]


def test_a_bad_figure_fails_the_cell_under_the_harness():
    """Under the harness the cell itself raises (so refresh and nbval fail),
    shown by plt.show() or at the cell's end; a good cell keeps its value."""
    nb = _run_cells(_BAD_CELLS, "1")
    good, small, overlap = nb.cells[1:4]
    kinds = [o.output_type for o in good.outputs]
    assert "error" not in kinds
    assert good.outputs[0].data["text/plain"] == "42"
    shown = [o for o in good.outputs if "data" in o and len(o.data) > 1]
    assert set(shown[0].data) == {"image/svg+xml", "text/plain"}
    for cell, words in ((small, "'tiny'"), (overlap, "'same' / 'same'")):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors and errors[0].ename == "FigureError", cell.source
        assert words in errors[0].evalue


def test_a_plain_kernel_gets_no_figure_check():
    """In a reader's kernel (Colab) nothing can fail a figure."""
    nb = _run_cells(_BAD_CELLS, None)
    for cell in nb.cells:
        kinds = [o.output_type for o in cell.outputs]
        assert "error" not in kinds, (cell.source, cell.outputs)
    printed = nb.cells[-1].outputs[0].text
    assert "_AtCellEnd" not in printed, printed
    shown = [o for o in nb.cells[2].outputs if "data" in o]
    assert shown and "image/png" in shown[0].data  # the backend's own PNG
