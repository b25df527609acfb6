"""Seeded loops throw random shapes, dtypes, lengths and masks at utils and
compare with PyTorch; random corruptions must raise naming the argument. (No
Hypothesis: no new dependency, and a failure prints its seed and sizes.)"""

from __future__ import annotations

import functools
import random
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from utils import masks
from utils.attention import MultiHeadAttention, load_torch_mha_weights
from utils.attention import scaled_dot_product_attention
from utils.loss import masked_cross_entropy

from tests.conftest import raises

CASES = 25  # per property: the whole module runs in a few seconds
TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.float64: dict(atol=1e-10, rtol=1e-9),
    torch.bfloat16: dict(atol=3e-2, rtol=3e-2),
}


def _rng(seed: int) -> tuple[random.Random, torch.Generator]:
    return random.Random(seed), torch.Generator().manual_seed(seed)


def _randn(g: torch.Generator, *shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def _broadcastable(r: random.Random, shape: tuple[int, ...]) -> tuple:
    """A random shape broadcasting to ``shape`` (dims set to 1 or dropped)."""
    out = tuple(1 if r.random() < 0.4 else n for n in shape)
    return out[r.randint(0, len(out) - 2) :]


# ---------------------------------------------------------------- attention
@pytest.mark.parametrize("seed", range(CASES))
def test_sdpa_equals_torch_on_random_shapes_dtypes_and_masks(seed):
    r, g = _rng(seed)
    dtype = r.choice([torch.float32, torch.float64, torch.bfloat16])
    batch = tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
    lq, lk, dk, dv = (r.randint(1, 7) for _ in range(4))
    # batch dims may broadcast: q, k, v each get some of them set to 1
    shapes = [
        tuple(1 if r.random() < 0.3 else n for n in batch) + tail
        for tail in ((lq, dk), (lk, dk), (lk, dv))
    ]
    q, k, v = (_randn(g, *s, dtype=dtype) for s in shapes)
    full = torch.broadcast_shapes(*(s[:-2] for s in shapes)) + (lq, lk)
    mask = None
    if r.random() < 0.7:
        mask = torch.rand(_broadcastable(r, full), generator=g) < 0.6
        if mask.dim() >= 2 and r.random() < 0.5:  # a fully masked row
            mask[..., r.randrange(mask.size(-2)), :] = False
    case = f"seed={seed} dtype={dtype} q, k, v={shapes}"
    case += f" mask={None if mask is None else tuple(mask.shape)}"

    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == full[:-1] + (dv,) and w.shape == full, case
    assert out.dtype == dtype and torch.isfinite(out).all(), case

    # the reference in float64; rows with no visible key are NaN there
    # (expanded to the common batch first: PyTorch does not let a mask
    # carry v's batch dims into the scores)
    q64 = q.double().expand(*full[:-2], lq, dk)
    k64 = k.double().expand(*full[:-2], lk, dk)
    v64 = v.double().expand(*full[:-2], lk, dv)
    ref = F.scaled_dot_product_attention(q64, k64, v64, attn_mask=mask)
    keep = torch.ones(full).bool() if mask is None else mask.expand(full)
    has_key = keep.any(-1)  # (..., Lq)
    close = functools.partial(torch.testing.assert_close, **TOL[dtype])
    close(out.double()[has_key], ref[has_key], msg=case)
    assert (out[~has_key] == 0).all() and (w[~has_key] == 0).all(), case
    assert (w[~keep] == 0).all(), case
    sums = w.double().sum(-1)[has_key]
    close(sums, torch.ones_like(sums), msg=case)


@pytest.mark.parametrize("seed", range(CASES))
def test_mha_equals_nn_multihead_attention_with_copied_weights(seed):
    r, g = _rng(1000 + seed)
    dtype = r.choice([torch.float32, torch.float64])
    heads = r.choice([1, 2, 4])
    d_model = heads * r.randint(1, 4)
    b, lq = r.randint(1, 4), r.randint(1, 6)
    self_attn = r.random() < 0.5
    lk = lq if self_attn else r.randint(1, 6)
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=True)
    theirs = theirs.to(dtype).eval()
    with torch.no_grad():
        theirs.in_proj_bias.normal_()
        theirs.out_proj.bias.normal_()
    ours = MultiHeadAttention(d_model, heads).to(dtype).eval()
    load_torch_mha_weights(ours, theirs)
    x = _randn(g, b, lq, d_model, dtype=dtype)
    mem = x if self_attn else _randn(g, b, lk, d_model, dtype=dtype)

    ours_kw, their_kw = {}, {}
    keys = torch.rand(b, lk, generator=g) < 0.7
    # nn.MultiheadAttention returns NaN for a row with no key
    keys[:, 0] = True
    pairs = torch.rand(lq, lk, generator=g) < 0.7
    pairs[:, 0] = True
    how = r.choice(["none", "kpm", "kpm-as-mask", "pairs", "both"])
    if how in ("kpm", "both"):
        ours_kw["key_padding_mask"] = keys
        their_kw["key_padding_mask"] = ~keys
    if how == "kpm-as-mask":
        ours_kw["mask"] = masks.padding_mask(keys.long())  # (B, 1, 1, Lk)
        their_kw["key_padding_mask"] = ~keys
    if how in ("pairs", "both"):
        ours_kw["mask"] = pairs[None, None]
        their_kw["attn_mask"] = ~pairs
    case = f"seed={seed} {dtype} B={b} Lq={lq} Lk={lk} d={d_model} h={heads}"
    case += f" {how}"
    their_kw |= dict(need_weights=True, average_attn_weights=False)
    with torch.no_grad():
        out, w = ours(x, mem, mem, **ours_kw)
        ref, ref_w = theirs(x, mem, mem, **their_kw)
    torch.testing.assert_close(out, ref, **TOL[dtype], msg=case)
    torch.testing.assert_close(w, ref_w, **TOL[dtype], msg=case)


