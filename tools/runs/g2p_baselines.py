"""The classic baseline at its best: every classic setting tried on the
course's split, and the one strongest on the validation words.

    python -m tools.runs.g2p_baselines     (make baseline; minutes, one core)
    python -m tools.runs.g2p_sequitur      (make sequitur; hours, resumable)

``book/data/g2p_baselines.json`` holds one entry per tool and settings, in
the form of ``book/data/g2p_baseline.json``; ``baseline`` names the entry
with the lowest validation WER (the test words choose nothing). The
entries: ``phonetisaurus-defaults``, ``tools/runs/g2p_baseline.py``'s run
(copied: chapter 8 quotes it); ``phonetisaurus-balacoon`` and
``-balacoon-stress``, Balacoon's published settings (``BALACOON``: those of
``phonetisaurus.train``, with the training file sorted by word, and with
CMUdict's stress digits as in their CMUdict runs, removed before
scoring); ``sequitur-N``, Sequitur G2P ramped up to order N
(``tools/runs/g2p_sequitur.py``).
"""

from __future__ import annotations

import importlib.metadata
import json

from proof.runtime import split_fingerprint
from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import g2p_baseline, write_json
from utils import pronunciation as pr

OUT = ROOT / "book" / "data" / "g2p_baselines.json"
DEFAULTS = "phonetisaurus-defaults"
BALACOON = {
    "repository": "github.com/balacoon/learn_to_pronounce",
    "commit": "f0fc179d697a8dbb729789f57e017da4be22f31b",
    "file": "src/learn_to_pronounce/fst/fst_trainer.py",
    "found": "train_pronunciation: _train_fst(ngram_order="
    "args.fst_order (--fst-order, default 8), seq2_del=True), the rest "
    "G2PModelTrainer's defaults (its phonetisaurus-train is the PyPI "
    "package's but for the shebang); training file sorted by word, "
    "every pronunciation; seq2_max=10 only in train_spelling (order 3). "
    "Unchanged since the results page of 2022-08-09 (690a692)",
}
# name -> (sorted training file, stress in training)
PHONETISAURUS = {
    "phonetisaurus-balacoon": (True, False),
    "phonetisaurus-balacoon-stress": (True, True),
}


def load() -> dict:
    """The stored file, or an empty one for today's split."""
    if OUT.exists():
        return json.loads(OUT.read_text())
    split = pr.split_words()
    lex = g2p_baseline.lexicon(split["train"])
    return {
        "what": "tools/runs/g2p_baselines.py: classic G2P tools and settings "
        "on the course's split; baseline: the lowest validation WER",
        "split": split_fingerprint(),
        "train": {
            "words": len(lex),
            "pronunciations": sum(map(len, lex.values())),
        },
        "baseline": None,
        "entries": {},
    }


def best(entries: dict) -> str:
    """The entry with the lowest validation WER (ties: the first)."""
    return min(entries, key=lambda name: entries[name]["valid"]["wer"])


def store(data: dict, name: str | None = None, entry=None) -> None:
    """Add ``entry`` as ``name`` (if given), name the baseline, write."""
    if name is not None:
        data["entries"][name] = entry
    data["numeric_mode"] = numeric_mode.stamp()
    data["baseline"] = best(data["entries"])
    write_json(OUT, data)


def defaults_entry() -> dict:
    """``tools/runs/g2p_baseline.py``'s stored run, as an entry."""
    old = json.loads(g2p_baseline.OUT.read_text())
    keep = ("tool", "version", "settings", "split", "train", "valid", "test")
    return {
        "made_by": "tools/runs/g2p_baseline.py (book/data/g2p_baseline.json)",
        **{k: old[k] for k in keep},
    }


def phonetisaurus_entry(sort: bool, stress: bool) -> dict:
    """Train Phonetisaurus as Balacoon does (``phonetisaurus.train``'s
    settings; the training file sorted by word if ``sort``, with stress if
    ``stress``), score the validation and test words."""
    split = pr.split_words()
    lex = g2p_baseline.lexicon(split["train"], stress=stress)
    if sort:
        lex = dict(sorted(lex.items()))
    settings = g2p_baseline.settings()
    settings["train_on"] += ", sorted by word" if sort else ""
    settings["train_stress"] = stress  # scored without, as every entry
    return {
        "made_by": "tools/runs/g2p_baselines.py",
        "tool": "phonetisaurus",
        "version": importlib.metadata.version("phonetisaurus"),
        "settings": settings,
        "source": BALACOON,
        "split": split_fingerprint(),
        **g2p_baseline.train_and_score(lex, split),
    }


def main() -> None:
    data = load()
    if data["split"] != split_fingerprint():
        raise SystemExit(f"{OUT} was made on another split: remove it")
    store(data, DEFAULTS, defaults_entry())
    for name, (sort, stress) in PHONETISAURUS.items():
        entry = phonetisaurus_entry(sort, stress)
        store(data, name, entry)
        print(
            f"{name}: trained in {entry['train']['seconds']:.0f} s, "
            f"valid WER {entry['valid']['wer']:.2%}, "
            f"test WER {entry['test']['wer']:.2%}",
            flush=True,
        )
    print(f"baseline: {data['baseline']}; wrote {OUT}")


if __name__ == "__main__":
    main()
