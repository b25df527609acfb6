"""utils.attention against PyTorch's own attention, plus masks, bad input and
the other scorers."""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from utils.attention import AttentionCache, MultiHeadAttention
from utils.attention import load_torch_mha_weights
from utils.attention import masked_softmax, scaled_dot_product_attention
from utils.scoring import AdditiveAttention, BilinearAttention
from tests.conftest import raises, raising

ATOL = RTOL = 1e-5
close = functools.partial(torch.testing.assert_close, atol=ATOL, rtol=RTOL)
pytestmark = pytest.mark.usefixtures("seeded")
SHAPES = [  # (batch, heads, Lq, Lk, d_k, d_v)
    (1, 1, 1, 1, 1, 1),
    (2, 3, 4, 4, 8, 8),
    (3, 2, 5, 7, 16, 4),
    (2, 4, 9, 3, 32, 32),
]


def _keep_mask(b: int, lq: int, lk: int, seed: int) -> torch.Tensor:
    """Random keep-mask (B, 1, Lq, Lk) with key 0 kept in every row."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(b, 1, lq, lk, generator=g) > 0.4
    mask[..., 0] = True
    return mask


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
def test_sdpa_equals_torch(shape, masked):
    b, h, lq, lk, dk, dv = shape
    torch.manual_seed(0)
    q, k = torch.randn(b, h, lq, dk), torch.randn(b, h, lk, dk)
    v = torch.randn(b, h, lk, dv)
    mask = _keep_mask(b, lq, lk, seed=1) if masked else None
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    # bool: True = attend, like ours
    close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    # weights checked against a softmax written out independently
    scores = q @ k.transpose(-2, -1) / math.sqrt(dk)
    if mask is not None:
        scores = scores + torch.zeros_like(scores).masked_fill(~mask, -1e9)
    close(weights, torch.softmax(scores, -1))
    assert weights.shape == (b, h, lq, lk)


def test_sdpa_weights_sum_to_one_and_masked_keys_get_exactly_zero():
    torch.manual_seed(1)
    q, k = torch.randn(2, 2, 6, 8), torch.randn(2, 2, 5, 8)
    v = torch.randn(2, 2, 5, 3)
    mask = _keep_mask(2, 6, 5, seed=3)
    _, w = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 6))
    assert (w.expand(2, 2, 6, 5)[~mask.expand(2, 2, 6, 5)] == 0).all()
    assert (w[mask.expand(2, 2, 6, 5)] > 0).all()


def test_fully_masked_row_gives_zeros_and_finite_gradients():
    torch.manual_seed(2)
    q = torch.randn(1, 1, 3, 4, requires_grad=True)
    k = torch.randn(1, 1, 5, 4, requires_grad=True)
    v = torch.randn(1, 1, 5, 2, requires_grad=True)
    mask = torch.ones(1, 1, 3, 5, dtype=torch.bool)
    mask[..., 1, :] = False  # query 1 may attend to nothing
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert (w[..., 1, :] == 0).all() and (out[..., 1, :] == 0).all()
    torch.testing.assert_close(w[..., [0, 2], :].sum(-1), torch.ones(1, 1, 2))
    out.sum().backward()
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), f"non-finite gradient in {name}"
    assert (q.grad[..., 1, :] == 0).all()  # the empty row: cut off from q


def test_masked_softmax_equals_softmax_without_mask():
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(masked_softmax(x), torch.softmax(x, -1))
    keep = torch.ones(5, dtype=torch.bool)
    torch.testing.assert_close(masked_softmax(x, keep), torch.softmax(x, -1))


def _pair(d_model, heads, seed=0):
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=True).eval()
    with torch.no_grad():  # non-zero biases so copying them is tested too
        theirs.in_proj_bias.normal_()
        theirs.out_proj.bias.normal_()
    ours = load_torch_mha_weights(MultiHeadAttention(d_model, heads), theirs)
    return ours.eval(), theirs


# (batch, Lq, Lk, d_model, heads)
MHA = [(1, 1, 1, 4, 1), (2, 5, 5, 8, 2), (3, 4, 7, 12, 3), (2, 9, 6, 32, 8)]


@pytest.mark.parametrize("case", MHA, ids=str)
@pytest.mark.parametrize("kind", ["self", "cross"])
@pytest.mark.parametrize(
    "masked", ["nomask", "padding", "key_padding", "attn_mask"]
)
def test_mha_equals_torch(case, kind, masked):
    b, lq, lk, d, h = case
    if kind == "self":
        lk = lq
    ours, theirs = _pair(d, h)
    torch.manual_seed(5)
    x = torch.randn(b, lq, d)
    mem = x if kind == "self" else torch.randn(b, lk, d)
    kwargs = dict(need_weights=True, average_attn_weights=False)
    ours_kwargs = {}
    if masked in ("padding", "key_padding"):
        g = torch.Generator().manual_seed(7)
        lengths = torch.randint(1, lk + 1, (b,), generator=g)
        keep = torch.arange(lk) < lengths[:, None]  # (B, Lk), True = real
        if masked == "padding":
            ours_kwargs = {"mask": keep[:, None, None, :]}  # (B, 1, 1, Lk)
        else:
            ours_kwargs = {"key_padding_mask": keep}
        kwargs["key_padding_mask"] = ~keep  # torch: True = ignore
    elif masked == "attn_mask":
        # look-ahead for self-attention, a random pattern for cross
        keep = torch.ones(lq, lk, dtype=torch.bool).tril()
        if kind == "cross":
            keep = _keep_mask(1, lq, lk, 6)[0, 0]
        ours_kwargs = {"mask": keep[None, None]}  # (1, 1, Lq, Lk)
        kwargs["attn_mask"] = ~keep
    out, w = ours(x, mem, mem, **ours_kwargs)
    ref, ref_w = theirs(x, mem, mem, **kwargs)
    close(out, ref)
    close(w, ref_w)
    assert out.shape == (b, lq, d) and w.shape == (b, h, lq, lk)


def test_mha_parameter_count_matches_torch_and_formula():
    ours, theirs = _pair(512, 8)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_theirs = sum(p.numel() for p in theirs.parameters())
    assert n_ours == n_theirs == 4 * 512 * 512 + 4 * 512


def test_mha_fully_masked_row_no_nan():
    ours, _ = _pair(8, 2)
    g = torch.Generator().manual_seed(8)
    x = torch.randn(2, 3, 8, generator=g, requires_grad=True)
    mask = torch.tensor([[True] * 3, [False] * 3])[:, None, None, :]
    out, w = ours(x, x, x, mask)
    assert torch.isfinite(out).all() and (w[1] == 0).all()
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def _additive_by_loops(att, q, k):
    """w^T tanh(W q_i + U k_j), one (i, j) pair at a time."""
    W, U, w = att.w_q.weight, att.w_k.weight, att.w_score.weight[0]
    s = torch.empty(q.size(0), q.size(1), k.size(1))
    for b in range(q.size(0)):
        for i in range(q.size(1)):
            for j in range(k.size(1)):
                s[b, i, j] = w @ torch.tanh(W @ q[b, i] + U @ k[b, j])
    return s


def test_additive_equals_loops_with_different_query_and_key_sizes():
    torch.manual_seed(3)
    att = AdditiveAttention(d_q=5, d_k=3, d_hidden=7)
    q, k, v = torch.randn(2, 4, 5), torch.randn(2, 6, 3), torch.randn(2, 6, 2)
    mask = _keep_mask(2, 4, 6, seed=4)[:, 0]  # (B, Lq, Lk)
    out, w = att(q, k, v, mask)
    scores = _additive_by_loops(att, q, k).masked_fill(~mask, -1e9)
    expected_w = torch.softmax(scores, -1)
    close(w, expected_w)
    close(out, expected_w @ v)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4))
    assert (w[~mask] == 0).all()


def test_additive_fully_masked_row():
    att = AdditiveAttention(4, 4, 8)
    q = torch.randn(1, 2, 4, requires_grad=True)
    mask = torch.tensor([[True, False], [False, False]])
    out, w = att(q, q, q, mask)
    assert (w[:, 1] == 0).all() and torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_bilinear_equals_nn_bilinear_and_generalises_dot_product():
    torch.manual_seed(4)
    att = BilinearAttention(d_q=5, d_k=3, scale=False)
    ref = nn.Bilinear(5, 3, 1, bias=False)
    with torch.no_grad():
        ref.weight.copy_(att.weight[None])
    q, k = torch.randn(4, 5), torch.randn(6, 3)
    expected = ref(q[:, None, :].expand(4, 6, 5), k[None].expand(4, 6, 3))
    close(att.scores(q, k), expected.squeeze(-1))  # (Lq, Lk)
    # with W = I and scaling it is the scaled dot product
    dot = BilinearAttention(4, 4)
    with torch.no_grad():
        dot.weight.copy_(torch.eye(4))
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    close(dot(q, k, v)[0], F.scaled_dot_product_attention(q, k, v))


# ---- issue 14: masks of rank 4 only, sentences instead of cryptic errors
def test_the_silently_wrong_padding_mask_is_now_an_error():
    """A (B, S) mask with B == Lq used to broadcast as (Lq, Lk), silently."""
    ours, theirs = _pair(8, 2)
    x = torch.randn(3, 3, 8)  # B == Lq == 3: the ambiguous case
    keep = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]]).bool()
    check = functools.partial(ours.check_inputs, x, x, x)
    dims = r"mask must have 4 dims.*"
    raises(ValueError, rf"{dims}\(3, 3\).*key_padding_mask", check, keep)
    raises(ValueError, rf"{dims}\(1, 3, 3\)", check, keep[None])
    # the two right ways agree with nn.MultiheadAttention
    ref, _ = theirs(x, x, x, key_padding_mask=~keep)
    by_kpm, _ = ours(x, x, x, key_padding_mask=keep)
    by_mask, _ = ours(x, x, x, keep[:, None, None, :])
    close(by_kpm, ref)
    close(by_mask, ref)
    # and the old reading of the same tensor, (Lq, Lk), is a different answer
    wrong, _ = ours(x, x, x, keep[None, None])
    assert not torch.allclose(wrong, ref, atol=1e-3)


def test_mask_and_key_padding_mask_combine():
    ours, theirs = _pair(8, 2)
    x = torch.randn(2, 4, 8)
    keep_keys = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]).bool()
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    got, w = ours(x, x, x, causal[None, None], key_padding_mask=keep_keys)
    ref, _ = theirs(x, x, x, attn_mask=~causal, key_padding_mask=~keep_keys)
    close(got, ref)
    assert (w[1, :, :, 2:] == 0).all() and (w.triu(1) == 0).all()


X, Q = torch.randn(2, 5, 8), torch.randn(2, 3, 4)  # for the table below
CHECK = MultiHeadAttention(8, 2).check_inputs
CHECK4 = MultiHeadAttention(4, 2).check_inputs
SDPA = scaled_dot_product_attention


def trues(*shape):
    return torch.ones(*shape, dtype=torch.bool)


BAD = r"""
ValueError | d_model=10.*num_heads=3 | MultiHeadAttention(10, 3)
ValueError | mask.*\(1, 3, 4, 4\).*\(2, 2, 5, 5\) | CHECK(X, X, X,
    trues(1, 3, 4, 4))
