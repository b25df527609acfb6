"""The seed sweep behind chapter 9: every training claim, on five seeds.

    python -m tools.sweep_ch09 [SEED ...]   (default: seeds 0 to 4)

Chapter 9 trains, within its 60 s, one autoregressive translator and one
one-pass translator on the ambiguous task (every target drawn from its
everyday and financial writings, ``utils.numerals.mixed_targets``), for the
seed ``utils.runtime.course_seed()``. This script trains them exactly as the
chapter does (``train`` below is the chapter's loop) for each seed, measures
every number a claim of the chapter rests on and writes
``book/data/ch09_sweep.json``. It runs in the portable numeric mode (it sets
it itself), like the stored outputs. ``tests/test_sweep_ch09.py`` re-runs
seed 0 and checks it against its stored row.
"""

from __future__ import annotations

import copy
import json
import sys
import time

if __name__ == "__main__":
    from . import numeric_mode

    numeric_mode.apply("portable")

import torch  # noqa: E402

from tools import ROOT  # noqa: E402
from utils import numerals as nm  # noqa: E402
from utils.bleu import corpus_bleu, sentence_bleu  # noqa: E402
from utils.decoding import (  # noqa: E402
    beam_search,
    greedy_decode,
    sample_decode,
    sequence_log_prob,
)
from utils.loss import masked_cross_entropy  # noqa: E402
from utils.runtime import threads  # noqa: E402
from utils.training import (  # noqa: E402
    evaluate_perplexity,
    noam_scheduler,
    paper_adam,
    train_step,
)
from utils.translator import TranslatorConfig, build_translator  # noqa: E402
from utils.translation import (  # noqa: E402
    Vocab,
    balance_by_size,
    encode_batch,
    group_pairs,
    make_batches,
    make_splits,
    source_vocab,
)

OUT = ROOT / "book" / "data" / "ch09_sweep.json"
SEEDS = (0, 1, 2, 3, 4)
STEPS = 500  # both decoders, the same recipe and the same steps
EARLY_STEPS = 150  # the checkpoint kept as the "early" model
EVAL_EVERY = 50
N_CURVE = 100  # validation numbers decoded for the learning curves
N_TEST = 300  # test numbers the chapter decodes
MAX_LEN = 12  # the longest target has 9 characters, plus EOS
NAR_LEN = 10
TEMPERATURES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
TOP_PS = (0.3, 0.5, 0.7, 0.9, 1.0)
N_SAMPLES = 8  # samples per source in the quality/diversity curves
N_SAMPLED = 60  # sources in the quality/diversity curves
# chapter 8's model and recipe (label smoothing included), for fewer steps
RECIPE = TranslatorConfig(steps=STEPS)

VOCAB_SRC, VOCAB_TGT = source_vocab(), Vocab(nm.AMBIGUOUS_CHARS)
BOS, EOS, PAD = VOCAB_TGT.bos_id, VOCAB_TGT.eos_id, VOCAB_TGT.pad_id


def task(seed: int) -> dict:
    """Chapter 8's splits with mixed training targets; the evaluation
    splits keep the number (``(words, n)``), scored against every valid
    writing."""
    splits = make_splits(seed)

    def numbered(pairs):
        return [(w, nm.read_numeral(t)) for w, t in pairs]

    return {
        "train": nm.mixed_targets(splits["train"], seed),
        "valid": numbered(splits["valid"][:N_CURVE]),
        "test": numbered(splits["test"][:N_TEST]),
    }


def mixed_test(seed: int) -> list:
    """The whole test split with mixed targets (for perplexity)."""
    return nm.mixed_targets(make_splits(seed)["test"], seed + 1)


def sources(numbered) -> torch.Tensor:
    pairs = [(w, nm.chinese_numerals(n)) for w, n in numbered]
    return encode_batch(pairs, VOCAB_SRC, VOCAB_TGT)[0]  # (B, S)


def queries(batch_size: int) -> torch.Tensor:
    """The one-pass decoder's input: BOS at every position (B, NAR_LEN)."""
    return torch.full((batch_size, NAR_LEN), BOS)


def one_pass_decode(model, src) -> list[list[str]]:
    with torch.no_grad():
        logits = model(src, queries(src.size(0)))  # (B, L, V): one pass
    logits[..., PAD] = float("-inf")
    return [VOCAB_TGT.decode(row) for row in logits.argmax(-1)]


def greedy(model, src) -> list[list[str]]:
    out = greedy_decode(model, src, MAX_LEN, BOS, EOS, PAD)
    return [VOCAB_TGT.decode(row) for row in out]


def valid_rate(outputs, numbered) -> float:
    ok = sum(nm.is_valid_writing(o, n) for o, (_, n) in zip(outputs, numbered))
    return ok / len(numbered)


