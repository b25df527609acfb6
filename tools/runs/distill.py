"""Issue 58, item 4: distilling chapter 8's ensemble into one pronouncer
(token-level ensemble distillation, Sun et al. 2019).

    python -m tools.runs.distill      # the teacher's table, once (minutes)
    python -m tools.runs.train_pronouncer --recipe t128_kd --procs 2
    python -m tools.runs.distill --head l128_kd  # the rows a replay reads

The teacher is an ensemble, the mean of its members' next-phoneme
probabilities: the first recipe's 7 stored runs
(``tools/runs/pronouncer_ensemble.py``).
``teacher_table`` reads every training pair through it, teacher-forced,
once, and keeps each pair's rows (fp16) under the pair's token ids, so a
student's step looks its batch up instead of running its members. The
student's loss (``utils.ensemble.distill_loss``) mixes the label-smoothed
cross-entropy on the dictionary's phonemes with the cross-entropy against
the teacher's probabilities.

The table (105 MB) stays in ``_build``; a replay of a distilled run's
first steps (chapter 8, the tests) reads ``HEAD``: just the rows those
steps look up, found by running them once (``head``).
"""

from __future__ import annotations

import torch

from tools import ROOT
from tools.runs import pronouncer_ensemble
from tools.runs import train_pronouncer as tp
from utils.batches import encode_batch, group_pairs
from utils.ensemble import Ensemble, distill_loss, pair_key
from utils.pronouncer import train_pronouncer
from utils.training import threads

WORK = ROOT / "_build" / "pronouncer"  # where train_pronouncer's runs are
FIRST = range(7)  # the first recipe's seeds: the teachers
TABLE = WORK / "teacher_s0-6.pt"
HEAD = ROOT / "book" / "data" / "pronouncer_teacher_head.pt"
HEAD_STEPS = 2  # the steps a replay retrains


@torch.no_grad()
def teacher_table(pairs, vocabs, members) -> dict[bytes, torch.Tensor]:
    """Each pair's key -> the probabilities of ``members``' ensemble at
    every target position, teacher-forced: ``(len(target) + 1, V)`` fp16
    (EOS last)."""
    ensemble = Ensemble(members).eval()
    pads = (vocabs[0].pad_id, vocabs[1].pad_id)
    table = {}
    for group in group_pairs(pairs, 500, seed=None):
        src, tgt = encode_batch(group, *vocabs)
        memory, mask = ensemble.encode(src)
        probs = ensemble.generator(ensemble.decode(tgt[:, :-1], memory, mask))
        for s, t, p in zip(src, tgt, probs.exp().half()):
            table[pair_key(s, t, pads)] = p[: int((t != pads[1]).sum()) - 1]
    return table


class _Reading:
    """The table, recording each row a loss looks up."""

    def __init__(self, table):
        self.table, self.read = table, {}

    def __getitem__(self, k: bytes) -> torch.Tensor:
        self.read[k] = self.table[k].clone()  # not its batch's storage
        return self.read[k]


def head(recipe: str, steps: int = HEAD_STEPS) -> dict:
    """The rows the first ``steps`` of ``recipe`` (seed 0) read, from the
    full table -> ``{"recipe", "steps", "rows"}`` (as ``HEAD`` stores)."""
    cfg = tp.RECIPES[recipe]
    _, splits, vocabs = tp.data()
    pads = (vocabs[0].pad_id, vocabs[1].pad_id)
    reading = _Reading(torch.load(TABLE, weights_only=True))
    loss = distill_loss(
        reading, tp.DISTILLED[recipe], cfg.label_smoothing, pads
    )
    train_pronouncer(
        cfg, splits, vocabs, progress=False, stop_after=steps, loss=loss
    )
    return {"recipe": recipe, "steps": steps, "rows": reading.read}


def main(args) -> None:
    if args.head:
        torch.save(head(args.head), HEAD)
        print(f"{HEAD}: {HEAD.stat().st_size} bytes")
        return
    _, splits, vocabs = tp.data()
    with threads(1):
        teachers = pronouncer_ensemble.members(FIRST)
        table = teacher_table(splits["train"], vocabs, teachers)
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    torch.save(table, TABLE)
    print(f"{len(table)} pairs -> {TABLE}")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--head", help="a distilled recipe: store its head")
    main(parser.parse_args())
