"""Warm-up schedule, toy data, training loop and perplexity."""
from __future__ import annotations

import math

import pytest
import torch

from utils.model import Transformer
from utils.training import (BOS, EOS, PAD, VOCAB_SIZE, digits_to_ids, ids_to_digits, noam_lr, noam_scheduler,
                            paper_adam, perplexity, reverse_batch, train)


def test_noam_lr_three_cases_and_the_peak():
    d, w = 512, 4000
    assert math.isclose(noam_lr(w, d, w), d ** -0.5 * w ** -0.5)            # the peak
    assert math.isclose(noam_lr(100, d, w), d ** -0.5 * 100 * w ** -1.5)   # linear rise
    assert math.isclose(noam_lr(2 * w, d, w) / noam_lr(w, d, w), 2 ** -0.5)  # 1/sqrt(step) decay
    steps = range(1, 3 * w)
    lrs = [noam_lr(s, d, w) for s in steps]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == w
    assert math.isclose(noam_lr(10, 64, 100, factor=0.3), 0.3 * noam_lr(10, 64, 100))


def test_noam_scheduler_sets_exactly_the_formula():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = paper_adam([p], lr=0.5)   # the initial lr is divided out
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = noam_scheduler(opt, d_model=64, warmup_steps=10, factor=2.0)
    seen = []
    for _ in range(30):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    expected = [noam_lr(s, 64, 10, 2.0) for s in range(1, 31)]
    assert all(math.isclose(a, b) for a, b in zip(seen, expected))


def test_reverse_batch_layout():
    src, tgt = reverse_batch(64, torch.Generator().manual_seed(0), min_len=2, max_len=6)
    assert src.shape == (64, 7) and tgt.shape == (64, 8)
    assert (src[:, 0] == BOS).all() and (tgt[:, 0] == BOS).all()
    for s, t in zip(src, tgt):
        digits = ids_to_digits(s)
        assert 2 <= len(digits) <= 6
        assert ids_to_digits(t) == digits[::-1]
        n = len(digits)
        assert t[n + 1] == EOS and (t[n + 2:] == PAD).all() and (s[n + 1:] == PAD).all()
    assert digits_to_ids("907").tolist() == [BOS, 12, 3, 10]


def test_training_a_few_steps_lowers_the_loss_and_perplexity():
    torch.manual_seed(0)
    model = Transformer(VOCAB_SIZE, VOCAB_SIZE, d_model=32, num_heads=2, num_layers=1, d_ff=64, dropout=0.0)
    gen = torch.Generator().manual_seed(0)
    test_src, test_tgt = reverse_batch(64, torch.Generator().manual_seed(1))
    before = perplexity(model, test_src, test_tgt)
    opt = paper_adam(model.parameters())
    sched = noam_scheduler(opt, 32, warmup_steps=10)
    losses = train(model, lambda: reverse_batch(32, gen), 40, opt, sched, progress=False)
    assert len(losses) == 40 and losses[-1] < losses[0]
    after = perplexity(model, test_src, test_tgt)
    assert after < before < VOCAB_SIZE * 3


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    class Uniform(torch.nn.Module):
        def forward(self, src, tgt):
            return torch.zeros(*tgt.shape, VOCAB_SIZE)
    src, tgt = reverse_batch(8, torch.Generator().manual_seed(2))
    assert math.isclose(perplexity(Uniform(), src, tgt), VOCAB_SIZE, rel_tol=1e-6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="step"):
        noam_lr(0, 64, 100)
    with pytest.raises(ValueError, match="warmup_steps"):
        noam_lr(1, 64, 0)
    with pytest.raises(ValueError, match="min_len"):
        reverse_batch(4, min_len=5, max_len=3)
    with pytest.raises(ValueError, match="digits"):
        digits_to_ids("12a")
    with pytest.raises(ValueError, match="lr"):
        noam_scheduler(torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0), 64, 10)
