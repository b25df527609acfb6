"""The Chinese edition's translations: one YAML file per page, checked against
the English.

    python -m tools.editions.translations sync book/03_masks.ipynb [...]
        (or: make translations)
    python -m tools.editions.translations check   (lists what is missing)

English is the source. Each page (`book/<stem>.ipynb` or `book/<stem>.md`) has
a file `locale/zh/<stem>.yml` holding one entry per translatable unit:

- a notebook's markdown cell, keyed by its cell id;
- a figure's caption and alt text (code-cell metadata), keyed `<cell
id>/caption`, `/alt`;
- a Markdown page as a whole, keyed `page`.

Each entry stores `en`, the exact English text it translates, and `zh`, the
translation. Code cells and their outputs are never translated: both editions
show the same ones. `sync` adds an entry for every new unit (with an empty
`zh`) and, when the English of a unit has changed, writes the new English as
`en_now` beside the old `en`: the translator updates `zh`, then replaces `en`
with `en_now`. `check` (and tests/test_translations.py) fails on every unit
that is missing, empty, outdated or left in English (``problems``), on the
words and phrasing the edition rejects (``term_problems``,
``aside_problems``, ``comment_and_label_problems``, ``style_problems``) and
on the code comments (tools/editions/code_comments.py).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys

import yaml

from tools import NOT_PROSE, ROOT
from tools.editions import code_comments
from tools.editions.glossary_links import glossary_terms
from tools.editions.notebooks import toc_pages as pages

LOCALE = ROOT / "locale" / "zh"
CJK = re.compile(r"[\u3400-\u9fff]")
# The live pages' widget texts: English exactly as their scripts have it ->
# Chinese (tests/test_translations.py checks them against the scripts)
LIVE_TEXTS = LOCALE / "live" / "widgets.yml"


def places(nb):
    """(key, where, field) of each unit of a notebook: its text is
    ``where[field]`` (a cell's source, a figure's caption or alt text)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            yield cell.id, cell, "source"
        elif cell.cell_type == "code":
            meta = cell.metadata.get("mystnb", {})
            figure, image = meta.get("figure", {}), meta.get("image", {})
            for field, where in (("caption", figure), ("alt", image)):
                if where.get(field):
                    yield f"{cell.id}/{field}", where, field


def units(page: pathlib.Path) -> dict[str, str]:
    """The English units of one page, in order: key -> text."""
    if page.suffix == ".md":
        return {"page": page.read_text()}
    import nbformat

    nb = nbformat.read(page, as_version=4)
    return {key: where[field] for key, where, field in places(nb)}


def store_path(page: pathlib.Path) -> pathlib.Path:
    return LOCALE / f"{page.stem}.yml"


def load(page: pathlib.Path) -> dict[str, dict[str, str]]:
    path = store_path(page)
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text()) or {}


def zh_of(store: dict, key: str) -> str:
    """The Chinese of unit ``key`` in ``store`` (empty: none yet)."""
    return str(store.get(key, {}).get("zh") or "")


def translated(page: pathlib.Path):
    """(key, English, Chinese) of each unit of ``page``, in order."""
    store = load(page)
    for key, text in units(page).items():
        yield key, text, zh_of(store, key)


def zh_page(page: pathlib.Path) -> str:
    """A Markdown page's Chinese text, its English while it has none."""
    text = zh_of(load(page), "page")
    return text if text.strip() else page.read_text()


def first_words(text: str, n: int = 70) -> str:
    """The start of ``text`` on one line, for messages."""
    return " ".join(text.split())[:n]


class _Dumper(yaml.Dumper):
    def represent_str(self, value: str):  # a multi-line text as a block
        style = "|" if "\n" in value else None
        return self.represent_scalar("tag:yaml.org,2002:str", value, style)


_Dumper.add_representer(str, _Dumper.represent_str)

# The first lines of every locale/zh/<page>.yml (as they are: the store
# round-trips)
HEADER = (
    "# Chinese translation of book/{name}. English is the source: `en` is the "
    "exact English text\n"
    "# an entry translates, `zh` its translation. See "
    "tools/editions/translations.py (make translations).\n"
)


