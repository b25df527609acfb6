"""utils.masks against loops, numpy and PyTorch's own attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from utils import masks
from utils.checks import check_mask
from utils.attention import MultiHeadAttention, load_torch_mha_weights
from utils.attention import scaled_dot_product_attention
from tests.conftest import raises, raising

pytestmark = pytest.mark.usefixtures("seeded")
close = torch.testing.assert_close
# 0 = <pad>
IDS = torch.tensor([[5, 7, 9, 0, 0], [8, 6, 0, 0, 0], [1, 2, 3, 4, 5]])


# ------------------------------------------------------- builders vs loops
def test_padding_mask_matches_a_loop_and_has_shape_b11s():
    m = masks.padding_mask(IDS)
    assert m.shape == (3, 1, 1, 5) and m.dtype == torch.bool
    for b in range(3):
        for s in range(5):
            assert bool(m[b, 0, 0, s]) == (int(IDS[b, s]) != 0)


def test_padding_mask_other_pad_id():
    m = masks.padding_mask(torch.tensor([[4, 4, 1]]), pad_id=4)
    assert m[0, 0, 0].tolist() == [False, False, True]


def test_causal_mask_matches_numpy_and_has_shape_tt():
    for t in (1, 2, 6):
        m = masks.causal_mask(t)
        assert m.shape == (t, t)
        expected = np.array([[j <= i for j in range(t)] for i in range(t)])
        np.testing.assert_array_equal(m.numpy(), expected)


def test_decoder_mask_is_padding_and_causal_with_shape_b1tt():
    m = masks.decoder_mask(IDS)
    assert m.shape == (3, 1, 5, 5)
    for b in range(3):
        for i in range(5):
            for j in range(5):
                assert bool(m[b, 0, i, j]) == (j <= i and int(IDS[b, j]) != 0)


def test_lengths_to_mask_matches_a_loop_and_padding_mask():
    lengths = torch.tensor([3, 2, 5])
    m = masks.lengths_to_mask(lengths)
    assert m.shape == (3, 5)
    assert m.tolist() == [[s < n for s in range(5)] for n in (3, 2, 5)]
    # same as the padding mask of right-padded ids with those lengths
    close(m, masks.padding_mask(IDS)[:, 0, 0, :])
    short = masks.lengths_to_mask([1, 0], max_len=3)
    assert short.tolist() == [[True, False, False], [False] * 3]


def test_broadcast_shapes_reach_the_score_shape():
    b, h, t = 3, 2, 5
    scores = (b, h, t, t)
    pad, dec = masks.padding_mask(IDS), masks.decoder_mask(IDS)
    for m in (pad, masks.causal_mask(t), dec):
        assert torch.broadcast_shapes(m.shape, scores) == scores
        check_mask(m, "mask", scores)
    # padding repeats over query rows, the causal mask over batch and heads
    full = masks.padding_mask(IDS).expand(scores)
    assert (full == full[:, :, :1, :]).all()


def test_prefix_lm_mask_against_loop_and_its_limits():
    t, p = 6, 2
    m = masks.prefix_lm_mask(t, p)
    want = [[j < p or j <= i for j in range(t)] for i in range(t)]
    assert m.tolist() == want
    for short in (0, 1):
        close(masks.prefix_lm_mask(t, short), masks.causal_mask(t))
    assert masks.prefix_lm_mask(t, t).all()


def test_attention_pattern_zoo():
    lengths = torch.tensor([4, 6])
    pad = masks.lengths_to_mask(lengths)[:, None, None, :]
    bi = masks.attention_pattern("bidirectional", lengths)
    assert bi.shape == (2, 1, 6, 6)
    close(bi, pad.expand(2, 1, 6, 6))
    ids = torch.tensor([[1, 1, 1, 1, 0, 0], [1] * 6])
    causal = masks.attention_pattern("causal", lengths)
    close(causal, masks.decoder_mask(ids))
    pre = masks.attention_pattern("prefix", lengths, prefix_len=3)
    close(pre, pad & masks.prefix_lm_mask(6, 3))


def _grid(rows: str) -> list[list[bool]]:
    return [[c == "Y" for c in row] for row in rows.split()]


def test_band_mask_hand_written_cases():
    """By hand (a row a query, Y: kept), not from |i - j| <= w."""
    assert masks.band_mask(4, 1).tolist() == _grid("YYNN YYYN NYYY NNYY")
    causal = masks.band_mask(4, 1, causal=True)
    assert causal.tolist() == _grid("YNNN YYNN NYYN NNYY")
    assert masks.band_mask(3, 0).tolist() == _grid("YNN NYN NNY")
    # a window as wide as the sequence is the full mask / the causal mask
    assert masks.band_mask(5, 4).all()
    close(masks.band_mask(5, 4, causal=True), masks.causal_mask(5))


def test_band_mask_counts_match_the_docstring():
    n, w = 9, 2
    for causal, r in ((False, 2 * w + 1), (True, w + 1)):
        counts = masks.band_mask(n, w, causal=causal).sum(-1)
        assert counts.max() == r  # at most r keys per query ...
        assert (counts[w : n - w] == r).all()  # ... r away from the edges


# ---------------------------------------------------------------- converters
def test_converters_polarity_and_shapes():
    keep = masks.decoder_mask(IDS)
    assert (masks.to_mha_mask(keep) == ~keep).all()
    assert masks.to_sdpa_mask(keep) is keep
    add = masks.to_additive_mask(keep)
    assert add.dtype == torch.float32
    assert (add[keep] == 0).all() and torch.isneginf(add[~keep]).all()
    kpm = masks.to_key_padding_mask(masks.padding_mask(IDS))
    assert kpm.shape == (3, 5) and (kpm == (IDS == 0)).all()
    am = masks.to_mha_attn_mask(keep, num_heads=2)
    assert am.shape == (6, 5, 5)
    for b in range(3):  # batch-major, heads inner
        for hh in range(2):
            assert (am[b * 2 + hh] == ~keep[b, 0]).all()
    causal = masks.causal_mask(4)
    assert (masks.to_mha_attn_mask(causal, 2) == ~causal).all()


def _qkv(seed=0, b=3, h=2, t=5, d=4):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randn(b, h, t, d, generator=g, dtype=torch.float64)
        for _ in range(3)
    ]


def test_sdpa_three_ways_agree():
    q, k, v = _qkv()
    keep = masks.decoder_mask(IDS)  # no row fully masked: token 0 is real
    ours, _ = scaled_dot_product_attention(q, k, v, keep)
    additive = masks.to_additive_mask(keep, torch.float64)
    for mask in (masks.to_sdpa_mask(keep), additive):
        close(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    # and masking changes the answer, so the comparison can fail
    assert not torch.allclose(ours, F.scaled_dot_product_attention(q, k, v))


@pytest.fixture
def mha_pair():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(8, 2, batch_first=True).double().eval()
    ours = MultiHeadAttention(8, 2).double().eval()
    ours = load_torch_mha_weights(ours, theirs)
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    return ours, theirs, x


def test_multihead_attention_conventions_agree(mha_pair):
    ours, theirs, x = mha_pair
    keep_pad, keep_causal = masks.padding_mask(IDS), masks.causal_mask(5)
    with torch.no_grad():
        expected, _ = ours(x, x, x, keep_pad & keep_causal)
        # True = ignore, split into key padding and attention mask
        kpm = masks.to_key_padding_mask(keep_pad)
        causal = masks.to_mha_mask(keep_causal)
        a, _ = theirs(x, x, x, key_padding_mask=kpm, attn_mask=causal)
        # the whole (B, 1, T, T) mask as a 3-D boolean attn_mask
        whole = masks.to_mha_attn_mask(keep_pad & keep_causal, 2)
        b, _ = theirs(x, x, x, attn_mask=whole)
        # float masks are added to the scores
        additive = masks.to_additive_mask(whole.logical_not(), torch.float64)
        c, _ = theirs(x, x, x, attn_mask=additive)
        unmasked, _ = theirs(x, x, x)
    for got in (a, b, c):
        close(got, expected)
    assert not torch.allclose(unmasked, expected)


def test_passing_the_course_mask_unconverted_to_mha_is_wrong(mha_pair):
    """The classic bug: without the polarity flip, a wrong answer."""
    ours, theirs, x = mha_pair
    # (2, 5); both rows have real tokens and pads
    keep, x = masks.padding_mask(IDS[:2])[:, 0, 0, :], x[:2]
    with torch.no_grad():
        expected, _ = ours(x, x, x, keep[:, None, None, :])
        kpm = masks.to_key_padding_mask(keep)
        right, _ = theirs(x, x, x, key_padding_mask=kpm)
        # attends to the pads only
        wrong, _ = theirs(x, x, x, key_padding_mask=keep)
    close(right, expected)
    assert torch.isfinite(wrong).all() and not torch.allclose(wrong, expected)


def test_fully_masked_row_is_zero_not_nan():
    q, k, v = _qkv(1)
    keep = torch.ones(5, 5, dtype=torch.bool)
    keep[2] = False
    out, w = scaled_dot_product_attention(q, k, v, keep)
    assert torch.isfinite(out).all()
    assert (out[..., 2, :] == 0).all() and (w[..., 2, :] == 0).all()
    scores = (q @ k.transpose(-2, -1)).masked_fill(~keep, float("-inf"))
    manual = torch.softmax(scores, -1)
    assert torch.isnan(manual[..., 2, :]).all()  # the trap the fix avoids


# ---------------------------------------------------------------- bad input
BAD = r"""
ValueError | max_len | masks.lengths_to_mask(torch.tensor([2, 6]), max_len=4)
ValueError | lengths | masks.lengths_to_mask(torch.tensor([2, -1]))
TypeError | lengths | masks.lengths_to_mask(torch.tensor([2.0, 3.0]))
ValueError | lengths | masks.lengths_to_mask(torch.tensor([[2, 3]]))
TypeError | max_len | masks.lengths_to_mask(torch.tensor([2, 3]), max_len=3.5)
TypeError | ids | masks.padding_mask(torch.tensor([[1.0, 0.0]]))
TypeError | ids | masks.padding_mask(torch.tensor([[True, False]]))
TypeError | ids | masks.padding_mask([[1, 0]])
ValueError | ids | masks.padding_mask(torch.tensor([1, 0]))
ValueError | ids | masks.padding_mask(torch.tensor([[[1, 0]]]))
TypeError | pad_id | masks.padding_mask(torch.tensor([[1, 0]]), pad_id=0.5)
TypeError | ids | masks.decoder_mask(torch.tensor([[1.5, 0.0]]))
ValueError | ids | masks.decoder_mask(torch.tensor([1, 2, 0]))
ValueError | size | masks.causal_mask(0)
TypeError | size | masks.causal_mask(2.5)
ValueError | prefix_len | masks.prefix_lm_mask(4, 5)
ValueError | prefix_len | masks.prefix_lm_mask(4, -1)
ValueError | kind | masks.attention_pattern("sideways", [3])
TypeError | keep | masks.to_mha_mask(torch.ones(2, 2))
TypeError | keep | masks.to_sdpa_mask([[True]])
TypeError | keep | masks.to_additive_mask(torch.ones(2, 2, dtype=torch.int64))
ValueError | keep | masks.to_key_padding_mask(
    torch.ones(2, 1, 3, 3, dtype=torch.bool))