@pytest.mark.parametrize("seed", range(10))
def test_mha_fully_masked_rows_stay_finite(seed):
    r, g = _rng(2000 + seed)
    b, lq, lk = r.randint(1, 3), r.randint(1, 5), r.randint(1, 5)
    mha = MultiHeadAttention(8, 2).eval()
    x, mem = _randn(g, b, lq, 8), _randn(g, b, lk, 8)
    keys = torch.rand(b, lk, generator=g) < 0.5
    keys[0] = False  # sentence 0 has no real key at all
    pairs = torch.rand(lq, lk, generator=g) < 0.5
    out, w = mha(x, mem, mem, pairs[None, None], key_padding_mask=keys)
    assert torch.isfinite(out).all() and (w[0] == 0).all()
    # with nothing to attend, the output is W_o applied to zeros: its bias
    torch.testing.assert_close(out[0], mha.w_o.bias.expand(lq, 8))


# ---------------------------------------------------------------- masks
@pytest.mark.parametrize("seed", range(CASES))
def test_mask_builders_on_random_lengths(seed):
    r, g = _rng(3000 + seed)
    b, t = r.randint(1, 5), r.randint(1, 9)
    pad = r.choice([0, 1, 7])
    lengths = torch.randint(0, t + 1, (b,), generator=g)
    ids = torch.randint(0, 20, (b, t), generator=g)
    ids[ids == pad] = pad + 1  # no pad id inside the real tokens
    ids = ids.masked_fill(torch.arange(t) >= lengths[:, None], pad)
    case = f"seed={seed} lengths={lengths.tolist()} T={t} pad={pad}"

    by_lengths = masks.lengths_to_mask(lengths, max_len=t)
    want = [[j < n for j in range(t)] for n in lengths.tolist()]
    assert by_lengths.tolist() == want, case
    pm = masks.padding_mask(ids, pad_id=pad)
    assert pm.shape == (b, 1, 1, t), case
    assert torch.equal(pm[:, 0, 0], by_lengths), case
    # PyTorch's causal mask is a float mask: -inf above the diagonal
    torch_causal = nn.Transformer.generate_square_subsequent_mask(t)
    assert torch.equal(masks.causal_mask(t), torch_causal == 0), case
    dm = masks.decoder_mask(ids, pad_id=pad)
    expected = by_lengths[:, None, None, :] & (torch_causal == 0)
    assert dm.shape == (b, 1, t, t) and torch.equal(dm, expected), case
    p = r.randint(0, t)
    prefix = [[j < p or j <= i for j in range(t)] for i in range(t)]
    assert masks.prefix_lm_mask(t, p).tolist() == prefix, case
    # nn.MultiheadAttention's key_padding_mask is the negation
    assert torch.equal(masks.to_key_padding_mask(pm), ~by_lengths), case


# ---------------------------------------------------------------- loss
@pytest.mark.parametrize("seed", range(CASES))
def test_masked_cross_entropy_equals_ignore_index(seed):
    r, g = _rng(4000 + seed)
    dtype = r.choice([torch.float32, torch.float64])
    b, t, v = r.randint(1, 4), r.randint(1, 6), r.randint(2, 9)
    eps = r.choice([0.0, 0.0, 0.1, 0.3])
    logits = (_randn(g, b, t, v) * 3).to(dtype)
    targets = torch.randint(0, v, (b, t), generator=g)
    mask = torch.rand(b, t, generator=g) < 0.6
    mask.view(-1)[r.randrange(b * t)] = True  # at least one real token
    if b > 1 and r.random() < 0.3:
        mask[r.randrange(b)] = False  # a sequence that is all padding
    junk = targets.masked_fill(~mask, r.choice([-100, 0, v + 3]))
    case = f"seed={seed} {dtype} B={b} T={t} V={v} eps={eps}"

    a = logits.clone().requires_grad_()
    loss = masked_cross_entropy(a, junk, mask, label_smoothing=eps)
    loss.backward()
    c = logits.clone().requires_grad_()
    ignored = targets.masked_fill(~mask, -100)
    ref = F.cross_entropy(c.transpose(1, 2), ignored, label_smoothing=eps)
    ref.backward()
    torch.testing.assert_close(loss, ref, **TOL[dtype], msg=case)
    torch.testing.assert_close(a.grad, c.grad, **TOL[dtype], msg=case)
    assert (a.grad[~mask] == 0).all(), case


