"""utils.positional against independent loop implementations."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

from utils.position_probe import POSITION_KINDS, PositionProbe
from utils.position_probe import previous_token_batch, train_position_probe
from utils.positional import LearnedPositionalEmbedding, PositionalEncoding
from utils.positional import apply_rotary, frequencies, shift_matrix
from utils.positional import sinusoidal_encoding
from tests.conftest import raises, raising

pytestmark = pytest.mark.usefixtures("seeded")
close = functools.partial(torch.testing.assert_close, atol=1e-6, rtol=0)


def loop_encoding(max_len, d_model, base=10000.0) -> torch.Tensor:
    """The paper's formula, one entry at a time (i counts dimension pairs)."""
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for i in range(d_model // 2):
            angle = pos / base ** (2 * i / d_model)
            pe[pos, 2 * i] = math.sin(angle)
            pe[pos, 2 * i + 1] = math.cos(angle)
    return pe


@pytest.mark.parametrize(
    "max_len, d_model", [(1, 2), (7, 4), (50, 20), (30, 64)]
)
def test_sinusoidal_matches_the_formula(max_len, d_model):
    pe = sinusoidal_encoding(max_len, d_model)
    assert pe.shape == (max_len, d_model) and pe.dtype == torch.float32
    close(pe, loop_encoding(max_len, d_model).float())


def test_sinusoidal_known_values():
    pe = sinusoidal_encoding(3, 4)
    # position 0: sin 0 = 0, cos 0 = 1 in every pair
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    # pair 1 of d_model = 4 has frequency 10000^(-2/4) = 1/100
    want = torch.tensor([math.sin(0.02), math.cos(0.02)])
    torch.testing.assert_close(pe[2, 2:], want)


def test_sinusoidal_other_base_and_large_positions():
    want = loop_encoding(20, 8, 100.0).float()
    torch.testing.assert_close(sinusoidal_encoding(20, 8, base=100.0), want)
    pe = sinusoidal_encoding(10001, 8)
    close(pe[10000], loop_encoding(10001, 8)[10000].float())


def test_numpy_sizes_are_accepted():
    torch.testing.assert_close(
        sinusoidal_encoding(np.int64(6), np.int64(4)),
        sinusoidal_encoding(6, 4),
    )
    sizes = dict(dropout=np.float64(0.1), max_len=np.int32(9))
    assert PositionalEncoding(np.int64(8), **sizes).pe.shape == (9, 8)


def test_module_adds_exactly_the_table():
    torch.manual_seed(0)
    pos = PositionalEncoding(16, max_len=40)
    x = torch.randn(3, 25, 16)
    close(pos(x), x + loop_encoding(25, 16).float())
    table = pos(torch.zeros(1, 40, 16))[0]
    torch.testing.assert_close(table, sinusoidal_encoding(40, 16))


def test_module_keeps_input_dtype():
    x = torch.zeros(1, 5, 8, dtype=torch.float64)
    out = PositionalEncoding(8, max_len=10)(x)
    assert out.dtype == torch.float64
    close(out[0], loop_encoding(5, 8))


def test_table_is_a_buffer_not_a_parameter():
    pos = PositionalEncoding(8, dropout=0.1, max_len=12)
    assert list(pos.parameters()) == []
    assert "pe" in dict(pos.named_buffers())
    moved = pos.to(torch.float64)
    assert moved.pe.dtype == torch.float64  # buffers follow .to(...)
    assert not pos.pe.requires_grad  # an optimiser could never move it
    assert "pe" not in pos.state_dict()  # rebuilt from the formula, not saved
    # the gradient flows to the input unchanged: d(x + pe)/dx = 1
    x = torch.zeros(1, 3, 8, dtype=torch.float64, requires_grad=True)
    pos.eval()(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.ones_like(x))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_table_moves_to_the_gpu():
    pos = PositionalEncoding(8, max_len=12).to("cuda")
    assert pos.pe.is_cuda and pos(torch.zeros(1, 3, 8, device="cuda")).is_cuda


def test_dropout_in_train_not_in_eval():
    torch.manual_seed(0)
    pos = PositionalEncoding(32, dropout=0.5, max_len=64)
    x = torch.randn(4, 64, 32)
    expected = x + sinusoidal_encoding(64, 32)
    pos.train()
    out = pos(x)
    dropped = out == 0
    assert 0.4 < dropped.float().mean().item() < 0.6
    # kept entries are scaled by 1 / (1 - p), as nn.Dropout does
    torch.testing.assert_close(out[~dropped], 2 * expected[~dropped])
    pos.eval()
    torch.testing.assert_close(pos(x), expected)


@pytest.mark.parametrize("length", [1, 2, 17, 100])
def test_any_length_up_to_max_len(length):
    pos = PositionalEncoding(6, max_len=100)
    out = pos(torch.zeros(2, length, 6))
    assert out.shape == (2, length, 6)
    close(out[1], loop_encoding(length, 6).float())


def test_frequencies_and_wavelengths():
    w = frequencies(8)
    want = torch.tensor([1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75])
    torch.testing.assert_close(w, want)
    wavelengths = 2 * math.pi / frequencies(512).double()
    assert math.isclose(wavelengths[0].item(), 2 * math.pi)
    assert wavelengths[-1].item() < 10000 * 2 * math.pi


@pytest.mark.parametrize("k", [0, 1, 5, 37, -3])
def test_shift_matrix_moves_every_position_by_k(k):
    d, n = 16, 200
    pe = loop_encoding(n + 50, d)
    m = shift_matrix(k, d).double()
    start = max(0, -k)
    for p in range(start, n):  # one matrix for every p
        close(pe[p] @ m, pe[p + k])
    if k:  # rows: m acts from the right; its transpose moves the other way
        close(pe[n] @ m.T, pe[n - k])


def test_shift_matrix_structure():
    d = 12
    m3, m4 = shift_matrix(3, d), shift_matrix(4, d)
    close(m3 @ m3.T, torch.eye(d))  # a rotation
    close(m3 @ m4, shift_matrix(7, d))
    close(shift_matrix(-3, d), m3.T)
    off_block = m3.clone()
    for i in range(0, d, 2):
        off_block[i : i + 2, i : i + 2] = 0
    assert off_block.abs().max() == 0  # pairs never mix


def test_apply_rotary_by_hand():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    out = apply_rotary(x)
    w = frequencies(8)
    for m in range(6):
        for i in range(4):
            c, s = math.cos(m * w[i].item()), math.sin(m * w[i].item())
            a, b = x[:, m, 2 * i], x[:, m, 2 * i + 1]
            torch.testing.assert_close(out[:, m, 2 * i], a * c - b * s)
            torch.testing.assert_close(out[:, m, 2 * i + 1], a * s + b * c)
    # rotations keep lengths
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1))


