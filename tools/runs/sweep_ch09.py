"""The seed sweep behind chapter 9: every training claim, on five seeds.

    python -m tools.runs.sweep_ch09 [SEED ...]   (default: seeds 0 to 4)

For each seed, the autoregressive and the one-pass translator on the
ambiguous task, trained exactly as the chapter trains them in its 60 s
(``tools.runs.ambiguous.train``), and every number a claim of the chapter
rests on -> ``book/data/ch09_sweep.json`` (written when every seed ran).
``tests/test_sweep_ch09.py`` re-runs seed 0 against its stored row.
"""

from __future__ import annotations

import json
import sys
import time

from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import ambiguous as amb
from tools.runs import numbers_task as nm
from tools.runs import write_json
from utils.batches import make_batches
from utils import numerals
from utils.bleu import corpus_bleu, sentence_bleu
from utils.pronouncer import build_pronouncer
from utils.training import evaluate_perplexity, threads

OUT = ROOT / "book" / "data" / "ch09_sweep.json"
SEEDS = (0, 1, 2, 3, 4)


def decoder_row(m, src, test, refs) -> dict:
    """One decoder's greedy and beam outputs on the test numbers: valid
    rates, BLEU, search and model errors, lengths, conventions."""
    g, b = amb.greedy(m, src), amb.beam(m, src)
    b1 = amb.beam(m, src, alpha=1.0)
    kinds = amb.error_kinds(m, src, g, test)
    fixed = [nm.is_valid_writing(b[i], test[i][1]) for i in kinds["wrong"]]
    too = [
        len(g[i]) - amb.closest_ref_len([g[i]], [test[i]])
        for i in kinds["wrong"]
    ]
    is_search = kinds.get("is_search", [])
    return {
        "g_valid": amb.valid_rate(g, test),
        "b_valid": amb.valid_rate(b, test),
        "g_bleu": corpus_bleu(g, refs),
        "b_bleu": corpus_bleu(b, refs),
        "g_mixed": sum(map(numerals.mixes_conventions, g)) / len(g),
        "differ": sum(x != y for x, y in zip(g, b)),
        "search": kinds["search"],
        "model": kinds["model"],
        "g_len": amb.mean_len(g),
        "ref_len": amb.closest_ref_len(g, test),
        "fix_search": sum(f and k for f, k in zip(fixed, is_search)),
        "fix_model": sum(f and not k for f, k in zip(fixed, is_search)),
        "too_long": sum(x > 0 for x in too),
        "too_short": sum(x < 0 for x in too),
        "financial": sum(numerals.convention_of(o) == "financial" for o in g)
        / len(g),
        "a1_valid": amb.valid_rate(b1, test),
        "a1_len": amb.mean_len(b1),
        "b_len": amb.mean_len(b),
    }


def measure(seed: int) -> dict:
    data = amb.task(seed)
    start = time.perf_counter()
    ar, ar_curve, early_state = amb.train(seed, data=data)
    nar, nar_curve, _ = amb.train(seed, one_pass=True, data=data)
    seconds = time.perf_counter() - start
    # the one-pass decoder again on one convention only (no ambiguity)
    single = {**data, "train": nm.make_splits(seed)["train"]}
    nar1, nar1_curve, _ = amb.train(seed, one_pass=True, data=single)
    early = build_pronouncer(amb.RECIPE, amb.VOCAB_SRC, amb.VOCAB_TGT)
    early.load_state_dict(early_state)
    early.eval()
    test, refs = data["test"], amb.references(data["test"])
    src = amb.sources(test)
    row = {"seed": seed, "ar_curve": ar_curve, "nar_curve": nar_curve}
    with threads(1):
        for name, m in (("ar", ar), ("early", early)):
            row[name] = decoder_row(m, src, test, refs)
        b = amb.beam(early, src)
        per_sentence = [sentence_bleu(o, r) for o, r in zip(b, refs)]
        row["early"]["mean_sentence_bleu"] = sum(per_sentence) / len(refs)
        row["early"]["zero_sentences"] = sum(x == 0 for x in per_sentence)
        test_batches = make_batches(
            amb.mixed_test(seed), 500, amb.VOCAB_SRC, amb.VOCAB_TGT, seed=None
        )
        row["ppl_ar"] = evaluate_perplexity(ar, test_batches, pad_id=amb.PAD)
        row["ppl_early"] = evaluate_perplexity(
            early, test_batches, pad_id=amb.PAD
        )
        nar_out = amb.one_pass_decode(nar, src)
        row["nar"] = {
            "valid": amb.valid_rate(nar_out, test),
            "mixed": sum(map(numerals.mixes_conventions, nar_out))
            / len(nar_out),
            "bleu": corpus_bleu(nar_out, refs),
        }
        row["nar_single"] = {
            "valid": amb.valid_rate(amb.one_pass_decode(nar1, src), test),
            "curve": nar1_curve,
        }
        few = test[: amb.N_SAMPLED]
        row["greedy_few"] = amb.valid_rate(
            amb.greedy(ar, amb.sources(few)), few
        )
        row["temperature"] = [
            amb.quality_diversity(ar, few, seed, temperature=t)
            for t in amb.TEMPERATURES
        ]
        row["top_p"] = [
            amb.quality_diversity(ar, few, seed, top_p=p) for p in amb.TOP_PS
        ]
    row["train_seconds"] = round(seconds, 1)
    return row


def main(argv=None) -> None:
    seeds = [int(a) for a in (argv or [])] or list(SEEDS)
    rows = []
    for seed in seeds:
        start = time.perf_counter()
        rows.append(measure(seed))
        print(f"seed {seed}: {time.perf_counter() - start:.0f} s", flush=True)
        print(json.dumps(rows[-1])[:600], flush=True)
    if sorted(seeds) == list(SEEDS):
        write_json(OUT, {"numeric_mode": numeric_mode.stamp(), "rows": rows})
        print("wrote", OUT)


if __name__ == "__main__":
    main(sys.argv[1:])
