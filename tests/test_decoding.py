"""Greedy and beam search, on a hand-made model and a tiny Transformer."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from utils.decoding import BigramModel, beam_search, greedy_decode
from utils.decoding import sample_decode, sequence_log_prob
from utils.model import Transformer
from tests.conftest import raises, raising

PAD, BOS, EOS, A, B, C, D = range(7)


def bigram(table: dict[int, dict[int, float]]) -> BigramModel:
    """A BigramModel from {last: {next: probability}}; others get ~0."""
    p = torch.full((7, 7), 1e-12)
    for last, row in table.items():
        for nxt, prob in row.items():
            p[last, nxt] = prob
    p[PAD, PAD] = p[EOS, EOS] = 1.0
    return BigramModel((p / p.sum(1, keepdim=True)).log())


# greedy takes A (0.6) and ends with 0.6 * 0.4 = 0.24;
# B then EOS scores 0.4 * 0.9 = 0.36
MYOPIC = {
    BOS: {A: 0.6, B: 0.4},
    A: {EOS: 0.4, C: 0.3, D: 0.3},
    B: {EOS: 0.9, C: 0.1},
    C: {EOS: 1.0},
    D: {EOS: 1.0},
}
SRC = torch.zeros(1, 2, dtype=torch.long)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def all_scores(model, max_len=4):
    """Brute force: every sequence ending with EOS within max_len tokens."""
    out = {}
    for n in range(1, max_len + 1):
        for body in itertools.product([A, B, C, D], repeat=n - 1):
            seq = (BOS, *body, EOS)
            lp = sum(
                model.generator.weight[b, a].item()
                for a, b in zip(seq, seq[1:])
            )
            out[seq] = lp
    return out


def test_greedy_is_myopic_and_beam_finds_the_better_sequence():
    model = bigram(MYOPIC)
    assert greedy_decode(model, SRC, 5, BOS, EOS).tolist() == [[BOS, A, EOS]]
    [[(best, score)]] = beam_search(model, SRC, 5, BOS, EOS, beam_size=2)
    assert best.tolist() == [BOS, B, EOS]
    assert math.isclose(score, math.log(0.36), rel_tol=1e-5)
    brute = max(all_scores(model).items(), key=lambda kv: kv[1])
    assert list(brute[0]) == best.tolist()


def test_beam_size_one_equals_greedy_on_a_transformer():
    model = tiny(seed=0, dropout=0.0, num_layers=1)
    src = torch.randint(3, 9, (5, 6))
    greedy = greedy_decode(model, src, 7, BOS, EOS)
    scores = sequence_log_prob(model, src, greedy, EOS)
    beams = beam_search(model, src, 7, BOS, EOS, beam_size=1)
    for i, ((seq, score),) in enumerate(beams):
        row = greedy[i][: len(seq)]
        assert seq.tolist() == row.tolist()
        got = scores[i].item()
        assert math.isclose(score, got, rel_tol=1e-4, abs_tol=1e-5)


def test_beams_are_sorted_and_scores_are_the_sequence_log_probs():
    model = tiny(seed=1, dropout=0.0, num_layers=1)
    src = torch.randint(3, 9, (3, 5))
    found = beam_search(model, src, 6, BOS, EOS, beam_size=4, num_return=4)
    for i, beams in enumerate(found):
        assert len(beams) == 4
        ended = [bool(seq[-1] == EOS) for seq, _ in beams]
        # finished hypotheses come first
        assert ended == sorted(ended, reverse=True)
        for group in (True, False):
            scores = [s for (_, s), e in zip(beams, ended) if e == group]
            assert scores == sorted(scores, reverse=True)
        # the beams are distinct
        assert len({tuple(seq.tolist()) for seq, _ in beams}) == 4
        for seq, s in beams:
            if seq[-1] == EOS:
                again = sequence_log_prob(
                    model, src[i : i + 1], seq[None], EOS
                ).item()
                assert math.isclose(s, again, rel_tol=1e-4, abs_tol=1e-5)


def test_wide_beam_finds_the_exact_best_of_a_small_model():
    model = bigram({BOS: {A: 0.5, B: 0.5}, A: {C: 0.5, D: 0.5},
                    B: {EOS: 0.3, C: 0.7}, C: {EOS: 0.2, A: 0.8},
                    D: {EOS: 0.9, B: 0.1}})  # fmt: skip
    [[(seq, score)]] = beam_search(model, SRC, 3, BOS, EOS, beam_size=50)
    best = max(all_scores(model, max_len=3).items(), key=lambda kv: kv[1])
    assert seq.tolist() == list(best[0])
    assert math.isclose(score, best[1], rel_tol=1e-5)


def test_length_normalisation_changes_the_winner():
    # "EOS" at once: 0.4 (log -0.92, 1 token);
    # "A B C EOS": 0.6*0.8*0.8*0.9 = 0.3456 (log -1.06, 4 tokens)
    model = bigram({BOS: {EOS: 0.4, A: 0.6}, A: {EOS: 0.2, B: 0.8},
                    B: {EOS: 0.2, C: 0.8}, C: {EOS: 0.9, D: 0.1},
                    D: {EOS: 1.0}})  # fmt: skip
    kw = dict(beam_size=4, num_return=3)
    [[(raw_best, raw_score), *_]] = beam_search(model, SRC, 6, BOS, EOS, **kw)
    [[(norm_best, norm_score), *_]] = beam_search(
        model, SRC, 6, BOS, EOS, alpha=1.0, **kw
    )
    assert raw_best.tolist() == [BOS, EOS]
    assert math.isclose(raw_score, math.log(0.4), rel_tol=1e-5)
    # per-token means: EOS -0.92; A B C EOS -0.27 (the best)
    assert norm_best.tolist() == [BOS, A, B, C, EOS]
    want = math.log(0.6 * 0.8 * 0.8 * 0.9) / 4
    assert math.isclose(norm_score, want, rel_tol=1e-5)


def test_greedy_pads_after_eos_and_respects_max_len():
    model = bigram({BOS: {A: 0.9, EOS: 0.1}, A: {A: 0.9, EOS: 0.1}})
    out = greedy_decode(model, SRC.view(2, 1), 3, BOS, EOS)
    assert out.shape == (2, 4) and (out[:, 1:] == A).all()
    stop = bigram({BOS: {EOS: 1.0}})
    assert greedy_decode(stop, SRC, 5, BOS, EOS).tolist() == [[BOS, EOS]]


M = bigram(MYOPIC)
BAD = r"""
ValueError | num_return | beam_search(M, SRC, 5, BOS, EOS, beam_size=2,
    num_return=3)