def test_apply_rotary_scores_depend_on_offset_only():
    torch.manual_seed(1)
    q, k = torch.randn(16), torch.randn(16)
    n = 30
    rq = apply_rotary(q.expand(n, 16).clone())
    rk = apply_rotary(k.expand(n, 16).clone())
    scores = rq @ rk.T  # (n, n): query position m, key position n
    close(scores[1:, 1:], scores[:-1, :-1], atol=1e-5)
    # and a plain dot product of the unrotated vectors is not offset-dependent
    assert not torch.allclose(scores[0, 5], q @ k)


def test_apply_rotary_positions():
    x = torch.randn(1, 2, 3, 8)
    pos = torch.tensor([4, 9, 100])
    out = apply_rotary(x, pos)
    for j, p in enumerate(pos.tolist()):
        # the other way round
        close(out[..., j, :], x[..., j, :] @ shift_matrix(p, 8).T, atol=1e-5)


def test_learned_embedding():
    torch.manual_seed(0)
    emb = LearnedPositionalEmbedding(10, 4)
    assert [n for n, _ in emb.named_parameters()] == ["table.weight"]
    x = torch.randn(2, 7, 4)
    torch.testing.assert_close(emb(x), x + emb.table.weight[:7])
    emb(x).sum().backward()
    # unused positions get no gradient
    assert emb.table.weight.grad[7:].abs().max() == 0
    assert emb.table.weight.grad[:7].abs().min() > 0
    raises(ValueError, "11 exceeds max_len=10", emb, torch.zeros(1, 11, 4))
    raises(ValueError, r"\(batch, length, 4\)", emb, torch.zeros(1, 3, 5))


