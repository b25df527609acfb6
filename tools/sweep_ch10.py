"""Chapter 10's stored runs: pre-training on English words, and what it buys.

    python -m tools.sweep_ch10 [--seeds 0 1 ...] [--part pre|tune|all]
    python -m tools.sweep_ch10 --list

For each seed: the three objectives are trained on the spellings of the
pronouncer's training words (``PRE_STEPS`` steps each), rounded to fp16
(as stored) and scored on the validation words against counting
baselines; the causal LM samples words at two temperatures; the causal
and prefix LMs complete validation words from their first letters. Then
chapter 8's pronouncer (``RECIPE``) is trained on ``LABELS`` labelled
words, its encoder started from the masked LM ("pretrained") or at
random ("scratch"), for ``TUNE_STEPS`` steps, and from scratch also for
``LONG_STEPS`` (a fair larger budget), and from the masked LM for
``LONG_STEPS`` too (``ARMS``); each is scored by greedy word and
phoneme error rates on the first ``N_TEST`` test words.

One JSON line per finished run goes to ``book/data/ch10_runs.jsonl``
(runs already there are skipped: a stopped sweep goes on where it
stopped; two processes with other seeds may share the file); the seed-0
models go to ``book/data/ch10_lm_s0.pt`` (fp16). The tool restarts itself
in the portable numeric mode, one thread.
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import time

from tools import numeric_mode

if __name__ == "__main__":  # before torch is imported
    numeric_mode.reexec_in("portable", "tools.sweep_ch10")

import torch  # noqa: E402

from tools import ROOT  # noqa: E402
from tools.sweep_pronouncer import RECIPE  # noqa: E402
from utils import pretraining as pt  # noqa: E402
from utils import pronunciation as pr  # noqa: E402
from proof.runtime import numeric_stamp  # noqa: E402
from utils.training import threads  # noqa: E402
from utils.pronouncer import train_pronouncer  # noqa: E402

OUT = ROOT / "book" / "data" / "ch10_runs.jsonl"
MODELS = ROOT / "book" / "data" / "ch10_lm_s0.pt"
SEEDS = (0, 1, 2, 3, 4)
STRESS = False
PRE_STEPS = {"mlm": 2000, "clm": 1200, "plm": 1200}
PRE_BATCH, PRE_LR = 128, 3e-3
REPLAY = 30  # first losses stored: the chapter re-runs them
TEMPERATURES = (0.8, 1.2)
N_SAMPLES = 2000
PREFIX_LETTERS = 3
LABELS = (500, 2000, 8000)
TUNE_STEPS, LONG_STEPS = 600, 1800
N_TEST = 2000
# (start, steps) of each fine-tuning arm: the pre-trained encoder and a
# random one, for the same steps and for three times as many
ARMS = (
    ("pretrained", TUNE_STEPS),
    ("scratch", TUNE_STEPS),
    ("scratch", LONG_STEPS),
    ("pretrained", LONG_STEPS),
)
TUNE = dataclasses.replace(
    RECIPE,
    batch_size=64,
    warmup_steps=100,
    n_valid_exact=200,
)
LM = pt.LMConfig.like(TUNE)


def data() -> dict:
    split = pr.split_words(2000, 12000, 0)
    return {
        "split": split,
        "train": [w for w, _ in split["train"]],
        "valid": [w for w, _ in split["valid"]],
        "heldout": {w for k in ("valid", "test") for w, _ in split[k]},
    }


def done_runs() -> set[str]:
    if not OUT.is_file():
        return set()
    return {json.loads(line)["run"] for line in OUT.open() if line.strip()}


def store(row: dict) -> None:
    with OUT.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row) + "\n")
    print({k: v for k, v in row.items() if k != "losses"}, flush=True)


def tune_config(steps: int, seed: int):
    """The fine-tuning recipe for ``steps`` steps (utils.pretraining)."""
    return pt.tune_config(TUNE, steps, seed)


def label_order(entries: list, seed: int) -> list:
    return pt.label_order(entries, seed)


def settings() -> dict:
    """What the chapter needs to replay the runs: stored in the meta row
    (tests/test_pretraining.py checks it against this script)."""
    return {
        "SEEDS": list(SEEDS),
        "PRE_STEPS": dict(PRE_STEPS),
        "PRE_BATCH": PRE_BATCH,
        "PRE_LR": PRE_LR,
        "REPLAY": REPLAY,
        "TEMPERATURES": list(TEMPERATURES),
        "N_SAMPLES": N_SAMPLES,
        "PREFIX_LETTERS": PREFIX_LETTERS,
        "LABELS": list(LABELS),
        "TUNE_STEPS": TUNE_STEPS,
        "LONG_STEPS": LONG_STEPS,
        "N_TEST": N_TEST,
        "ARMS": [list(arm) for arm in ARMS],
        "LM": vars(LM),
        "TUNE": dataclasses.asdict(TUNE),
    }


def numeric_mode_row() -> dict:
    return {"mode": "portable", **numeric_stamp()}


def r5(x: float) -> float:
    return round(float(x), 5)


def pretrain(kind: str, seed: int, d: dict):
    start = time.perf_counter()
    model, losses = pt.train_lm(
        kind, d["train"], PRE_STEPS[kind], PRE_BATCH, seed, PRE_LR, LM
    )
    pt.round_fp16(model)
    stats = pt.evaluate_lm(kind, model, d["valid"])
    row = {
        "run": f"pre_{kind}_s{seed}",
        "kind": kind,
        "seed": seed,
        "steps": PRE_STEPS[kind],
        "loss": r5(stats["loss"]),
        "accuracy": r5(stats["accuracy"]),
        "n": stats["n"],
        "losses": [r5(x) for x in losses[:REPLAY]],
        "last_loss": r5(sum(losses[-50:]) / 50),
    }
    if kind in ("clm", "plm"):
        long = [w for w in d["valid"] if len(w) > PREFIX_LETTERS]
        done = pt.complete(kind, model, [w[:PREFIX_LETTERS] for w in long])
        after = pt.evaluate_lm(
            kind, model, long, prefix_letters=PREFIX_LETTERS
        )
        row["completion"] = {
            "n": len(long),
            "exact": r5(sum(a == b for a, b in zip(done, long)) / len(long)),
            "real": r5(sum(w in d["heldout"] for w in done) / len(long)),
            "letter_accuracy": r5(after["accuracy"]),
        }
    if kind == "clm":
        known = set(d["train"])
        row["samples"] = []
        for t in TEMPERATURES:
            words = pt.sample_words(model, N_SAMPLES, t, seed=seed)
            new = [w for w in words if w and w not in known]
            row["samples"].append(
                {
                    "temperature": t,
                    "new": r5(len(new) / N_SAMPLES),
                    "real_unseen": r5(
                        sum(w in d["heldout"] for w in new) / N_SAMPLES
                    ),
                    "distinct": r5(len(set(words)) / N_SAMPLES),
                    "examples": words[:12],
                }
            )
    row["seconds"] = round(time.perf_counter() - start, 1)
    return model, row


def scores(model, test) -> dict:
    words = [w for w, _ in test]
    refs = [[p for _, p in pr.to_pairs([e], stress=STRESS)] for e in test]
    hyps = pr.pronounce(model, words, stress=STRESS)
    return {
        "wer": r5(pr.word_error_rate(hyps, refs, stress=STRESS)),
        "per": r5(pr.phoneme_error_rate(hyps, refs, stress=STRESS)),
    }


def tune(body, labels: int, init: str, steps: int, seed: int, d: dict):
    start = time.perf_counter()
    entries = label_order(d["split"]["train"], seed)[:labels]
    splits, vocabs = pr.pronouncer_data(
        {"train": entries, "valid": d["split"]["valid"]}, stress=STRESS
    )
    model, history = train_pronouncer(
        tune_config(steps, seed),
        splits,
        progress=False,
        vocabs=vocabs,
        init=pt.encoder_state(body) if init == "pretrained" else None,
    )
    return {
        "run": f"tune_{labels}_{init}_{steps}_s{seed}",
        "labels": labels,
        "init": init,
        "steps": steps,
        "seed": seed,
        **scores(model, d["split"]["test"][:N_TEST]),
        "valid_exact": r5(history["valid_exact"][-1]),
        "losses": [r5(x) for x in history["train_loss"][:REPLAY]],
        "seconds": round(time.perf_counter() - start, 1),
    }


def tune_runs(seed: int) -> list[tuple[int, str, int]]:
    return [(n, init, steps) for n in LABELS for init, steps in ARMS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS))
    parser.add_argument("--part", choices=("pre", "tune", "all"))
    parser.add_argument("--list", action="store_true")
    parser.add_argument(
        "--arm", help="only this fine-tuning arm, e.g. pretrained:1800"
    )
    args = parser.parse_args()
    part = args.part or "all"
    if args.list:
        for s in args.seeds:
            print(*(f"pre_{k}_s{s}" for k in pt.OBJECTIVES))
            print(*(f"tune_{n}_{i}_{t}_s{s}" for n, i, t in tune_runs(s)))
        return
    torch.set_num_threads(1)
    if "meta" not in done_runs():  # the numerics every row is computed in
        meta = {"numeric_mode": numeric_mode_row(), "settings": settings()}
        store({"run": "meta", **meta})
    d = data()
    with threads(1):
        for seed in args.seeds:
            done = done_runs()
            models = {}
            kinds = pt.OBJECTIVES if part != "tune" else ("mlm",)
            need_tune = part != "pre" and any(
                f"tune_{n}_{i}_{t}_s{seed}" not in done
                and (not args.arm or args.arm == f"{i}:{t}")
                for n, i, t in tune_runs(seed)
            )
            for kind in kinds:
                run = f"pre_{kind}_s{seed}"
                if run in done and not (kind == "mlm" and need_tune):
                    continue
                if run in done and seed != 0:
                    models[kind], _ = pretrain(kind, seed, d)  # the body
                    continue
                models[kind], row = pretrain(kind, seed, d)
                if run not in done:
                    store(row)
            if seed == 0 and len(models) == 3:
                state = {
                    k: {n: v.half() for n, v in m.state_dict().items()}
                    for k, m in models.items()
                }
                torch.save({"config": vars(LM), "models": state}, MODELS)
            if part == "pre":
                continue
            for n, init, steps in tune_runs(seed):
                if f"tune_{n}_{init}_{steps}_s{seed}" in done:
                    continue
                if args.arm and args.arm != f"{init}:{steps}":
                    continue
                store(tune(models["mlm"], n, init, steps, seed, d))


if __name__ == "__main__":
    main()
