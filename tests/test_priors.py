"""Tests for utils.priors: the motif data, the two classifiers and the
train/evaluate helper."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from utils import priors, toy_tasks
from utils.masks import band_mask
from tests.conftest import raises, raising


def test_contains_motif_matches_string_search():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 4, (200, 10), generator=g)
    expected = [("123" in "".join(map(str, r.tolist()))) for r in x]
    got = toy_tasks.contains_motif(x, (1, 2, 3))
    assert torch.equal(got, torch.tensor(expected))


def test_make_motif_data_labels_balance_and_determinism():
    x, y = toy_tasks.make_motif_data(301, length=12, motif=(0, 1, 2), seed=5)
    assert x.shape == (301, 12) and y.shape == (301,) and x.dtype == torch.long
    assert x.min() >= 0 and x.max() < 4
    assert y.sum().item() == 150  # n // 2 positives
    text = ["".join(map(str, r.tolist())) for r in x]
    assert torch.equal(y, torch.tensor(["012" in t for t in text]).long())
    x2, y2 = toy_tasks.make_motif_data(301, length=12, motif=(0, 1, 2), seed=5)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    x3, _ = toy_tasks.make_motif_data(301, length=12, motif=(0, 1, 2), seed=6)
    assert not torch.equal(x, x3)


def test_make_motif_data_leaves_global_seed_alone():
    torch.manual_seed(0)
    a = torch.rand(3)
    torch.manual_seed(0)
    toy_tasks.make_motif_data(10, seed=1)
    assert torch.equal(torch.rand(3), a)


def test_cnn_equals_conv1d_by_hand():
    torch.manual_seed(0)
    m = priors.MotifCNN(vocab_size=4, embed_dim=3, channels=5, kernel_size=3)
    x = torch.randint(0, 4, (2, 9))
    e = m.embed.weight[x]  # (B, L, E)
    windows = e.unfold(1, 3, 1)  # (B, L-2, E, k)
    h = torch.einsum("blek,cek->blc", windows, m.conv.weight) + m.conv.bias
    expected = m.head(torch.relu(h).amax(dim=1))
    torch.testing.assert_close(m(x), expected)


def test_cnn_output_is_shift_invariant_with_max_pool():
    torch.manual_seed(0)
    m = priors.MotifCNN(kernel_size=3)
    x = torch.randint(0, 4, (4, 12))
    # the same padding symbols at both ends: shifting keeps the windows
    x[:, :3] = x[:, -3:] = 3
    rolled = torch.roll(x, 1, dims=1)  # moves only 3s
    torch.testing.assert_close(m(x), m(rolled), atol=1e-6, rtol=0)


def test_transformer_without_positions_is_permutation_invariant():
    torch.manual_seed(0)
    m = priors.TinyTransformer(use_positions=False).eval()
    x = torch.randint(0, 4, (3, 10))
    perm = torch.randperm(10)
    torch.testing.assert_close(m(x[:, perm]), m(x))
    with_pos = priors.TinyTransformer().eval()
    with_pos.load_state_dict(m.state_dict())
    assert not torch.allclose(with_pos(x[:, perm]), with_pos(x))


def test_window_mask_and_locality():
    mask = band_mask(6, 1)
    i = torch.arange(6)
    assert torch.equal(mask, (i[:, None] - i[None, :]).abs() <= 1)
    torch.manual_seed(0)
    m = priors.TinyTransformer(window=1, use_positions=False).eval()
    # One layer with window 1: encoder outputs 0..2 depend on tokens 0..3 only,
    # so changing tokens 5.. must leave them unchanged.
    x = torch.randint(0, 4, (1, 8))
    y = x.clone()
    y[0, 5:] = (y[0, 5:] + 1) % 4
    h = lambda ids: m.encoder(m.embed(ids), mask=~band_mask(8, 1))  # noqa: E731
    torch.testing.assert_close(h(x)[0, :3], h(y)[0, :3])


def test_similar_parameter_counts_and_count_parameters():
    lin = nn.Linear(3, 4)
    assert priors.count_parameters(lin) == 16
    cnn = priors.count_parameters(priors.MotifCNN(4, 16, 44, 3))
    tf = priors.count_parameters(priors.TinyTransformer(4, 16, 2, 32))
    assert abs(cnn - tf) / tf < 0.05


def test_train_and_evaluate_is_deterministic_and_learns():
    x, y = toy_tasks.make_motif_data(256, length=10, motif=(0, 1, 2), seed=0)
    xt, yt = toy_tasks.make_motif_data(200, length=10, motif=(0, 1, 2), seed=1)
    make = lambda: priors.MotifCNN(4, 8, 8, 3)  # noqa: E731
    threads = torch.get_num_threads()
    kw = dict(steps=60, lr=1e-2, batch_size=64, seed=0)
    a, b = (priors.train_and_evaluate(make, x, y, xt, yt, **kw) for _ in "ab")
    assert a == b
    assert a > 0.8  # chance is 0.5
    assert torch.get_num_threads() == threads  # restored


def test_accuracy_by_hand():
    model = nn.Linear(1, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[-1.0], [1.0]]))
        model.bias.zero_()
    # accuracy() checks ids, so wrap the linear model to accept long input
    wrapped = nn.Sequential()
    # type: ignore[method-assign]
    wrapped.forward = lambda ids: model(ids.float())
    x = torch.tensor([[1], [-1], [2], [-3]])
    y = torch.tensor([1, 0, 0, 0])
    assert priors.accuracy(wrapped, x, y) == 0.75


def test_default_motif_matches_the_docstring_and_the_chapter():
    assert toy_tasks.DEFAULT_MOTIF == (0, 1, 2)
    assert "default ``0 1 2``" in toy_tasks.__doc__
    x, y = toy_tasks.make_motif_data(50, seed=0)
    assert x.shape == (50, 8)  # the chapter's length is the default
    assert torch.equal(toy_tasks.contains_motif(x).long(), y)


def test_shuffled_negatives_hold_the_motif_symbols_in_another_order():
    kw = dict(length=9, motif=(0, 1, 2), seed=3)
    x, y = toy_tasks.make_motif_data(400, **kw)
    neg = x[y == 0]
    for s in (0, 1, 2):
        assert (neg == s).any(dim=1).all()
    assert not toy_tasks.contains_motif(neg, (0, 1, 2)).any()
    # every negative holds some reordering of the motif as a run
    runs = neg.unfold(1, 3, 1).sort(dim=-1).values  # (N, L-2, 3) sorted runs
    assert (runs == torch.tensor([0, 1, 2])).all(-1).any(-1).all()
    # the naive negatives often miss one of the symbols
    xr, yr = toy_tasks.make_motif_data(400, negatives="random", **kw)
    negr = xr[yr == 0]
    assert not torch.stack([(negr == s).any(1) for s in (0, 1, 2)]).all()


def test_symbol_counts_equal_bincount():
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 5, (6, 11), generator=g)
    expected = torch.stack([torch.bincount(r, minlength=5) for r in x]).float()
    counts = toy_tasks.symbol_counts
    assert torch.equal(counts(x, 5), expected)
    raises(ValueError, r"x must be in \[0, 4\), found 4", counts, x, 4)


def test_count_classifier_is_logistic_regression_on_counts():
    torch.manual_seed(0)
    m = priors.CountClassifier(vocab_size=4)
    x = torch.randint(0, 4, (3, 7))
    counts = torch.stack([torch.bincount(r, minlength=4) for r in x]).float()
    torch.testing.assert_close(m(x), counts @ m.head.weight.T + m.head.bias)
    # order is invisible to it
    torch.testing.assert_close(m(x.flip(1)), m(x))


def test_count_baseline_chance_on_shuffled_task_above_on_naive_task():
    make = lambda: priors.CountClassifier(4)  # noqa: E731
    acc = {}
    for neg in ("shuffled", "random"):
        kw = dict(motif=(0, 1, 2), negatives=neg)
        x, y = toy_tasks.make_motif_data(2048, seed=1, **kw)
        xt, yt = toy_tasks.make_motif_data(1000, seed=2, **kw)
        acc[neg] = priors.train_and_evaluate(make, x, y, xt, yt, 300, 5e-2)
    assert abs(acc["shuffled"] - 0.5) < 0.05, acc
    assert acc["random"] > 0.57, acc


@pytest.mark.parametrize("start_training", [True, False])
def test_helpers_restore_the_mode_they_found(start_training):
    x, y = toy_tasks.make_motif_data(16, seed=0)
    model = priors.TinyTransformer()
    model.train(start_training)
    priors.accuracy(model, x, y)
    assert model.training is start_training
    assert all(m.training is start_training for m in model.modules())
    priors.train_classifier(model, x, y, steps=1)
    assert model.training is start_training
    assert torch.is_grad_enabled()  # no_grad stays inside accuracy()


def test_accuracy_runs_in_eval_mode_without_gradients():
    seen = {}

    class Probe(nn.Module):
        def forward(self, ids):
            seen.update(training=self.training, grad=torch.is_grad_enabled())
            return torch.zeros(ids.size(0), 2)

    probe = Probe().train()
    x = torch.zeros(2, 3, dtype=torch.long)
    priors.accuracy(probe, x, x[:, 0])
    assert seen == {"training": False, "grad": False} and probe.training


def test_make_ends_data_labels_balance_and_determinism():
    x, y = toy_tasks.make_ends_data(301, length=12, vocab_size=5, seed=4)
    assert x.shape == (301, 12) and y.shape == (301,) and x.dtype == torch.long
    assert x.min() >= 0 and x.max() < 5
    assert y.sum().item() == 150  # n // 2 positives
    same = [r[0] == r[-1] for r in x.tolist()]  # plain Python, row by row
    assert y.tolist() == [int(s) for s in same]
    x2, y2 = toy_tasks.make_ends_data(301, length=12, vocab_size=5, seed=4)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, toy_tasks.make_ends_data(301, 12, 5, seed=5)[0])
    # the negatives' last symbol takes every other value, not one fixed shift
    neg = x[y == 0]
    assert len(set(((neg[:, -1] - neg[:, 0]) % 5).tolist())) == 4


def test_make_ends_data_hides_the_label_from_windows_and_counts():
    # Away from the ends, both classes have the same symbol frequencies.
    x, y = toy_tasks.make_ends_data(20000, length=16, seed=0)
    inner = [
        torch.bincount(x[y == c, 1:-1].flatten(), minlength=4).float()
        for c in (0, 1)
    ]
    freq = [v / v.sum() for v in inner]
    assert (freq[0] - freq[1]).abs().max() < 0.01
    # and counts alone stay near chance
    xt, yt = toy_tasks.make_ends_data(2000, length=16, seed=1)
    make = lambda: priors.CountClassifier(4)  # noqa: E731
    acc = priors.train_and_evaluate(
        make, x[:4096], y[:4096], xt, yt, 300, 5e-2
    )
    assert abs(acc - 0.5) < 0.05, acc


BAD = r"""
ValueError | n must | toy_tasks.make_motif_data(n=1)
ValueError | length must | toy_tasks.make_motif_data(n=10, length=3)
ValueError | motif must | toy_tasks.make_motif_data(n=10, motif=(0, 9))
ValueError | motif's length | toy_tasks.make_motif_data(n=10, motif=())
ValueError | vocab_size must | toy_tasks.make_motif_data(n=10, vocab_size=1)
ValueError | negatives must | toy_tasks.make_motif_data(n=10,
    negatives="sorted")