ValueError | k and v.*\(2, 5, 8\).*\(2, 4, 8\) | CHECK(X, X,
    torch.randn(2, 4, 8))
ValueError | q must have shape \(batch, length, 8\).*\(2, 5, 6\) | CHECK(
    torch.randn(2, 5, 6), X, X)
ValueError | k must have shape \(2, length, 8\).*\(2, 5, 6\) | CHECK(X,
    torch.randn(2, 5, 6), X)
ValueError | v must have shape \(2, length, 8\).*\(2, 5, 6\) | CHECK(X, X,
    torch.randn(2, 5, 6))
ValueError | mask is on meta, what it masks on cpu | CHECK(X, X, X,
    trues(1, 1, 5, 5).to("meta"))
ValueError | key_padding_mask is on meta | CHECK(X, X, X,
    key_padding_mask=trues(2, 5).to("meta"))
TypeError | cache must be | CHECK(X, X, X, cache="no")
ValueError | k and v.*\(2, 6, 4\).*\(2, 5, 4\) | SDPA(Q, torch.randn(2, 6, 4),
    torch.randn(2, 5, 4))
ValueError | q and k.*\(2, 3, 4\).*\(2, 6, 5\) | SDPA(Q, torch.randn(2, 6, 5),
    torch.randn(2, 6, 4))
