"""The Chinese notebooks: each chapter with its prose in Chinese, the same
code, executed so its figures are drawn in Chinese.

    python -m tools.editions.zh_notebooks [book/03_masks.ipynb ...]
        (or: make zh-notebooks; no argument: every chapter in _toc.yml)
    python -m tools.editions.zh_notebooks --prose [...]
        (only the translations changed: put them in, keep the stored
        outputs, execute nothing)

``book/NN_name.ipynb`` becomes ``zh/book/NN_name.ipynb`` (committed): the
English notebook with its prose, captions and alt texts from
``locale/zh/<page>.yml`` (a unit with no translation keeps its English),
its code comments in Chinese (tools/editions/code_comments.py: comments
only), the folded-cell labels in Chinese and the setup call asking for
Chinese figures, after a CJK font is ensured (Colab lacks one). It is then
executed as ``make refresh`` does, from ``zh/book/`` with
``COURSE_LANGUAGE=zh``: its text outputs must equal the English notebook's,
its figures are Chinese. Its metadata records where it came from and a hash
of the figure label table (``LABEL_TABLE``), so a changed table makes its
images stale.

The Chinese website is built from these notebooks
(tools/editions/build_book.py). ``problems()`` says whether a Chinese
notebook is current; tests/test_zh_notebooks.py runs it for every chapter
(no execution), and this command runs it after generating.
"""

from __future__ import annotations

import configparser
import itertools
import json
import os
import pathlib
import re
import sys
import tempfile

import nbformat

from tools import ROOT
from tools.editions import code_comments, translations
from tools.editions.notebooks import notebook_args

ZH = ROOT / "zh"
# The English -> Chinese table of the figures' text (proof.labels.TABLE, read
# when COURSE_LANGUAGE=zh): its hash is stamped into every Chinese notebook.
LABEL_TABLE = ROOT / "locale" / "zh" / "figures" / "labels.yml"
SETUP_CALL = "device = proof.setup(seed=0)"
# Chinese figures need a CJK font, which Colab lacks: the cell gets one first
# (proof.runtime.ensure_cjk_font: apt-get in Colab, else the English notice).
ZH_SETUP_CALL = (
    "proof.runtime.ensure_cjk_font()\n"
    'device = proof.setup(seed=0, language="zh")'
)
# The labels of folded solution cells (MyST-NB reads them from the metadata).
ZH_PROMPTS = {"Show solution": "显示答案", "Hide solution": "隐藏答案"}
IGNORE_OUTPUT = "nbval-ignore-output"
COMMAND = "python -m tools.editions.zh_notebooks"


def zh_path(page: pathlib.Path) -> pathlib.Path:
    return ZH / page.resolve().relative_to(ROOT)


def shown(path: pathlib.Path) -> str:
    """``path`` as messages show it: from the repository root when inside."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def regenerate_hint(page: pathlib.Path) -> str:
    rel = page.resolve().relative_to(ROOT)
    return f"regenerate: {COMMAND} {rel} (all: make zh-notebooks)"


def zh_setup(english: str) -> str:
    """The English setup cell, asking for Chinese figures."""
    if SETUP_CALL not in english:
        raise ValueError(f"the setup cell does not call {SETUP_CALL!r}")
    return english.replace(SETUP_CALL, ZH_SETUP_CALL)


def translate(nb: nbformat.NotebookNode, store: dict) -> None:
    """Put the translations of ``store`` into ``nb`` (in place), the solution
    cells' labels too; code and outputs are left alone."""
    for key, where, field in translations.places(nb):
        if (text := translations.zh_of(store, key)).strip():
            where[field] = text
    for cell in nb.cells:
        meta = cell.metadata.get("mystnb", {})
        for key in ("code_prompt_show", "code_prompt_hide"):
            if cell.cell_type == "code" and meta.get(key) in ZH_PROMPTS:
                meta[key] = ZH_PROMPTS[meta[key]]


def expected(page: pathlib.Path) -> nbformat.NotebookNode:
    """The Chinese notebook of ``page`` before execution: translated, the
    Chinese setup call, no outputs."""
    nb = nbformat.read(page, as_version=4)
    translate(nb, translations.load(page))
    code = [c for c in nb.cells if c.cell_type == "code"]
    code[0].source = zh_setup(code[0].source)
    comments = code_comments.load()
    for cell in code:
        cell.source = code_comments.translate(cell.source, comments)[0]
        cell.outputs, cell.execution_count = [], None
    return nb


def today(texts: list) -> list:
    """``[scope names, English, ...]`` figure texts as today's label table
    makes them: ``[scope names, English, Chinese]`` (``None``: no entry)."""
    from proof import labels  # not at the top: it imports torch

    out = []
    for names, en, *_ in texts:
        try:
            out.append([names, en, labels.translate(en, labels.scopes(names))])
        except KeyError:
            out.append([names, en, None])
    return out


