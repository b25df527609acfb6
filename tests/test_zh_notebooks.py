"""The Chinese notebooks (zh/book/*.ipynb, tools/editions/zh_notebooks.py)
are the English ones translated and current; nothing is executed. Each
failure names the command that regenerates it."""

from __future__ import annotations

import copy
import functools

import nbformat
import pytest

from proof import labels
from tools import ROOT
from tools.editions import build_book, code_comments, translations
from tools.editions import zh_notebooks
from tools.editions.notebooks import toc_notebooks
from tests.conftest import raises

CHAPTERS = toc_notebooks()
MASKS = ROOT / "book" / "03_masks.ipynb"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chinese_notebook_is_current(page):
    problems = zh_notebooks.problems(page)
    assert not problems, (
        f"{zh_notebooks.shown(zh_notebooks.zh_path(page))} is not current, "
        f"{len(problems)} problems:\n  "
        + "\n  ".join(problems[:15])
        + f"\n{zh_notebooks.regenerate_hint(page)}"
    )


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_no_figure_draws_a_chinese_word_inside_english(page):
    """An English example stays English in the Chinese figures (an entry
    matching one of its tokens belongs under its figure)."""
    target = zh_notebooks.zh_path(page)
    if not target.is_file():
        pytest.skip("no Chinese notebook (test_chinese_notebook_is_current)")
    found = zh_notebooks.mixed_figure_texts(nbformat.read(target, 4))
    assert not found, (
        f"{zh_notebooks.shown(target)}: a Chinese word inside English "
        "(move the entry under its figure in "
        f"{zh_notebooks.LABEL_TABLE.relative_to(ROOT)}, then "
        f"{zh_notebooks.regenerate_hint(page)}):\n  " + "\n  ".join(found)
    )


def test_a_chinese_word_inside_english_is_found():
    find = zh_notebooks.chinese_inside_english
    for text in [
        "the 机器人 must obey the orders given it",  # chapter 2, before
        "head 2: the robot 机器人",
        "球 car robot",
    ]:
        assert find(text), text
    for text in [
        "the robot must obey the orders given it",
        "无 dropout",  # one English word in Chinese
        "源 id 目标 id",  # as many Chinese words as English ones
        "相加 & LayerNorm 前馈 相加 & LayerNorm",
        "贪心输出：HH AH L OW   参考：HH AH L OW",  # a label, then English
        "'it' 看向哪里",
    ]:
        assert not find(text), text
    # the ticks of one axis (one style) read as one line, other texts apart
    svg = (
        '<text class="s4">the</text><text class="s4">机器人</text>'
        '<text class="s4">must</text><text class="s6">键</text>'
        '<text style="font: 9px">it &amp; it</text>'
    )
    lines = zh_notebooks.figure_lines(svg)
    assert lines == ["the 机器人 must", "键", "it & it"]
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plt.show()")
    cell.outputs = [
        nbformat.v4.new_output("display_data", {"image/svg+xml": svg})
    ]
    nb.cells = [cell]
    assert zh_notebooks.mixed_figure_texts(nb) == [
        f"cell {cell.id}: 'the 机器人 must'"
    ]


def test_every_chapter_has_its_chinese_notebook_and_nothing_else():
    wanted = {zh_notebooks.zh_path(p) for p in CHAPTERS}
    found = set((ROOT / "zh").glob("**/*.ipynb"))
    assert not wanted - found, (
        f"missing: {sorted(str(p) for p in wanted - found)}; "
        f"run {zh_notebooks.COMMAND} (make zh-notebooks)"
    )
    assert not found - wanted, (
        "Chinese notebooks of no chapter in _toc.yml (delete them): "
        f"{sorted(str(p) for p in found - wanted)}"
    )


def test_translate_replaces_prose_captions_alt_and_labels_only(
    tmp_path, monkeypatch
):
    units = translations.units(MASKS)
    fake = {
        k: {"en": v, "zh": f"中文 {i}"}
        for i, (k, v) in enumerate(units.items())
    }
    english = nbformat.read(MASKS, as_version=4)
    chinese = copy.deepcopy(english)
    zh_notebooks.translate(chinese, fake)
    assert [c.id for c in chinese.cells] == [c.id for c in english.cells]
    assert chinese.metadata == english.metadata
    captions = 0
    for en, zh in zip(english.cells, chinese.cells):
        if en.cell_type == "markdown":
            assert zh.source == fake[en.id]["zh"]
        elif en.cell_type == "code":
            assert (zh.source, zh.outputs) == (en.source, en.outputs)
            meta = copy.deepcopy(en.metadata)
            mystnb = meta.get("mystnb", {})
            if f"{en.id}/caption" in fake:
                captions += 1
                mystnb["figure"]["caption"] = fake[f"{en.id}/caption"]["zh"]
            if f"{en.id}/alt" in fake:
                mystnb["image"]["alt"] = fake[f"{en.id}/alt"]["zh"]
            for key in ("code_prompt_show", "code_prompt_hide"):
                if key in mystnb:
                    mystnb[key] = zh_notebooks.ZH_PROMPTS[mystnb[key]]
            assert zh.metadata == meta
    assert captions > 0  # the page has figures, so this checked some