ValueError | mask of shape \(2, 4\) does not broadcast.*\(2, 3, 6\) | SDPA(Q,
    torch.randn(2, 6, 4), torch.randn(2, 6, 4), trues(2, 4))
TypeError | bool | SDPA(Q, Q, Q, torch.ones(3, 3))
ValueError | \(8, 2, True, True\) != ours \(4, 2, True, True\) |
    load_torch_mha_weights(MultiHeadAttention(4, 2),
    nn.MultiheadAttention(8, 2))
ValueError | k must have shape \(1, 2, 4\).*\(1, 2, 3\) | AdditiveAttention(4,
    4, 8)(torch.randn(1, 2, 4), torch.randn(1, 2, 3), torch.randn(1, 2, 3))
ValueError | k and v.*\(1, 2, 4\).*\(1, 3, 4\) | AdditiveAttention(4, 4, 8)(
    *[torch.randn(1, 2, 4)] * 2, torch.randn(1, 3, 4))
ValueError | d_hidden | AdditiveAttention(4, 4, 0)
ValueError | key_padding_mask.*\(2, 5\).*\(2, 4\) | CHECK(X, X, X,
    key_padding_mask=trues(2, 4))
ValueError | key_padding_mask must have shape | CHECK(X, X, X,
    key_padding_mask=trues(2, 1, 1, 5))