def save(page: pathlib.Path, entries: dict[str, dict[str, str]]) -> None:
    path = store_path(page)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.dump(
        entries,
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        width=1000,
    )
    path.write_text(HEADER.format(name=page.name) + body)


def sync(page: pathlib.Path) -> tuple[int, int]:
    """Add missing units, mark changed ones with `en_now`, drop units that no
    longer exist; returns (added, changed)."""
    old, added, changed = load(page), 0, 0
    new: dict[str, dict[str, str]] = {}
    for key, text in units(page).items():
        entry = dict(old.get(key, {}))
        if not entry:
            entry, added = {"en": text, "zh": ""}, added + 1
        elif entry.get("en") != text:
            entry["en_now"], changed = text, changed + 1
        else:
            entry.pop("en_now", None)
        new[key] = entry
    save(page, new)
    return added, changed


# Eight English words in a row outside code, maths, roles, links and quotation
# marks: a sentence left in English (names and terms in Chinese prose are
# shorter: "PyTorch 的 nn.MultiheadAttention"; an English example sentence or a
# quotation from a paper stands in quotation marks, “...” or "...").
QUOTED = re.compile(r"“[^”]*”|\"[^\"\n]*\"|「[^」]*」|『[^』]*』")
ENGLISH_RUN = re.compile(r"(?:[A-Za-z][\w'’-]*[\s,;:.()]+){7}[A-Za-z]")


def _english_left(text: str, zh: str) -> str | None:
    """The first English sentence-like run left in ``zh``, the translation of
    ``text``, if any (a text of fewer than three English words needs none)."""
    if len(re.findall(r"[A-Za-z]{3,}", NOT_PROSE.sub(" ", text))) < 3:
        return None
    if not CJK.search(zh):
        return first_words(zh)
    found = ENGLISH_RUN.search(QUOTED.sub(" ", NOT_PROSE.sub(" ", zh)))
    return first_words(found.group(0)) if found else None


def problems(page: pathlib.Path) -> list[str]:
    """Every unit of ``page`` whose translation is missing, empty, outdated or
    English."""
    found, store = [], load(page)
    for key, text in units(page).items():
        where, first = f"{page.name} [{key}]", first_words(text)
        entry = store.get(key)
        if entry is None or not str(entry.get("zh", "")).strip():
            found.append(f"{where} untranslated: {first!r}")
        elif entry.get("en") != text or "en_now" in entry:
            found.append(f"{where} outdated (English changed): {first!r}")
        elif left := _english_left(text, entry["zh"]):
            found.append(f"{where} still English: {first!r} (left: {left!r})")
    return found


# One word per concept (TERMS) and the calques the reviewer of issue #48
# found (CALQUES, phrases a Chinese writer would not write; prose only):
# (concept, the form to write, the forms rejected as regular expressions),
# kept with the reasons for each in locale/zh/terms/terms.yml.
_TABLE = yaml.safe_load((LOCALE / "terms" / "terms.yml").read_text("utf-8"))
TERMS, CALQUES = (
    [(e["concept"], e["write"], tuple(e["reject"])) for e in _TABLE[part]]
    for part in ("terms", "calques")
)
# A rejected form is allowed in parentheses right after the form to write,
# another name for the reader who knows it (束搜索（集束搜索）; not for 词元,
# whose English is written once, at the first use), and in the glossary's
# pinyin index: | 集束搜索 | jíshù sōusuǒ | {term}`beam search` |.
INDEX_ROW = re.compile(
    r"^\| [^|`]+ \| [^|`\u3400-\u9fff]+ \| \{term\}`[^`]*` \|$", re.M
)
# In a chapter (a notebook), the first 词元 is written so, and only there.
FIRST_USE = ("词元", "词元（token）")
# d2l-zh's name (or the long form) given in parentheses right after the
# edition's word at its first use in the prose of the chapters (markdown
# cells; captions and alt texts do not count): in the "course" (the first
# chapter that uses it) or in every "chapter" that uses it. (the word as a
# regular expression, what its parentheses must hold, where)
ASIDES: list[tuple[str, str, str]] = [
    ("层归一化", "层规范化", "course"),
    ("批归一化", "批量规范化", "course"),
    ("逐位置前馈网络", "基于位置的前馈网络", "course"),
    ("字音转换", "字素到音素转换", "course"),
    (r"(?i)(?<![A-Za-z_])dropout(?![A-Za-z_])", "暂退法", "chapter"),
]
SOLUTION = re.compile(r"^:::\{admonition\} Solution (\d+), explained$", re.M)
_DISPLAYED = re.compile(r"\{term\}`([^`<]*?)\s*<[^>`]*>`")


