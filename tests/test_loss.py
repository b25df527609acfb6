"""utils.loss against PyTorch's own cross-entropy, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from utils.loss import masked_cross_entropy, perplexity, sequence_cross_entropy
from utils.loss import stable_softmax, token_cross_entropy
from tests.conftest import raises, raising

SHAPES = [(1, 1, 2), (2, 3, 4), (3, 7, 11), (5, 2, 50), (4, 9, 3)]
MCE, close = masked_cross_entropy, torch.testing.assert_close


pytestmark = pytest.mark.usefixtures("seeded")


def _batch(seed: int, shape: tuple[int, int, int], dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    b, t, v = shape
    logits = torch.randn(b, t, v, generator=g, dtype=dtype) * 3
    targets = torch.randint(0, v, (b, t), generator=g)
    lengths = torch.randint(1, t + 1, (b,), generator=g)
    mask = torch.arange(t) < lengths[:, None]
    return logits, targets, mask


def _reference(logits, targets, mask, eps=0.0, reduction="mean"):
    return F.cross_entropy(
        logits.transpose(1, 2),
        targets.masked_fill(~mask, -100),
        ignore_index=-100,
        label_smoothing=eps,
        reduction=reduction,
    )


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_pytorch_ignore_index(seed, shape, eps):
    logits, targets, mask = _batch(seed, shape, torch.float64)
    close(MCE(logits, targets, mask, label_smoothing=eps),
          _reference(logits, targets, mask, eps))  # fmt: skip


@pytest.mark.parametrize("eps", [0.0, 0.2])
def test_gradient_equals_pytorch(eps):
    logits, targets, mask = _batch(3, (3, 5, 6), torch.float64)
    a = logits.clone().requires_grad_()
    b = logits.clone().requires_grad_()
    masked_cross_entropy(a, targets, mask, label_smoothing=eps).backward()
    _reference(b, targets, mask, eps).backward()
    torch.testing.assert_close(a.grad, b.grad)
    assert (a.grad[~mask] == 0).all(), "padding: exactly zero gradient"
    assert (a.grad[mask].abs().sum(-1) > 0).all()


def test_padding_targets_may_hold_any_id():
    logits, targets, mask = _batch(4, (3, 6, 5))
    expected = masked_cross_entropy(logits, targets, mask)
    for junk in (-100, -1, 5, 10**6):
        assert (~mask).any()
        odd = targets.masked_fill(~mask, junk)
        close(MCE(logits, odd, mask), expected)


def test_padding_logits_are_never_read():
    logits, targets, mask = _batch(5, (2, 4, 3))
    mask[0, -1] = False
    poisoned = logits.clone()
    poisoned[~mask] = float("inf")
    close(MCE(poisoned, targets, mask), MCE(logits, targets, mask))


@pytest.mark.parametrize("poison", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_padded_logits_leave_value_and_gradient_finite(poison):
    logits, targets, mask = _batch(9, (3, 5, 4), torch.float64)
    assert (~mask).any() and mask.any()
    clean = logits.clone().requires_grad_()
    masked_cross_entropy(clean, targets, mask).backward()
    poisoned = logits.masked_fill(~mask[..., None], poison).requires_grad_()
    loss = masked_cross_entropy(poisoned, targets, mask)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(poisoned.grad).all()
    close(loss, MCE(logits, targets, mask))
    close(poisoned.grad, clean.grad)
    assert (poisoned.grad[~mask] == 0).all()
    # ignore_index alone reads the padded rows: its gradient is NaN there
    ref = poisoned.detach().clone().requires_grad_()
    _reference(ref, targets, mask).backward()
    assert torch.isnan(ref.grad).any()


def test_all_masked_returns_zero_with_zero_grad():
    # Documented choice: PyTorch gives NaN; utils 0.0, attached to the graph
    logits = torch.randn(2, 3, 4, requires_grad=True)
    targets = torch.randint(0, 4, (2, 3))
    none = torch.zeros(2, 3, dtype=torch.bool)
    assert torch.isnan(_reference(logits.detach(), targets, none))
    loss = masked_cross_entropy(logits, targets, none)
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.equal(logits.grad, torch.zeros_like(logits))
    assert sequence_cross_entropy(logits, targets, none).item() == 0.0


def test_token_losses_equal_reduction_none():
    logits, targets, mask = _batch(6, (4, 5, 7), torch.float64)
    for eps in (0.0, 0.3):
        want = _reference(logits, targets, mask, eps, reduction="none")
        close(token_cross_entropy(logits, targets, mask, eps), want)


def test_sequence_average_by_hand():
    logits, targets, mask = _batch(7, (4, 6, 5), torch.float64)
    per_token = _reference(logits, targets, mask, reduction="none")
    by_hand = sum(per_token[i][mask[i]].mean() for i in range(4)) / 4
    by_sequence = sequence_cross_entropy(logits, targets, mask)
    close(by_sequence, by_hand)
    # with unequal lengths, the two averages differ
    assert mask.sum(1).unique().numel() > 1
    assert not torch.isclose(by_sequence, MCE(logits, targets, mask))


def test_stable_softmax_equals_torch_and_survives_large_logits():
    x = torch.randn(3, 8) * 5
    close(stable_softmax(x), torch.softmax(x, dim=-1))
    close(stable_softmax(x, dim=0), torch.softmax(x, dim=0))
    big = torch.tensor([1000.0, 999.0, 990.0])
    naive = big.exp() / big.exp().sum()
    assert torch.isnan(naive).all()
    close(stable_softmax(big), torch.softmax(big, dim=0))


def test_perplexity():
    targets, mask = torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 3) > 0
    for v in (2, 4, 1000):
        loss = MCE(torch.zeros(1, 3, v), targets, mask)  # uniform
        close(perplexity(loss), torch.tensor(float(v)))
    assert math.isclose(perplexity(0.0).item(), 1.0)
    seven = perplexity(np.float32(math.log(7))).item()
    assert math.isclose(seven, 7.0, rel_tol=1e-6)


L, T, M = _batch(8, (2, 3, 4))  # logits, targets, mask for the table below
# found 4: the id == the vocabulary's size; -100 is not padding here
BAD = r"""
ValueError | logits | MCE(L[0], T, M)
TypeError | logits must be a floating-point | MCE(L.long(), T, M)
ValueError | targets | MCE(L, T[:, :2], M)
TypeError | targets | MCE(L, T.float(), M)
TypeError | mask must be a bool | MCE(L, T, M.float())
TypeError | targets has dtype torch.uint8.*\.long\(\) | MCE(L,
    T.to(torch.uint8), M)
