"""Chapter 11's data: one edition of each work, split by whole works, no
header or licence lines left, sizes as stored."""

from __future__ import annotations

import re


from utils import shakespeare as sh
from tests.conftest import raises


def test_one_edition_of_each_work_and_no_folio():
    works = sh.load_works()
    assert len(works) == 42
    assert list(works) == sorted(works)
    assert not any(name.endswith("_f") for name in works)  # no First Folio
    folder = sh.texts_folder()
    folio = {p.name for p in folder.glob("*_gut_f.txt")}
    assert len(folio) == 35  # they exist, and were left out on purpose
    assert "metadata" not in works


def test_every_work_in_exactly_one_split():
    works = sh.load_works()
    where = {name: sh.work_split(name) for name in works}
    held_out = {s: [n for n in works if where[n] == s] for s in sh.SPLITS}
    assert held_out["valid"] == ["julius_caesar", "twelfth_night"]
    assert held_out["test"] == ["macbeth", "tempest"]
    assert sum(s == "train" for s in where.values()) == 38
    texts = sh.split_works()
    # a distinctive line of each work is found in its own split's text only
    for name, text in works.items():
        line = max(text.split("\n")[40:], key=len)  # a long line of the play
        found = [s for s in sh.SPLITS if line in texts[s]]
        assert where[name] in found, name
        if where[name] != "train":
            assert found == [where[name]], (name, line)


def test_splits_are_the_works_joined_by_the_separator():
    works = sh.load_works()
    texts = sh.split_works()
    for split in sh.SPLITS:
        parts = [t for n, t in works.items() if sh.work_split(n) == split]
        assert texts[split] == sh.SEPARATOR.join(parts)
        assert sh.split_works(split) == texts[split]
    total = sum(len(t) for t in works.values()) + 39 * len(sh.SEPARATOR)
    assert sum(len(t) for t in texts.values()) == total


# Gutenberg's header, footer and licence words ("licence" itself is
# Shakespeare's), the editor's closing line, carriage returns and tabs.
HEADER = re.compile(
    r"(?i:gutenberg|\be-?text|\bebook|copyright|public domain|\*\*\*)"
    r"|^THE END$|\r|\t",
    re.MULTILINE,
)


def test_no_header_footer_or_licence_lines_left():
    for name, text in sh.load_works().items():
        assert not HEADER.search(text), name
        assert text.endswith("\n") and not text.endswith("\n\n"), name
        assert text.isascii(), name
        assert "by William Shakespeare" in text[:300], name  # the title page


def test_sizes_and_fingerprint():
    fp = sh.fingerprint()
    assert fp["separator"] == "\n\n"
    assert fp["train"]["works"] == 38
    assert fp["valid"]["works"] == ["julius_caesar", "twelfth_night"]
    sizes = [fp[s]["chars"] for s in sh.SPLITS]
    assert sizes == [4624332, 231087, 201870]
    assert fp["valid"]["sha256"] == "c1aad4e9323e7768"
    assert all(len(fp[s]["sha256"]) == 16 for s in sh.SPLITS)


def test_bad_arguments():
    raises(ValueError, "split", sh.split_works, "validation")
    raises(TypeError, "split", sh.split_works, 1)
    raises(TypeError, "name", sh.work_split, None)
