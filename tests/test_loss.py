"""utils.loss against PyTorch's own cross-entropy, and its handling of bad
input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from utils.loss import (
    masked_cross_entropy,
    perplexity,
    sequence_cross_entropy,
    stable_softmax,
    token_cross_entropy,
)
from tests.conftest import raises

SHAPES = [(1, 1, 2), (2, 3, 4), (3, 7, 11), (5, 2, 50), (4, 9, 3)]


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
    torch.testing.assert_close(
        masked_cross_entropy(logits, targets, mask, label_smoothing=eps),
        _reference(logits, targets, mask, eps),
    )


@pytest.mark.parametrize("eps", [0.0, 0.2])
def test_gradient_equals_pytorch(eps):
    logits, targets, mask = _batch(3, (3, 5, 6), torch.float64)
    a = logits.clone().requires_grad_()
    b = logits.clone().requires_grad_()
    masked_cross_entropy(a, targets, mask, label_smoothing=eps).backward()
    _reference(b, targets, mask, eps).backward()
    torch.testing.assert_close(a.grad, b.grad)
    assert (a.grad[~mask] == 0).all(), (
        "padded positions must get exactly zero gradient"
    )
    assert (a.grad[mask].abs().sum(-1) > 0).all()


def test_padding_targets_may_hold_any_id():
    logits, targets, mask = _batch(4, (3, 6, 5))
    expected = masked_cross_entropy(logits, targets, mask)
    for junk in (-100, -1, 5, 10**6):
        assert (~mask).any()
        odd = targets.masked_fill(~mask, junk)
        torch.testing.assert_close(
            masked_cross_entropy(logits, odd, mask), expected
        )


def test_padding_logits_are_never_read():
    logits, targets, mask = _batch(5, (2, 4, 3))
    mask[0, -1] = False
    poisoned = logits.clone()
    poisoned[~mask] = float("inf")
    torch.testing.assert_close(
        masked_cross_entropy(poisoned, targets, mask),
        masked_cross_entropy(logits, targets, mask),
    )


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
    torch.testing.assert_close(
        loss, masked_cross_entropy(logits, targets, mask)
    )
    torch.testing.assert_close(poisoned.grad, clean.grad)
    assert (poisoned.grad[~mask] == 0).all()
    # ignore_index alone reads the padded rows: its gradient is NaN there
    ref = poisoned.detach().clone().requires_grad_()
    _reference(ref, targets, mask).backward()
    assert torch.isnan(ref.grad).any()


def test_all_masked_returns_zero_with_zero_grad():
    # Documented choice: PyTorch gives NaN here; utils gives 0.0, attached to
    # the graph.
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
        torch.testing.assert_close(
            token_cross_entropy(logits, targets, mask, eps),
            _reference(logits, targets, mask, eps, reduction="none"),
        )


def test_sequence_average_by_hand():
    logits, targets, mask = _batch(7, (4, 6, 5), torch.float64)
    per_token = _reference(logits, targets, mask, reduction="none")
    by_hand = sum(per_token[i][mask[i]].mean() for i in range(4)) / 4
    torch.testing.assert_close(
        sequence_cross_entropy(logits, targets, mask), by_hand
    )
    # with unequal lengths, the two averages differ
    assert mask.sum(1).unique().numel() > 1
    assert not torch.isclose(
        sequence_cross_entropy(logits, targets, mask),
        masked_cross_entropy(logits, targets, mask),
    )


def test_stable_softmax_equals_torch_and_survives_large_logits():
    x = torch.randn(3, 8) * 5
    torch.testing.assert_close(stable_softmax(x), torch.softmax(x, dim=-1))
    torch.testing.assert_close(
        stable_softmax(x, dim=0), torch.softmax(x, dim=0)
    )
    big = torch.tensor([1000.0, 999.0, 990.0])
    naive = big.exp() / big.exp().sum()
    assert torch.isnan(naive).all()
    torch.testing.assert_close(stable_softmax(big), torch.softmax(big, dim=0))
    raises(TypeError, "x must", stable_softmax, torch.tensor([1, 2]))


def test_perplexity():
    for v in (2, 4, 1000):
        uniform = torch.zeros(1, 3, v)
        loss = masked_cross_entropy(
            uniform,
            torch.zeros(1, 3, dtype=torch.long),
            torch.ones(1, 3, dtype=torch.bool),
        )
        torch.testing.assert_close(perplexity(loss), torch.tensor(float(v)))
    assert math.isclose(perplexity(0.0).item(), 1.0)
    raises(ValueError, "mean_token_loss", perplexity, float("nan"))
    raises(ValueError, "mean_token_loss", perplexity, -1.0)
    raises(ValueError, "mean_token_loss", perplexity, torch.ones(2))
    with pytest.raises(ValueError, match="mean_token_loss must be finite"):
        perplexity(float("inf"))
    raises(
        TypeError, "mean_token_loss must be a real number", perplexity, "2.3"
    )
    with pytest.raises(
        TypeError, match="mean_token_loss must be a floating-point"
    ):
        perplexity(torch.tensor(2))
    assert math.isclose(
        perplexity(np.float32(math.log(7))).item(), 7.0, rel_tol=1e-6
    )


def test_bad_input_names_the_argument():
    logits, targets, mask = _batch(8, (2, 3, 4))
    with pytest.raises(ValueError, match="logits"):
        masked_cross_entropy(logits[0], targets, mask)  # 2-D logits
    with pytest.raises(TypeError, match="logits must be a floating-point"):
        masked_cross_entropy(logits.long(), targets, mask)  # integer logits
    with pytest.raises(ValueError, match="targets"):
        masked_cross_entropy(logits, targets[:, :2], mask)  # wrong length
    with pytest.raises(TypeError, match="targets"):
        masked_cross_entropy(logits, targets.float(), mask)  # float ids
    with pytest.raises(TypeError, match="mask must be a bool"):
        masked_cross_entropy(logits, targets, mask.float())  # float mask
    with pytest.raises(
        TypeError, match=r"targets has dtype torch.uint8.*\.long\(\)"
    ):
        masked_cross_entropy(
            logits, targets.to(torch.uint8), mask
        )  # uint8 targets
    with pytest.raises(TypeError, match="targets must be a torch.Tensor"):
        masked_cross_entropy(logits, targets.tolist(), mask)
    with pytest.raises(ValueError, match="mask"):
        masked_cross_entropy(logits, targets, mask[:, :2])  # wrong shape
    with pytest.raises(
        ValueError, match=r"targets at real positions .* found 4"
    ):
        masked_cross_entropy(
            logits, targets.masked_fill(mask, 4), mask
        )  # id == vocab
    with pytest.raises(
        ValueError, match=r"targets at real positions .* found -100"
    ):
        masked_cross_entropy(
            logits, targets.masked_fill(mask, -100), mask
        )  # -100 is not padding here
    for eps in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="label_smoothing"):
            masked_cross_entropy(logits, targets, mask, label_smoothing=eps)
    with pytest.raises(
        TypeError, match="label_smoothing must be a real number"
    ):
        masked_cross_entropy(logits, targets, mask, label_smoothing="0.1")
    with pytest.raises(ValueError, match="logits must have shape"):
        masked_cross_entropy(logits[None], targets, mask)