ValueError | two symbols | toy_tasks.make_motif_data(n=10, motif=(1, 1, 1))
ValueError | n must | toy_tasks.make_ends_data(n=1)
ValueError | length must | toy_tasks.make_ends_data(n=10, length=1)
ValueError | vocab_size must | toy_tasks.make_ends_data(n=10, vocab_size=1)
TypeError | x must hold integer token ids | toy_tasks.contains_motif(
    torch.zeros(3, 5))
ValueError | x must have 2 dims | toy_tasks.contains_motif(torch.zeros(5,
    dtype=torch.long))
ValueError | at most the sequences' length | toy_tasks.contains_motif(
    torch.zeros(3, 2, dtype=torch.long), (0, 1, 2))
ValueError | divisible | priors.TinyTransformer(d_model=10, num_heads=3)
ValueError | max_len | priors.TinyTransformer(max_len=4)(torch.zeros(1, 5,
    dtype=torch.long))
ValueError | kernel_size | priors.MotifCNN(kernel_size=4)(torch.zeros(1, 3,
    dtype=torch.long))
TypeError | x must hold integer token ids | priors.MotifCNN()(
    torch.zeros(2, 8))
ValueError | x must be in \[0, 4\), found 4 | priors.TinyTransformer()(
    torch.full((1, 5), 4))
ValueError | y must have one label | priors.train_classifier(priors.MotifCNN(),
    XY8[0], XY8[1][:3])
ValueError | steps | priors.train_classifier(priors.MotifCNN(), *XY8, steps=0)
ValueError | lr | priors.train_classifier(priors.MotifCNN(), *XY8, lr=0.0)
"""
XY8 = toy_tasks.make_motif_data(8, seed=0)


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name):
    raises(exc, name, eval, call, globals())
