"""The main-path word count: what is folded, what a reader meets."""

from tools.budgets import main_path_words as mpw


def test_folded_box_counts_apart_but_its_title_is_seen():
    source = (
        "(sec:x)=\n## Two words\n\n"
        ":::{admonition} Why three words\n:class: dropdown\n\n"
        "four words in here\n:::\n\nafter the box"
    )
    # "## Two words" (3) + title "Why three words" (3) + "after the box" (3)
    assert mpw.split_markdown(source) == (9, 4)


def test_a_box_that_is_not_folded_is_main_path():
    source = ":::{note}\nfive words are shown here\n:::\n"
    assert mpw.split_markdown(source) == (5, 0)


def test_nested_fold_and_comments():
    source = (
        "<!-- not prose -->one\n"
        "````{admonition} T\n:class: dropdown\n"
        "```{math}\nx = y\n```\nend\n````\ntwo"
    )
    assert mpw.split_markdown(source) == (3, 4)


def test_chapters_1_to_7_keep_a_lean_main_path():
    """Issue #34: the prose a reader meets without opening a box, chapters
    1-7 together, stays within the limit (27,942 words before the cut)."""
    paths = mpw.lean_notebooks()
    assert len(paths) == 7
    _, total = mpw.table(paths)
    assert total <= mpw.LEAN_LIMIT, total
