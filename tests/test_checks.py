"""utils.checks: one rule for every module (TypeError = wrong kind,
ValueError = wrong value), and every message names the argument."""

import math

import numpy as np
import pytest
import torch

from utils.checks import check_ids, check_int, check_mask, check_number
from utils.checks import check_probability, check_qkv, check_tensor
from tests.conftest import raises, raising


def test_int_accepts_python_and_numpy_integers():
    assert check_int(3, "n") == 3
    assert check_int(np.int64(4), "n", minimum=1) == 4
    assert type(check_int(np.int64(4), "n")) is int
    assert type(check_int(np.int32(5), "n")) is int
    assert check_int(-5, "offset") == -5  # no minimum: any int


def test_number_accepts_reals_and_numpy_scalars():
    assert check_number(1, "x") == 1.0 and type(check_number(1, "x")) is float
    assert check_number(np.float32(0.5), "x") == 0.5
    assert check_number(np.int64(2), "x", minimum=0, maximum=2) == 2.0
    assert check_number(math.inf, "x") == math.inf
    assert check_number(0, "t", minimum=0) == 0.0  # closed end by default


def test_probability_half_open_unless_one_is_allowed():
    assert check_probability(0, "dropout") == 0.0
    assert check_probability(np.float64(0.25), "dropout") == 0.25
    assert check_probability(1.0, "top_p", allow_one=True) == 1.0


def test_tensor_and_ids_are_returned_when_right():
    x = torch.zeros(2, 3)
    assert check_tensor(x, "x", ndim=2, floating=True) is x
    assert check_tensor(x, "x", ndim=(2, 3), min_ndim=1) is x
    ids = torch.tensor([[0, 4], [2, 3]])
    assert check_ids(ids, "src", 5, ndim=2) is ids
    assert check_ids(ids.int(), "src", np.int64(5)) is not None
    empty = torch.zeros(0, 3, dtype=torch.long)
    assert check_ids(empty, "src", 1, ndim=2).numel() == 0


def _qkv(*shapes, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(s, generator=g, dtype=dtype) for s in shapes]


def test_qkv_accepts_broadcasting_batch_dims():
    check_qkv(*_qkv((2, 3, 5, 4), (1, 3, 6, 4), (3, 6, 7)))
    check_qkv(*_qkv((5, 4), (6, 4), (6, 2)))