def chinese_prose(zh: str) -> str:
    """The prose of a translation: {term}`显示 <target>` keeps its display
    text; code, maths, other roles (a bare {term}`token` shows the glossary's
    English headword), links and glossary headwords (the English term lines of
    the glossary page) become spaces."""
    names = glossary_terms()
    lines = [
        " "
        if line.strip().lower() in names and not line[:1].isspace()
        else line
        for line in str(zh).split("\n")
    ]
    return NOT_PROSE.sub(" ", _DISPLAYED.sub(r"\1", "\n".join(lines)))


def rejected_forms(prose: str, table=None) -> list[tuple[str, str, str]]:
    """(form found, concept, form to write, context) for every rejected form
    of ``table`` (TERMS and CALQUES) in ``prose``; another name in
    parentheses right after the form to write is allowed (but for 词元)."""
    found = []
    for concept, preferred, rejected in table or TERMS + CALQUES:
        said = prose
        if preferred != FIRST_USE[0]:
            aside = re.escape(preferred) + r"（[^（）]*）"
            said = re.sub(aside, " ", said)
        for pattern in rejected:
            for m in re.finditer(pattern, said):
                context = said[max(0, m.start() - 12) : m.end() + 12]
                found.append((m.group(0), concept, preferred, context))
    return found


def _said(where: str, hits) -> list[str]:
    return [
        f"{where} {form!r} for {concept!r}: write {preferred} ({context!r})"
        for form, concept, preferred, context in hits
    ]


def term_problems(page: pathlib.Path) -> list[str]:
    """Every rejected form of a TERMS concept (or a CALQUES phrase) in
    ``page``'s Chinese, by unit; in a chapter, a first 词元 not written
    词元（token）; a solution heading not written 解答 N 及讲解."""
    found, first = [], page.suffix == ".ipynb"
    for key, text, zh in translated(page):
        where = f"{page.name} [{key}]"
        prose = chinese_prose(INDEX_ROW.sub(" ", zh))
        if first and FIRST_USE[0] in prose:
            at = prose.index(FIRST_USE[0])
            if prose.startswith(FIRST_USE[1], at):
                prose = prose.replace(FIRST_USE[1], FIRST_USE[0], 1)
            else:
                found.append(
                    f"{where} the chapter's first {FIRST_USE[0]} is not "
                    f"written {FIRST_USE[1]}: "
                    f"{prose[max(0, at - 15) : at + 15]!r}"
                )
            first = False
        found += _said(where, rejected_forms(prose))
        for n in SOLUTION.findall(text):
            heading = f"解答 {n} 及讲解"
            if f":::{{admonition}} {heading}" not in zh:
                found.append(
                    f"{where} the heading of solution {n} is not {heading}"
                )
    return found


def aside_problems(chapters: list[pathlib.Path]) -> list[str]:
    """Every ASIDES word whose first use (in the course or in a chapter) is
    not followed by d2l-zh's name (or the long form) in parentheses."""
    found, seen = [], set()
    for page in chapters:
        if page.suffix != ".ipynb":
            continue
        here = set()
        for key, _, zh in translated(page):
            if "/" in key:  # a caption or an alt text
                continue
            prose = chinese_prose(zh)
            for word, other, scope in ASIDES:
                done = seen if scope == "course" else here
                m = re.search(word, prose)
                if word in done or not m:
                    continue
                done.add(word)
                after = re.match(r"（[^（）]*）", prose[m.end() :])
                if not (after and other in after.group(0)):
                    found.append(
                        f"{page.name} [{key}] the {scope}'s first "
                        f"{m.group(0)} is not followed by （…{other}…）: "
                        f"{prose[max(0, m.start() - 12) : m.end() + 12]!r}"
                    )
    return found


