"""``make new-chapter`` (tools/editions/new_chapter.py): a bad NAME is refused
with a message and nothing written; on a scratch copy of the repository the
command makes a chapter that the registration checks of ``make test`` accept
(nbval on it, the repository, layout and visible-code checks, the Chinese and
Colab notebooks) and that the translation check lists as untranslated, and
nothing else (the slow test: it executes the new chapter twice, once per
edition)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tools import ROOT
from tools.editions import new_chapter, translations

NEXT = new_chapter.next_number()
NAME = f"{NEXT:02d}_example"


@pytest.mark.parametrize(
    "name, said",
    [
        ("12-example", "is not NN_snake_case"),
        (f"{NEXT:02d}_Example", "is not NN_snake_case"),
        ("example", "is not NN_snake_case"),
        (f"{NEXT - 1:02d}_another", f"chapter {NEXT - 1:02d} exists already"),
        (f"{NEXT + 1:02d}_too_far", f"the next chapter is number {NEXT:02d}"),
    ],
)
def test_a_bad_name_is_refused_and_nothing_is_written(name, said, capsys):
    before = sorted(ROOT.glob("book/*.ipynb"))
    with pytest.raises(SystemExit) as exit:
        new_chapter.main([name, "A title"])
    assert exit.value.code == 2
    assert said in capsys.readouterr().err
    assert sorted(ROOT.glob("book/*.ipynb")) == before


@pytest.mark.parametrize("title", ["", "  ", "a | b", "two\nlines"])
def test_a_bad_title_is_refused(title):
    with pytest.raises(ValueError, match="TITLE"):
        new_chapter.check(NAME, title)


def _run(root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=root, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A copy of the working tree (tracked and untracked files, not the
    ignored ones) with the command run in it."""
    root = tmp_path_factory.mktemp("course")
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    run = _run(root, "-m", "tools.editions.new_chapter", NAME, "An example")
    assert run.returncode == 0, run.stdout + run.stderr
    return root, run.stdout


@pytest.mark.slow
def test_the_chapter_is_made_registered_and_said(scratch):
    root, said = scratch
    for made in (
        f"book/{NAME}.ipynb",
        f"locale/zh/{NAME}.yml",
        f"zh/book/{NAME}.ipynb",
        f"colab/book/{NAME}.ipynb",
        f"colab/zh/book/{NAME}.ipynb",
    ):
        assert (root / made).is_file(), made
    toc = (root / "_toc.yml").read_text()
    assert re.search(
        rf"- file: book/{NEXT - 1:02d}_\w+\n\s+- file: book/{NAME}\n", toc
    )
    intro = (root / "book" / "intro.md").read_text()
    assert f"| {NEXT} | [An example]({NAME}.ipynb) |" in intro
    assert f"make refresh NB=book/{NAME}.ipynb" in said
    assert f"make zh-notebooks ZH=book/{NAME}.ipynb" in said


@pytest.mark.slow
def test_make_tests_registration_checks_pass_on_it(scratch):
    root, _ = scratch
    selected = " or ".join(
        [
            NAME,  # the tests run for each chapter
            "toc_entries_exist",
            "every_notebook_is_in_the_toc",
            "every_chapter",  # budgets; one Chinese notebook per chapter
            "one_colab_notebook_per_chapter",
            "staged_budget",
        ]
    )
    run = _run(
        root,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow"),
        *("--nbval", "--nbval-current-env"),
        *("--nbval-sanitize-with", "tests/sanitize.cfg"),
        *("-k", selected, f"book/{NAME}.ipynb"),
        *("tests/test_repo.py", "tests/test_layout.py"),
        *("tests/test_visible_code.py", "tests/test_zh_notebooks.py"),
        "tests/test_colab_notebooks.py",
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", run.stdout).group(1))
    assert passed >= 30 and " failed" not in run.stdout, run.stdout[-2000:]


@pytest.mark.slow
def test_the_translation_check_lists_the_new_page_and_only_it(scratch):
    root, _ = scratch
    run = _run(root, "-m", "tools.editions.translations", "check")
    assert run.returncode == 1, run.stdout + run.stderr
    units = translations.units(root / "book" / f"{NAME}.ipynb")
    found = run.stdout.strip().splitlines()
    ours = [line for line in found if line.startswith(f"{NAME}.ipynb [")]
    others = [line.split(": ", 1)[0] for line in found if line not in ours]
    assert others == ["intro.md [page] outdated (English changed)"], found
    listed = [
        line.split(": ", 1)[0] for line in ours if "] untranslated: " in line
    ]
    assert listed == [f"{NAME}.ipynb [{key}] untranslated" for key in units]
    # and what its translation must hold: the openers, the solutions' headings
    rest = [line for line in ours if "] untranslated: " not in line]
    form = re.compile(r"\] the (opener is not written|heading of solution)")
    assert rest and all(form.search(line) for line in rest), rest
