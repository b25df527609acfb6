"""utils.checks: one rule for every module (TypeError = wrong kind,
ValueError = wrong value), and every message names the argument."""

import math

import numpy as np
import pytest
import torch

from utils.checks import (
    check_ids,
    check_int,
    check_mask,
    check_number,
    check_probability,
    check_qkv,
    check_tensor,
)
from tests.conftest import raises


# ---------------------------------------------------------------- check_int
def test_int_accepts_python_and_numpy_integers():
    assert check_int(3, "n") == 3
    assert check_int(np.int64(4), "n", minimum=1) == 4
    assert type(check_int(np.int64(4), "n")) is int
    assert type(check_int(np.int32(5), "n")) is int
    assert check_int(-5, "offset") == -5  # no minimum: any int


@pytest.mark.parametrize("bad", [True, 2.0, np.float64(8.0), "3", None, [3]])
def test_int_wrong_kind_is_a_type_error_naming_the_argument(bad):
    raises(TypeError, "window must be an int", check_int, bad, "window")


def test_int_below_minimum_is_a_value_error_with_the_bound():
    with pytest.raises(ValueError, match=r"steps must be an int >= 1, got 0"):
        check_int(0, "steps", minimum=1)


# ---------------------------------------------------------------- numbers
def test_number_accepts_reals_and_numpy_scalars():
    assert check_number(1, "x") == 1.0 and type(check_number(1, "x")) is float
    assert check_number(np.float32(0.5), "x") == 0.5
    assert check_number(np.int64(2), "x", minimum=0, maximum=2) == 2.0
    assert check_number(math.inf, "x") == math.inf


@pytest.mark.parametrize("bad", ["0.1", True, None, torch.tensor(0.1), 1j])
def test_number_wrong_kind_is_a_type_error(bad):
    with pytest.raises(TypeError, match="alpha must be a real number"):
        check_number(bad, "alpha")


def test_number_range_nan_and_infinity_are_value_errors():
    with pytest.raises(ValueError, match="alpha must be a number, got NaN"):
        check_number(float("nan"), "alpha")
    with pytest.raises(ValueError, match=r"t must be in \(0, inf\), got 0"):
        check_number(0, "t", minimum=0, min_inclusive=False)
    with pytest.raises(ValueError, match=r"t must be in \(-inf, 2\], got 3"):
        check_number(3, "t", maximum=2)
    with pytest.raises(ValueError, match="t must be finite"):
        check_number(-math.inf, "t", finite=True)
    assert check_number(0, "t", minimum=0) == 0.0  # closed end by default


def test_probability_half_open_unless_one_is_allowed():
    assert check_probability(0, "dropout") == 0.0
    assert check_probability(np.float64(0.25), "dropout") == 0.25
    with pytest.raises(ValueError, match=r"dropout must be in \[0.0, 1.0\)"):
        check_probability(1.0, "dropout")
    assert check_probability(1.0, "top_p", allow_one=True) == 1.0
    for bad in (-0.1, 1.5, float("nan"), math.inf):
        with pytest.raises(ValueError, match="p must"):
            check_probability(bad, "p", allow_one=True)
    with pytest.raises(TypeError, match="dropout must be a real number"):
        check_probability("0.1", "dropout")


# ---------------------------------------------------------------- tensors
def test_tensor_kind_rank_and_floating():
    x = torch.zeros(2, 3)
    assert check_tensor(x, "x", ndim=2, floating=True) is x
    assert check_tensor(x, "x", ndim=(2, 3), min_ndim=1) is x
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        check_tensor([1.0], "x")
    with pytest.raises(TypeError, match=r"x must be a floating-point.*int64"):
        check_tensor(torch.zeros(2, dtype=torch.long), "x", floating=True)
    with pytest.raises(TypeError, match="must not be floating"):
        check_tensor(x, "x", floating=False)
    with pytest.raises(ValueError, match=r"x must have 3 dims.*\(2, 3\)"):
        check_tensor(x, "x", ndim=3)
    with pytest.raises(ValueError, match=r"x must have 1 or 3 dims"):
        check_tensor(x, "x", ndim=(1, 3))
    with pytest.raises(ValueError, match=r"at least 3 dims.*\(2, 3\)"):
        check_tensor(x, "x", min_ndim=3)