def rotate_by_complex_numbers(x, base=10000.0):
    """RoPE independently: x_2i + i x_2i+1 times exp(i m w_i) at position m."""
    t, d = x.shape[-2], x.shape[-1]
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * w  # (T, d/2)
    z = torch.view_as_complex(
        x.double().unflatten(-1, (d // 2, 2)).contiguous()
    )
    return torch.view_as_real(
        z * torch.polar(torch.ones_like(angle), angle)
    ).flatten(-2)


def test_apply_rotary_equals_complex_rotation():
    x = torch.randn(2, 3, 40, 16, dtype=torch.float64)
    # apply_rotary takes its frequencies from float32 `frequencies`: 1e-6
    close(apply_rotary(x), rotate_by_complex_numbers(x), rtol=1e-6)


def test_previous_token_batch():
    g = torch.Generator().manual_seed(0)
    ids, target = previous_token_batch(4, 7, 5, g)
    assert ids.shape == target.shape == (4, 7)
    assert (target[:, 0] == -100).all()
    assert torch.equal(target[:, 1:], ids[:, :-1])
    assert ids.min() >= 0 and ids.max() < 5


@pytest.mark.parametrize("position", POSITION_KINDS)
def test_position_probe_is_order_blind_only_without_positions(position):
    torch.manual_seed(0)
    probe = PositionProbe(10, position, max_len=12).eval()
    ids = torch.randint(0, 10, (3, 12))
    perm = torch.randperm(12)
    with torch.no_grad():
        out, out_perm = probe(ids), probe(ids[:, perm])
    assert out.shape == (3, 12, 10)
    if position == "none":  # permutation equivariant
        torch.testing.assert_close(out_perm, out[:, perm])
    else:
        assert (out_perm - out[:, perm]).abs().max() > 1e-3


def test_train_position_probe_learns_with_rope():
    result = train_position_probe("rope", 0, steps=150)
    assert result["acc_train_len"] > 0.9
    assert set(result) >= {"acc_train_len", "acc_double_seen",
                           "acc_double_new", "acc_double_window"}  # fmt: skip


def test_position_probe_max_offset_hides_the_far_keys():
    torch.manual_seed(0)
    probe = PositionProbe(10, "rope", max_len=12).eval()
    ids = torch.randint(0, 10, (2, 12))
    edited = ids.clone()
    edited[:, 9:] = (ids[:, 9:] + 1) % 10  # change the tokens 9..11
    with torch.no_grad():
        # a window wider than the sequence hides nothing
        torch.testing.assert_close(probe(ids, max_offset=11), probe(ids))
        near, far = probe(ids, max_offset=2), probe(edited, max_offset=2)
        seen_all = probe(edited)
    # positions 0..6 are more than 2 places from 9..11: they do not move
    torch.testing.assert_close(near[:, :7], far[:, :7])
    assert not torch.allclose(near[:, 7:], far[:, 7:])
    assert not torch.allclose(probe(ids)[:, :7], seen_all[:, :7])
    raises(ValueError, "max_offset must be an int >= 0", probe, ids,
           max_offset=-1)  # fmt: skip
    raises(TypeError, "max_offset must be an int", probe, ids, max_offset=1.5)


SE, PE = sinusoidal_encoding, PositionalEncoding
BAD = r"""
ValueError | max_len | SE(0, 4)
ValueError | max_len | SE(-1, 4)
ValueError | d_model | SE(5, 3)
ValueError | d_model | SE(5, 0)
ValueError | d_model | SE(5, 7)
TypeError | max_len must be an int | SE(3.0, 4)
TypeError | max_len must be an int | SE(True, 4)
TypeError | d_model must be an int | SE(5, 4.0)
TypeError | max_len must be an int | SE("5", 4)
ValueError | base | SE(4, 4, base=0.0)
ValueError | base | SE(4, 4, base=-2.0)
ValueError | base | SE(4, 4, base=float("inf"))
ValueError | base | SE(4, 4, base=float("nan"))
TypeError | base | frequencies(4, base="10000")
ValueError | d_model | frequencies(5)
ValueError | 11 exceeds max_len=10 | PE(6, max_len=10)(torch.zeros(1, 11, 6))
ValueError | d_model.*even.*got 7 | PE(7)
ValueError | \(batch, length, 8\) | PE(8, max_len=10)(torch.zeros(5, 8))
ValueError | \(batch, length, 8\) | PE(8, max_len=10)(torch.zeros(1, 5, 4))
ValueError | \(batch, length, 8\) | PE(8, max_len=10)(torch.zeros(1, 5, 9))
ValueError | \(batch, length, 8\) | PE(8, max_len=10)(torch.zeros(2, 1, 5, 8))
TypeError | floating-point | PE(8, max_len=10)(torch.zeros(1, 3, 8,
    dtype=torch.long))
TypeError | torch.Tensor | PE(8, max_len=10)([[0.0] * 8])
ValueError | dropout | PE(8, dropout=1.0)
TypeError | dropout must be a real number | PE(8, dropout="0.1")
ValueError | d_model | shift_matrix(1, 5)
TypeError | k must be | shift_matrix(torch.tensor(1), 4)
ValueError | positions | apply_rotary(torch.randn(1, 2, 3, 8), torch.arange(4))
ValueError | d_model | apply_rotary(torch.randn(3, 5))
TypeError | x must be a floating-point | apply_rotary(torch.ones(3, 4,
    dtype=torch.long))
TypeError | positions must hold numbers | apply_rotary(torch.randn(1, 2, 3, 8),
    torch.ones(3, dtype=torch.bool))
ValueError | x must have at least 2 dims | apply_rotary(torch.randn(4))
ValueError | max_len | LearnedPositionalEmbedding(0, 4)
ValueError | position must be one of | PositionProbe(10, "alibi")
ValueError | even size | PositionProbe(10, "rope", d_model=6, num_heads=2)
ValueError | exceeds max_len=4 | PositionProbe(10, "none", max_len=4)(
    torch.zeros(1, 5, dtype=torch.long))
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name):
    raises(exc, name, eval, call, globals())