def train(seed: int, one_pass: bool = False, steps: int = STEPS, data=None):
    """Chapter 8's recipe (Adam with the Noam schedule, label smoothing
    0.1, dropout 0.1) on the mixed targets: the loop of
    ``utils.translator.train_translator`` (same seeding, batches and
    steps), plus what it does not offer: the one-pass decoder, a
    valid-rate curve and the weights at ``EARLY_STEPS``. Returns
    ``(model, curve, early)``: ``curve`` lists (step, share of validation
    numbers decoded validly), ``early`` the weights after ``EARLY_STEPS``
    steps."""
    data = task(seed) if data is None else data
    valid_src = sources(data["valid"])
    decode = one_pass_decode if one_pass else greedy
    curve, early, epoch, batches = [], None, 0, []
    train_pairs = balance_by_size(data["train"], RECIPE.min_size_share)
    with threads(1):
        torch.manual_seed(seed)
        model = build_translator(RECIPE, VOCAB_SRC, VOCAB_TGT)
        opt = paper_adam(model.parameters())
        sched = noam_scheduler(
            opt,
            RECIPE.d_model,
            RECIPE.warmup_steps,
            RECIPE.factor,
            RECIPE.warmup,
        )
        for step in range(1, steps + 1):
            if not batches:  # a new epoch, reshuffled
                batches = group_pairs(
                    train_pairs, RECIPE.batch_size, seed * 1000 + epoch
                )[::-1]
                epoch += 1
            src, tgt = encode_batch(batches.pop(), VOCAB_SRC, VOCAB_TGT)
            if one_pass:  # every position at once, from BOS queries
                model.train()
                target = torch.full((src.size(0), NAR_LEN), PAD)
                target[:, : tgt.size(1) - 1] = tgt[:, 1:]
                logits = model(src, queries(src.size(0)))  # (B, L, V)
                loss = masked_cross_entropy(
                    logits, target, target != PAD, RECIPE.label_smoothing
                )
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
            else:
                train_step(
                    model, src, tgt, opt, sched, RECIPE.label_smoothing, PAD
                )
            if step % EVAL_EVERY == 0:
                model.eval()
                rate = valid_rate(decode(model, valid_src), data["valid"])
                curve.append((step, round(rate, 4)))
            if step == EARLY_STEPS:
                early = copy.deepcopy(model.state_dict())
    model.eval()
    return model, curve, early


def references(numbered):
    return [nm.valid_writings(n) for _, n in numbered]


def token_ids(outputs) -> torch.Tensor:
    """Character lists -> (B, T) ids: BOS, characters, EOS, PAD..."""
    rows = [VOCAB_TGT.encode(o, bos=True) for o in outputs]
    ids = torch.full((len(rows), max(map(len, rows))), PAD)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    return ids


def error_kinds(model, src, outputs, numbered) -> dict:
    """Greedy's invalid outputs, split: a search error when some valid
    writing scores higher under the model than the output, else a model
    error."""
    wrong = [
        i
        for i, (o, (_, n)) in enumerate(zip(outputs, numbered))
        if not nm.is_valid_writing(o, n)
    ]
    if not wrong:
        return {"search": 0, "model": 0, "wrong": []}
    rows = src[wrong]
    out_lp = sequence_log_prob(
        model, rows, token_ids([outputs[i] for i in wrong]), EOS, PAD
    )
    best_ref = torch.stack(
        [
            sequence_log_prob(
                model,
                rows,
                token_ids(
                    [nm.valid_writings(numbered[i][1])[c] for i in wrong]
                ),
                EOS,
                PAD,
            )
            for c in (0, 1)
        ]
    ).amax(0)
    search = (best_ref > out_lp).tolist()
    return {
        "search": sum(search),
        "model": len(wrong) - sum(search),
        "wrong": wrong,
        "is_search": search,
    }


def beam(model, src, k=4, alpha=0.0) -> list[list[str]]:
    hyps = beam_search(
        model, src, MAX_LEN, BOS, EOS, beam_size=k, alpha=alpha, pad_id=PAD
    )
    return [VOCAB_TGT.decode(h[0][0]) for h in hyps]


def quality_diversity(model, numbered, seed: int, **filters) -> tuple:
    """Sample N_SAMPLES outputs per source -> (share valid, mean distinct
    valid outputs per source)."""
    src = sources(numbered).repeat_interleave(N_SAMPLES, 0)
    gen = torch.Generator().manual_seed(seed)
    out = sample_decode(
        model, src, MAX_LEN, BOS, EOS, PAD, generator=gen, **filters
    )
    texts = [VOCAB_TGT.decode(r) for r in out]
    valid, distinct = 0, 0
    for i, (_, n) in enumerate(numbered):
        mine = texts[i * N_SAMPLES : (i + 1) * N_SAMPLES]
        ok = [tuple(t) for t in mine if nm.is_valid_writing(t, n)]
        valid += len(ok)
        distinct += len(set(ok))
    return valid / len(src), distinct / len(numbered)