def test_an_untranslated_unit_keeps_its_english():
    english = nbformat.read(MASKS, as_version=4)
    chinese = copy.deepcopy(english)
    zh_notebooks.translate(chinese, {})
    assert [c.source for c in chinese.cells] == [
        c.source for c in english.cells
    ]


def test_setup_call_asks_for_chinese():
    cells = nbformat.read(CHAPTERS[0], as_version=4).cells
    english = next(c.source for c in cells if c.cell_type == "code")
    ours, call = zh_notebooks.zh_setup(english), zh_notebooks.ZH_SETUP_CALL
    assert call in ours
    assert ours.replace(call, zh_notebooks.SETUP_CALL) == english
    raises(ValueError, "does not call", zh_notebooks.zh_setup, "import utils")


def _current_copy(page, tmp_path, monkeypatch):
    """A current Chinese notebook of ``page`` in a scratch zh/ folder."""
    monkeypatch.setattr(zh_notebooks, "ZH", tmp_path / "zh")
    target = zh_notebooks.zh_path(page)
    target.parent.mkdir(parents=True)
    stored = ROOT / "zh" / page.resolve().relative_to(ROOT)
    target.write_bytes(stored.read_bytes())
    assert zh_notebooks.problems(page) == []
    return target


def _code_cell_with(nb, kind):
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if zh_notebooks.IGNORE_OUTPUT in tags:
            continue
        if kind == "image" and zh_notebooks.images(cell):
            return cell
        if kind == "text" and any(
            o.output_type == "stream" for o in cell.outputs
        ):
            return cell
    raise AssertionError(f"no code cell with {kind} output")


@pytest.mark.parametrize("change, expect", [
    ("code", "code differs"), ("markdown", "markdown differs"),
    ("caption", "metadata"), ("text", "text outputs differ"),
    ("image", "images, the English has"),
    ("label", "figure texts are translated otherwise now"),
    ("error", "error in the Chinese run: KeyError")])  # fmt: skip
def test_a_stale_chinese_notebook_is_found(
    change, expect, tmp_path, monkeypatch
):
    target = _current_copy(MASKS, tmp_path, monkeypatch)
    nb = nbformat.read(target, as_version=4)
    if change == "code":
        cell = _code_cell_with(nb, "text")
        cell.source += "\nx = 1"
    elif change == "markdown":
        cell = next(c for c in nb.cells if c.cell_type == "markdown")
        cell.source += " 旧"
    elif change == "caption":
        cell = next(
            c for c in nb.cells if c.metadata.get("mystnb", {}).get("figure")
        )
        cell.metadata["mystnb"]["figure"]["caption"] += " 旧"
    elif change == "text":
        cell = _code_cell_with(nb, "text")
        stream = next(o for o in cell.outputs if o.output_type == "stream")
        stream.text = stream.text.replace("1", "2", 1) + "2\n"
    elif change == "image":
        cell = _code_cell_with(nb, "image")
        cell.outputs = [
            o
            for o in cell.outputs
            if not any(m.startswith("image/") for m in o.get("data", {}))
        ]
    elif change == "error":
        cell = _code_cell_with(nb, "image")
        error = nbformat.v4.new_output(
            "error", ename="KeyError", evalue="'Loss' has no entry"
        )
        cell.outputs.insert(0, error)
    else:  # the table translates one of the notebook's figure texts anew
        _retranslate(monkeypatch, nb, lambda exact, en: {**exact, en: "改"})
    nbformat.write(nb, target)
    problems = zh_notebooks.problems(MASKS)
    assert any(expect in p for p in problems), problems
    hint = zh_notebooks.regenerate_hint(MASKS)
    assert "python -m tools.editions.zh_notebooks book/03_masks.ipynb" in hint


def _retranslate(monkeypatch, nb, change):
    """The label table with its exact entries ``change(exact, en)``d, ``en``
    an unscoped text of ``nb``'s figures."""
    texts = zh_notebooks.figure_texts(nb.metadata["course_zh"])
    exact, patterns = labels.table()
    en = next(en for names, en, _ in texts if not names and en in exact)
    monkeypatch.setattr(labels, "table", lambda: (change(exact, en), patterns))


def test_a_label_the_notebook_does_not_show_stales_nothing(
    tmp_path, monkeypatch
):
    target = _current_copy(MASKS, tmp_path, monkeypatch)
    nb = nbformat.read(target, as_version=4)
    assert nb.metadata["course_zh"]["figure_texts"]  # masks draws figures
    _retranslate(monkeypatch, nb, lambda exact, _: {**exact, "New": "新"})
    assert zh_notebooks.problems(MASKS) == []


def test_a_missing_chinese_notebook_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(zh_notebooks, "ZH", tmp_path / "zh")
    assert zh_notebooks.problems(CHAPTERS[0]) == [
        f"{zh_notebooks.zh_path(CHAPTERS[0])} is missing"
    ]


