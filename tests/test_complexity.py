"""utils.complexity against independent computations (loops, full attention,
FLOP formulas, exact power laws, known sizes, a sleeping call)."""

from __future__ import annotations

import math
import time

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from utils.attention import scaled_dot_product_attention
from utils.complexity import count_flops, fit_power_law, flops_by_op
from utils.complexity import peak_memory, time_fn, time_interleaved
from utils.efficient_attention import banded_attention, windowed_attention
from utils.efficient_attention import online_softmax_attention
from utils.masks import band_mask
from tests.conftest import raises, raising

close = torch.testing.assert_close


def _qkv(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(3, *shape, generator=g).unbind(0)


# ---------------------------------------------------------- band mask, windows
@pytest.mark.parametrize("causal", [False, True])
def test_band_mask_matches_a_loop(causal):
    n, w = 9, 2
    expected = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        for j in range(n):
            expected[i, j] = (0 <= i - j <= w) if causal else abs(i - j) <= w
    assert torch.equal(band_mask(n, w, causal=causal), expected)


@pytest.mark.parametrize("window", [0, 1, 4, 12, 40])
@pytest.mark.parametrize("causal", [False, True])
def test_windowed_equals_banded_and_band_masked_attention(window, causal):
    q, k, v = _qkv(2, 3, 13, 8)
    keep = band_mask(13, window, causal=causal)
    reference = scaled_dot_product_attention(q, k, v, keep)[0]
    windowed = windowed_attention(q, k, v, window, causal=causal)
    banded = banded_attention(q, k, v, window, causal=causal)
    close(banded, reference)
    close(windowed, reference)
    close(windowed, F.scaled_dot_product_attention(q, k, v, attn_mask=keep))


def test_windowed_attention_with_different_value_size_and_2d_inputs():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 11, 4, generator=g).unbind(0)
    v = torch.randn(11, 6, generator=g)
    out = windowed_attention(q, k, v, 2)
    assert out.shape == (11, 6)
    close(out, scaled_dot_product_attention(q, k, v, band_mask(11, 2))[0])


def test_windowed_attention_costs_4nrd_and_banded_4n2d():
    n, d, w = 40, 8, 3
    x = torch.zeros(1, n, d)
    windowed = (windowed_attention, x, x, x, w)
    assert count_flops(*windowed) == 4 * n * (2 * w + 1) * d
    assert count_flops(*windowed, causal=True) == 4 * n * (w + 1) * d
    assert count_flops(banded_attention, x, x, x, w) == 4 * n * n * d


# -------------------------------------------------------------- online softmax
@pytest.mark.parametrize("block", [1, 3, 7, 16, 23, 100])
@pytest.mark.parametrize(
    "mask_kind", ["none", "causal", "padding", "random_with_empty_row"]
)
def test_online_softmax_attention_equals_full_attention(block, mask_kind):
    q, k, v = _qkv(2, 2, 23, 8, seed=2)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "causal":
        mask = torch.ones(23, 23, dtype=torch.bool).tril()
    elif mask_kind == "padding":
        lengths = torch.tensor([23, 9])[:, None]
        mask = (torch.arange(23) < lengths)[:, None, None, :]  # (B, 1, 1, S)
    else:
        g = torch.Generator().manual_seed(3)
        mask = torch.rand(2, 2, 23, 23, generator=g) > 0.6
        mask[0, 1, 5] = False  # a query that sees nothing: zero output, no NaN
    out = online_softmax_attention(q, k, v, block, mask)
    assert not torch.isnan(out).any()
    close(out, scaled_dot_product_attention(q, k, v, mask)[0])
    if mask_kind in ("none", "causal"):
        close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_online_softmax_attention_cross_attention_lengths_and_large_scores():
    (q,) = _qkv(1, 5, 4, seed=4)[:1]
    k, v = _qkv(1, 17, 4, seed=5)[:2]
    # scores in the thousands: exp would overflow without the running max
    q, k = q * 30, k * 30
    out = online_softmax_attention(q, k, v, 4)
    close(out, F.scaled_dot_product_attention(q, k, v))