def mean_len(outputs) -> float:
    return sum(map(len, outputs)) / len(outputs)


def closest_ref_len(outputs, numbered) -> float:
    """Mean length of the valid writing closest in length to each output."""
    return sum(
        min((abs(len(w) - len(o)), len(w)) for w in nm.valid_writings(n))[1]
        for o, (_, n) in zip(outputs, numbered)
    ) / len(outputs)


def measure(seed: int) -> dict:
    data = task(seed)
    start = time.perf_counter()
    ar, ar_curve, early_state = train(seed, data=data)
    nar, nar_curve, _ = train(seed, one_pass=True, data=data)
    seconds = time.perf_counter() - start
    # the one-pass decoder again on one convention only (no ambiguity)
    single = {**data, "train": make_splits(seed)["train"]}
    nar1, nar1_curve, _ = train(seed, one_pass=True, data=single)
    early = build_translator(RECIPE, VOCAB_SRC, VOCAB_TGT)
    early.load_state_dict(early_state)
    early.eval()
    test, refs = data["test"], references(data["test"])
    src = sources(test)
    row = {"seed": seed, "ar_curve": ar_curve, "nar_curve": nar_curve}
    with threads(1):
        for name, m in (("ar", ar), ("early", early)):
            g, b = greedy(m, src), beam(m, src)
            kinds = error_kinds(m, src, g, test)
            fixed = [
                nm.is_valid_writing(b[i], test[i][1]) for i in kinds["wrong"]
            ]
            too = [
                len(g[i]) - closest_ref_len([g[i]], [test[i]])
                for i in kinds["wrong"]
            ]
            row[name] = {
                "g_valid": valid_rate(g, test),
                "b_valid": valid_rate(b, test),
                "g_bleu": corpus_bleu(g, refs),
                "b_bleu": corpus_bleu(b, refs),
                "g_mixed": sum(map(nm.mixes_conventions, g)) / len(g),
                "differ": sum(x != y for x, y in zip(g, b)),
                "search": kinds["search"],
                "model": kinds["model"],
                "g_len": mean_len(g),
                "ref_len": closest_ref_len(g, test),
                "fix_search": sum(
                    f and k for f, k in zip(fixed, kinds.get("is_search", []))
                ),
                "fix_model": sum(
                    f and not k
                    for f, k in zip(fixed, kinds.get("is_search", []))
                ),
                "too_long": sum(x > 0 for x in too),
                "too_short": sum(x < 0 for x in too),
                "financial": sum(nm.convention_of(o) == "financial" for o in g)
                / len(g),
            }
        for name, m in (("ar", ar), ("early", early)):
            b1, b0 = beam(m, src, alpha=1.0), beam(m, src)
            row[name]["a1_valid"] = valid_rate(b1, test)
            row[name]["a1_len"] = mean_len(b1)
            row[name]["b_len"] = mean_len(b0)
        b0 = beam(early, src)
        per_sentence = [sentence_bleu(o, r) for o, r in zip(b0, refs)]
        row["early"]["mean_sentence_bleu"] = sum(per_sentence) / len(refs)
        row["early"]["zero_sentences"] = sum(x == 0 for x in per_sentence)
        test_batches = make_batches(
            mixed_test(seed), 500, VOCAB_SRC, VOCAB_TGT, seed=None
        )
        row["ppl_ar"] = evaluate_perplexity(ar, test_batches, pad_id=PAD)
        row["ppl_early"] = evaluate_perplexity(early, test_batches, pad_id=PAD)
        nar_out = one_pass_decode(nar, src)
        row["nar"] = {
            "valid": valid_rate(nar_out, test),
            "mixed": sum(map(nm.mixes_conventions, nar_out)) / len(nar_out),
            "bleu": corpus_bleu(nar_out, refs),
        }
        row["nar_single"] = {
            "valid": valid_rate(one_pass_decode(nar1, src), test),
            "curve": nar1_curve,
        }
        few = test[:N_SAMPLED]
        row["greedy_few"] = valid_rate(greedy(ar, sources(few)), few)
        row["temperature"] = [
            quality_diversity(ar, few, seed, temperature=t)
            for t in TEMPERATURES
        ]
        row["top_p"] = [
            quality_diversity(ar, few, seed, top_p=p) for p in TOP_PS
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
        OUT.write_text(json.dumps({"rows": rows}, indent=1) + "\n")
        print("wrote", OUT)


if __name__ == "__main__":
    main(sys.argv[1:])