def test_text_outputs_ignore_what_nbval_sanitises():
    stdout = functools.partial(nbformat.v4.new_output, "stream", name="stdout")
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [stdout(text="at 0x7f3a9c2b10 "), stdout(text="done\n")]
    other = copy.deepcopy(cell)
    other.outputs = [stdout(text="at 0x7f00aa11bb done\n")]
    sanitisers = zh_notebooks._sanitisers()
    seen = [zh_notebooks.text_outputs(c, sanitisers) for c in (cell, other)]
    assert seen[0] == seen[1] == [("stream:stdout", "at 0xADDRESS done\n")]


def test_chinese_source_tree_takes_the_chinese_notebooks(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(build_book, "ZH_SRC", tmp_path / "zh_src")
    monkeypatch.setattr(translations, "pages", lambda: [MASKS])
    source = build_book.zh_source()
    built = source / "book" / MASKS.name
    assert built.read_bytes() == zh_notebooks.zh_path(MASKS).read_bytes()
    config = (source / "_config.yml").read_text()
    assert "language: zh_CN" in config and build_book.ZH_TITLE in config
    # the Colab buttons open the Colab notebooks
    assert "path_to_book: colab/zh\n" in config
    english = (ROOT / "_config.yml").read_text()
    assert 'path_to_book: "colab"' in english
    monkeypatch.setattr(zh_notebooks, "ZH", tmp_path / "nothing")
    raises(SystemExit, "make zh-notebooks", build_book.zh_source)


def test_prose_only_regeneration_keeps_outputs(tmp_path, monkeypatch):
    target = _current_copy(MASKS, tmp_path, monkeypatch)
    before = nbformat.read(target, as_version=4)
    store = translations.load(MASKS)
    key = next(c.id for c in before.cells if c.cell_type == "markdown")
    store[key]["zh"] += "（新译）"
    monkeypatch.setattr(translations, "LOCALE", tmp_path / "locale")
    translations.save(MASKS, store)
    assert any("markdown differs" in p for p in zh_notebooks.problems(MASKS))
    zh_notebooks.retranslate(MASKS)
    assert zh_notebooks.problems(MASKS) == []
    after = nbformat.read(target, as_version=4)
    edited = next(c for c in after.cells if c.id == key)
    assert edited.source.endswith("（新译）")
    code = [(c.id, c.outputs) for c in before.cells if c.cell_type == "code"]
    assert code == [
        (c.id, c.outputs) for c in after.cells if c.cell_type == "code"
    ]


def test_the_stamped_table_is_the_one_the_figures_use():
    labels = pytest.importorskip("proof.labels")  # no label table yet
    assert labels.TABLE.resolve() == zh_notebooks.LABEL_TABLE.resolve()


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_chinese_code_differs_from_the_english_in_comments_only(page):
    """Stripped of comments, each code cell is the English one (the setup
    call aside); the outputs are checked by the test above."""
    english = nbformat.read(page, as_version=4)
    chinese = nbformat.read(zh_notebooks.zh_path(page), as_version=4)
    cells = zip(english.cells, chinese.cells)
    pairs = [(e, z) for e, z in cells if e.cell_type == "code"]
    setup_en, setup_zh = pairs[0]
    setup = zh_notebooks.zh_setup(setup_en.source)
    pairs[0] = (nbformat.v4.new_code_cell(setup), setup_zh)
    strip = code_comments.strip_comments
    differ = [z.id for e, z in pairs if strip(e.source) != strip(z.source)]
    assert not differ, f"code (not comments) differs in cells {differ}"
    translated = sum(e.source != z.source for e, z in pairs)
    name = page.relative_to(ROOT).with_suffix("").as_posix()
    if name not in code_comments.EXEMPT:
        assert translated > len(pairs) / 2, "comments left in English"
    chinese_comments = [
        c.text
        for _, z in pairs
        for c in code_comments.comments(z.source)
        if translations.CJK.search(c.text)
    ]
    assert chinese_comments, "no Chinese comment at all"


def test_comments_are_wrapped_to_79_columns_and_code_kept():
    cc = code_comments
    source = (
        "x = 1  # one\n"
        "    # a long run of comment lines that the table\n"
        "    # translates as one comment\n"
        "y = [x,  # `x` (B, T)\n"
        "     2]\n"
    )
    table = {
        "one": "一",
        "a long run of comment lines that the table translates as one "
        "comment": "表格把这一串很长的注释行当作一条注释来翻译，" * 4,
    }
    out, missing = cc.translate(source, table)
    assert missing == []  # `x` (B, T): no English words
    assert cc.strip_comments(out) == cc.strip_comments(source)
    assert out.startswith("x = 1  # 一\n    # 表格")
    assert all(cc.width(line) <= 79 for line in out.splitlines())
    assert len(out.splitlines()) > len(source.splitlines())
    assert cc.translate("z = 2  # two\n", {})[1] == ["two"]
    with pytest.raises(cc.TooWide):
        cc.translate("z = 2  # two\n", {"two": "二" * 40})
    assert cc.width("ab二") == 4