def stamp(page: pathlib.Path, texts: list) -> dict:
    """What the Chinese notebook's metadata records (``course_zh``): its
    source, and each figure text its run translated as ``[scope names,
    English, Chinese]`` (a JSON line each), so a change to the label table
    stales only the notebooks whose figures it changes."""
    return {
        "source": str(page.resolve().relative_to(ROOT)),
        "language": "zh",
        "figure_texts": [json.dumps(t, ensure_ascii=False) for t in texts],
    }


def figure_texts(made: dict) -> list:
    return [json.loads(t) for t in made.get("figure_texts", [])]


def generate(page: pathlib.Path, timeout: int = 600) -> float:
    """Write and execute the Chinese notebook of ``page``; returns seconds.

    The caller sets the numeric mode and ``COURSE_LANGUAGE=zh`` (see
    ``main``): the kernel inherits this process's environment.
    """
    from proof.labels import USED_ENV
    from tools.editions.refresh import execute

    nb = expected(page)
    target = zh_path(page)
    target.parent.mkdir(parents=True, exist_ok=True)
    setup = next(c for c in nb.cells if c.cell_type == "code").source
    with tempfile.TemporaryDirectory() as tmp:
        used = pathlib.Path(tmp) / "labels.jsonl"
        used.touch()
        os.environ[USED_ENV] = str(used)  # the kernel inherits it
        try:
            took = execute(nb, target, timeout, setup=setup)
        finally:
            del os.environ[USED_ENV]
        lines = used.read_text(encoding="utf-8").splitlines()
    texts = sorted({line: json.loads(line) for line in lines}.values())
    nb.metadata["course_zh"] = stamp(page, texts)
    nbformat.write(nb, target)
    return took


def retranslate(page: pathlib.Path) -> None:
    """Put the current translations into the Chinese notebook of ``page``
    without executing it: each code cell whose code is unchanged but for
    its comments keeps its stored outputs, the stamp stays (the figures are
    the same). A changed code cell is left without outputs, which
    ``problems()`` then reports."""
    target = zh_path(page)
    old = nbformat.read(target, as_version=4)
    kept = {c.id: c for c in old.cells if c.cell_type == "code"}
    nb = expected(page)
    same = code_comments.strip_comments
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.id in kept:
            # comments do not change what a cell prints
            if same(kept[cell.id].source) == same(cell.source):
                cell.outputs = kept[cell.id].outputs
                cell.execution_count = kept[cell.id].execution_count
    nb.metadata = old.metadata
    nbformat.write(nb, target)