X, (Q, K, V) = torch.zeros(2, 3), _qkv((2, 3), (2, 3), (2, 3))
# wrong kinds are TypeErrors, wrong values ValueErrors, naming the argument
BAD = r"""
TypeError | window must be an int | check_int(True, "window")
TypeError | window must be an int | check_int(2.0, "window")
TypeError | window must be an int | check_int(np.float64(8.0), "window")
TypeError | window must be an int | check_int("3", "window")
TypeError | window must be an int | check_int(None, "window")
TypeError | window must be an int | check_int([3], "window")
ValueError | steps must be an int >= 1, got 0 | check_int(0, "steps",
    minimum=1)
TypeError | alpha must be a real number | check_number("0.1", "alpha")
TypeError | alpha must be a real number | check_number(True, "alpha")
TypeError | alpha must be a real number | check_number(None, "alpha")
TypeError | alpha must be a real number | check_number(torch.tensor(0.1),
    "alpha")
TypeError | alpha must be a real number | check_number(1j, "alpha")
ValueError | alpha must be a number, got NaN | check_number(float("nan"),
    "alpha")
ValueError | t must be in \(0, inf\), got 0 | check_number(0, "t", minimum=0,
    min_inclusive=False)
ValueError | t must be in \(-inf, 2\], got 3 | check_number(3, "t", maximum=2)
ValueError | t must be finite | check_number(-math.inf, "t", finite=True)
ValueError | dropout must be in \[0.0, 1.0\) | check_probability(1.0,
    "dropout")
ValueError | p must | check_probability(-0.1, "p", allow_one=True)
ValueError | p must | check_probability(1.5, "p", allow_one=True)
ValueError | p must | check_probability(float("nan"), "p", allow_one=True)
ValueError | p must | check_probability(math.inf, "p", allow_one=True)
TypeError | dropout must be a real number | check_probability("0.1",
    "dropout")
TypeError | x must be a torch.Tensor, got list | check_tensor([1.0], "x")
TypeError | x must be a floating-point.*int64 | check_tensor(torch.zeros(2,
    dtype=torch.long), "x", floating=True)
TypeError | must not be floating | check_tensor(X, "x", floating=False)
ValueError | x must have 3 dims.*\(2, 3\) | check_tensor(X, "x", ndim=3)
ValueError | x must have 1 or 3 dims | check_tensor(X, "x", ndim=(1, 3))
ValueError | at least 3 dims.*\(2, 3\) | check_tensor(X, "x", min_ndim=3)
TypeError | tgt.*uint8.*wraps | check_ids(torch.tensor([[1, 2]],
    dtype=torch.uint8), "tgt", 5)
TypeError | tgt.*torch.bool | check_ids(torch.tensor([[True, False]]), "tgt",
    5)
TypeError | tgt.*float32 | check_ids(torch.tensor([[1.0, 2.0]]), "tgt", 5)
TypeError | tgt.*torch.Tensor | check_ids([[1, 2]], "tgt", 5)
ValueError | tgt must be in \[0, 5\), found 7 | check_ids(torch.tensor([[1,
    7]]), "tgt", 5)
ValueError | found -1 | check_ids(torch.tensor([[-1, 7]]), "tgt", 5)
ValueError | tgt must have 2 dims \(batch, length\) | check_ids(
    torch.tensor([1, 2]), "tgt", ndim=2)
TypeError | vocab_size must be an int | check_ids(torch.tensor([1]), "tgt",
    5.0)
ValueError | q and k .*\(2, 5, 4\).*\(2, 6, 3\) | check_qkv(*_qkv((2, 5, 4),
    (2, 6, 3), (2, 6, 4)))
ValueError | k and v .*\(2, 6, 4\).*\(2, 7, 4\) | check_qkv(*_qkv((2, 5, 4),
    (2, 6, 4), (2, 7, 4)))
ValueError | batch dims .*q \(2, 5, 4\) | check_qkv(*_qkv((2, 5, 4),
    (3, 6, 4), (3, 6, 4)))
ValueError | q must have at least 2 dims.*\(4,\) | check_qkv(*_qkv((4,),
    (6, 4), (6, 4)))
TypeError | q must be a floating-point.*int64 | check_qkv(Q.long(), K, V)
TypeError | v torch.float64 | check_qkv(Q, K, V.double())
TypeError | k must be a torch.Tensor | check_qkv(Q, K.tolist(), V)
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name):
    raises(exc, name, eval, call, globals())


def test_mask_must_be_bool_and_broadcast():
    keep = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    shape, wide = (2, 4, 3, 5), torch.ones(3, 1, 5, 5, dtype=torch.bool)
    assert check_mask(keep, "mask", shape) is keep
    bad = r"mask must be a bool.*float32.*\.bool\(\)"
    raises(TypeError, bad, check_mask, keep.float(), "mask", shape)
    raises(TypeError, "mask must be a torch.Tensor", check_mask, [[True]],
           "mask", (1, 1))  # fmt: skip
    # (2, 5) broadcasts with (2, 4, 3, 5) only by reading 2 as the query length
    raises(ValueError, r"mask of shape \(2, 5\).*\(2, 4, 3, 5\)", check_mask,
           keep[:, 0, 0], "mask", shape)  # fmt: skip
    # a mask with more dims than the scores would grow them
    raises(ValueError, r"\(3, 1, 5, 5\)", check_mask, wide, "mask", (1, 5, 5))
    raises(ValueError, "mask is on cpu.*meta", check_mask, keep, "mask",
           shape, device="meta")  # fmt: skip
