"""What builds, checks and feeds the book (not tests, not course code), by
role; each module runs from the repository root as
``python -m tools.ROLE.NAME`` (the Makefile's targets call them):

- ``tools.editions``: both editions of the site, the Chinese and Colab
  notebooks, translations, glossary links, the live pages' exports, refresh
  and new chapters (``make book``, ``refresh``, ``zh-notebooks``, ``colab``,
  ``translations``, ``link-terms``, ``new-chapter``);
- ``tools.runs``: the scripts that make the stored runs and baselines in
  ``book/data/`` (sweeps, trainers, the classic G2P baselines);
- ``tools.numerics``: the numeric modes and what proves them across machines
  and versions (``make robust``, ``make torch-matrix``, the claims mode);
- ``tools.budgets``: the counters the layout tests hold to their budgets
  (visible code, main-path words, validation share).

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
