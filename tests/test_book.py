"""The strict build of both editions (once per run, the `built_site`
fixture): every page rebuilt, any warning fails, one HTML page per TOC
entry in _build/html/ and _build/html/zh/. Without a build: the Chinese
site title is the intro's heading, and the Chinese glossary's index (in
pinyin order) lists every entry's Chinese name and only those."""

from __future__ import annotations

import re
import unicodedata

import pytest

from tests.test_translations import glossary_bold
from tools.editions import translations
from tools.editions.build_book import ZH_TITLE, missing_pages
from tools.editions.glossary_links import glossary_terms

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_book_builds_without_warnings(built_site, edition):
    run = built_site.editions[edition]
    log = run.stdout + run.stderr
    assert run.returncode == 0, (
        f"jupyter-book build ({edition}) failed:\n{log[-6000:]}"
    )
    assert "WARNING" not in log, (
        f"the {edition} build printed warnings:\n{log[-6000:]}"
    )


def test_every_page_is_built_in_both_editions(built_site):
    assert not missing_pages(), (
        f"pages missing from _build/html: {missing_pages()}"
    )


def _chinese(page: str) -> str:
    return str(
        translations.load(translations.ROOT / "book" / page)["page"]["zh"]
    )


def test_the_chinese_site_title_is_the_intro_heading():
    heading = re.search(r"^# (.+)$", _chinese("intro.md"), re.MULTILINE)
    assert heading, "the Chinese intro has no heading"
    assert heading.group(1).strip() == ZH_TITLE


HAN = re.compile(r"[\u3400-\u9fff]")
INDEX_ROW = re.compile(
    r"^\| (.+?) \| (.+?) \| \{term\}`([^`]+)` \|$", re.MULTILINE
)
TONE_MARKS = {"\u0304": 1, "\u0301": 2, "\u030c": 3, "\u0300": 4}


def _pinyin_order(row: tuple[str, str, str]):
    """By the pinyin's letters (ü after u; spaces and hyphens ignored), then,
    where the letters tie, by its tones: 键 jiàn < 简短惩罚 jiǎnduǎn chéngfá
    < 键值缓存 jiànzhí huǎncún."""
    chinese, pinyin, _ = row
    decomposed = unicodedata.normalize("NFD", pinyin.lower()).replace(
        "u\u0308", "v"
    )
    letters = "".join(c for c in decomposed if c.isalnum() and c.isascii())
    return (
        letters,
        [TONE_MARKS[c] for c in decomposed if c in TONE_MARKS],
        chinese,
    )


def test_the_chinese_glossary_has_a_pinyin_index_of_every_entry():
    zh = _chinese("glossary.md")
    assert "(glossary-zh-index)=" in zh, "the Chinese glossary has no index"
    rows = INDEX_ROW.findall(zh.split("(glossary-zh-index)=", 1)[1])
    names, entries = glossary_terms(), glossary_bold()
    problems = []
    for chinese, pinyin, english in rows:
        entry = names.get(english.lower())
        if entry is None:
            problems.append(f"{chinese}: {english!r} is not a glossary term")
        elif chinese not in entries[entry]:
            problems.append(
                f"{chinese}: not a Chinese name of {entry!r} "
                f"({entries[entry]})"
            )
        # Pinyin written by words (加性注意力: jiāxìng zhùyìlì): one tone
        # mark per Han character, and a Latin word (softmax, top-k) as the
        # term writes it.
        marks = [
            c for c in unicodedata.normalize("NFD", pinyin) if c in TONE_MARKS
        ]
        if len(marks) != len(HAN.findall(chinese)):
            problems.append(
                f"{chinese}: pinyin {pinyin!r} has {len(marks)} tone marks"
            )
        latin = re.findall(r"[A-Za-z][\w-]*", HAN.sub(" ", chinese))
        plain = [w for w in pinyin.split() if w.isascii()]
        if plain != latin:
            problems.append(
                f"{chinese}: pinyin {pinyin!r} does not keep {latin}"
            )
    # Every entry whose Chinese name is Chinese can be found by it (the name
    # before any parenthesis: 因果掩码 for 因果掩码（未来掩码）).
    listed = {(c, names[e.lower()]) for c, _, e in rows if e.lower() in names}
    for entry, bold in entries.items():
        main = re.split(r"[（(]", bold)[0].strip()
        if HAN.search(main) and (main, entry) not in listed:
            problems.append(f"{entry!r}: {main} is missing from the index")
    order = sorted(rows, key=_pinyin_order)
    if rows != order:
        first = next(i for i, (a, b) in enumerate(zip(rows, order)) if a != b)
        problems.append(
            f"not in pinyin order at row {first + 1}: {rows[first][0]} "
            f"({rows[first][1]}) stands where {order[first][0]} "
            f"({order[first][1]}) belongs"
        )
    assert rows, "the index of the Chinese glossary has no rows"
    assert not problems, "\n".join(problems)
