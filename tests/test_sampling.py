"""Temperature, top-k, top-p, seeded sampling: by hand and against torch."""

from __future__ import annotations

import math

import pytest
import torch

from utils.sampling import apply_temperature, next_token_probs, sample
from utils.sampling import top_k_filter, top_p_filter
from tests.conftest import raises

PROBS = torch.tensor([0.5, 0.3, 0.15, 0.05])
LOGITS = PROBS.log()


def test_temperature_by_hand():
    # p_i^(1/T) renormalised: T = 0.5 squares the probabilities
    sq = PROBS**2 / (PROBS**2).sum()
    got = apply_temperature(LOGITS, 0.5).softmax(-1)
    assert torch.allclose(got, sq, atol=1e-6)
    # large T flattens towards uniform, small T concentrates on the argmax
    flat = next_token_probs(LOGITS, temperature=100.0)
    assert (flat - 0.25).abs().max() < 0.01
    sharp = next_token_probs(LOGITS, temperature=0.05)
    assert sharp[0] > 0.9999
    assert next_token_probs(LOGITS, temperature=0).tolist() == [1, 0, 0, 0]


def test_top_k_keeps_the_k_largest_like_torch_topk():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 5, 50, generator=g)
    for k in (1, 3, 17, 50, 80):
        out = top_k_filter(logits, k)
        kept = torch.isfinite(out)
        assert (kept.sum(-1) == min(k, 50)).all()
        ref = torch.zeros_like(kept).scatter(
            -1, logits.topk(min(k, 50), dim=-1).indices, True
        )
        assert torch.equal(kept, ref)
        assert torch.equal(out[kept], logits[kept])


def test_top_k_probabilities_by_hand():
    probs = next_token_probs(LOGITS, top_k=2)
    assert torch.allclose(probs, torch.tensor([0.625, 0.375, 0, 0]))


def test_top_p_by_hand():
    # cumulative 0.5, 0.8, 0.95, 1.0: p = 0.7 needs two tokens, 0.85 three
    kept = torch.isfinite(top_p_filter(LOGITS, 0.7)).tolist()
    assert kept == [True, True, False, False]
    assert torch.isfinite(top_p_filter(LOGITS, 0.85)).sum() == 3
    assert torch.isfinite(top_p_filter(LOGITS, 0.4)).sum() == 1
    assert torch.isfinite(top_p_filter(LOGITS, 1.0)).all()
    probs = next_token_probs(LOGITS, top_p=0.85)
    assert torch.allclose(probs, torch.tensor([0.5, 0.3, 0.15, 0]) / 0.95)


def _nucleus_by_loop(probs: list[float], p: float) -> set[int]:
    """Reference: add tokens from the most probable until the mass >= p."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    kept, mass = set(), 0.0
    for i in order:
        kept.add(i)
        mass += probs[i]
        if mass >= p:
            break
    return kept


def test_top_p_equals_a_loop_on_random_rows():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(200, 12, generator=g, dtype=torch.float64) * 2
    ps = torch.rand(200, generator=g, dtype=torch.float64) * 0.98 + 0.01
    for row, p in zip(logits, ps.tolist()):
        got = set(torch.isfinite(top_p_filter(row, p)).nonzero().flatten())
        ref = _nucleus_by_loop(row.softmax(-1).tolist(), p)
        assert {int(i) for i in got} == ref


def test_sample_frequencies_match_the_filtered_distribution():
    # 40,000 draws: a frequency's standard deviation is at most
    # sqrt(0.25 / 40000) = 0.0025, so 0.015 is six of them
    n = 40_000
    g = torch.Generator().manual_seed(2)
    logits = LOGITS.expand(n, 4)
    for kwargs in ({}, {"temperature": 2.0}, {"top_k": 3}, {"top_p": 0.7}):
        ids = sample(logits, generator=g, **kwargs)
        freq = torch.bincount(ids, minlength=4).float() / n
        want = next_token_probs(LOGITS, **kwargs)
        assert (freq - want).abs().max() < 0.015, kwargs
        # filtered tokens are never drawn
        assert (freq[want == 0] == 0).all()
    # and torch.multinomial on the same probabilities agrees
    g = torch.Generator().manual_seed(3)
    ref = torch.multinomial(PROBS, n, replacement=True, generator=g)
    ref_freq = torch.bincount(ref, minlength=4).float() / n
    assert (ref_freq - PROBS).abs().max() < 0.015


def test_sample_is_reproducible_with_a_seed_and_keeps_the_batch_shape():
    logits = torch.randn(3, 5, 9, generator=torch.Generator().manual_seed(4))
    a, b, c = (
        sample(logits, generator=torch.Generator().manual_seed(seed))
        for seed in (7, 7, 8)
    )
    assert a.shape == (3, 5) and a.dtype == torch.long
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_bad_input():
    raises(TypeError, "logits", sample, [0.1, 0.2])
    raises(TypeError, "logits", top_k_filter, torch.tensor([1, 2]), 1)
    raises(ValueError, "temperature", apply_temperature, LOGITS, -1.0)
    raises(ValueError, "temperature", apply_temperature, LOGITS, math.inf)
    with pytest.raises(TypeError, match="temperature"):
        next_token_probs(LOGITS, temperature="hot")
    raises(ValueError, "k", top_k_filter, LOGITS, 0)
    raises(TypeError, "k", top_k_filter, LOGITS, 2.0)
    raises(ValueError, "p must be in", top_p_filter, LOGITS, 0.0)
    raises(ValueError, "p must be in", top_p_filter, LOGITS, 1.5)
    raises(TypeError, "generator", sample, LOGITS, generator=3)


def test_top_p_stops_once_the_mass_reaches_p_exactly():
    # four tokens of probability 0.25 (exact in float): the first two reach
    # p = 0.5, so the nucleus is those two, not three
    kept = torch.isfinite(top_p_filter(torch.zeros(1, 4), 0.5))
    assert int(kept.sum()) == 2