ValueError | beam_size | beam_search(M, SRC, 5, BOS, EOS, beam_size=0)
ValueError | alpha | beam_search(M, SRC, 5, BOS, EOS, alpha=-1.0)
ValueError | max_len | greedy_decode(M, SRC, 0, BOS, EOS)
ValueError | src | greedy_decode(M, torch.zeros(3, dtype=torch.long), 4, BOS,
    EOS)
TypeError | encode | greedy_decode(torch.nn.Linear(2, 2), SRC, 4, BOS, EOS)
ValueError | square | BigramModel(torch.zeros(3, 4))
ValueError | pad_id must differ from bos_id | beam_search(M, SRC, 5, BOS, EOS,
    pad_id=BOS)
ValueError | pad_id must differ from eos_id | greedy_decode(M, SRC, 5, BOS,
    EOS, pad_id=EOS)
ValueError | eos_id=9 is outside | greedy_decode(M, SRC, 5, BOS, 9)
ValueError | bos_id | beam_search(M, SRC, 5, -1, EOS)
TypeError | alpha | beam_search(M, SRC, 5, BOS, EOS, alpha="0.6")
TypeError | src | greedy_decode(M, SRC.float(), 5, BOS, EOS)
TypeError | max_len | greedy_decode(M, SRC, 5.0, BOS, EOS)
ValueError | ys | sequence_log_prob(M, SRC, torch.tensor([[BOS, 11]]), EOS)
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_arguments_raise(call, exc, name):
    raises(exc, name, eval, call, globals())


def tiny(seed=0, dropout=0.1, num_layers=2):
    torch.manual_seed(seed)
    sizes = dict(d_model=16, num_heads=2, num_layers=num_layers, d_ff=32)
    return Transformer(9, 9, dropout=dropout, **sizes)


