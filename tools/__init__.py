"""What builds, syncs, links, refreshes and benchmarks the book (not tests, not
course code).

Run each as a module from the repository root, as the Makefile does::

    python -m tools.refresh book/03_masks.ipynb      # make refresh NB=...
    python -m tools.build_book                       # make book
    python -m tools.translations sync | check        # make translations
    python -m tools.glossary_links book/*.ipynb      # make link-terms
    python -m tools.robust                           # make robust
    python -m tools.new_chapter 12_x "A title"       # make new-chapter
    python -m tools.bench_attention                  # a benchmark, not a test

``ROOT`` (the repository) and ``NOT_PROSE`` (what in a Markdown cell is not
prose) are defined here once and shared by the modules.
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Markdown that is not prose: fenced code, maths, MyST roles ({term}`...`,
# {glue:text}`...`), inline code, links and images, HTML tags and bare URLs.
# The glossary linker leaves it alone; the translation checks do not count its
# words as English left untranslated.
NOT_PROSE = re.compile(
    r"```.*?```"  # fenced code
    r"|\$\$.*?\$\$"  # display maths
    r"|\$[^$\n]+\$"  # inline maths
    r"|\{[\w:-]+\}`[^`]*`"  # roles
    r"|`[^`\n]*`"  # inline code
    r"|!?\[[^\]\n]*\]\([^)\n]*\)"  # links and images
    r"|<[^>\n]+>"  # HTML tags and autolinks
    r"|https?://\S+",  # bare URLs
    re.DOTALL,
)