# In a comment, identifiers (token_ids, d_model, x1) and dotted names
# (nn.LayerNorm) are code, not prose.
_IDENTIFIER = re.compile(r"[\w.]*[_\d.][\w.]*\w|\w+\(")


def comment_and_label_problems() -> list[str]:
    """Every rejected form of TERMS in the Chinese code comments, the live
    pages' widget texts and the figure texts. A figure text kept as it is
    (an English example word, a code name such as ``memory`` in
    ``decode(tgt, memory)``) is not Chinese, but a concept's English name
    drawn as it is (LayerNorm) is checked."""
    from proof import labels

    texts = []  # (where, prose)
    for en, zh in code_comments.load().items():
        prose = _IDENTIFIER.sub(" ", NOT_PROSE.sub(" ", str(zh)))
        texts.append((f"comments.yml [{en[:40]!r}]", prose))
    for en, zh in live_texts().items():  # the live pages' widgets
        prose = re.sub(r"\{\w+\}", " ", NOT_PROSE.sub(" ", str(zh)))  # {slots}
        texts.append((f"widgets.yml [{en[:40]!r}]", prose))
    for en, zh in labels.entries():  # by figure too
        if zh != en or any(n in en for n in ("LayerNorm", "BatchNorm")):
            texts.append((f"labels.yml [{en!r}]", NOT_PROSE.sub(" ", zh)))
    return [m for at, t in texts for m in _said(at, rejected_forms(t, TERMS))]


# English connectives left in Chinese prose: whole Latin words, outside code,
# maths, roles, links (chinese_prose), quotations (QUOTED) and *italic*
# English examples (*the robot*, *and*). A run of Latin words whose other
# words are all capitalised is a name or a title (The Annotated Transformer,
# Dive into Deep Learning), not a connective.
CONNECTIVES = re.compile(
    r"(?i)(?<![\w'’.-])(and|or|but|the|of|with|than|then|into|from|is|are|"
    r"buffers?|because|while|which|whose)(?![\w'’-])"
)
_ITALIC = re.compile(r"(?<!\*)\*(?!\*)[^*\n\u3400-\u9fff]+?(?<!\*)\*(?!\*)")
_LATIN_RUN = re.compile(r"[A-Za-z][\w'’-]*(?:[ -][A-Za-z][\w'’-]*)*")


def connectives_left(zh: str) -> list[str]:
    """The English connectives left in one translation's prose."""
    if not CJK.search(zh):
        return []
    prose = _ITALIC.sub(" ", QUOTED.sub(" ", chinese_prose(zh)))
    found = []
    for run in _LATIN_RUN.finditer(prose):
        words = re.split(r"[ -]", run.group(0))
        small = [w for w in words if CONNECTIVES.fullmatch(w)]
        rest = [w for w in words if not CONNECTIVES.fullmatch(w)]
        if len(rest) >= 2 and all(w[:1].isupper() for w in rest):
            continue  # a name or a title
        found += small
    return found


# Full-width colons copied from English ("X：Y：Z"): at most COLONS_PER_1000
# per 1,000 CJK characters in a paragraph of COLONS_MIN_CJK or more (one
# colon is often right: a definition). Colons that structure the text are not
# counted: in a heading or a directive line, after a bold label (**你需要：**,
# - **形状**：) and at the end of a line (one that introduces a list, maths or
# code).
COLONS_PER_1000 = 6
COLONS_MIN_CJK = 200
_STRUCTURAL_COLON = re.compile(
    r"^\s*(?:#+ |:::|:\w+:).*$|\*\*[^*\n]+?\*\*\s*：|：\s*$", re.M
)


def colon_chains(zh: str) -> list[tuple[int, int]]:
    """(colons, CJK characters) of each paragraph of one translation's prose
    with more than COLONS_PER_1000 full-width colons per 1,000 CJK
    characters."""
    prose = _STRUCTURAL_COLON.sub(" ", chinese_prose(zh))
    out = []
    for para in re.split(r"\n\s*\n", prose):
        n, c = len(CJK.findall(para)), para.count("：")
        if n >= COLONS_MIN_CJK and c * 1000 > COLONS_PER_1000 * n:
            out.append((c, n))
    return out