TypeError | key_padding_mask must be a bool | CHECK(X, X, X,
    key_padding_mask=torch.ones(2, 5))
TypeError | mask must be a bool | CHECK(X, X, X, mask=torch.ones(1, 1, 5, 5))
TypeError | mask must be a torch.Tensor | CHECK(X, X, X, mask=[[True]])
ValueError | mask of shape \(2, 3, 5, 5\) | CHECK(X, X, X,
    mask=trues(2, 3, 5, 5))
TypeError | q must be a floating-point.*int64 | SDPA(Q.long(), Q, Q)
TypeError | share one dtype.*k torch.float64 | SDPA(Q, Q.double(), Q)
TypeError | q must be a floating-point | CHECK4(Q.long(), Q, Q)
TypeError | float64, the weights torch.float32 | CHECK4(*[Q.double()] * 3)
ValueError | batch dims of q, k and v.*q \(2, 3, 4\).*k \(3, 3, 4\) | SDPA(Q,
    torch.randn(3, 3, 4), torch.randn(3, 3, 4))
ValueError | d_k must be an int >= 1 | SDPA(torch.randn(2, 0),
    torch.randn(3, 0), torch.randn(3, 2))
TypeError | dropout must be a real number | SDPA(Q, Q, Q, dropout="0.1")
TypeError | dropout must be a real number | SDPA(Q, Q, Q,
    dropout=nn.Dropout(0.1))
ValueError | dropout must be in \[0.0, 1.0\), got 1.0 | SDPA(Q, Q, Q,
    dropout=1.0)
TypeError | d_model must be an int, got float 8.0 | MultiHeadAttention(8.0, 2)
ValueError | d_model must be an int >= 1, got 0 | MultiHeadAttention(0, 2)
TypeError | bias must be a bool | MultiHeadAttention(8, 2, bias=1)
TypeError | num_heads must be an int | MultiHeadAttention(8, True)
TypeError | dropout must be a real number | MultiHeadAttention(8, 2,
    dropout="0.1")
