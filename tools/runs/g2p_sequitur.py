"""Sequitur G2P (Bisani & Ney 2008) on the course's split, ramped up one
n-gram order at a time, resumably.

    python -m tools.runs.g2p_sequitur --max-minutes 120    (make sequitur)

Sequitur is the joint-sequence model's reference implementation
(``sequitur-g2p`` on PyPI). Its documented recipe (``command``) trains
order 1 with ``--devel 5%`` (5% of the training words held out to adjust
the discounts and to stop EM), then each next order from the last one with
``--ramp-up``; this script runs exactly that through the package's own
``SequiturTool`` and its defaults, on every pronunciation of the training
words, stress removed, as ``tools/runs/g2p_baselines.py`` trains
Phonetisaurus. ``random`` and the hash seed are fixed before each order,
so the held-out 5% is the same on every run.

Each order runs in a child process: a finished order keeps its model in
``_build/baselines/sequitur/`` and stores its row in
``book/data/g2p_baselines.json`` (entry ``sequitur-N``); the next call
continues with the next order. ``--max-minutes`` is a wall limit: no order
starts after it, and one still running then is redone next time. Where the
stored orders' models are missing (a new clone), they are made again first
and must get the same words wrong as their rows. It stops for good where
the validation WER stops improving, or when the finished orders have used
``BUDGET_HOURS`` of one core.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from proof.runtime import split_fingerprint
from tools import ROOT
from tools.runs.g2p_baselines import cache_dir, load, scored, store
from utils import pronunciation as pr

BUILD = ROOT / "_build" / "baselines" / "sequitur"
BUDGET_HOURS = 3  # of one core, all orders together
MAX_ORDER = 12
DEVEL = "5%"
PREFIX = "sequitur-"
SEED = 0  # random.seed and PYTHONHASHSEED of every training run


def model_dir() -> Path:
    """``BUILD``'s folder for today's split and the package's version."""
    return cache_dir(BUILD, importlib.metadata.version("sequitur-g2p"))


def model_path(order: int) -> Path:
    return model_dir() / f"model-{order}.pickle"


def command(order: int) -> list[str]:
    """``g2p.py``'s arguments for ``order`` (the documented recipe)."""
    args = ["--train", "train.lex", "--devel", DEVEL]
    if order > 1:
        args += ["--model", f"model-{order - 1}", "--ramp-up"]
    return args + ["--write-model", f"model-{order}"]


def settings(order: int) -> dict:
    import sequitur

    return {
        "order": order,
        "command": "g2p.py " + " ".join(command(order)),
        "devel": DEVEL + " of the training words, held out (not trained "
        "on), drawn afresh each order",
        "graphones": "at most one letter and one phoneme, "
        f"{sequitur.ModelTemplate.sizeTemplates} (the default)",
        "em_iterations": [
            sequitur.ModelTemplate.minIterations,
            sequitur.ModelTemplate.maxIterations,
        ],
        "decode": "Translator, the most probable pronunciation",
        "seed": {"random": SEED, "PYTHONHASHSEED": str(SEED)},
        "built_with": f"SWIG {swig_version()}; numpy.sometrue = numpy.any",
        "stress": False,
        "train_on": "every pronunciation of every training word",
    }


def entries(data: dict) -> list[dict]:
    """The stored orders, lowest first."""
    found = [e for n, e in data["entries"].items() if n.startswith(PREFIX)]
    return sorted(found, key=lambda e: e["settings"]["order"])


def swig_version() -> str:
    """The SWIG that made the installed package's wrapper (its header)."""
    import sequitur_

    head = Path(sequitur_.__file__).read_text().splitlines()[:3]
    return next(line.split()[-1] for line in head if "Version" in line)


def fit(order: int, sample: list) -> tuple:
    """Sequitur's ``g2p.py`` recipe for ``order`` on ``sample``, from the
    stored model of the order before: (model, its new file, seconds)."""
    import optparse

    import numpy
    import SequiturTool

    # the package calls numpy.sometrue (from order 2), which NumPy 2.0
    # removed, though it requires numpy>=2: the alias it was
    numpy.sometrue = numpy.any
    parser = optparse.OptionParser()
    SequiturTool.addTrainOptions(parser)
    paths = {f"model-{order - 1}": str(model_path(order - 1))}
    paths[f"model-{order}"] = str(model_path(order)) + ".part"
    options, _ = parser.parse_args([paths.get(a, a) for a in command(order)])
    random.seed(SEED)
    wall = time.perf_counter()
    with open(model_dir() / f"train-{order}.log", "w") as log:
        model = SequiturTool.procureModel(options, lambda _: sample, log=log)
    if not model:
        raise RuntimeError(f"order {order} failed: see {log.name}")
    return model, options.newModelFile, time.perf_counter() - wall