# ---------------------------------------------------------------- ids
def test_ids_accept_signed_integers_in_range():
    ids = torch.tensor([[0, 4], [2, 3]])
    assert check_ids(ids, "src", 5, ndim=2) is ids
    assert check_ids(ids.int(), "src", np.int64(5)) is not None
    assert (
        check_ids(
            torch.zeros(0, 3, dtype=torch.long), "src", 1, ndim=2
        ).numel()
        == 0
    )


@pytest.mark.parametrize(
    "bad, words",
    [
        (torch.tensor([[1, 2]], dtype=torch.uint8), "uint8.*wraps"),
        (torch.tensor([[True, False]]), "torch.bool"),
        (torch.tensor([[1.0, 2.0]]), "float32"),
        ([[1, 2]], "torch.Tensor"),
    ],
)
def test_ids_wrong_kind_is_a_type_error(bad, words):
    raises(TypeError, f"tgt.*{words}", check_ids, bad, "tgt", 5)


def test_ids_wrong_value_is_a_value_error_naming_the_offender():
    with pytest.raises(ValueError, match=r"tgt must be in \[0, 5\), found 7"):
        check_ids(torch.tensor([[1, 7]]), "tgt", 5)
    with pytest.raises(ValueError, match=r"found -1"):
        check_ids(torch.tensor([[-1, 7]]), "tgt", 5)
    with pytest.raises(
        ValueError, match=r"tgt must have 2 dims \(batch, length\)"
    ):
        check_ids(torch.tensor([1, 2]), "tgt", ndim=2)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        check_ids(torch.tensor([1]), "tgt", 5.0)


# ---------------------------------------------------------------- q, k, v
def _qkv(*shapes, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(s, generator=g, dtype=dtype) for s in shapes]


def test_qkv_accepts_broadcasting_batch_dims():
    check_qkv(*_qkv((2, 3, 5, 4), (1, 3, 6, 4), (3, 6, 7)))
    check_qkv(*_qkv((5, 4), (6, 4), (6, 2)))


@pytest.mark.parametrize(
    "shapes, exc, words",
    [
        (
            ((2, 5, 4), (2, 6, 3), (2, 6, 4)),
            ValueError,
            r"q and k .*\(2, 5, 4\).*\(2, 6, 3\)",
        ),
        (
            ((2, 5, 4), (2, 6, 4), (2, 7, 4)),
            ValueError,
            r"k and v .*\(2, 6, 4\).*\(2, 7, 4\)",
        ),
        (
            ((2, 5, 4), (3, 6, 4), (3, 6, 4)),
            ValueError,
            r"batch dims .*q \(2, 5, 4\)",
        ),
        (
            ((4,), (6, 4), (6, 4)),
            ValueError,
            r"q must have at least 2 dims.*\(4,\)",
        ),
    ],
)
def test_qkv_shape_errors_name_the_arguments_and_shapes(shapes, exc, words):
    raises(exc, words, check_qkv, *_qkv(*shapes))


def test_qkv_dtype_errors_are_type_errors():
    q, k, v = _qkv((2, 3), (2, 3), (2, 3))
    with pytest.raises(TypeError, match=r"q must be a floating-point.*int64"):
        check_qkv(q.long(), k, v)
    raises(TypeError, r"v torch.float64", check_qkv, q, k, v.double())
    raises(TypeError, "k must be a torch.Tensor", check_qkv, q, k.tolist(), v)


# ---------------------------------------------------------------- masks
def test_mask_must_be_bool_and_broadcast():
    keep = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    assert check_mask(keep, "mask", (2, 4, 3, 5)) is keep
    with pytest.raises(
        TypeError, match=r"mask must be a bool.*float32.*\.bool\(\)"
    ):
        check_mask(keep.float(), "mask", (2, 4, 3, 5))
    with pytest.raises(TypeError, match="mask must be a torch.Tensor"):
        check_mask([[True]], "mask", (1, 1))
    # (2, 5) broadcasts with (2, 4, 3, 5) only by reading 2 as the query length
    with pytest.raises(
        ValueError, match=r"mask of shape \(2, 5\).*\(2, 4, 3, 5\)"
    ):
        check_mask(torch.ones(2, 5, dtype=torch.bool), "mask", (2, 4, 3, 5))
    # a mask with more dims than the scores would grow them
    with pytest.raises(ValueError, match=r"\(3, 1, 5, 5\)"):
        check_mask(torch.ones(3, 1, 5, 5, dtype=torch.bool), "mask", (1, 5, 5))
    with pytest.raises(ValueError, match="mask is on cpu.*meta"):
        check_mask(keep, "mask", (2, 4, 3, 5), device="meta")