ValueError | num_heads must be an int >= 1 | MultiHeadAttention(8, 0)
TypeError | d_q must be an int | AdditiveAttention(4.0, 4, 8)
ValueError | dropout | BilinearAttention(4, 4, dropout=-0.1)
TypeError | theirs must be an nn.MultiheadAttention | load_torch_mha_weights(
    MultiHeadAttention(4, 2), nn.Linear(4, 4))
ValueError | \(4, 2, True, True\) != ours \(4, 2, True, False\) |
    load_torch_mha_weights(MultiHeadAttention(4, 2, bias=False),
    nn.MultiheadAttention(4, 2))
"""


@pytest.mark.parametrize("call, exc, name", raising(BAD))
def test_bad_input_names_the_argument_and_shapes(call, exc, name):
    raises(exc, name, eval, call, globals())


def test_bias_false_leaves_no_bias_and_nothing_is_recorded_yet():
    mha = MultiHeadAttention(8, 2, bias=False)
    names = [name for name, _ in mha.named_parameters()]
    assert names == ["w_q.weight", "w_k.weight", "w_v.weight", "w_o.weight"]
    assert mha.last_weights is None  # until a forward records them


def test_the_entry_check_counts_the_cached_keys():
    """With a cache the mask must cover the keys the scores will have: the
    held ones and the new (self-attention), or only the held ones once a
    cross-attention (static) cache holds the source's."""
    mha, step = MultiHeadAttention(8, 2), torch.randn(2, 1, 8)
    held = AttentionCache()
    mha(X[:, :3], X[:, :3], X[:, :3], cache=held)  # 3 positions held
    check = functools.partial(mha.check_inputs, step, step, step, cache=held)
    check(trues(2, 2, 1, 4))
    raises(ValueError, r"\(2, 2, 1, 3\) does not", check, trues(2, 2, 1, 3))
    source, static = torch.randn(2, 5, 8), AttentionCache(static=True)
    mha(step, source, source, cache=static)  # the source's 5 keys, once
    check = functools.partial(
        mha.check_inputs, step, source, source, cache=static
    )
    check(trues(2, 2, 1, 5))
    raises(ValueError, r"\(2, 2, 1, 10\) does not", check, trues(2, 2, 1, 10))


def test_dropout_is_a_probability_like_pytorchs_dropout_p():
    q, k, v = torch.randn(2, 5, 4), torch.randn(2, 6, 4), torch.randn(2, 6, 3)
    torch.manual_seed(11)
    out, w = scaled_dot_product_attention(q, k, v, dropout=0.5)
    torch.manual_seed(11)
    # weights returned before dropout
    torch.testing.assert_close(out, F.dropout(w, 0.5) @ v)
    assert not torch.allclose(out, w @ v)
    torch.testing.assert_close(SDPA(q, k, v, dropout=0.0)[0], w @ v)


def test_module_dropout_only_in_train_mode():
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    plain = MultiHeadAttention(8, 2)
    plain.load_state_dict(mha.state_dict())
    mha.eval()
    torch.testing.assert_close(mha(x, x, x)[0], plain(x, x, x)[0])
    mha.train()
    assert not torch.allclose(mha(x, x, x)[0], plain(x, x, x)[0])


def test_sizes_numpy_ints_accepted():
    mha = MultiHeadAttention(np.int64(8), np.int64(2))
    assert (mha.d_model, mha.num_heads, mha.d_head) == (8, 2, 4)
    assert type(mha.d_model) is int


def test_forward_computes_from_its_first_line_and_keeps_its_weights():
    """Checks only where a user enters; forward keeps the weights itself, in
    plain view (chapter 9 prints it)."""
    body = inspect.getsource(MultiHeadAttention.forward).split('"""')[-1]
    assert body.strip().startswith("qh = self.split_heads(self.w_q(q))")
    assert "check" not in body and "def " not in body
    mha, x = MultiHeadAttention(8, 2), torch.randn(2, 5, 8)
    out, w = mha(x, x, x)
    assert mha.last_weights is w and w.shape == (2, 2, 5, 5)