def test_helpers_restore_train_mode_and_leave_grad_mode_alone():
    model = tiny().train()  # starts in train mode, dropout active
    src = torch.randint(3, 9, (2, 5), generator=gen(1))
    ys = greedy_decode(model, src, 6, BOS, EOS)
    assert model.training and all(m.training for m in model.modules())
    beam_search(model, src, 6, BOS, EOS, beam_size=2)
    assert model.training
    sample_decode(model, src, 6, BOS, EOS, generator=torch.Generator())
    assert model.training
    sequence_log_prob(model, src, ys, EOS)
    assert model.training
    assert torch.is_grad_enabled()
    # and eval mode is kept as eval
    model.eval()
    greedy_decode(model, src, 6, BOS, EOS)
    assert not model.training


def test_decoding_in_train_mode_is_deterministic():
    # dropout would make two calls differ if the helper did not switch to eval
    model = tiny(dropout=0.5).train()
    src = torch.randint(3, 9, (6, 5), generator=gen(2))
    a, b = (greedy_decode(model, src, 8, BOS, EOS) for _ in "ab")
    assert torch.equal(a, b)


def test_cache_and_recomputation_decode_the_same():
    model = tiny(seed=3)
    src = torch.randint(3, 9, (5, 6), generator=gen(4))
    src[2, 4:] = PAD
    g1 = greedy_decode(model, src, 9, BOS, EOS, use_cache=True)
    g2 = greedy_decode(model, src, 9, BOS, EOS, use_cache=False)
    assert torch.equal(g1, g2)
    b1 = beam_search(model, src, 9, BOS, EOS, beam_size=3, num_return=3)
    b2 = beam_search(model, src, 9, BOS, EOS, 3, 3, use_cache=False)
    for r1, r2 in zip(b1, b2):
        assert [s.tolist() for s, _ in r1] == [s.tolist() for s, _ in r2]
        for (_, x), (_, y) in zip(r1, r2):
            assert math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5)
    s1 = sample_decode(model, src, 9, BOS, EOS, generator=gen(5))
    s2 = sample_decode(
        model, src, 9, BOS, EOS, generator=gen(5), use_cache=False
    )
    assert torch.equal(s1, s2)


def test_sampling_follows_the_model_distribution():
    # BOS -> A 0.6 / B 0.4, then EOS: 4000 samples, the frequency of A is
    # 0.6 with standard deviation sqrt(0.24 / 4000) = 0.008; 0.04 is 5 of them
    model = bigram({BOS: {A: 0.6, B: 0.4}, A: {EOS: 1.0}, B: {EOS: 1.0}})
    src = torch.zeros(4000, 1, dtype=torch.long)
    out = sample_decode(model, src, 3, BOS, EOS, generator=gen(6))
    assert abs((out[:, 1] == A).float().mean().item() - 0.6) < 0.04
    assert ((out[:, 1] == A) | (out[:, 1] == B)).all()
    assert (out[:, 2] == EOS).all()
    greedy = sample_decode(model, src[:3], 3, BOS, EOS, temperature=0)
    assert (greedy[:, 1] == A).all()
    only_a = sample_decode(
        model, src[:200], 3, BOS, EOS, top_k=1, generator=gen(7)
    )
    assert (only_a[:, 1] == A).all()


def test_fewer_hypotheses_than_num_return_warns():
    # vocabulary PAD, BOS, EOS and one step: only BOS BOS and BOS EOS exist
    model = BigramModel(torch.full((3, 3), math.log(1 / 3)))
    with pytest.warns(RuntimeWarning, match="num_return=3"):
        [beams] = beam_search(model, SRC, 1, BOS, EOS, 3, num_return=3)
    assert len(beams) == 2


def test_a_score_stops_at_the_first_eos_whatever_follows():
    # tokens after EOS (not only PAD) are not part of the sequence: the
    # score is log p(A | BOS) + log p(EOS | A), by hand from the table
    model = bigram(MYOPIC)
    ys = torch.tensor([[BOS, A, EOS, C, D], [BOS, A, EOS, PAD, PAD]])
    got = sequence_log_prob(model, SRC.expand(2, -1), ys, EOS, PAD)
    want = math.log(0.6) + math.log(0.4)
    assert got.tolist() == pytest.approx([want, want], abs=1e-5)
