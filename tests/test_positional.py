"""utils.positional against independent loop implementations and its
contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from utils.position_probe import (
    POSITION_KINDS,
    PositionProbe,
    previous_token_batch,
    train_position_probe,
)
from utils.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    apply_rotary,
    frequencies,
    shift_matrix,
    sinusoidal_encoding,
)
from tests.conftest import raises


pytestmark = pytest.mark.usefixtures("seeded")


def loop_encoding(
    max_len: int, d_model: int, base: float = 10000.0
) -> torch.Tensor:
    """The paper's formula, one entry at a time, with i counting dimension
    pairs."""
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
    torch.testing.assert_close(
        pe, loop_encoding(max_len, d_model).float(), atol=1e-6, rtol=0
    )


def test_sinusoidal_known_values():
    pe = sinusoidal_encoding(3, 4)
    # position 0: sin 0 = 0, cos 0 = 1 in every pair
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    # pair 1 of d_model = 4 has frequency 10000^(-2/4) = 1/100
    torch.testing.assert_close(
        pe[2, 2:], torch.tensor([math.sin(0.02), math.cos(0.02)])
    )


def test_sinusoidal_other_base_and_large_positions():
    torch.testing.assert_close(
        sinusoidal_encoding(20, 8, base=100.0),
        loop_encoding(20, 8, 100.0).float(),
    )
    pe = sinusoidal_encoding(10001, 8)
    torch.testing.assert_close(
        pe[10000], loop_encoding(10001, 8)[10000].float(), atol=1e-6, rtol=0
    )


@pytest.mark.parametrize(
    "max_len, d_model, name",
    [
        (0, 4, "max_len"),
        (-1, 4, "max_len"),
        (5, 3, "d_model"),
        (5, 0, "d_model"),
        (5, 7, "d_model"),
    ],
)
def test_sinusoidal_rejects_bad_values(max_len, d_model, name):
    raises(ValueError, name, sinusoidal_encoding, max_len, d_model)


@pytest.mark.parametrize(
    "max_len, d_model, name",
    [
        (3.0, 4, "max_len"),
        (True, 4, "max_len"),
        (5, 4.0, "d_model"),
        ("5", 4, "max_len"),
    ],
)
def test_sinusoidal_rejects_wrong_kinds(max_len, d_model, name):
    with pytest.raises(TypeError, match=f"{name} must be an int"):
        sinusoidal_encoding(max_len, d_model)


def test_numpy_sizes_are_accepted_and_bad_base_rejected():
    torch.testing.assert_close(
        sinusoidal_encoding(np.int64(6), np.int64(4)),
        sinusoidal_encoding(6, 4),
    )
    assert PositionalEncoding(
        np.int64(8), dropout=np.float64(0.1), max_len=np.int32(9)
    ).pe.shape == (9, 8)
    for bad in (0.0, -2.0, float("inf"), float("nan")):
        raises(ValueError, "base", sinusoidal_encoding, 4, 4, base=bad)
    raises(TypeError, "base", frequencies, 4, base="10000")


def test_module_adds_exactly_the_table():
    torch.manual_seed(0)
    pos = PositionalEncoding(16, max_len=40)
    x = torch.randn(3, 25, 16)
    torch.testing.assert_close(
        pos(x), x + loop_encoding(25, 16).float(), atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        pos(torch.zeros(1, 40, 16))[0], sinusoidal_encoding(40, 16)
    )


def test_module_keeps_input_dtype():
    x = torch.zeros(1, 5, 8, dtype=torch.float64)
    out = PositionalEncoding(8, max_len=10)(x)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out[0], loop_encoding(5, 8), atol=1e-6, rtol=0)


def test_table_is_a_buffer_not_a_parameter():
    pos = PositionalEncoding(8, dropout=0.1, max_len=12)
    assert list(pos.parameters()) == []
    assert "pe" in dict(pos.named_buffers())
    moved = pos.to(torch.float64)
    assert (
        moved.pe.dtype == torch.float64
    )  # buffers follow .to(...) like parameters do
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
    torch.testing.assert_close(
        out[1], loop_encoding(length, 6).float(), atol=1e-6, rtol=0
    )


def test_too_long_input_is_a_clear_error():
    pos = PositionalEncoding(6, max_len=10)
    raises(ValueError, "11 exceeds max_len=10", pos, torch.zeros(1, 11, 6))


def test_odd_d_model_is_a_clear_error():
    raises(ValueError, "d_model.*even.*got 7", PositionalEncoding, 7)


@pytest.mark.parametrize("shape", [(5, 8), (1, 5, 4), (1, 5, 9), (2, 1, 5, 8)])
def test_wrong_input_shapes(shape):
    with pytest.raises(ValueError, match=r"\(batch, length, 8\)"):
        PositionalEncoding(8, max_len=10)(torch.zeros(shape))


def test_wrong_input_types():
    pos = PositionalEncoding(8, max_len=10)
    with pytest.raises(TypeError, match="floating-point"):
        pos(torch.zeros(1, 3, 8, dtype=torch.long))
    raises(TypeError, "torch.Tensor", pos, [[0.0] * 8])
    raises(ValueError, "dropout", PositionalEncoding, 8, dropout=1.0)
    with pytest.raises(TypeError, match="dropout must be a real number"):
        PositionalEncoding(8, dropout="0.1")


def test_frequencies_and_wavelengths():
    w = frequencies(8)
    torch.testing.assert_close(
        w, torch.tensor([1.0, 10000**-0.25, 10000**-0.5, 10000**-0.75])
    )
    wavelengths = 2 * math.pi / frequencies(512).double()
    assert math.isclose(wavelengths[0].item(), 2 * math.pi)
    assert wavelengths[-1].item() < 10000 * 2 * math.pi
    raises(ValueError, "d_model", frequencies, 5)


@pytest.mark.parametrize("k", [0, 1, 5, 37, -3])
def test_shift_matrix_moves_every_position_by_k(k):
    d, n = 16, 200
    pe = loop_encoding(n + 50, d)
    m = shift_matrix(k, d).double()
    start = max(0, -k)
    for p in range(start, n):  # one matrix for every p
        torch.testing.assert_close(pe[p] @ m, pe[p + k], atol=1e-6, rtol=0)
    if k:  # rows: m acts from the right; its transpose moves the other way
        torch.testing.assert_close(pe[n] @ m.T, pe[n - k], atol=1e-6, rtol=0)


def test_shift_matrix_structure():
    d = 12
    m3, m4 = shift_matrix(3, d), shift_matrix(4, d)
    torch.testing.assert_close(
        m3 @ m3.T, torch.eye(d), atol=1e-6, rtol=0
    )  # a rotation
    torch.testing.assert_close(m3 @ m4, shift_matrix(7, d), atol=1e-6, rtol=0)
    torch.testing.assert_close(shift_matrix(-3, d), m3.T, atol=1e-6, rtol=0)
    off_block = m3.clone()
    for i in range(0, d, 2):
        off_block[i : i + 2, i : i + 2] = 0
    assert off_block.abs().max() == 0  # pairs never mix
    raises(ValueError, "d_model", shift_matrix, 1, 5)
    raises(TypeError, "k must be", shift_matrix, torch.tensor(1), 4)


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
    torch.testing.assert_close(
        out.norm(dim=-1), x.norm(dim=-1)
    )  # rotations keep lengths


def test_apply_rotary_scores_depend_on_offset_only():
    torch.manual_seed(1)
    q, k = torch.randn(16), torch.randn(16)
    n = 30
    rq = apply_rotary(q.expand(n, 16).clone())
    rk = apply_rotary(k.expand(n, 16).clone())
    scores = rq @ rk.T  # (n, n): query position m, key position n
    torch.testing.assert_close(
        scores[1:, 1:], scores[:-1, :-1], atol=1e-5, rtol=0
    )
    # and a plain dot product of the unrotated vectors is not offset-dependent
    # at all
    assert not torch.allclose(scores[0, 5], q @ k)


def test_apply_rotary_positions_and_errors():
    x = torch.randn(1, 2, 3, 8)
    pos = torch.tensor([4, 9, 100])
    out = apply_rotary(x, pos)
    for j, p in enumerate(pos.tolist()):
        torch.testing.assert_close(
            out[..., j, :],
            x[..., j, :] @ shift_matrix(p, 8).T,  # the other way round
            atol=1e-5,
            rtol=0,
        )
    raises(ValueError, "positions", apply_rotary, x, torch.arange(4))
    raises(ValueError, "d_model", apply_rotary, torch.randn(3, 5))
    with pytest.raises(TypeError, match="x must be a floating-point"):
        apply_rotary(torch.ones(3, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="positions must hold numbers"):
        apply_rotary(x, torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="x must have at least 2 dims"):
        apply_rotary(torch.randn(4))


def test_learned_embedding():
    torch.manual_seed(0)
    emb = LearnedPositionalEmbedding(10, 4)
    assert [n for n, _ in emb.named_parameters()] == ["table.weight"]
    x = torch.randn(2, 7, 4)
    torch.testing.assert_close(emb(x), x + emb.table.weight[:7])
    emb(x).sum().backward()
    assert (
        emb.table.weight.grad[7:].abs().max() == 0
    )  # unused positions get no gradient
    assert emb.table.weight.grad[:7].abs().min() > 0
    raises(ValueError, "11 exceeds max_len=10", emb, torch.zeros(1, 11, 4))
    raises(ValueError, r"\(batch, length, 4\)", emb, torch.zeros(1, 3, 5))
    raises(ValueError, "max_len", LearnedPositionalEmbedding, 0, 4)


def rotate_by_complex_numbers(x, base=10000.0):
    """RoPE written independently: pair (x_2i, x_2i+1) as the complex number
    x_2i + i x_2i+1, multiplied by exp(i * m * w_i) at position m."""
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
    torch.testing.assert_close(
        apply_rotary(x), rotate_by_complex_numbers(x), atol=1e-6, rtol=1e-6
    )


def test_previous_token_batch():
    ids, target = previous_token_batch(
        4, 7, 5, torch.Generator().manual_seed(0)
    )
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


def test_position_probe_errors():
    raises(ValueError, "position must be one of", PositionProbe, 10, "alibi")
    with pytest.raises(ValueError, match="even size"):
        PositionProbe(10, "rope", d_model=6, num_heads=2)
    with pytest.raises(ValueError, match="exceeds max_len=4"):
        PositionProbe(10, "none", max_len=4)(
            torch.zeros(1, 5, dtype=torch.long)
        )


def test_train_position_probe_learns_with_rope():
    result = train_position_probe("rope", 0, steps=150)
    assert result["acc_train_len"] > 0.9
    assert set(result) >= {
        "acc_train_len",
        "acc_double_seen",
        "acc_double_new",
        "acc_double_window",
    }


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
    with pytest.raises(ValueError, match="max_offset must be an int >= 0"):
        probe(ids, max_offset=-1)
    raises(TypeError, "max_offset must be an int", probe, ids, max_offset=1.5)
