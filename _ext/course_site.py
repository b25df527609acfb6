"""Small Sphinx additions for the course's website (listed in _config.yml).

1. The bibliography speaks author-year everywhere: citations in the text read
   "(Vaswani et al., 2017)" (referencing style `author_year_round`) and the list's labels
   read "Vaswani et al., 2017" too (pybtex style `course`, sorted by author, year, title).
2. Each script is included once per page. sphinx-thebe's inline configuration (and
   togglebutton's) can be registered twice in a Jupyter Book build; the second copy
   redeclares `const THEBE_JS_URL` and the browser reports an uncaught error.
"""

from __future__ import annotations

import dataclasses

import sphinxcontrib.bibtex.plugin
from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import (
    AuthorYearReferenceStyle,
)


def _last_names(person) -> str:
    return " ".join((*person.prelast_names, *person.last_names))


def _clean(text: str) -> str:
    return text.replace("{", "").replace("}", "")


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels "Rush, 2018", "Bahdanau et al., 2015", "Ba and Kiros, 2016"."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor")
            names = [_clean(_last_names(p)) for p in people or []]
            if not names:
                who = _clean(entry.fields.get("title", entry.key))
            elif len(names) == 1:
                who = names[0]
            elif len(names) == 2:
                who = f"{names[0]} and {names[1]}"
            else:
                who = f"{names[0]} et al."
            yield f"{who}, {entry.fields.get('year', 'n.d.')}"


class CourseStyle(UnsrtStyle):
    default_label_style = "course_author_year"
    default_sorting_style = "author_year_title"


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclasses.dataclass
class RoundAuthorYearStyle(AuthorYearReferenceStyle):
    """Author-year citations in round brackets: (Rush, 2018)."""

    bracket_parenthetical: BracketStyle = dataclasses.field(
        default_factory=_round
    )
    bracket_textual: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_author: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_label: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_year: BracketStyle = dataclasses.field(default_factory=_round)


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    seen, unique = set(), []
    for script in context.get("script_files", []):
        # The two copies differ only in filename None versus "" (both: inline).
        attributes = sorted(getattr(script, "attributes", {}).items())
        key = (
            str(getattr(script, "filename", script) or ""),
            repr(attributes),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    register_plugin(
        "pybtex.style.labels", "course_author_year", AuthorYearLabelStyle
    )
    register_plugin("pybtex.style.formatting", "course", CourseStyle)
    sphinxcontrib.bibtex.plugin.register_plugin(
        "sphinxcontrib.bibtex.style.referencing",
        "author_year_round",
        RoundAuthorYearStyle,
    )
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
