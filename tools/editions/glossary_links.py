"""Link each chapter's first use of every glossary term to the glossary.

    python -m tools.editions.glossary_links book/03_masks.ipynb [...]
        (or: make link-terms)

The terms are read from the `:::{glossary}` block of book/glossary.md (a term
with two names is found under either). In each notebook the first use of a term
in the prose of a markdown cell becomes ``{term}`text <term>` ``. Headings,
code, maths, links, roles and directive lines are never touched; longer terms
are matched first ("multi-head attention" before "attention"), and a plural "s"
is kept in the link text. `tests/test_repo.py` runs the same function without
writing and fails if any first use is left unlinked.
"""

from __future__ import annotations

import pathlib
import re
import sys

from tools import NOT_PROSE, ROOT

GLOSSARY = ROOT / "book" / "glossary.md"
# Terms that are also everyday words are linked only where the sentence marks
# the term ("the *memory*", the encoder's output), never in the everyday sense
# (computer memory).
MARKED_ONLY = {"memory": re.compile(r"the [\"*]memory", re.IGNORECASE)}
# Pages where a term's word only appears in its everyday sense ("the key to",
# "values" as numbers): the term is not linked there at all.
NOT_LINKED = {"05_masked_loss": {"key", "value", "query"}}


def glossary_names(text: str) -> list[tuple[str, str]]:
    """(name, the name its entry is filed under) for each name in the
    ``:::{glossary}`` block of ``text`` (glossary.md, in either language)."""
    block = text.split(":::{glossary}", 1)[1].split("\n:::", 1)[0]
    found, group = [], []
    for line in block.splitlines():
        if not line.strip() or line[0].isspace() or line.startswith(":"):
            group = []  # a definition line ends the group of names
        else:
            group.append(line.strip())
            found.append((line.strip(), group[0]))
    return found


def glossary_terms(path: pathlib.Path = GLOSSARY) -> dict[str, str]:
    """Every name in the glossary (lower case) -> the name its entry is filed
    under."""
    names: dict[str, str] = {}
    for name, entry in glossary_names(path.read_text()):
        names.setdefault(name.lower(), entry)
    return names


def _prose_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) ranges of a line that are prose (outside the protected
    spans)."""
    spans, pos = [], 0
    for m in NOT_PROSE.finditer(line):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(line)))
    return [(a, b) for a, b in spans if b > a]


def link_cells(
    sources: list[str], terms: dict[str, str], skip: set[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """Link the first prose use of each term across ``sources`` (markdown
    cells, in order); returns the new sources and the terms linked."""
    linked_before = set()
    for src in sources:
        for m in re.finditer(r"\{term\}`(?:[^`<]*<)?([^`>]+)>?`", src):
            linked_before.add(m.group(1).strip().lower())
    done = {terms[n] for n in linked_before if n in terms}
    out, linked = list(sources), []
    for name in sorted(terms, key=len, reverse=True):
        entry = terms[name]
        if entry in done or entry in skip:
            continue
        for ci, src in enumerate(out):
            lines = src.split("\n")
            if hit := _first_use(lines, name):
                li, m = hit
                same = m[0].lower() == entry.lower()
                target = "" if same else f" <{entry}>"
                before, after = lines[li][: m.start()], lines[li][m.end() :]
                lines[li] = f"{before}{{term}}`{m[0]}{target}`{after}"
                out[ci] = "\n".join(lines)
                done.add(entry)
                linked.append(entry)
                break
    return out, linked


def _first_use(lines: list[str], name: str):
    """(line index, match) of the first prose use of ``name`` in a cell's
    ``lines`` (where MARKED_ONLY asks it, a marked use), or None."""
    # whole words only: not inside "self-attention" when looking for
    # "attention"
    word = r"(?<![\w-])" + re.escape(name) + r"(?:e?s)?(?![\w-])"
    pattern = re.compile(word, re.IGNORECASE)
    marked, in_fence = MARKED_ONLY.get(name), False
    for li, line in enumerate(lines):
        start = line.lstrip()
        in_fence ^= start.startswith("```")
        # not prose: code, a heading, a directive, a table, HTML
        if in_fence or start.startswith(("```", "#", ":::", "|---", "<", ":")):
            continue
        spans = [x.span() for x in marked.finditer(line)] if marked else None
        for a, b in _prose_spans(line):
            for m in pattern.finditer(line, a, b):
                if spans is None or any(s <= m.start() < e for s, e in spans):
                    return li, m
    return None


def link_notebook(path: pathlib.Path, write: bool) -> list[str]:
    """Link the first uses in one notebook; returns the terms that were (or
    would be) linked."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "markdown"]
    skip = NOT_LINKED.get(path.stem, set())
    new, linked = link_cells([c.source for c in cells], glossary_terms(), skip)
    if write and linked:
        for cell, src in zip(cells, new):
            cell.source = src
        nbformat.write(nb, path)
    return linked


if __name__ == "__main__":
    paths = [pathlib.Path(p) for p in sys.argv[1:]]
    if not paths:
        raise SystemExit(__doc__)
    for p in paths:
        linked = link_notebook(p, write=True)
        said = f": {', '.join(linked)}" if linked else ""
        print(f"{p}: linked {len(linked)} terms{said}")
