"""Chapter 9's decoding study on all the test words: greedy against a beam
of 4 with the stored pronouncer, and mixes of two right answers.

    python -m tools.runs.decode_pronouncer                 # writes the JSON
    python -m tools.runs.decode_pronouncer --number-seeds  # no number task

The test words are decoded in blocks of ``BLOCK`` in their stored order,
as the chapter decodes its first block, which must find the same per-word
outcomes (``outcome_codes``) exactly. ``book/data/pronouncer_decoding.json``
holds, small: the error rates, the words the beam fixes and breaks with
McNemar's paired test, search and model errors on the ambiguous words and
on the rest, the splices (``utils.splices``) of both decoders, one code per
test word, the split's fingerprint and the model's SHA-256
(``tests/test_decode_pronouncer.py`` compares them with today's files);
then the splice test on chapter 9's number task (``number_task``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from proof.runtime import split_fingerprint
from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import error_rates, write_json
from utils import pronunciation as pr
from utils.pronouncer import STORED_PRONOUNCER, load_pronouncer
from utils.splices import best_reference_scores, splice
from utils.stats import mcnemar
from utils.training import threads

OUT = ROOT / "book" / "data" / "pronouncer_decoding.json"
MODEL = STORED_PRONOUNCER
BLOCK, BEAM, STRESS = 500, 4, False
NUMBER_SEEDS = (0, 1, 2, 3, 4)
# one character per test word: the sum of these bits
BITS = {
    "greedy_right": 1,
    "beam_right": 2,
    "search_error": 4,
    "greedy_splice": 8,
    "beam_splice": 16,
}
DIGITS = "0123456789abcdefghijklmnopqrstuv"  # 32 codes, 5 bits


def model_hash(path=MODEL) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def references(entries) -> list[list[tuple]]:
    """Every distinct pronunciation of each entry, without stress."""
    return [
        [tuple(p) for _, p in pr.to_pairs([e], stress=STRESS)] for e in entries
    ]


def outcome_codes(model, words, refs, greedy, beam) -> str:
    """One character per word (``BITS``): right or not, a search error (a
    reference scores higher than greedy's wrong output), a splice."""
    wrong = [i for i, (g, r) in enumerate(zip(greedy, refs)) if g not in r]
    search = set()
    if wrong:
        ws, rs = [words[i] for i in wrong], [refs[i] for i in wrong]
        out_lp = pr.log_prob(model, ws, [greedy[i] for i in wrong], STRESS)
        ref_lp = best_reference_scores(model, ws, rs, STRESS)
        search = {i for i, o, r in zip(wrong, out_lp, ref_lp) if r > o}
    codes = []
    for i, (g, b, r) in enumerate(zip(greedy, beam, refs)):
        code = (
            (g in r) * BITS["greedy_right"]
            + (b in r) * BITS["beam_right"]
            + (i in search) * BITS["search_error"]
            + (splice(g, r) is not None) * BITS["greedy_splice"]
            + (splice(b, r) is not None) * BITS["beam_splice"]
        )
        codes.append(DIGITS[code])
    return "".join(codes)


def has(code: str, bit: str) -> bool:
    return bool(DIGITS.index(code) & BITS[bit])


def summary(codes: str, refs) -> dict:
    """Counts per group of words: all, ambiguous (>= 2 references), rest."""
    groups = {
        "all": range(len(codes)),
        "ambiguous": [i for i, r in enumerate(refs) if len(r) >= 2],
        "rest": [i for i, r in enumerate(refs) if len(r) < 2],
    }
    out = {}
    for name, idx in groups.items():
        c = [codes[i] for i in idx]
        g_wrong = [x for x in c if not has(x, "greedy_right")]
        search = [x for x in g_wrong if has(x, "search_error")]
        model_err = [x for x in g_wrong if not has(x, "search_error")]
        out[name] = {
            "n": len(c),
            "greedy_wrong": len(g_wrong),
            "beam_wrong": sum(not has(x, "beam_right") for x in c),
            "search_errors": len(search),
            "model_errors": len(model_err),
            "beam_fixes_search": sum(has(x, "beam_right") for x in search),
            "beam_fixes_model": sum(has(x, "beam_right") for x in model_err),
            "beam_breaks": sum(
                has(x, "greedy_right") and not has(x, "beam_right") for x in c
            ),
            "greedy_splices": sum(has(x, "greedy_splice") for x in c),
            "beam_splices": sum(has(x, "beam_splice") for x in c),
        }
    return out


def number_task(seeds) -> list[dict]:
    """The splice test on chapter 9's number task: per seed, the share of
    the test outputs that are splices of the number's two writings, for
    the autoregressive and the one-pass decoder (``tools.runs.ambiguous``), and
    the parser's share of mixed outputs beside it."""
    from tools.runs import ambiguous as amb
    from tools.runs import numbers_task as nt
    from utils import numerals as nm

    rows = []
    for seed in seeds:
        data = amb.task(seed)
        test, src = data["test"], amb.sources(data["test"])
        row = {"seed": seed}
        for name, one_pass in (("ar", False), ("one_pass", True)):
            model, _, _ = amb.train(seed, one_pass=one_pass, data=data)
            decode = amb.one_pass_decode if one_pass else amb.greedy
            with threads(1):
                outs = decode(model, src)
            writings = [nt.valid_writings(n) for _, n in test]
            row[name] = {
                "n": len(outs),
                "valid": amb.valid_rate(outs, test),
                "mixed": sum(map(nm.mixes_conventions, outs)) / len(outs),
                "splices": sum(
                    splice(o, w) is not None for o, w in zip(outs, writings)
                )
                / len(outs),
            }
        rows.append(row)
        print(f"number task, seed {seed}: {row}", flush=True)
    return rows


def decode_blocks(model, words, refs) -> tuple[str, list, list, dict]:
    """Greedy and the beam on ``words``, ``BLOCK`` words at a time in their
    order: the outcome codes, both outputs, the CPU seconds of each."""
    codes, greedy, beam, seconds = "", [], [], {"greedy": 0.0, "beam": 0.0}
    with threads(1):
        for s in range(0, len(words), BLOCK):
            w, r = words[s : s + BLOCK], refs[s : s + BLOCK]
            start = time.process_time()
            g = pr.pronounce(model, w, stress=STRESS)
            mid = time.process_time()
            found = pr.pronounce_beam(model, w, BEAM, stress=STRESS)
            b = [x[0][0] for x in found]
            seconds["greedy"] += mid - start
            seconds["beam"] += time.process_time() - mid
            codes += outcome_codes(model, w, r, g, b)
            greedy, beam = greedy + g, beam + b
            print(f"{s + len(w)} words", flush=True)
    return codes, greedy, beam, seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--number-seeds", type=int, nargs="*", default=list(NUMBER_SEEDS)
    )
    args = parser.parse_args(argv)
    model, cfg, stress = load_pronouncer(MODEL)
    assert stress == STRESS, "the study scores without stress"
    test = pr.split_words()["test"]
    words, refs = [w for w, _ in test], references(test)
    codes, greedy, beam, seconds = decode_blocks(model, words, refs)
    groups = summary(codes, refs)
    everything = groups["all"]
    fixes = everything["beam_fixes_search"] + everything["beam_fixes_model"]
    breaks = everything["beam_breaks"]
    # the words where greedy splices two readings and the beam returns one
    spliced_fixed = [
        words[i]
        for i, c in enumerate(codes)
        if has(c, "greedy_splice") and has(c, "beam_right")
    ]
    rates = {
        "greedy": error_rates(greedy, refs),
        "beam": error_rates(beam, refs),
    }
    data = {
        "split": split_fingerprint(),
        "model_sha256": model_hash(),
        "numeric_mode": numeric_mode.stamp(),
        "block": BLOCK,
        "beam_size": BEAM,
        "bits": BITS,
        "digits": DIGITS,
        **{m: {k: r[m] for k, r in rates.items()} for m in ("wer", "per")},
        "differ": sum(g != b for g, b in zip(greedy, beam)),
        "fixes": fixes,
        "breaks": breaks,
        "mcnemar": mcnemar(fixes, breaks),
        "cpu_seconds": {k: round(v, 1) for k, v in seconds.items()},
        "groups": groups,
        "spliced_fixed": spliced_fixed,
        "codes": codes,
        "number_task": [],
    }
    write_json(OUT, data)  # in case of a crash
    data["number_task"] = number_task(args.number_seeds)
    write_json(OUT, data)
    print("wrote", OUT)
    print(json.dumps({k: v for k, v in data.items() if k != "codes"})[:3000])


if __name__ == "__main__":
    main()
