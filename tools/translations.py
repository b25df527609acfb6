"""The Chinese edition's translations: one YAML file per page, checked against
the English.

    python -m tools.translations sync book/03_masks.ipynb [...]   (or: make
    translations) python -m tools.translations check (lists what is missing)

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
that is missing, empty, outdated, or left in English, and on every rejected
form of a term (``TERMS``: one word per concept). Code comments are
translated in ``locale/zh/code/comments.yml`` (tools/code_comments.py): `check`
lists the comments without a translation (failing on them but for the chapters
in ``code_comments.EXEMPT``).
"""

from __future__ import annotations

import pathlib
import re
import sys

import yaml

from . import NOT_PROSE, ROOT

LOCALE = ROOT / "locale" / "zh"
CJK = re.compile(r"[\u3400-\u9fff]")


def units(page: pathlib.Path) -> dict[str, str]:
    """The English units of one page, in order: key -> text."""
    if page.suffix == ".md":
        return {"page": page.read_text()}
    import nbformat

    nb = nbformat.read(page, as_version=4)
    out: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            out[cell.id] = cell.source
        elif cell.cell_type == "code":
            meta = cell.metadata.get("mystnb", {})
            caption = meta.get("figure", {}).get("caption")
            alt = meta.get("image", {}).get("alt")
            if caption:
                out[f"{cell.id}/caption"] = caption
            if alt:
                out[f"{cell.id}/alt"] = alt
    return out


def store_path(page: pathlib.Path) -> pathlib.Path:
    return LOCALE / f"{page.stem}.yml"


def load(page: pathlib.Path) -> dict[str, dict[str, str]]:
    path = store_path(page)
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text()) or {}


class _Literal(str):
    pass


def _literal(dumper: yaml.Dumper, value: _Literal):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar(
        "tag:yaml.org,2002:str", str(value), style=style
    )


yaml.add_representer(_Literal, _literal)

# The first lines of every locale/zh/<page>.yml (as they are: the store
# round-trips)
HEADER = (
    "# Chinese translation of book/{name}. English is the source: `en` is the "
    "exact English text\n"
    "# an entry translates, `zh` its translation. See tools/translations.py "
    "(make translations).\n"
)


def save(page: pathlib.Path, entries: dict[str, dict[str, str]]) -> None:
    path = store_path(page)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        k: {f: _Literal(v) for f, v in e.items()} for k, e in entries.items()
    }
    body = yaml.dump(doc, allow_unicode=True, sort_keys=False, width=1000)
    path.write_text(HEADER.format(name=page.name) + body)


def sync(page: pathlib.Path) -> tuple[int, int]:
    """Add missing units, mark changed ones with `en_now`, drop units that no
    longer exist.

    Returns (added, changed)."""
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


def _needs_chinese(text: str) -> bool:
    prose = NOT_PROSE.sub(" ", text)
    return len(re.findall(r"[A-Za-z]{3,}", prose)) >= 3


# Eight English words in a row outside code, maths, roles, links and quotation
# marks: a sentence left in English (names and terms in Chinese prose are
# shorter: "PyTorch 的 nn.MultiheadAttention"; an English example sentence or a
# quotation from a paper stands in quotation marks, “...” or "...").
QUOTED = re.compile(r"“[^”]*”|\"[^\"\n]*\"|「[^」]*」|『[^』]*』")
ENGLISH_RUN = re.compile(r"(?:[A-Za-z][\w'’-]*[\s,;:.()]+){7}[A-Za-z]")


def _english_left(zh: str) -> str | None:
    """The first English sentence-like run left in a translation, if any."""
    if not CJK.search(zh):
        return " ".join(zh.split())[:70]
    found = ENGLISH_RUN.search(QUOTED.sub(" ", NOT_PROSE.sub(" ", zh)))
    return " ".join(found.group(0).split())[:70] if found else None