def test_online_softmax_attention_uses_less_memory_than_full():
    def peaks(n, d=16):
        x = torch.zeros(1, n, d)
        full = peak_memory(
            lambda x: scaled_dot_product_attention(x, x, x)[0], x
        )
        return full, peak_memory(online_softmax_attention, x, x, x, 32)

    (full, online), (full2, online2) = peaks(512), peaks(1024)
    # scores and weights alive together, float32, plus the output
    assert full == 2 * 4 * 512 * 512 + 4 * 512 * 16
    assert online < full / 4
    assert 1.9 < online2 / online < 2.1  # linear in n
    assert 3.9 < full2 / full < 4.1  # quadratic in n


# --------------------------------------------------------- measuring helpers
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (3, 5, 7), (64, 32, 16)])
def test_count_flops_of_a_matmul_is_2mnk(m, n, k):
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    assert count_flops(torch.matmul, a, b) == 2 * m * n * k
    assert flops_by_op(torch.matmul, a, b) == {"aten.mm": 2 * m * n * k}


def test_count_flops_of_layers_matches_formulas():
    n, d, ksize = 12, 6, 3
    x = torch.zeros(1, n, d)
    assert count_flops(nn.RNN(d, d, batch_first=True), x) == 4 * n * d * d
    conv = nn.Conv1d(d, d, ksize, padding=1)
    assert count_flops(conv, x.transpose(1, 2)) == 2 * ksize * n * d * d
    assert count_flops(torch.tanh, x) == 0  # elementwise work is not counted


def test_peak_memory_counts_new_tensors_not_inputs_or_views():
    x = torch.zeros(100, 10)
    assert peak_memory(torch.zeros, 1000) == 4000
    assert peak_memory(lambda t: t.transpose(0, 1), x) == 0  # a view
    assert peak_memory(lambda t: t.add_(1), x) == 0  # in place: nothing new

    def two_temporaries(t):
        a = t * 2  # 4000 bytes
        b = a * 2  # 4000 more while a is alive
        del a
        return b.sum()  # 4 bytes; a is freed first

    assert peak_memory(two_temporaries, x) == 8000


def test_time_fn_returns_the_median_and_restores_threads():
    calls = []
    threads = torch.get_num_threads()
    call = lambda: calls.append(torch.get_num_threads())  # noqa: E731
    t = time_fn(call, repeats=3, warmup=2, num_threads=1)
    assert len(calls) == 5 and set(calls) == {1}
    assert torch.get_num_threads() == threads
    assert 0 <= t < 1


@pytest.mark.parametrize(
    "slope,c", [(1.0, 3.0), (2.0, 0.5), (0.5, 10.0), (-1.0, 2.0)]
)
def test_fit_power_law_recovers_exact_power_laws(slope, c):
    x = [16, 32, 64, 128, 256]
    y = [c * v**slope for v in x]
    fitted, fitted_c = fit_power_law(x, y)
    assert math.isclose(fitted, slope, rel_tol=1e-9)
    assert math.isclose(fitted_c, c, rel_tol=1e-9)


def test_fit_power_law_with_noise_is_close():
    g = torch.Generator().manual_seed(6)
    x = torch.tensor([100.0, 200, 400, 800, 1600])
    y = 2e-6 * x**2 * torch.exp(0.05 * torch.randn(5, generator=g))
    assert abs(fit_power_law(x, y)[0] - 2) < 0.1


# ------------------------------------------------------------------ bad input
def qkv(q=(4, 3), k=(4, 3), v=(4, 3)) -> list:
    """Zeros of these shapes; any other value (a wrong type) as it is."""
    return [torch.zeros(x) if isinstance(x, tuple) else x for x in (q, k, v)]


