"""Chapter 9's second opinion: the classic baseline's n-best lists rescored
by the pronouncer, on all the validation and test words.

    make rescore        (python -m tools.runs.g2p_rescore; needs phonetisaurus,
                         as make baseline; about 25 min of one core)
    python -m tools.runs.g2p_rescore --runs stored s0 s1 s2  # one core's share
    python -m tools.runs.g2p_rescore --runs s3 s4 s5 s6 e7   # the other's

Phonetisaurus, trained as ``tools/runs/g2p_baselines.py`` trains it, lists
its ``NBEST`` best pronunciations of each word (distinct ones, ranked by
their best alignment) with their costs (-log p; ``--accumulate`` sums the
probabilities of the alignments of one pronunciation that the search met
before it had ``NBEST`` distinct pronunciations, not of every one). The
pronouncer scores every listed pronunciation by teacher forcing (log p), and
a word's answer is the one with the highest ``log p - lam * cost``, ``lam``
chosen for each run on its validation words (``GRID``).

Runs: ``stored`` the stored pronouncer, ``s0``..``s6`` the first recipe's
seven runs (chapter 8's ensemble members), ``e7`` all seven averaged. Each
run's scores are cached by what they depend on (``cached``), so a changed
model starts afresh; the JSON is written when every run is there. It runs
in the portable numeric mode, one thread, in blocks of ``BLOCK`` words in the
split's order, so it is deterministic. For the chapter's live words (the
first ``N_LIVE`` test words) it stores the lists and the stored pronouncer's
log-probabilities of them, computed as the chapter computes them, so the
chapter must find the same numbers exactly; ``tests/test_g2p_rescored.py``
checks the file against today's.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import subprocess
import tempfile
import time
from pathlib import Path

from proof.runtime import split_fingerprint
from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import pronouncer_ensemble as pe
from tools.runs import write_json
from tools.runs.decode_pronouncer import model_hash, references
from tools.runs.g2p_baselines import cache_dir, lexicon, settings, trained
from utils import pronunciation as pr
from utils.ensemble import Ensemble
from utils.pronouncer import STORED_PRONOUNCER, load_pronouncer
from utils.training import threads

OUT = ROOT / "book" / "data" / "g2p_rescored.json"
CACHE = ROOT / "_build" / "g2p_rescore"
NBEST, BLOCK, N_LIVE, STRESS = 10, 500, 500, False
GRID = [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0, 3.0]
SEEDS = range(7)
RUNS = ["stored"] + [f"s{s}" for s in SEEDS] + ["e7"]
PARTS = ("valid", "test")


def nbest_lists(model_path: Path, words) -> list[list[list]]:
    """Per word, Phonetisaurus's ``[[phonemes, cost], ...]`` in its order
    (empty if it finds none)."""
    import phonetisaurus

    dec = settings()["decode"]
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write("\n".join(words) + "\n")
        f.flush()
        cmd = ["phonetisaurus-g2pfst", f"--model={model_path}"]
        cmd += [f"--nbest={NBEST}"]
        cmd += [f"--{k}={dec[k]}" for k in ("beam", "thresh", "pmass")]
        cmd += ["--accumulate=true", f"--wordlist={f.name}"]
        text = subprocess.check_output(
            cmd,
            env=phonetisaurus.guess_environment(),
            text=True,
            stderr=subprocess.DEVNULL,
        )
    found: dict[str, list] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            found.setdefault(parts[0], []).append(
                [parts[2].split(), float(parts[1])]
            )
    return [found.get(w, []) for w in words]


def cached(run: str) -> Path:
    """Where ``run``'s log-probs (``nbest``: the lists) are kept: by the
    split, the members' weights and ``NBEST``; the stored model's also by
    its hash (it changes apart from the members)."""
    hashes = [model_hash(pe.member_path(s)) for s in SEEDS]
    if run == "stored":
        run = f"stored_{model_hash(STORED_PRONOUNCER)[:16]}"
    return cache_dir(CACHE, NBEST, *hashes) / f"{run}.json"


def lists() -> dict:
    """Phonetisaurus trained on the training words, its lists of the
    validation and test words (cached: about 4 min)."""
    path = cached("nbest")
    if not path.exists():
        split = pr.split_words()
        with trained(lexicon(split["train"])) as (model_path, train):
            out = {"train_seconds": train["seconds"]}
            for part in PARTS:
                words = [w for w, _ in split[part]]
                out[part] = nbest_lists(model_path, words)
        write_json(path, out, indent=None)
    return json.loads(path.read_text())


def log_probs(model, words, nbest) -> list[list[float]]:
    """log p of every listed pronunciation, ``words`` as one call."""
    flat_w = [w for w, cands in zip(words, nbest) for _ in cands]
    flat_p = [p for cands in nbest for p, _ in cands]
    flat = pr.log_prob(model, flat_w, flat_p, stress=STRESS) if flat_w else []
    ends = list(itertools.accumulate(map(len, nbest)))
    return [flat[end - len(c) : end] for c, end in zip(nbest, ends)]


def score_run(run: str, data: dict) -> None:
    """One run's log-probs of every list, cached."""
    path = cached(run)
    if path.exists():
        return
    if run == "stored":
        model = load_pronouncer()[0]
    else:
        seeds = [int(run[1:])] if run.startswith("s") else list(SEEDS)
        loaded = pe.members(seeds)
        model = loaded[0] if len(loaded) == 1 else Ensemble(loaded)
    split, out = pr.split_words(), {}
    start = time.process_time()
    for part in PARTS:
        words, nbest = [w for w, _ in split[part]], data[part]
        out[part] = []
        for s in range(0, len(words), BLOCK):
            block = slice(s, s + BLOCK)
            out[part] += log_probs(model, words[block], nbest[block])
    out["cpu_seconds"] = round(time.process_time() - start, 1)
    write_json(path, out, indent=None)
    print(run, out["cpu_seconds"], "s", flush=True)