ValueError | keep | masks.to_mha_attn_mask(
    torch.ones(2, 3, 3, 3, dtype=torch.bool), 2)
ValueError | mask | check_mask(torch.ones(2, 4, dtype=torch.bool), "mask",
    (2, 1, 3, 3))
TypeError | mask | check_mask(torch.ones(3, 3), "mask", (2, 1, 3, 3))
TypeError | ids has dtype torch.uint8 | masks.padding_mask(
    torch.tensor([[1, 0]], dtype=torch.uint8))
TypeError | pad_id must be an int | masks.padding_mask(
    torch.tensor([[1, 0]]), pad_id="0")
TypeError | size must be an int | masks.causal_mask(np.float64(3))
ValueError | ids must hold at least one | masks.decoder_mask(
    torch.zeros(2, 0, dtype=torch.long))
TypeError | lengths must be a 1-D tensor | masks.lengths_to_mask("3, 4")
ValueError | lengths must have 1 dims | masks.lengths_to_mask([[1, 2]])
TypeError | lengths must hold integer | masks.lengths_to_mask([True, False])
TypeError | lengths | masks.lengths_to_mask(None)
TypeError | causal must be a bool | masks.band_mask(5, 2, causal="yes")
TypeError | n must be an int | masks.band_mask(5.0, 2)
TypeError | kind must be a str | masks.attention_pattern(None, [3])
ValueError | empty sequence | masks.attention_pattern("causal", [0, 0])
TypeError | dtype | masks.to_additive_mask(torch.ones(2, dtype=torch.bool),
    torch.int64)
TypeError | num_heads | masks.to_mha_attn_mask(
    torch.ones(3, 3, dtype=torch.bool), 2.0)
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument(call, exc, name):
    raises(exc, name, eval, call, globals())


def test_builders_accept_numpy_ints():
    assert masks.causal_mask(np.int64(3)).shape == (3, 3)
    assert masks.prefix_lm_mask(np.int64(4), np.int32(2)).shape == (4, 4)
    assert masks.padding_mask(IDS, pad_id=np.int64(0)).shape == (3, 1, 1, 5)
    m = masks.lengths_to_mask(np.array([1, 3]))
    assert m.tolist() == [[True, False, False], [True] * 3]
