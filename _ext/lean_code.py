"""Lighter code blocks: tokens drawn in the text colour carry no markup.

Pygments wraps every token of a code cell in ``<span class="...">``; on a
chapter page that markup was about 40 % of the HTML (about 10,000 spans on
the attention chapter). Plain names, punctuation and whitespace are drawn in
the code's own text colour by the theme's light style (``.highlight .n``,
``.p``, ``.w`` are #080808, like ``.highlight``), so this filter turns them
into plain text, which the HTML formatter writes without a span and merges
with its neighbours; so does the attribute dot, which Pygments calls an
operator (dark green), a difference nobody sees on one dot. The pieces of a
string (an f-string's ``f``, its braces, each run of text between them) are
drawn in the string's colour as one kind, so a string between two names is
one span instead of one per piece. The page looks the same and weighs less.
"""

from __future__ import annotations

from IPython.lib.lexers import IPython3Lexer
from pygments.filter import Filter
from pygments.lexers import PythonLexer
from pygments.token import (
    Name,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

PLAIN = {Name, Punctuation, Whitespace}


class PlainTokens(Filter):
    def filter(self, lexer, stream):
        for kind, value in stream:
            # the attribute dot (torch.tensor) is an operator to Pygments;
            # one dot in the text colour is not told apart
            plain = kind in PLAIN or (kind is Operator and value == ".")
            if kind in String and kind is not String.Doc:
                kind = String.Double  # one colour: adjacent pieces merge
            yield (Text if plain else kind), value


def _lean(base):
    class Lean(base):
        def __init__(self, **options):
            super().__init__(**options)
            self.add_filter(PlainTokens())

    Lean.__name__ = f"Lean{base.__name__}"
    return Lean


def setup(app):
    for alias, base in (
        ("python", PythonLexer),
        ("python3", PythonLexer),
        ("ipython3", IPython3Lexer),
        ("ipython", IPython3Lexer),
    ):
        app.add_lexer(alias, _lean(base))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