def pick(nbest, lp, lam: float) -> int | None:
    """The index of the best ``log p - lam * cost`` (None: no list)."""
    scores = [p - lam * c for (_, c), p in zip(nbest, lp)]
    return max(range(len(scores)), key=scores.__getitem__) if scores else None


def outputs(nbest, lps, lam, fallback) -> list[tuple]:
    """Each word's rescored answer; a word with no list keeps
    ``fallback``'s (the pronouncer's greedy output)."""
    out = []
    for cands, lp, fb in zip(nbest, lps, fallback):
        j = pick(cands, lp, lam)
        out.append(fb if j is None else tuple(cands[j][0]))
    return out


def right(hyps, refs) -> str:
    """ "1" where a word's answer is right, in the split's order."""
    return "".join("1" if h in r else "0" for h, r in zip(hyps, refs))


def parts(nbest, lps, lam, greedy) -> dict:
    """Where the combination's gain comes from, as WER on the test words:
    the pronouncer's greedy output; the pronouncer choosing alone from the
    list (``lam`` 0); Phonetisaurus's summed cost alone (the cheapest
    listed); its 1-best (the first listed); the combination at ``lam``; the
    oracle (a right pronunciation anywhere in the list)."""
    refs = references(pr.split_words()["test"])

    def wer(hyps):
        return pr.word_error_rate(hyps, refs, stress=STRESS)

    def listed(choose):  # a word without a list keeps the greedy output
        return [tuple(choose(c)[0]) if c else g for c, g in zip(nbest, greedy)]

    found = [any(tuple(p) in r for p, _ in c) for c, r in zip(nbest, refs)]
    return {
        "greedy": wer(greedy),
        "pronouncer_alone": wer(outputs(nbest, lps, 0.0, greedy)),
        "cost_alone": wer(listed(lambda c: min(c, key=lambda x: x[1]))),
        "first_listed": wer(listed(lambda c: c[0])),
        "combined": wer(outputs(nbest, lps, lam, greedy)),
        "oracle": 1 - sum(found) / len(found),
    }


def rescored(run: str, data: dict, refs: dict, greedy: dict) -> dict:
    """``run``'s row: the weight picked on the validation words, and the
    test words' error rates at it."""
    lps = json.loads(cached(run).read_text())

    def wer(part, lam):
        hyps = outputs(data[part], lps[part], lam, greedy[part])
        return pr.word_error_rate(hyps, refs[part], stress=STRESS), hyps

    grid = [round(wer("valid", lam)[0], 6) for lam in GRID]
    lam = GRID[grid.index(min(grid))]
    test_wer, hyps = wer("test", lam)
    row = {
        "run": run,
        "valid_wer": dict(zip(map(str, GRID), grid)),
        "lam": lam,
        "test": {
            "wer": test_wer,
            "per": pr.phoneme_error_rate(hyps, refs["test"], stress=STRESS),
        },
        "cpu_seconds": lps["cpu_seconds"],
    }
    if run in ("stored", "e7"):
        row["test_right"] = right(hyps, refs["test"])
    print(run, lam, f"{test_wer:.2%}", flush=True)
    return row


def assemble(data: dict) -> dict:
    split = pr.split_words()
    refs = {part: references(split[part]) for part in PARTS}
    stored = load_pronouncer()[0]
    greedy = {part: pe.pronounce(stored, split[part]) for part in PARTS}
    rows = [rescored(run, data, refs, greedy) for run in RUNS]
    # the chapter's live words, scored as the chapter scores them
    words = [w for w, _ in split["test"][:N_LIVE]]
    live_nb = data["test"][:N_LIVE]
    live_lp = log_probs(stored, words, live_nb)
    first = rows[0]  # the stored model's
    got = outputs(live_nb, live_lp, first["lam"], greedy["test"])
    live_right = right(got, refs["test"])
    assert live_right == first["test_right"][:N_LIVE], "live words differ"
    lps = json.loads(cached("stored").read_text())["test"]
    first["parts"] = parts(data["test"], lps, first["lam"], greedy["test"])
    return {
        "what": "tools/runs/g2p_rescore.py: Phonetisaurus's n-best lists "
        "rescored by the pronouncer (no stress)",
        "split": split_fingerprint(),
        "numeric_mode": numeric_mode.stamp(),
        "tool": "phonetisaurus",
        "version": importlib.metadata.version("phonetisaurus"),
        "decode": {**settings()["decode"], "nbest": NBEST, "accumulate": True},
        "train_seconds": data["train_seconds"],
        "listed": {part: sum(map(len, data[part])) for part in PARTS},
        "no_list": {part: sum(not c for c in data[part]) for part in PARTS},
        "member_sha256": {
            str(s): model_hash(pe.member_path(s)) for s in SEEDS
        },
        "stored_sha256": model_hash(STORED_PRONOUNCER),
        "grid": GRID,
        "block": BLOCK,
        "rows": rows,
        "live": {"n": N_LIVE, "nbest": live_nb, "log_p": live_lp},
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=RUNS)
    args = parser.parse_args(argv)
    with threads(1):
        data = lists()
        for run in args.runs:
            score_run(run, data)
        if all(cached(r).exists() for r in RUNS):
            write_json(OUT, assemble(data), indent=None)
            print("wrote", OUT)


if __name__ == "__main__":
    main()
