"""The Chinese notebooks' code comments: the English comments, translated.

Only comments change: the code and its outputs stay the English notebook's
(tests/test_zh_notebooks.py strips the comments of both and compares).
Translations live in ``locale/zh/code/comments.yml``, one entry per English
comment, keyed by its text:

- a run of full-line comments at one indentation is one comment, its lines
  joined by spaces (a line holding only ``#`` ends a run);
- a comment after code is one comment on its own.

A Chinese comment is wrapped to the run's indentation so no line passes 79
columns (a CJK character is two columns wide on screen); a newline in the
translation is kept. A trailing comment must fit on its line. Comments with
no English words in them (shapes such as ``# (B, T, V)``), pragmas (``#
noqa``, ``# type:``) and Colab's ``#@`` lines are left alone.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize
import unicodedata

import yaml

from tools import ROOT

STORE = ROOT / "locale" / "zh" / "code" / "comments.yml"
MAX_COLUMNS = 79
# Chapters whose untranslated comments `check` only counts, without failing
# (e.g. "book/03_masks" while its code is being rewritten); every other
# chapter must have all its comments translated.
EXEMPT: list[str] = []
PRAGMA = re.compile(r"^#\s*(noqa|type:|fmt:|pragma|@)")
PAUSES = "，；：。、）"
ENGLISH = re.compile(r"[A-Za-z]*[a-z]{3,}")
# what wrap() never cuts: a CJK character, a run of other characters, spaces
PIECE = re.compile(r"[\u2e80-\uffff]|[^\s\u2e80-\uffff]+|\s+")


class TooWide(ValueError):
    """A translated comment after code that does not fit its line."""


@dataclasses.dataclass
class Comment:
    """One comment: lines ``first``..``last`` (0-based), at ``column``."""

    text: str
    first: int
    last: int
    column: int
    trailing: bool


def width(text: str) -> int:
    """Columns ``text`` takes on screen."""
    return sum(
        2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text
    )


def needs_translation(text: str) -> bool:
    """Whether a comment holds English words (not only code or shapes)."""
    if PRAGMA.match("#" + text) or PRAGMA.match(text):
        return False
    words = re.sub(r"`[^`]*`|\w*[_\d]\w*", "", text)  # code, identifiers
    return bool(ENGLISH.search(words))


def _comment_tokens(source: str):
    """(row, column, text) of each comment of ``source``, 0-based."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0] - 1, tok.start[1], tok.string


def comments(source: str) -> list[Comment]:
    """The comments of ``source`` (full-line runs joined, see the doc)."""
    lines = source.split("\n")
    found: list[Comment] = []
    for row, col, text in _comment_tokens(source):
        body, trailing = text[1:].strip(), bool(lines[row][:col].strip())
        pragma = PRAGMA.match(text) and not body.startswith("@")
        if not body or text.startswith("#@") or pragma:
            continue
        # a full-line comment right below another, at its column: one run
        run = found and not (trailing or found[-1].trailing)
        if run and (found[-1].last, found[-1].column) == (row - 1, col):
            found[-1].text += " " + body
            found[-1].last = row
        else:
            found.append(Comment(body, row, row, col, trailing))
    return found


def load() -> dict[str, str]:
    return yaml.safe_load(STORE.read_text()) or {}


def wrap(text: str, room: int) -> list[str]:
    """``text`` in lines of at most ``room`` columns; breaks between CJK
    characters or at spaces, never inside an ASCII word."""
    out: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for piece in PIECE.findall(paragraph):
            if piece.isspace():
                piece = " "
            if width(line + piece) > room and line.strip():
                # break after the last punctuation of the line's second half
                # when there is one, so words are not cut
                cut = max(line.rfind(p) for p in PAUSES) + 1
                if width(line[:cut]) <= room // 2:
                    cut = len(line)
                out.append(line[:cut].rstrip())
                line = (line[cut:] + piece).lstrip()
            else:
                line += piece
        out.append(line.rstrip())
    return out


def translate(source: str, table: dict[str, str]) -> tuple[str, list[str]]:
    """``source`` with every comment in ``table`` replaced by its Chinese;
    returns it and the English comments that have no translation."""
    lines = source.split("\n")
    missing: list[str] = []
    for c in reversed(comments(source)):
        zh = table.get(c.text)
        if not zh:
            if needs_translation(c.text):
                missing.append(c.text)
            continue
        if c.trailing:
            new = lines[c.first][: c.column] + "# " + zh
            if width(new) > MAX_COLUMNS:
                raise TooWide(
                    f"comment {c.text!r}: {zh!r} makes the line "
                    f"{width(new)} columns wide (at most {MAX_COLUMNS})"
                )
            lines[c.first] = new
            continue
        indent = lines[c.first][: c.column]
        wrapped = wrap(zh, MAX_COLUMNS - width(indent) - 2)
        lines[c.first : c.last + 1] = [f"{indent}# {w}" for w in wrapped]
    return "\n".join(lines), list(reversed(missing))


def strip_comments(source: str) -> str:
    """``source`` without its comments and comment-only lines (what must
    stay the same in both languages)."""
    lines = source.split("\n")
    for row, col, _ in _comment_tokens(source):
        lines[row] = lines[row][:col]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def bad_breaks(source: str, table: dict[str, str]) -> list[str]:
    """The Chinese comments of ``source`` whose wrapped lines (after the
    first) start with punctuation that closes a phrase (，。）: the wrap cut
    the comment there; shorten or reword it."""
    lines = source.split("\n")
    found = []
    for c in comments(source):
        zh = table.get(c.text)
        if not zh or c.trailing:
            continue
        room = MAX_COLUMNS - width(lines[c.first][: c.column]) - 2
        wrapped = [wrap(paragraph, room) for paragraph in zh.split("\n")]
        if any(w[:1] in PAUSES + "”』」！？" for p in wrapped for w in p[1:]):
            found.append(zh)
    return found


def problems(pages) -> tuple[list[str], list[str]]:
    """(what fails: each untranslated comment of a chapter not in EXEMPT and
    each Chinese comment whose wrap starts a line with punctuation, what is
    left: a count for each exempt chapter)."""
    import nbformat

    failing, left, table = [], [], load()
    for page in pages:
        if page.suffix != ".ipynb":
            continue
        name = page.relative_to(ROOT).with_suffix("").as_posix()
        missing: list[str] = []
        for cell in nbformat.read(page, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            failing += [
                f"{name}: a wrapped line of comment {zh[:30]!r}... "
                "starts with punctuation: shorten or reword it"
                for zh in bad_breaks(cell.source, table)
            ]
            missing += translate(cell.source, table)[1]
        missing = list(dict.fromkeys(missing))
        if name not in EXEMPT:
            failing += [
                f"{name}: comment not translated: {m!r}" for m in missing
            ]
        elif missing:
            left.append(
                f"{name}: {len(missing)} comments not translated yet "
                f"({STORE.relative_to(ROOT)})"
            )
    return failing, left
