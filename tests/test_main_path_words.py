"""The main-path word count: what is folded, what a reader meets."""

import pytest

from tools.budgets import main_path_words as mpw


@pytest.mark.parametrize(
    "source,counts",
    [
        pytest.param(
            "(sec:x)=\n## Two words\n\n"
            ":::{admonition} Why three words\n:class: dropdown\n\n"
            "four words in here\n:::\n\nafter the box",
            # "## Two words" 3 + title "Why three words" 3 + "after the box" 3
            (9, 4),
            id="folded box counts apart but its title is seen",
        ),
        pytest.param(
            ":::{note}\nfive words are shown here\n:::\n",
            (5, 0),
            id="a box that is not folded is main path",
        ),
        pytest.param(
            "<!-- not prose -->one\n"
            "````{admonition} T\n:class: dropdown\n"
            "```{math}\nx = y\n```\nend\n````\ntwo",
            (3, 4),
            id="nested fold and comments",
        ),
    ],
)
def test_split_markdown(source, counts):
    """(main-path words, folded words) of a markdown cell."""
    assert mpw.split_markdown(source) == counts


def test_chapters_1_to_7_keep_a_lean_main_path():
    """Issue #34: the prose a reader meets without opening a box, chapters
    1-7 together, stays within the limit (27,942 words before the cut)."""
    paths = mpw.lean_notebooks()
    assert len(paths) == 7
    _, total = mpw.table(paths)
    assert total <= mpw.LEAN_LIMIT, total