def train(order: int, again: bool) -> None:
    """One order, in this (child) process: trained (``fit``), scored,
    stored; ``again``: an order already stored whose model is gone
    (another machine)."""
    from sequitur import Translator

    split = pr.split_words()
    pairs = pr.to_pairs(split["train"], stress=False)
    sample = [(tuple(letters), tuple(p)) for letters, p in pairs]
    cpu = time.process_time()
    model, new_file, train_wall = fit(order, sample)
    out = {
        "made_by": "tools/runs/g2p_sequitur.py",
        "tool": "sequitur-g2p",
        "version": importlib.metadata.version("sequitur-g2p"),
        "settings": settings(order),
        "split": split_fingerprint(),
        "train": {
            "words": len(split["train"]),
            "pronunciations": len(sample),
            "seconds": round(train_wall, 1),
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "model_bytes": Path(new_file).stat().st_size,
        },
    }
    translator = Translator(model)

    def predict(words):
        got = {}
        for word in words:
            try:
                got[word] = translator(tuple(word))
            except translator.TranslationFailure:
                pass  # no output: wrong
        return got

    for part in ("valid", "test"):
        out[part] = scored(split[part], predict)
    out["train"]["cpu_seconds_with_scoring"] = round(
        time.process_time() - cpu, 1
    )
    data = load()
    if again:  # kept only if it gets the same words wrong as its row
        stored = data["entries"][f"{PREFIX}{order}"]
        for part in ("valid", "test"):
            if out[part]["wrong"] != stored[part]["wrong"]:
                raise SystemExit(f"order {order} made again differs ({part})")
    os.replace(new_file, model_path(order))
    if not again:
        done = entries(data)[: order - 1]
        out["train"]["seconds_all_orders"] = round(
            sum(e["train"]["seconds"] for e in done) + train_wall, 1
        )
        data["sequitur"] = {"orders": order, "stopped": None}
        store(data, f"{PREFIX}{order}", out)
        print(
            f"sequitur-{order}: {train_wall:.0f} s, valid WER "
            f"{out['valid']['wer']:.2%}, test WER {out['test']['wer']:.2%}",
            flush=True,
        )


def stop_reason(done: list[dict]) -> str | None:
    """Why no further order is trained, or None."""
    if len(done) >= 2:
        last, before = done[-1], done[-2]
        if last["valid"]["wer"] >= before["valid"]["wer"]:
            return (
                f"validation WER stopped improving: order "
                f"{last['settings']['order']} {last['valid']['wer']:.2%}, "
                f"order {before['settings']['order']} "
                f"{before['valid']['wer']:.2%}"
            )
    cpu = sum(e["train"]["cpu_seconds_with_scoring"] for e in done)
    if cpu >= BUDGET_HOURS * 3600:
        return f"{BUDGET_HOURS} h of one core used ({cpu:.0f} s)"
    if done and done[-1]["settings"]["order"] >= MAX_ORDER:
        return f"order {MAX_ORDER} reached"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-minutes", type=float, default=None)
    ap.add_argument("--order", type=int, help=argparse.SUPPRESS)  # child
    ap.add_argument("--again", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    # Sequitur 1.0.1668.30's wheels on PyPI were made with SWIG 4.2.1, whose
    # capsule reference counting breaks the package's ``thisown``
    # assignments: training fails in its first iteration ("'SwigPyObject'
    # object has no attribute 'thisown'", upstream pull request 111). Built
    # from its source with SWIG 4.0 (``make sequitur`` does) it trains.
    if tuple(map(int, swig_version().split(".")[:2])) >= (4, 1):
        raise SystemExit(
            f"sequitur-g2p was built with SWIG {swig_version()}: its "
            "training fails; make sequitur builds it with SWIG 4.0.2"
        )
    model_dir().mkdir(parents=True, exist_ok=True)
    if args.order is not None:
        return train(args.order, args.again)
    deadline = time.monotonic() + 60 * (args.max_minutes or 1e9)
    while True:
        data = load()
        done = entries(data)
        reason = stop_reason(done)
        order = len(done) + 1
        orders = [e["settings"]["order"] for e in done]
        if orders != list(range(1, order)):
            raise SystemExit(f"stored orders are not 1..n: {orders}")
        if reason is not None:
            data["sequitur"] = {"orders": order - 1, "stopped": reason}
            store(data)
            return print(f"sequitur: done ({reason})")
        gone = [n for n in range(1, order) if not model_path(n).exists()]
        left = deadline - time.monotonic()
        if left <= 0:
            return print(f"sequitur: time is up; next: order {order}")
        env = {**os.environ, "PYTHONHASHSEED": str(SEED)}
        cmd = [sys.executable, "-m", "tools.runs.g2p_sequitur"]
        if gone:  # the recipe is seeded: the stored orders are made again
            order, cmd = gone[0], cmd + ["--again"]
        print(f"sequitur: order {order} ({left / 60:.0f} min left)")
        child = subprocess.Popen(cmd + ["--order", str(order)], env=env)
        try:
            code = child.wait(timeout=left)
        except subprocess.TimeoutExpired:
            child.terminate()
            child.wait()
            return print(f"sequitur: stopped in order {order}, redone next")
        if code != 0:
            raise SystemExit(f"order {order} failed ({code})")


if __name__ == "__main__":
    main()
