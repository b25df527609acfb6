"""utils.checks: the shared argument check names the argument and rejects what is not an int."""
import numpy as np
import pytest

from utils.checks import check_int


def test_accepts_ints_including_numpy():
    assert check_int(3, "n") == 3
    assert check_int(np.int64(4), "n", minimum=1) == 4
    assert type(check_int(np.int64(4), "n")) is int


@pytest.mark.parametrize("bad", [True, 2.0, "3", None])
def test_wrong_type_is_a_type_error_naming_the_argument(bad):
    with pytest.raises(TypeError, match="window must be an int"):
        check_int(bad, "window")


def test_below_minimum_is_a_value_error_with_the_bound():
    with pytest.raises(ValueError, match=r"steps must be an int >= 1, got 0"):
        check_int(0, "steps", minimum=1)
    assert check_int(-5, "offset") == -5  # no minimum: any int