BAD = """
ValueError | n | band_mask(0, 1)
ValueError | window | band_mask(5, -1)
TypeError | window | band_mask(5, 1.5)
ValueError | same length | windowed_attention(*qkv(k=(5, 3), v=(5, 3)), 1)
ValueError | d_k | windowed_attention(*qkv(k=(4, 2)), 1)
ValueError | window | windowed_attention(*qkv(), -2)
ValueError | q | windowed_attention(*qkv(q=(4,)), 1)
TypeError | q | windowed_attention(
    *qkv(q=torch.zeros(4, 3, dtype=torch.long)), 1)
TypeError | dtype | online_softmax_attention(
    *qkv(k=torch.zeros(4, 3, dtype=torch.float64)), 1)
TypeError | q | online_softmax_attention(*qkv(q=[[1.0]]), 1)
ValueError | block_size | online_softmax_attention(*qkv(), 0)
ValueError | k and v | online_softmax_attention(*qkv(v=(5, 3)), 2)
ValueError | mask | online_softmax_attention(
    *qkv(), 2, torch.ones(3, 3, dtype=torch.bool))
TypeError | mask | online_softmax_attention(*qkv(), 2, torch.ones(4, 4))
TypeError | fn | count_flops("not a function")
ValueError | repeats | time_fn(lambda: None, repeats=0)
ValueError | num_threads | time_fn(lambda: None, num_threads=0)
ValueError | clock | time_fn(lambda: None, clock="gpu")
ValueError | num_threads | time_fn(lambda: None, clock="cpu", num_threads=2)
ValueError | calls | time_interleaved({})
ValueError | rounds | time_interleaved({"a": lambda: None}, rounds=0)
TypeError | fn | peak_memory(3)
ValueError | same length | fit_power_law([1, 2, 3], [1, 2])
ValueError | at least 2 | fit_power_law([1], [1])
ValueError | y's least value | fit_power_law([1, 2], [0, 1])
ValueError | x's least value | fit_power_law([-1, 2], [1, 1])
ValueError | distinct | fit_power_law([2, 2], [1, 3])
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name):
    raises(exc, name, eval, call, globals())


def test_time_fn_repeats_a_fast_call_until_min_time():
    calls = []
    time_fn(lambda: calls.append(1), repeats=2, warmup=0, min_time=0.01)
    # appending takes far less than 5 ms, so min_time asks for more runs
    assert len(calls) > 2
    raises(ValueError, "min_time", time_fn, lambda: None, min_time=-1)


def test_cpu_clock_ignores_waiting_and_wall_clock_does_not():
    # sleeping is waiting, like a thread whose core is taken by another process
    nap = 0.02
    wall = time_fn(time.sleep, nap, repeats=3, warmup=0)
    cpu = time_fn(time.sleep, nap, repeats=3, warmup=0, clock="cpu")
    assert wall >= nap
    assert cpu < nap / 4


def test_cpu_clock_sees_work_and_restores_threads():
    g = torch.Generator().manual_seed(8)
    a = torch.randn(256, 256, generator=g)
    threads = torch.get_num_threads()
    cpu = time_fn(torch.matmul, a, a, repeats=5, clock="cpu")
    assert torch.get_num_threads() == threads
    assert 0 < cpu < 1


def test_time_interleaved_runs_every_call_each_round_and_keeps_the_minimum():
    order = []
    # CPU seconds of work per call: a is slow then fast, b fast then slow
    work = iter([0.03, 0.0, 0.0, 0.03])

    def make(name):
        def call():
            order.append(name)
            end = time.thread_time() + next(work)
            while time.thread_time() < end:  # busy: CPU time, unlike a sleep
                pass

        return call

    calls = {"a": make("a"), "b": make("b")}
    best = time_interleaved(calls, rounds=2, repeats=1, warmup=0, clock="cpu")
    assert order == ["a", "b", "a", "b"]  # interleaved, not a-a-b-b
    assert best["a"] < 0.02 and best["b"] < 0.02  # each keeps its fast round


def test_private_dispatch_mode_api():
    """peak_memory rests on TorchDispatchMode, a private API (proven on the
    pinned 2.13, floor 2.11): this fails first if a release changes it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    assert (major, minor) >= (2, 11), torch.__version__
    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = torch.ones(3)
    with Spy():
        y = x * 2
    assert seen == ["aten.mul.Tensor"]
    assert torch.equal(y, torch.full((3,), 2.0))
    assert peak_memory(torch.ones, 10, 10) == 400