def _sanitisers() -> list[tuple[re.Pattern, str]]:
    """nbval's output sanitisers (tests/sanitize.cfg): what may differ
    between two runs of the same code."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "tests" / "sanitize.cfg")
    return [
        (re.compile(cfg[s]["regex"]), cfg[s]["replace"])
        for s in cfg.sections()
    ]


GLUE_RECORD = "application/papermill.record/"


def _is_image(mime: str) -> bool:
    return mime.startswith(("image/", GLUE_RECORD + "image/"))


def text_outputs(cell, sanitisers) -> list[tuple[str, str]]:
    """A code cell's outputs as nbval compares them, images left out: each
    stream (consecutive chunks merged) and each text representation."""
    found: list[tuple[str, str]] = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            kind, text = f"stream:{out.name}", out.text
            if found and found[-1][0] == kind:
                text = found.pop()[1] + text
            found.append((kind, text))
        elif out.output_type == "error":
            found.append(("error", f"{out.ename}: {out.evalue}"))
        else:
            for mime, value in sorted(out.get("data", {}).items()):
                if not _is_image(mime):
                    text = value if isinstance(value, str) else str(value)
                    found.append((mime, text))
    for pattern, replace in sanitisers:
        found = [(kind, pattern.sub(replace, text)) for kind, text in found]
    return found


def same_text_outputs(zh: list, en: list) -> bool:
    """``text_outputs`` of a Chinese cell and its English cell agree: equal,
    but for a glued value the Chinese run glued in Chinese (``proof.glue``'s
    ``zh=``: words such as "2.3 points behind" have a Chinese form), which
    is recognised by its Chinese characters where the English has none."""
    if len(zh) != len(en):
        return False
    cjk = translations.CJK.search
    return all(
        kind == en_kind
        and (
            text == en_text
            or (
                kind.startswith(GLUE_RECORD) and cjk(text) and not cjk(en_text)
            )
        )
        for (kind, text), (en_kind, en_text) in zip(zh, en)
    )


def images(cell) -> int:
    return sum(
        any(_is_image(m) for m in out.get("data", {}))
        for out in cell.get("outputs", [])
    )


# A drawn text's phrases end at punctuation or a wide gap (a label and the
# example it shows: "贪心输出：HH AH L OW   参考：...").
_PHRASE_END = re.compile(r"[：:，,；;。（）()\[\]\n]| {2,}")
# an English word: two letters or more, perhaps quoted ('it', don't)
_ENGLISH = re.compile(r"['\"‘“]?[A-Za-z][A-Za-z'-]*[A-Za-z]['\"’”]?")


def chinese_inside_english(text: str) -> str | None:
    """The phrase of ``text`` that is English with a Chinese word inside
    ("the 机器人 must obey"): at least two English words, more English words
    than Chinese ones, and a Chinese word next to an English one. None when
    there is no such phrase ("无 dropout", "源 id 目标 id" are Chinese)."""
    for phrase in _PHRASE_END.split(text):
        words = phrase.split()
        english = [bool(_ENGLISH.fullmatch(w)) for w in words]
        chinese = [bool(translations.CJK.search(w)) for w in words]
        if sum(english) < 2 or sum(english) <= sum(chinese):
            continue
        for i, is_chinese in enumerate(chinese):
            beside = english[max(i - 1, 0) : i] + english[i + 1 : i + 2]
            if is_chinese and any(beside):
                return phrase.strip()
    return None


_SVG_TEXT = re.compile(r"<text([^>]*)>([^<]*)</text>")
_SVG_STYLE = re.compile(r'(?:class|style)="([^"]*)"')


def figure_lines(svg: str) -> list[str]:
    """The texts of a figure (one stored SVG) as they read: consecutive
    texts in one style (the tick labels of an axis, a legend's entries)
    joined by spaces, so the words of a sentence drawn one per tick read
    as the sentence."""
    import html

    def style(text: tuple[str, str]) -> str:
        found = _SVG_STYLE.search(text[0])  # its attributes
        return found[1] if found else ""

    runs = itertools.groupby(_SVG_TEXT.findall(svg), key=style)
    return [" ".join(html.unescape(t) for _, t in run) for _, run in runs]


def mixed_figure_texts(nb: nbformat.NotebookNode) -> list[str]:
    """Where a Chinese notebook's figures draw a Chinese word inside English
    (an English example translated by a label entry): "cell <id>: <phrase>"
    for each."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            svg = out.get("data", {}).get("image/svg+xml")
            for line in figure_lines(svg) if svg else []:
                if phrase := chinese_inside_english(line):
                    found.append(f"cell {cell.id}: {phrase!r}")
    return list(dict.fromkeys(found))


def problems(page: pathlib.Path) -> list[str]:
    """Why the Chinese notebook of ``page`` is not current (empty: it is)."""
    target = zh_path(page)
    if not target.is_file():
        return [f"{shown(target)} is missing"]
    zh = nbformat.read(target, as_version=4)
    english = nbformat.read(page, as_version=4)
    want = expected(page)
    found: list[str] = []
    if [c.id for c in zh.cells] != [c.id for c in want.cells]:
        return ["its cells are not the English notebook's (ids differ)"]
    sanitisers = _sanitisers()
    for en, ours, cell in zip(english.cells, want.cells, zh.cells):
        where = f"cell {cell.id}"
        if cell.cell_type != ours.cell_type:
            found.append(f"{where}: {cell.cell_type}, not {ours.cell_type}")
            continue
        if cell.source != ours.source:
            what = "code" if cell.cell_type == "code" else "markdown"
            found.append(
                f"{where}: {what} differs from the current English and "
                f"translation ({translations.first_words(ours.source, 60)!r})"
            )
        if dict(cell.metadata) != dict(ours.metadata):
            found.append(
                f"{where}: metadata (tags, caption, alt text) differs"
            )
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if out.output_type == "error":  # e.g. a figure text not in the
                # label table: the figure formatter's error fails no cell
                found.append(
                    f"{where}: error in the Chinese run: {out.ename}: "
                    f"{out.evalue[:200]}"
                )
        if images(cell) != images(en):
            found.append(
                f"{where}: {images(cell)} images, the English has {images(en)}"
            )
        if IGNORE_OUTPUT in en.metadata.get("tags", []):
            continue
        if not same_text_outputs(
            text_outputs(cell, sanitisers), text_outputs(en, sanitisers)
        ):
            found.append(
                f"{where}: text outputs differ from the English notebook's "
                f"({translations.first_words(en.source, 60)!r})"
            )
    made = zh.metadata.get("course_zh", {})
    texts = figure_texts(made)
    if made != stamp(page, texts):
        found.append(f"made from {made or 'nothing recorded'}")
    changed = [t[1] for t, now in zip(texts, today(texts)) if t != now]
    if changed:
        found.append(
            f"{len(changed)} figure texts are translated otherwise now "
            f"({LABEL_TABLE.relative_to(ROOT)}): {changed[:5]}"
        )
    return found


def main(argv: list[str]) -> int:
    from tools.numerics import numeric_mode

    pages, prose = notebook_args(argv, "--prose")
    numeric_mode.apply("portable")  # the mode the English outputs are in
    os.environ["COURSE_LANGUAGE"] = "zh"  # the kernels draw Chinese figures
    total, stale = 0.0, 0
    for page in pages:
        name = shown(zh_path(page))
        if prose:
            retranslate(page)
            print(f"{name}: translations put in (not executed)")
        else:
            took = generate(page)
            total += took
            print(f"{name}: executed in {took:.1f} s")
        for problem in problems(page):
            stale += 1
            print(f"  not current: {problem}", file=sys.stderr)
    print(f"{len(pages)} Chinese notebooks in {total:.1f} s")
    if stale and prose:
        print("not current: run it without --prose", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
