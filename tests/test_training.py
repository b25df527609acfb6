"""The training loop, hooks, warm-up, Adam, losses, evaluators, progress."""

from __future__ import annotations

import functools
import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from utils.training import Progress, adamw, evaluate_loss, evaluate_perplexity
from utils.training import noam_lr, noam_scheduler, paper_adam
from utils.training import teacher_forced_loss, train
from tools.runs.numbers_task import source_vocab, target_vocab
from utils.batches import encode_batch
from tests.conftest import raises


pytestmark = pytest.mark.usefixtures("one_thread")


def test_noam_lr_three_cases_and_the_peak():
    # numbers computed by hand: 1/sqrt(512 * 4000) = 1/1431.0835
    assert math.isclose(noam_lr(4000, 512, 4000), 6.98771e-4, rel_tol=1e-5)
    assert math.isclose(noam_lr(1000, 512, 4000), 1.74693e-4, rel_tol=1e-5)
    assert math.isclose(noam_lr(16000, 512, 4000), 3.49386e-4, rel_tol=1e-5)
    d, w = 512, 4000
    assert math.isclose(noam_lr(w, d, w), d**-0.5 * w**-0.5)  # the peak
    assert math.isclose(noam_lr(100, d, w), d**-0.5 * 100 * w**-1.5)  # rise
    # 1/sqrt(step) decay
    assert math.isclose(noam_lr(2 * w, d, w) / noam_lr(w, d, w), 2**-0.5)
    lrs = [noam_lr(s, d, w) for s in range(1, 3 * w)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == w
    scaled = noam_lr(10, 64, 100, factor=0.3)
    assert math.isclose(scaled, 0.3 * noam_lr(10, 64, 100))


def _rates(opt, sched, steps: int) -> list[float]:
    """The rate each of ``steps`` optimiser steps used."""
    seen = []
    for _ in range(steps):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return seen


def test_noam_scheduler_sets_the_formula_and_adam_the_paper_settings():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = paper_adam([p], lr=0.5)  # the initial lr is divided out
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = noam_scheduler(opt, d_model=64, warmup_steps=10, factor=2.0)
    seen = _rates(opt, sched, 30)
    expected = [noam_lr(s, 64, 10, 2.0) for s in range(1, 31)]
    assert all(math.isclose(a, b) for a, b in zip(seen, expected))


def test_without_warmup_the_rate_starts_at_the_peak_and_decays_the_same():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = paper_adam([p])
    sched = noam_scheduler(opt, d_model=64, warmup_steps=10, warmup=False)
    seen = _rates(opt, sched, 30)
    peak = 1 / math.sqrt(64 * 10)  # by hand: the formula's peak
    assert all(math.isclose(r, peak) for r in seen[:10])  # flat, no ramp
    assert math.isclose(seen[29], peak * math.sqrt(10 / 30))  # then decay
    raises(TypeError, "warmup", noam_scheduler, opt, 64, 10, warmup=1)


def test_the_cooldown_falls_linearly_from_where_the_decay_left_it():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = paper_adam([p])
    sched = functools.partial(noam_scheduler, opt, 64, 10)
    seen = _rates(opt, sched(steps=40, cooldown_steps=9), 40)
    plain = [noam_lr(s, 64, 10) for s in range(1, 41)]
    assert all(math.isclose(a, b) for a, b in zip(seen[:31], plain[:31]))
    # steps 32..40: the rate of step 31 times 9/10, 8/10, ..., 1/10
    for k, rate in enumerate(seen[31:]):
        assert math.isclose(rate, plain[30] * (9 - k) / 10)
    assert seen[-1] > 0 and seen[31] < plain[31]  # below the plain decay
    raises(ValueError, "needs steps", sched, cooldown_steps=5)
    raises(ValueError, "steps must be an int >= 6", sched, steps=5,
           cooldown_steps=5)  # fmt: skip
    raises(ValueError, "cooldown_steps", sched, steps=50, cooldown_steps=-1)


def _batch(numbers=(5, 17, 305, 12305)):
    from tools.runs.numbers_task import chinese_numerals, english_words

    pairs = [(english_words(n), chinese_numerals(n)) for n in numbers]
    return encode_batch(pairs, source_vocab(), target_vocab())


def _model(seed=0):
    from utils.model import Transformer

    torch.manual_seed(seed)
    vocabs = len(source_vocab()), len(target_vocab())
    return Transformer(*vocabs, 16, 2, num_layers=1, d_ff=32, dropout=0.1)


def test_evaluate_loss_equals_pytorch_and_restores_the_mode():
    model = _model()
    src, tgt = _batch()
    batches = [(src[:2], tgt[:2]), (src[2:], tgt[2:])]  # per-token mean
    model.train()
    ours = evaluate_loss(model, batches, label_smoothing=0.1)
    assert model.training  # train mode restored
    model.eval()
    with torch.no_grad():
        logits = model(src, tgt[:, :-1])
    logits, targets = logits.transpose(1, 2), tgt[:, 1:]
    theirs = F.cross_entropy(logits, targets, ignore_index=0,
                             label_smoothing=0.1)  # fmt: skip
    assert math.isclose(ours, theirs.item(), rel_tol=1e-5)
    # eval kept; no_grad stayed local
    assert not model.training and torch.is_grad_enabled()
    nats = F.cross_entropy(logits, targets, ignore_index=0).item()
    ppl = evaluate_perplexity(model, batches)
    assert math.isclose(ppl, math.exp(nats), rel_tol=1e-5)


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    class Uniform(torch.nn.Module):
        def forward(self, src, tgt):
            return torch.zeros(*tgt.shape, 17)

    src, tgt = _batch()
    ppl = evaluate_perplexity(Uniform(), [(src, tgt)])
    assert math.isclose(ppl, 17, rel_tol=1e-6)


def test_train_lowers_the_loss_on_a_repeated_batch():
    model, batch = _model(), _batch()
    opt = paper_adam(model.parameters(), lr=3e-3)
    before = evaluate_loss(model, [batch])
    loss_fn, batches = teacher_forced_loss, itertools.repeat(batch)
    losses = train(model, opt, batches, loss_fn, 30, progress=False)
    assert len(losses) == 30 and model.training
    assert evaluate_loss(model, [batch]) < 0.5 * before


def test_train_is_the_plain_loop_bit_for_bit():
    """Dropout on, a schedule, clipping: the same weights as the loop
    written out (so a run moved onto ``train`` keeps its results)."""
    batch = _batch()
    mine, theirs = _model(), _model()
    opt = paper_adam(mine.parameters())
    sched = noam_scheduler(opt, 16, 3)
    torch.manual_seed(1)
    kw = dict(scheduler=sched, clip=0.5, progress=False)
    train(mine, opt, itertools.repeat(batch), teacher_forced_loss, 5, **kw)
    opt = paper_adam(theirs.parameters())
    sched = noam_scheduler(opt, 16, 3)
    torch.manual_seed(1)
    theirs.train()
    for _ in range(5):
        loss = teacher_forced_loss(theirs, batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
        opt.step()
        sched.step()
    for p, q in zip(mine.parameters(), theirs.parameters()):
        assert torch.equal(p, q)


def test_every_hook_is_called_and_one_can_stop_the_loop():
    model = _model()
    opt = paper_adam(model.parameters())
    seen, norms = [], []

    def record(step, loss):
        seen.append((step, loss))

    def stop_at_4(step, loss):
        return step == 4

    def grad_norm(step, loss):  # gradients as the optimiser used them
        grads = [p.grad for p in model.parameters()]
        norms.append(torch.nn.utils.get_total_norm(grads).item())

    hooks = [stop_at_4, record, grad_norm]
    batches = itertools.repeat(_batch())
    losses = train(model, opt, batches, teacher_forced_loss, 9, start=1,
                   clip=0.01, hooks=hooks, progress=False)  # fmt: skip
    assert [s for s, _ in seen] == [2, 3, 4]  # from start + 1, to the stop
    assert [x for _, x in seen] == losses
    assert all(n <= 0.01 * (1 + 1e-5) for n in norms)


def test_a_hook_that_evaluates_leaves_the_model_training():
    model = _model()
    batch = _batch()
    modes = []

    def evaluate(step, loss):
        evaluate_loss(model, [batch])
        modes.append(model.training)

    def loss_fn(model, batch):
        modes.append(model.training)
        return teacher_forced_loss(model, batch)

    model.eval()
    opt, batches = paper_adam(model.parameters()), itertools.repeat(batch)
    train(model, opt, batches, loss_fn, 3, hooks=[evaluate], progress=False)
    assert modes == [True] * 6


def test_progress_fits_79_columns_and_is_silent_when_disabled(capsys):
    bar = Progress(1234, "training")
    for _ in range(1234):
        bar.update()
    bar.close()
    assert "1234/1234" in bar.line() and len(bar.line()) <= 79
    err = capsys.readouterr().err
    assert "100%" in err
    assert max(len(x) for x in err.replace("\r", "\n").split("\n")) <= 79
    quiet = Progress(5, enabled=False)
    quiet.update()
    quiet.close()
    assert capsys.readouterr().err == ""


def test_bad_arguments():
    raises(ValueError, "step", noam_lr, 0, 64, 100)
    raises(ValueError, "warmup_steps", noam_lr, 1, 64, 0)
    raises(TypeError, "d_model", noam_lr, 1, 64.0, 10)
    sgd = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0)
    raises(ValueError, "lr", noam_scheduler, sgd, 64, 10)
    float_tgt = (torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3))
    raises(TypeError, "tgt must hold integer token ids", teacher_forced_loss,
           _model(), float_tgt)  # fmt: skip
    model = _model()
    opt, loss = paper_adam(model.parameters()), teacher_forced_loss
    raises(ValueError, "steps", train, model, opt, iter([_batch()]), loss, 0,
           progress=False)  # fmt: skip
    raises(ValueError, "clip", train, model, opt, iter([_batch()]), loss, 2,
           clip=0.0, progress=False)  # fmt: skip
    pad = (torch.ones(1, 2).long(), torch.zeros(1, 3).long())  # all padding
    raises(ValueError, "no real target token", evaluate_loss, _model(), [pad])


def test_course_seed_reads_course_seed(monkeypatch):
    from proof.runtime import course_seed

    monkeypatch.delenv("COURSE_SEED", raising=False)
    assert course_seed() == 0 and course_seed(3) == 3
    monkeypatch.setenv("COURSE_SEED", "2")
    assert course_seed() == 2
    monkeypatch.setenv("COURSE_SEED", "two")
    raises(ValueError, "COURSE_SEED", course_seed)


def test_threads_restores_the_count_even_after_an_error():
    from utils.training import threads

    torch.set_num_threads(2)
    with threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError):
        with threads(1):
            raise RuntimeError
    assert torch.get_num_threads() == 2
    with pytest.raises(ValueError, match="n"):
        with threads(0):
            pass


def test_adamw_decays_the_matrices_only():
    """With zero gradients Adam's step is 0, so what moves is the decay:
    lr * weight_decay of each matrix, nothing of the biases and gains."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = adamw(model, lr=0.5, weight_decay=0.1)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    for name, p in model.named_parameters():
        shrink = 1 - 0.5 * 0.1 if p.dim() >= 2 else 1.0
        torch.testing.assert_close(p.detach(), before[name] * shrink)
    assert opt.defaults["betas"] == (0.9, 0.95)
