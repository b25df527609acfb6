"""Distillation (utils.ensemble, tools/runs/distill.py): the teacher's
table holds what the ensemble computes for each pair, and the student's
loss mixes the two cross-entropies as it says."""

from __future__ import annotations

import torch

from tools.runs import distill
from utils import pronunciation as pr
from utils.batches import encode_batch
from utils.ensemble import Ensemble, distill_loss, pair_key
from utils.pronouncer import PronouncerConfig, build_pronouncer
from utils.training import teacher_forced_loss
from tests.conftest import raises

VOCABS = (pr.letter_vocab(), pr.phoneme_vocab(False))
PADS = (VOCABS[0].pad_id, VOCABS[1].pad_id)
PAIRS = [
    (list("cat"), ["K", "AE", "T"]),
    (list("shoe"), ["SH", "UW"]),
    (list("read"), ["R", "IY", "D"]),
    (list("read"), ["R", "EH", "D"]),  # another target: another key
]


def model(seed: int):
    torch.manual_seed(seed)
    cfg = PronouncerConfig(d_model=16, d_ff=32, dropout=0.0)
    return build_pronouncer(cfg, *VOCABS).eval()


def test_the_table_holds_the_ensembles_rows():
    teachers = [model(1), model(2)]
    table = distill.teacher_table(PAIRS, VOCABS, teachers)
    assert len(table) == len(PAIRS)  # the two "read"s kept apart
    src, tgt = encode_batch(PAIRS[2:3], *VOCABS)
    rows = table[pair_key(src[0], tgt[0], PADS)]
    assert rows.shape == (4, len(VOCABS[1]))  # R IY D, then EOS
    ens = Ensemble(teachers)
    memory, mask = ens.encode(src)
    want = ens.generator(ens.decode(tgt[:, :-1], memory, mask)).exp()[0]
    torch.testing.assert_close(rows.float(), want, atol=1e-3, rtol=1e-3)
    sums = rows.float().sum(-1)
    torch.testing.assert_close(sums, torch.ones(4), atol=3e-3, rtol=0)


def test_the_loss_mixes_the_dictionary_and_the_teacher():
    student, batch = model(3), encode_batch(PAIRS, *VOCABS)
    src, tgt = batch
    # a teacher sure of the dictionary's answers, and one that is uniform
    sure, flat = {}, {}
    for s, t in zip(src, tgt):
        n = int((t != PADS[1]).sum()) - 1
        sure[pair_key(s, t, PADS)] = torch.nn.functional.one_hot(
            t[1 : n + 1], len(VOCABS[1])
        ).half()
        flat[pair_key(s, t, PADS)] = torch.full(
            (n, len(VOCABS[1])), 1 / len(VOCABS[1])
        ).half()
    ce = teacher_forced_loss(student, batch, 0.0, PADS[1])
    for alpha in (0.0, 0.3, 1.0):  # a sure teacher is the dictionary
        got = distill_loss(sure, alpha, 0.0, PADS)(student, batch)
        torch.testing.assert_close(got, ce)
    smoothed = teacher_forced_loss(student, batch, 0.1, PADS[1])
    got = distill_loss(sure, 0.0, 0.1, PADS)(student, batch)
    torch.testing.assert_close(got, smoothed)
    # a uniform teacher: the mean of the student's log-probabilities
    logp = student(src, tgt[:, :-1]).log_softmax(-1)
    uniform = -logp.mean(-1)[tgt[:, 1:] != PADS[1]].mean()
    half = distill_loss(flat, 0.5, 0.0, PADS)(student, batch)
    torch.testing.assert_close(half, (ce + uniform) / 2, atol=2e-3, rtol=0)


def test_the_loss_checks_its_settings():
    for alpha in (-0.1, 1.5):
        raises(ValueError, "alpha", distill_loss, {}, alpha, 0.1, PADS)
    raises(ValueError, "smoothing", distill_loss, {}, 0.5, 1.0, PADS)
    raises(TypeError, "alpha", distill_loss, {}, "half", 0.1, PADS)
