"""The language of figure text: English, or Chinese from one label table.

``proof.setup(seed, language="zh")`` (or the environment variable
``COURSE_LANGUAGE=zh``) makes ``proof.figures`` replace every English text
of a figure (titles, axis labels, legend entries, word tick labels,
annotations, diagram labels) by its entry in ``locale/zh/figures/labels.yml``
just before the figure is drawn. Numbers, symbols and maths stay as they are.
Entries under ``by figure:`` hold for one figure only, the figure showing the
English text they are filed under (its title): a word that is a label there
(the toy "robot" in chapter 2's diagram) can stay English elsewhere (the
token "robot" of chapter 2's example sentence), and these entries are looked
up before the table's others.
An English text with no entry raises ``KeyError`` naming it, so a missing
entry is found by running the chapter in Chinese (with
``COURSE_LABELS_MISSING=FILE`` set, every missing text is appended to FILE,
one JSON string a line, and left in English: all of a run's gaps at once;
with ``COURSE_LABELS_USED=FILE``, every text translated and what it became).
Without a CJK font (Colab)
the figures stay English, and this is said once.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import re

import matplotlib.pyplot as plt
from matplotlib import font_manager
from matplotlib.category import StrCategoryFormatter
from matplotlib.figure import Figure
from matplotlib.text import Text

LANGUAGES = ("en", "zh")
TABLE = (
    pathlib.Path(__file__).resolve().parent.parent
    / "locale"
    / "zh"
    / "figures"
    / "labels.yml"
)
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC")
# A Chinese figure's text: DejaVu Sans for Latin and symbols, the CJK font
# for Chinese, and the generic family last (the SVG keeps text as text, so a
# browser without either font still picks a sans-serif one). matplotlib
# expands "sans-serif" in the SVG into font.sans-serif, which Chinese mode
# sets to the same two fonts, so the stack stays short.
GENERIC = "sans-serif"


def font_stack(font: str | None = None) -> list[str]:
    """The font families of Chinese figure text, the generic one last."""
    names = ["DejaVu Sans", font or cjk_font()]
    return [n for n in names if n] + [GENERIC]


# Maths ($...$) and runs without two letters in a row stay as they are.
_MATHS = re.compile(r"\$[^$]*\$")
_WORD = re.compile(r"[A-Za-z]{2,}")
# A pattern's {name} matches a number, maths or a symbol run, never a word;
# {shape...} matches a bracketed shape such as "(B=2, T=5, d=8)", and
# {text...} any text that stays as it is (a model's output, an example).
_SLOT = r"(?P<{}>\$[^$]*\$|[^A-Za-z\s]+|[A-Za-z])"
_SLOTS = {"shape": r"(?P<{}>\([^()]*\))", "text": r"(?P<{}>.+?)"}

_state = {"language": "en", "used": set(), "told": False}
NO_FONT = "No CJK font installed: the figures stay in English."


def no_font_notice() -> None:
    """Say, once per process, that the figures stay in English (both
    ``proof.runtime.ensure_cjk_font`` and ``set_language`` find out)."""
    if not _state["told"]:
        print(NO_FONT)
        _state["told"] = True


def set_language(language: str) -> str:
    """Set the figure language; returns the one in effect ("en" when
    Chinese was asked for but no CJK font is installed)."""
    if not isinstance(language, str):
        raise TypeError(f"language must be a str, got {language!r}")
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}: {language!r}")
    font = cjk_font() if language == "zh" else None
    if language == "zh" and font is None:
        no_font_notice()
        language = "en"
    _state["language"] = language
    if language == "zh":  # also for texts made later, such as new ticks
        stack = font_stack(font)
        plt.rcParams["font.sans-serif"] = stack[:-1]
        plt.rcParams["font.family"] = stack
    return language


_FAMILY = re.compile(r"font-family: ?([^;\"}]*)")


def generic_fonts(svg: str) -> str:
    """A Chinese figure's SVG with the generic family last in every font
    stack: the texts get it from ``font_stack``, but mathtext (a tick's
    $10^{-2}$) names only its own font."""

    def last(m: re.Match) -> str:
        names = m[1].rstrip()
        if names.split(",")[-1].strip() == GENERIC:
            return m[0]
        return f"font-family: {names}, {GENERIC}"

    return _FAMILY.sub(last, svg)


def language() -> str:
    return _state["language"]


@functools.cache
def cjk_font() -> str | None:
    """The name of an installed CJK font matplotlib can use, or None."""
    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


# The key of the entries that hold for one figure only.
BY_FIGURE = "by figure"
USED_ENV = "COURSE_LABELS_USED"  # see _record

Table = tuple[dict[str, str], tuple[tuple[re.Pattern, str, str], ...]]


def _compile(raw: dict[str, str]) -> Table:
    """Exact English -> Chinese, and (regex, key, template) patterns made
    from the entries holding ``{name}`` slots."""
    exact, patterns = {}, []
    for en, zh in raw.items():
        slots = re.findall(r"\{(\w+)\}", en)
        if not slots:
            exact[en] = zh
            continue
        parts = re.split(r"\{(\w+)\}", en)
        regex = "".join(
            _SLOTS.get(p.rstrip("0123456789"), _SLOT).format(p)
            if i % 2
            else re.escape(p)
            for i, p in enumerate(parts)
        )
        patterns.append((re.compile(f"^{regex}$"), en, zh))
    return exact, tuple(patterns)


def _raw() -> dict:
    import yaml

    return yaml.safe_load(TABLE.read_text(encoding="utf-8"))


def entries() -> list[tuple[str, str]]:
    """Every (English, Chinese) pair of the table, the ones filed under a
    figure included."""
    raw = _raw()
    scoped = raw.get(BY_FIGURE, {})
    pairs = [(en, zh) for en, zh in raw.items() if en != BY_FIGURE]
    return pairs + [p for table in scoped.values() for p in table.items()]


@functools.cache
def table() -> Table:
    """The label table's entries for every figure: exact English ->
    Chinese, and (regex, key, template) patterns from the entries holding
    ``{name}`` slots."""
    raw = _raw()
    return _compile({k: v for k, v in raw.items() if k != BY_FIGURE})


@functools.cache
def figure_tables() -> dict[str, Table]:
    """The entries for one figure only: the English text that names the
    figure -> its entries."""
    scoped = _raw().get(BY_FIGURE, {})
    return {name: _compile(raw) for name, raw in scoped.items()}


def needs_translation(text: str) -> bool:
    """True when ``text`` holds a word (two letters in a row) outside
    maths."""
    return bool(_WORD.search(_MATHS.sub("", text)))


def _look_up(text: str, tables: tuple[Table, ...]) -> str | None:
    for exact, patterns in tables:
        if text in exact:
            _state["used"].add(text)
            return exact[text]
        for regex, key, zh in patterns:
            match = regex.match(text)
            if match:
                _state["used"].add(key)
                return zh.format(**match.groupdict())
    return None


def scope_names(shown: list[str]) -> list[str]:
    """The texts among ``shown`` that name ``by figure`` entries."""
    tables = figure_tables()
    return [t for t in dict.fromkeys(shown) if t in tables]


def scopes(shown: list[str]) -> tuple[Table, ...]:
    """The ``by figure`` entries of a figure that shows the English texts
    ``shown``: those filed under one of them."""
    return tuple(figure_tables()[t] for t in scope_names(shown))


def _record(names: list[str], text: str, zh: str) -> None:
    """With ``COURSE_LABELS_USED=FILE`` set, append what one text became
    (``[scope names, English, Chinese]``, a JSON line): the texts a run
    translated, which tools/editions/zh_notebooks.py stamps its notebook
    with."""
    path = os.environ.get(USED_ENV)
    if path and needs_translation(text):
        with open(path, "a", encoding="utf-8") as out:
            line = json.dumps([names, text, zh], ensure_ascii=False)
            out.write(line + "\n")


def translate(text: str, figure: tuple[Table, ...] = ()) -> str:
    """The Chinese for one figure text (unchanged if it has no word);
    ``figure``'s entries (``scopes``) first, then the table's others.
    Multi-line texts are looked up whole, then line by line."""
    if not needs_translation(text):
        return text
    found = _look_up(text, (*figure, table()))
    if found is not None:
        return found
    if "\n" in text:
        lines = text.split("\n")
        return "\n".join(translate(line, figure) for line in lines)
    missing = os.environ.get("COURSE_LABELS_MISSING")
    if missing:  # collecting a run's missing entries: note it, go on
        with open(missing, "a", encoding="utf-8") as out:
            out.write(json.dumps(text, ensure_ascii=False) + "\n")
        return text
    raise KeyError(
        f"figure text {text!r} has no entry in {TABLE.name} "
        "(locale/zh/figures/labels.yml): add it"
    )


def used() -> set[str]:
    """The table keys looked up so far in this process."""
    return set(_state["used"])


def _translate_ticks(formatter, lookup) -> None:
    """Word tick labels live in the formatter: a FixedFormatter's ``seq``,
    the dict of ``set_xticks(ticks, labels)`` (a FuncFormatter), or the
    categories of a categorical axis (``ax.barh(names, values)``: a
    StrCategoryFormatter, whose texts are made only when the figure is drawn,
    so the ``Text`` pass of ``translate_figure`` never sees them)."""
    if isinstance(formatter, StrCategoryFormatter):
        # a new dict: the old one is the axis's category -> number mapping,
        # which converting data still needs in English
        formatter._units = {
            lookup(str(name)): place
            for name, place in formatter._units.items()
        }
    if hasattr(formatter, "seq"):
        formatter.seq = [lookup(str(s)) for s in formatter.seq]
    args = getattr(getattr(formatter, "func", None), "args", ())
    for mapping in args:
        if isinstance(mapping, dict):
            for key, value in mapping.items():
                mapping[key] = lookup(str(value))


def translate_figure(fig: Figure, strict: bool = True) -> list[str]:
    """In Chinese mode, replace every text of ``fig`` by its translation and
    give it the CJK font (DejaVu Sans first, for Latin and symbols;
    ``sans-serif`` last).

    ``strict=False`` keeps a text with no entry and returns those texts
    instead of raising."""
    missing: list[str] = []
    if _state["language"] != "zh":
        return missing

    # the figure's own entries: filed under a text it shows (its title)
    names = scope_names([t.get_text() for t in fig.findobj(Text)])
    figure = scopes(names)

    def lookup(text: str) -> str:
        try:
            zh = translate(text, figure)
        except KeyError:
            if strict:
                raise
            missing.append(text)
            return text
        _record(names, text, zh)
        return zh

    family = font_stack()
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            _translate_ticks(axis.get_major_formatter(), lookup)
            _translate_ticks(axis.get_minor_formatter(), lookup)
    for t in fig.findobj(Text):
        text = t.get_text()
        if text:
            t.set_text(lookup(text))
        t.set_fontfamily(family)
    return missing