# ---------------------------------------------------------------- bad input
# (name of the argument the message must name, error type, corruption)
B3 = [0, 1, 0]  # k and v of 3 rows against q's 2
SDPA_CORRUPTIONS = [
    ("q", TypeError, lambda q, k, v, m: (q.long(), k, v, m)),
    ("k", TypeError, lambda q, k, v, m: (q, k.tolist(), v, m)),
    ("dtype", TypeError, lambda q, k, v, m: (q, k, v.double(), m)),
    ("q and k", ValueError, lambda q, k, v, m: (q, k[..., :3], v, m)),
    ("k and v", ValueError, lambda q, k, v, m: (q, k, v[:, :4], m)),
    ("batch dims", ValueError, lambda q, k, v, m: (q, k[B3], v[B3], m)),
    ("q", ValueError, lambda q, k, v, m: (q[0, 0], k, v, m)),
    ("mask", TypeError, lambda q, k, v, m: (q, k, v, m.float())),
    ("mask", TypeError, lambda q, k, v, m: (q, k, v, m.tolist())),
    ("mask", ValueError, lambda q, k, v, m: (q, k, v, m[..., :4])),
    ("mask", ValueError, lambda q, k, v, m: (q, k, v, m.expand(3, 2, 3, 5))),
]


@pytest.mark.parametrize("seed", range(CASES))
def test_bad_attention_inputs_raise_errors_naming_the_argument(seed):
    r, g = _rng(5000 + seed)
    q, k, v = _randn(g, 2, 3, 4), _randn(g, 2, 5, 4), _randn(g, 2, 5, 6)
    mask = torch.rand(2, 1, 5, generator=g) < 0.5  # broadcasts to (2, 3, 5)
    name, exc, corrupt = r.choice(SDPA_CORRUPTIONS)
    args = corrupt(q, k, v, mask)
    raises(exc, re.escape(name), scaled_dot_product_attention, *args)


KPM = "key_padding_mask"
MHA_CORRUPTIONS = [
    ("mask", ValueError, lambda x, keys: dict(mask=keys)),  # rank 2: ambiguous
    ("mask", ValueError, lambda x, keys: dict(mask=keys[:, None])),  # rank 3
    ("mask", TypeError, lambda x, keys: dict(mask=keys[:, None, None].long())),
    (KPM, ValueError, lambda x, keys: {KPM: keys[:, :2]}),
    (KPM, TypeError, lambda x, keys: {KPM: keys.float()}),
    ("q", ValueError, lambda x, keys: dict(q=x[..., :4])),
    ("q", TypeError, lambda x, keys: dict(q=x.long())),
    ("dtype", TypeError, lambda x, keys: dict.fromkeys("qkv", x.double())),
    ("k must have shape (3,", ValueError, lambda x, keys: dict(k=x[:2])),
]


@pytest.mark.parametrize("seed", range(CASES))
def test_bad_module_inputs_raise_errors_naming_the_argument(seed):
    r, g = _rng(6000 + seed)
    mha = MultiHeadAttention(8, 2)
    x = _randn(g, 3, 3, 8)  # B == Lq: the case a rank-2 mask would get wrong
    keys = torch.rand(3, 3, generator=g) < 0.7
    name, exc, corrupt = r.choice(MHA_CORRUPTIONS)
    kw = dict(q=x, k=x, v=x) | corrupt(x, keys)
    raises(exc, re.escape(name), mha.check_inputs, **kw)


LOSS_CORRUPTIONS = [
    ("logits", TypeError, lambda lo, t, m: (lo.long(), t, m)),
    ("logits", ValueError, lambda lo, t, m: (lo[0], t, m)),
    ("targets", TypeError, lambda lo, t, m: (lo, t.to(torch.uint8), m)),
    ("targets", TypeError, lambda lo, t, m: (lo, t.float(), m)),
    ("targets", ValueError, lambda lo, t, m: (lo, t[:, :1], m)),
    (
        "targets at real positions",
        ValueError,
        lambda lo, t, m: (lo, t.masked_fill(m, 99), m),
    ),
    ("mask", TypeError, lambda lo, t, m: (lo, t, m.long())),
    ("mask", ValueError, lambda lo, t, m: (lo, t, m[:1])),
]


@pytest.mark.parametrize("seed", range(CASES))
def test_bad_loss_inputs_raise_errors_naming_the_argument(seed):
    r, g = _rng(7000 + seed)
    logits = _randn(g, 2, 3, 5)
    targets = torch.randint(0, 5, (2, 3), generator=g)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    name, exc, corrupt = r.choice(LOSS_CORRUPTIONS)
    args = corrupt(logits, targets, mask)
    raises(exc, re.escape(name), masked_cross_entropy, *args)
    eps = r.choice(["0.1", True, 1.0, -0.2])  # a wrong kind or value
    exc = ValueError if isinstance(eps, float) else TypeError
    raises(exc, "label_smoothing", masked_cross_entropy, logits, targets, mask,
           label_smoothing=eps)  # fmt: skip