# The same density over a whole page (issue #63: chapters 1-7 had 8-11 per
# 1,000, chapters 8-11 1-5; all rephrased since); the pages in COLONS_LEFT
# are still to rephrase (`check` lists them without failing). Empty: every
# page is held to the limit.
COLONS_LEFT: set[str] = set()


def page_colons(page: pathlib.Path) -> tuple[int, int]:
    """(non-structural full-width colons, CJK characters) of a page."""
    c, n = 0, 0
    for _, _, zh in translated(page):
        prose = _STRUCTURAL_COLON.sub(" ", chinese_prose(zh))
        c, n = c + prose.count("："), n + len(CJK.findall(prose))
    return c, n


def colons_left(page: pathlib.Path) -> bool:
    return any(page.stem.startswith(s) for s in COLONS_LEFT)


def colon_excess(page: pathlib.Path) -> tuple[int, int] | None:
    """``page_colons`` of a page over COLONS_PER_1000 per 1,000, else None."""
    c, n = page_colons(page)
    return (c, n) if c * 1000 > COLONS_PER_1000 * n else None


# The chapters open with what the reader needs and gets: the English bold
# label -> the Chinese one (the same words in every chapter).
OPENERS = (
    ("**What you need:**", "**你需要：**"),
    ("**What you will get:**", "**你将得到：**"),
)


def style_problems(page: pathlib.Path) -> list[str]:
    """English connectives, colon chains and chapter openers in ``page``'s
    Chinese, by unit."""
    found = []
    for key, text, zh in translated(page):
        where = f"{page.name} [{key}]"
        if words := connectives_left(zh):
            found.append(
                f"{where} English connectives left in the Chinese: "
                f"{', '.join(words)}"
            )
        for c, n in colon_chains(zh):
            found.append(
                f"{where} {c} full-width colons in a paragraph of {n} Chinese "
                f"characters (at most {COLONS_PER_1000} per 1,000): rephrase "
                "into sentences"
            )
        for english, chinese in OPENERS:
            if english in text and chinese not in zh:
                found.append(f"{where} the opener is not written {chinese}")
    if (excess := colon_excess(page)) and not colons_left(page):
        c, n = excess
        found.append(
            f"{page.name}: {c} full-width colons in {n} Chinese characters "
            f"(at most {COLONS_PER_1000} per 1,000): rephrase into sentences"
        )
    return found


def live_texts() -> dict[str, str]:
    return yaml.safe_load(LIVE_TEXTS.read_text())


def live_texts_js() -> str:
    """``LIVE_TEXTS`` as the script a Chinese live page loads first
    (_static/engine/zh.js; ASCII, so any page encoding reads it)."""
    return (
        "// Generated by tools/editions/build_book.py from "
        "locale/zh/live/widgets.yml: do not edit.\nwindow.COURSE_LIVE_ZH = "
        + json.dumps(live_texts(), indent=0)
        + ";\n"
    )


def main(argv: list[str]) -> int:
    """``sync [pages]`` or ``check`` (the module's doc); 1 if check fails."""
    if argv[:1] == ["sync"]:
        for p in [pathlib.Path(p) for p in argv[1:]] or pages():
            a, c = sync(p.resolve())
            where = store_path(p).relative_to(ROOT)
            print(f"{p.name}: {a} new, {c} changed -> {where}")
        return 0
    if argv != ["check"]:
        raise SystemExit(__doc__)
    every = pages()
    issues = [
        m
        for p in every
        for m in problems(p) + term_problems(p) + style_problems(p)
    ]
    issues += aside_problems(every) + comment_and_label_problems()
    failing, left = code_comments.problems(every)
    issues += failing
    print("\n".join(issues) or "every page is translated and current")
    for p in filter(colons_left, every):
        if excess := colon_excess(p):
            said = "({} in {} CJK characters)".format(*excess)
            left.append(f"{p.name}: colons still to rephrase {said}")
    if left:  # comments not required yet, colons still to rephrase
        print("\n".join(left))
    return 1 if issues else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