def problems(page: pathlib.Path) -> list[str]:
    """Every unit of ``page`` whose translation is missing, empty, outdated or
    English."""
    found, store = [], load(page)
    for key, text in units(page).items():
        first = " ".join(text.split())[:70]
        entry = store.get(key)
        if entry is None or not str(entry.get("zh", "")).strip():
            found.append(f"{page.name} [{key}] untranslated: {first!r}")
        elif entry.get("en") != text or "en_now" in entry:
            found.append(
                f"{page.name} [{key}] outdated (English changed): {first!r}"
            )
        elif _needs_chinese(text) and (left := _english_left(entry["zh"])):
            found.append(
                f"{page.name} [{key}] still English: {first!r} "
                f"(left: {left!r})"
            )
    return found


# One word per concept in the Chinese prose: (concept, the form to write, the
# forms rejected, as regular expressions). Checked on every `zh` outside code,
# maths, roles and links (NOT_PROSE); a {term} role's display text
# ({term}`词元 <token>`) is prose the reader sees, so it is checked too.
TERMS: list[tuple[str, str, tuple[str, ...]]] = [
    # d2l-zh's word; the English word is written once per chapter, at the
    # first 词元, as 词元（token） (FIRST_USE).
    ("token", "词元", (r"(?i)(?<![A-Za-z_])token[a-z]*",)),
    (
        "Solution N, explained",
        "解答 N 及讲解",
        (
            r"练习 ?\d+ ?解答(?:与讲解|说明)",
            r"解答 ?\d+ ?（附讲解）",
            r"解答 ?\d+ ?[：:] ?详解",
        ),
    ),
    ("a stack of layers", "堆叠", ("堆栈",)),  # 堆栈: the data structure
    ("code cell", "代码单元", ("单元格",)),  # also catches 代码单元格
    ("quadratic", "二次", ("平方级", "平方增长")),
    ("to mask (the verb)", "屏蔽", ("掩掉", "遮住", "遮盖", "加掩码")),
    ("one-hot", "独热", (r"(?i)one-hot",)),
    # d2l-zh's words (贪心搜索, 束搜索, 迭代周期)
    ("greedy", "贪心", ("贪婪",)),
    ("beam search", "束搜索", ("集束",)),
    # an epoch, one pass over the training set; ch6's timing rounds are a
    # different concept, written 轮 (多轮交替计时), never 轮次
    (
        "epoch",
        "迭代周期",
        (r"(?i)(?<![A-Za-z_])epochs?(?![A-Za-z_])", "轮次"),
    ),
    # the encoder's output the decoder reads (glossary: 记忆（编码器输出）);
    # a computer's memory is 内存
    ("memory", "记忆", (r"(?<![A-Za-z_])memory(?![A-Za-z_])",)),
    ("the mask zoo", "掩码一览", ("掩码大全",)),
    # the course writes mask 掩码 (d2l-zh: 遮蔽/掩蔽, 带遮蔽的…损失函数)
    ("masked loss", "带掩码的损失", ("掩码损失",)),
    # this edition's words where d2l-zh has another; d2l-zh's is given once,
    # in parentheses after the first use: 层归一化（d2l-zh 译作层规范化）
    ("layer normalisation", "层归一化", ("层规范化",)),
    ("teacher forcing", "教师强制", ("强制教学",)),
]
# A rejected form is allowed in parentheses right after the form to write
# (but for 词元, whose English is written once, at the first use)
# (束搜索（集束搜索）, 层归一化（d2l-zh 译作层规范化）: where another name is
# given for the reader who knows it) and in the glossary's pinyin index,
# which lists every name a reader may look up (| 集束搜索 | jíshù sōusuǒ |
# {term}`beam search` |).
INDEX_ROW = re.compile(
    r"^\| [^|`]+ \| [^|`\u3400-\u9fff]+ \| \{term\}`[^`]*` \|$", re.M
)
# In a chapter (a notebook), the first 词元 is written so, and only there.
FIRST_USE = ("词元", "词元（token）")
SOLUTION = re.compile(r"^:::\{admonition\} Solution (\d+), explained$", re.M)
_DISPLAYED = re.compile(r"\{term\}`([^`<]*?)\s*<[^>`]*>`")