TypeError | targets must be a torch.Tensor | MCE(L, T.tolist(), M)
ValueError | mask | MCE(L, T, M[:, :2])
ValueError | targets at real positions .* found 4 | MCE(L, T.masked_fill(M, 4),
    M)
ValueError | targets at real positions .* found -100 | MCE(L,
    T.masked_fill(M, -100), M)
ValueError | label_smoothing | MCE(L, T, M, label_smoothing=-0.1)
ValueError | label_smoothing | MCE(L, T, M, label_smoothing=1.0)
ValueError | label_smoothing | MCE(L, T, M, label_smoothing=float("nan"))
TypeError | label_smoothing must be a real number | MCE(L, T, M,
    label_smoothing="0.1")
ValueError | logits must have shape | MCE(L[None], T, M)
ValueError | mean_token_loss | perplexity(float("nan"))
ValueError | mean_token_loss | perplexity(-1.0)
ValueError | mean_token_loss | perplexity(torch.ones(2))
ValueError | mean_token_loss must be finite | perplexity(float("inf"))
TypeError | mean_token_loss must be a real number | perplexity("2.3")
TypeError | mean_token_loss must be a floating-point | perplexity(
    torch.tensor(2))
TypeError | x must | stable_softmax(torch.tensor([1, 2]))
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name):
    raises(exc, name, eval, call, globals())