def chinese_prose(zh: str) -> str:
    """The prose of a translation: {term}`显示 <target>` keeps its display
    text; code, maths, other roles (a bare {term}`token` shows the glossary's
    English headword), links and glossary headwords (the English term lines of
    the glossary page) become spaces."""
    from .glossary_links import glossary_terms

    names = glossary_terms()
    lines = [
        " "
        if line.strip().lower() in names and not line[:1].isspace()
        else line
        for line in str(zh).split("\n")
    ]
    return NOT_PROSE.sub(" ", _DISPLAYED.sub(r"\1", "\n".join(lines)))


def term_problems(page: pathlib.Path) -> list[str]:
    """Every rejected form of a TERMS concept in ``page``'s Chinese, by unit;
    in a chapter, a first 词元 not written 词元（token）; a solution heading
    not written 解答 N 及讲解."""
    found, store, first = [], load(page), page.suffix == ".ipynb"
    for key, text in units(page).items():
        zh = str(store.get(key, {}).get("zh") or "")
        prose = chinese_prose(INDEX_ROW.sub(" ", zh))
        if first and FIRST_USE[0] in prose:
            at = prose.index(FIRST_USE[0])
            if prose.startswith(FIRST_USE[1], at):
                prose = (
                    prose[:at] + FIRST_USE[0] + prose[at + len(FIRST_USE[1]) :]
                )
            else:
                found.append(
                    f"{page.name} [{key}] the chapter's first {FIRST_USE[0]} "
                    f"is not written {FIRST_USE[1]}: "
                    f"{prose[max(0, at - 15) : at + 15]!r}"
                )
            first = False
        for concept, preferred, rejected in TERMS:
            # the other name given in parentheses after the preferred one
            # (not for 词元: its English is given once, by FIRST_USE)
            said = prose
            if preferred != FIRST_USE[0]:
                aside = re.escape(preferred) + r"（[^（）]*）"
                said = re.sub(aside, " ", said)
            for pattern in rejected:
                for m in re.finditer(pattern, said):
                    found.append(
                        f"{page.name} [{key}] {m.group(0)!r} for {concept!r}: "
                        f"write {preferred} "
                        f"({said[max(0, m.start() - 12) : m.end() + 12]!r})"
                    )
        for n in SOLUTION.findall(text):
            if f":::{{admonition}} 解答 {n} 及讲解" not in zh:
                found.append(
                    f"{page.name} [{key}] the heading of solution {n} is not "
                    f"解答 {n} 及讲解"
                )
    return found


def pages() -> list[pathlib.Path]:
    """The pages of the book (from _toc.yml), in order."""
    from .notebooks import toc_files

    out = []
    for f in toc_files():
        for ext in (".ipynb", ".md"):
            if (ROOT / f"{f}{ext}").exists():
                out.append(ROOT / f"{f}{ext}")
    return out


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "sync":
        targets = [pathlib.Path(p) for p in sys.argv[2:]] or pages()
        for p in targets:
            a, c = sync(p.resolve())
            print(
                f"{p.name}: {a} new, {c} changed -> "
                f"{store_path(p).relative_to(ROOT)}"
            )
    elif len(sys.argv) == 2 and sys.argv[1] == "check":
        from . import code_comments

        issues = [m for p in pages() for m in problems(p) + term_problems(p)]
        failing, left = code_comments.problems(pages())
        issues += failing
        print("\n".join(issues) or "every page is translated and current")
        if left:  # chapters whose comments are not required yet
            print("\n".join(left))
        raise SystemExit(1 if issues else 0)
    else:
        raise SystemExit(__doc__)
