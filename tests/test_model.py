"""utils.model against PyTorch's Transformer layers and the properties of
any correct encoder-decoder (causality, padding, parameter count)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from utils.attention import AttentionCache
from utils.masks import causal_mask, decoder_mask, padding_mask
from utils.layers import DecoderLayer, EncoderLayer, FeedForward, LayerNorm
from utils.layers import load_torch_decoder_layer_weights, xavier_init
from utils.layers import load_torch_encoder_layer_weights
from utils.model import Transformer, parameter_count, shape_trace
from tests.conftest import raises, raising

D, H, FF = 16, 4, 32
pytestmark = pytest.mark.usefixtures("seeded")


def small(norm_first: bool = False, **kw) -> Transformer:
    torch.manual_seed(0)  # max_len: the tests use at most 9 positions
    sizes = dict(d_model=D, num_heads=H, num_layers=2, d_ff=FF, max_len=64)
    return Transformer(11, 13, norm_first=norm_first, **sizes, **kw).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = small(norm_first)
    torch.manual_seed(1)
    src = torch.randint(1, 11, (2, 6))
    tgt = torch.randint(1, 13, (2, 7))
    t = 3
    changed = tgt.clone()
    changed[:, t + 1 :] = torch.randint(1, 13, (2, 7 - t - 1))
    assert not torch.equal(changed, tgt)
    with torch.no_grad():
        a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, : t + 1], b[:, : t + 1])
    assert not torch.allclose(a[:, t + 1 :], b[:, t + 1 :])  # can fail


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_ignores_appended_padding(norm_first):
    model = small(norm_first)
    torch.manual_seed(2)
    src = torch.randint(1, 11, (2, 5))
    longer = torch.cat([src, torch.zeros(2, 4, dtype=torch.long)], dim=1)
    with torch.no_grad():
        short_mem, _ = model.encode(src)
        long_mem, mask = model.encode(longer)
        torch.testing.assert_close(long_mem[:, :5], short_mem)
        assert mask.shape == (2, 1, 1, 9) and not mask[..., 5:].any()
        # and so the decoder's output does not change either
        tgt = torch.randint(1, 13, (2, 4))
        torch.testing.assert_close(model(src, tgt), model(longer, tgt))


def test_shapes_match_nn_transformer():
    model = small()
    theirs = nn.Transformer(
        D, H, 2, 2, FF, dropout=0.0, batch_first=True
    ).eval()
    src, tgt = torch.randint(1, 11, (3, 6)), torch.randint(1, 13, (3, 4))
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        states = model.decode(tgt, memory, src_mask)
        ref = theirs(torch.randn(3, 6, D), torch.randn(3, 4, D))
        assert states.shape == ref.shape == (3, 4, D)
        assert memory.shape == theirs.encoder(torch.randn(3, 6, D)).shape
        assert model(src, tgt).shape == (3, 4, 13)


ENCODER = nn.TransformerEncoderLayer, EncoderLayer
DECODER = nn.TransformerDecoderLayer, DecoderLayer
LOAD = {
    EncoderLayer: load_torch_encoder_layer_weights,
    DecoderLayer: load_torch_decoder_layer_weights,
}


def torch_twins(kinds, seed, norm_first):
    """PyTorch's layer, seeded, and ours with its weights; both in eval."""
    theirs_kind, ours_kind = kinds
    torch.manual_seed(seed)
    theirs = theirs_kind(
        D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first
    ).eval()
    ours = ours_kind(D, H, FF, 0.0, norm_first)
    return theirs, LOAD[ours_kind](ours, theirs).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_torch(norm_first):
    theirs, ours = torch_twins(ENCODER, 3, norm_first)
    x = torch.randn(2, 5, D)
    ids = torch.tensor([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]])
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5)
        got = ours(x, padding_mask(ids))
        ref = theirs(x, src_key_padding_mask=ids == 0)
    real = ids != 0
    torch.testing.assert_close(got[real], ref[real], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_torch(norm_first):
    theirs, ours = torch_twins(DECODER, 4, norm_first)
    x, memory = torch.randn(2, 4, D), torch.randn(2, 6, D)
    src_ids = torch.tensor([[1, 2, 3, 4, 0, 0], [1, 2, 3, 4, 5, 6]])
    causal = causal_mask(4)
    with torch.no_grad():
        got = ours(x, memory, padding_mask(src_ids), causal[None, None])
        kpm = src_ids == 0
        ref = theirs(x, memory, tgt_mask=~causal, memory_key_padding_mask=kpm)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_with_a_cache_equals_the_full_pass(norm_first):
    """One position at a time through a cache = all at once, causally."""
    torch.manual_seed(4)
    layer = EncoderLayer(D, H, FF, 0.0, norm_first).eval()
    x = torch.randn(2, 5, D)
    with torch.no_grad():
        full = layer(x, causal_mask(5)[None, None])
        cache = AttentionCache()
        steps = [  # query t sees keys 0 .. t: all that the cache holds
            layer(x[:, t : t + 1], torch.ones(1, 1, 1, t + 1).bool(), cache)
            for t in range(5)
        ]
    torch.testing.assert_close(torch.cat(steps, 1), full)
    assert cache.length == 5
    # the check can fail: without the mask the first positions see the rest
    assert not torch.allclose(layer(x)[:, 0], full[:, 0], atol=1e-3)


def test_attention_weights_are_kept_by_each_attention_module():
    """``last_weights``: the last call's (B, h, Lq, Lk), set in forward."""
    model = small()
    src, tgt = torch.randint(1, 11, (2, 6)), torch.randint(1, 13, (2, 4))
    with torch.no_grad():
        model(src, tgt)
    enc, dec = model.encoder.layers[0], model.decoder.layers[1]
    assert enc.self_attn.last_weights.shape == (2, H, 6, 6)
    assert dec.self_attn.last_weights.shape == (2, H, 4, 4)
    assert dec.cross_attn.last_weights.shape == (2, H, 4, 6)
    y = torch.randn(2, 3, D)
    _, weights = dec.cross_attn(y, y, y)
    assert dec.cross_attn.last_weights is weights


class _ValuesRead(TorchDispatchMode):
    """Records ``.item()``, ``int(t)``, ``bool(t)``: on a GPU, a wait."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in (
            torch.ops.aten._local_scalar_dense,
            torch.ops.aten.item,
            torch.ops.aten.is_nonzero,
        ):
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_layers_never_read_values_back_only_the_entry_does():
    model = small()
    src, tgt = torch.randint(1, 11, (2, 6)), torch.randint(1, 13, (2, 4))
    src_mask, tgt_mask = padding_mask(src), decoder_mask(tgt)
    cache = model.start_cache()
    with torch.no_grad(), _ValuesRead() as read:
        memory = model.encoder(model.pos(model.src_embed(src)), src_mask)
        x = model.pos(model.tgt_embed(tgt))
        model.decoder(x, memory, src_mask, tgt_mask)
        model.decoder(x[:, :1], memory, src_mask, tgt_mask[:, :, :1, :1],
                      cache=cache.layers)  # fmt: skip
    assert read.seen == []
    with torch.no_grad(), _ValuesRead() as read:
        model(src, tgt)  # the entry checks the ids' values
    assert read.seen  # so the check can fail


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_pre_norm_stack_equals_nn_transformer():
    """Both Pre-Norm stacks end in a LayerNorm: the whole body matches."""
    model = small(norm_first=True)
    theirs = nn.Transformer(
        D, H, 2, 2, FF, dropout=0.0, batch_first=True, norm_first=True
    ).eval()
    with torch.no_grad():
        for stack, load in (
            ("encoder", load_torch_encoder_layer_weights),
            ("decoder", load_torch_decoder_layer_weights),
        ):
            mine, other = getattr(model, stack), getattr(theirs, stack)
            for ours_l, their_l in zip(mine.layers, other.layers):
                load(ours_l, their_l)
            mine.norm.weight.copy_(other.norm.weight)
            mine.norm.bias.copy_(other.norm.bias)
        x, y = torch.randn(2, 5, D), torch.randn(2, 4, D)
        got = model.decoder(
            y, model.encoder(x), None, causal_mask(4)[None, None]
        )
        ref = theirs(x, y, tgt_mask=~causal_mask(4))
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_post_and_pre_norm_differ():
    torch.manual_seed(5)
    post = EncoderLayer(D, H, FF, 0.0, norm_first=False).eval()
    pre = EncoderLayer(D, H, FF, 0.0, norm_first=True).eval()
    pre.load_state_dict(post.state_dict())
    x = torch.randn(2, 5, D)
    assert not torch.allclose(post(x), pre(x), atol=1e-3)


def test_layer_norm_equals_torch():
    torch.manual_seed(6)
    ours, theirs = LayerNorm(D), nn.LayerNorm(D)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
        ours.load_state_dict(theirs.state_dict())
    x = torch.randn(3, 5, D) * 3 + 1
    torch.testing.assert_close(ours(x), theirs(x))
    with pytest.raises(ValueError, match=rf"x must have shape \(2, {D}\)"):
        ours(torch.randn(2, D + 1))


def test_ffn_is_a_1x1_convolution():
    torch.manual_seed(7)
    ffn = FeedForward(D, FF)
    c1, c2 = nn.Conv1d(D, FF, 1), nn.Conv1d(FF, D, 1)
    with torch.no_grad():
        for conv, linear in ((c1, ffn.w_1), (c2, ffn.w_2)):
            conv.weight.copy_(linear.weight[:, :, None])
            conv.bias.copy_(linear.bias)
    x = torch.randn(2, 5, D)
    conv = c2(torch.relu(c1(x.transpose(1, 2)))).transpose(1, 2)
    torch.testing.assert_close(ffn(x), conv, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_parameter_count_formula(share, norm_first):
    kw = dict(share_embeddings=share, norm_first=norm_first)
    model = Transformer(50, 50, D, H, num_layers=3, d_ff=FF, **kw)
    counted = sum(p.numel() for p in model.parameters())
    assert parameter_count(50, 50, D, 3, FF, **kw)["total"] == counted


def test_base_parameter_count_and_nn_transformer():
    """The base body is nn.Transformer minus its two final LayerNorms (built
    on the meta device: no memory)."""
    with torch.device("meta"):
        body = nn.Transformer(512, 8, 6, 6, 2048, batch_first=True)
    assert next(body.parameters()).is_meta
    parts = parameter_count(37000, 37000, share_embeddings=True)
    stacks = parts["encoder layers"] + parts["decoder layers"]
    assert stacks + 2 * 2 * 512 == sum(p.numel() for p in body.parameters())
    assert parts["total"] == 63_119_496


def test_xavier_init_is_the_reference_loop():
    """The same draws as the loop it replaced; vectors left as built."""
    built = Transformer(11, 13, D, H, 2, FF)
    ours, theirs = copy.deepcopy(built), copy.deepcopy(built)
    torch.manual_seed(3)
    xavier_init(ours)
    after = torch.rand(2)
    torch.manual_seed(3)
    for p in theirs.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    assert torch.equal(torch.rand(2), after)  # the same draws consumed
    for a, b, c in zip(
        ours.parameters(), theirs.parameters(), built.parameters()
    ):
        assert torch.equal(a, b) and (a.dim() > 1 or torch.equal(a, c))
    with pytest.raises(TypeError, match="module must be a Module"):
        xavier_init([torch.zeros(2, 2)])


def test_shared_embeddings_are_tied():
    model = small(share_embeddings=False)
    tied = Transformer(13, 13, D, H, 1, FF, share_embeddings=True)
    weight = tied.generator.weight
    assert weight is tied.src_embed.lut.weight is tied.tgt_embed.lut.weight
    assert model.generator.weight is not model.tgt_embed.lut.weight


@pytest.mark.parametrize("training", [True, False])
def test_shape_trace_order_and_shapes_and_restores_the_mode(training):
    model = small(dropout=0.5).train(training)
    seen = []
    model.generator.register_forward_hook(
        lambda m, a, o: seen.append((m.training, torch.is_grad_enabled()))
    )
    rows = shape_trace(
        model, torch.randint(1, 11, (2, 6)), torch.randint(1, 13, (2, 4))
    )
    at = [r[0] for r in rows].index
    assert at("encoder") < at("decoder") < at("generator")
    assert dict((r[0], r[2]) for r in rows)["generator"] == (2, 4, 13)
    assert seen == [(False, False)]  # traced in eval mode without gradients
    assert all(m.training is training for m in [model, *model.modules()])
    assert torch.is_grad_enabled()  # no_grad stayed local


# ---- bad input (issue 14); M a small model, S and T ids, T3 a batch of
# three, MEM and MASK what M.encode(S) gives
def cfg(**kw):
    sizes = dict(d_model=D, num_heads=H, num_layers=1, d_ff=FF)
    return Transformer(11, 13, **sizes | kw)


G = torch.Generator().manual_seed(0)
S = torch.randint(1, 11, (2, 5), generator=G)
T, T3 = (torch.randint(1, 13, (b, 4), generator=G) for b in (2, 3))
BAD = r"""
ValueError | src | M(torch.full((2, 5), 11), T)
ValueError | tgt | M(S, torch.full((2, 4), 13))
ValueError | src | M(torch.full((2, 5), -1), T)
TypeError | src | M(S.float(), T)
ValueError | batch | M(S, T3)
ValueError | memory must have shape \(3, | M.decode(T3, MEM, MASK)
ValueError | memory | M.decode(T, MEM[..., :3], MASK)
ValueError | num_heads | cfg(d_model=10, num_heads=4)
ValueError | num_heads | cfg(num_heads=0)
ValueError | d_model | cfg(d_model=0)
ValueError | num_layers | cfg(num_layers=0)
ValueError | d_ff | cfg(d_ff=-1)
ValueError | pad_id | cfg(pad_id=99)
ValueError | dropout | cfg(dropout=1.0)
ValueError | share_embeddings | Transformer(11, 13, D, H,
    share_embeddings=True)
ValueError | num_heads | EncoderLayer(10, 4, FF)
ValueError | d_ff | FeedForward(D, 0)
ValueError | src must hold at least one position.*got 0 | M(S[:, :0], T)
ValueError | tgt must hold at least one position.*got 0 | M(S, T[:, :0])
ValueError | tgt must hold at least one position | M.decode(T[:, :0], MEM,
    MASK)
TypeError | tgt has dtype torch.uint8 | M(S, T.byte())
TypeError | src must hold integer token ids.*torch.bool | M(S > 3, T)
ValueError | src must have 2 dims \(batch, length\) | M(S[0], T)
TypeError | src must be a torch.Tensor | M(S.tolist(), T)
ValueError | tgt must be in \[0, 13\), found 13 | M(S, T.masked_fill(
    T == T[0, 0], 13))
TypeError | d_model must be an int, got float 16.0 | Transformer(11, 13,
    d_model=16.0, num_heads=H)
TypeError | dropout must be a real number | Transformer(11, 13, d_model=D,
    num_heads=H, dropout="0.1")
TypeError | pad_id must be an int | Transformer(11, 13, d_model=D,
    num_heads=H, pad_id=None)
TypeError | share_embeddings must be a bool | Transformer(11, 11, d_model=D,
    num_heads=H, share_embeddings=1)
TypeError | memory must be a floating-point | M.decode(T, MEM.long(), MASK)
ValueError | src_mask must have 4 dims.*\(2, 5\) | M.decode(T, MEM,
    MASK[:, 0, 0])
ValueError | src_mask of shape \(2, 1, 1, 4\) | M.decode(T, MEM,
    MASK[..., :4])
TypeError | src_mask must be a bool | M.decode(T, MEM, MASK.float())
ValueError | mask must have 4 dims.*\(4, 4\) | DecoderLayer(D, H, FF,
    0.0).self_attn.check_inputs(*[torch.randn(2, 4, D)] * 3, causal_mask(4))
TypeError | theirs must be an nn.TransformerEncoderLayer |
    load_torch_encoder_layer_weights(EncoderLayer(D, H, FF),
    nn.TransformerDecoderLayer(D, H, FF))
TypeError | ours must be a utils DecoderLayer |
    load_torch_decoder_layer_weights(EncoderLayer(D, H, FF),
    nn.TransformerDecoderLayer(D, H, FF))
TypeError | model must be an nn.Module | shape_trace(lambda x: x,
    torch.zeros(1))
ValueError | eps must be in | LayerNorm(D, eps=0.0)
"""


@pytest.mark.parametrize("call, error, match", raising(BAD))
def test_bad_input_names_the_argument(call, error, match):
    model = small()
    memory, mask = model.encode(S)
    env = dict(M=model, MEM=memory, MASK=mask)
    raises(error, match, eval, call, globals(), env)


def test_empty_sequences_batch():
    assert small()(S[:0], T[:0]).shape == (0, 4, 13)


def test_int32_ids_work_too():
    model = small()
    torch.testing.assert_close(model(S.int(), T.int()), model(S, T))


def test_ids_are_range_checked_once_per_forward(monkeypatch):
    """At the entry, not in the embedding: one device sync per tensor."""
    import utils.model as M

    calls = []
    real = M.check_ids

    def counting(ids, name, vocab_size=None, **kw):
        if vocab_size is not None:
            calls.append(name)
        return real(ids, name, vocab_size, **kw)

    monkeypatch.setattr(M, "check_ids", counting)
    small()(torch.randint(1, 11, (2, 5)), torch.randint(1, 13, (2, 4)))
    assert sorted(calls) == ["src", "tgt"]


def test_numpy_sizes_accepted():
    i64 = np.int64
    sizes = dict(d_model=i64(D), num_heads=np.int32(H), num_layers=i64(1))
    model = Transformer(i64(11), i64(13), d_ff=i64(FF), pad_id=i64(0), **sizes)
    assert model.d_model == D and type(model.d_model) is int


def test_the_layers_take_rank_2_masks_lifted():
    torch.manual_seed(4)  # (the check refuses them: in BAD)
    layer = DecoderLayer(D, H, FF, 0.0).eval()
    x, memory = torch.randn(2, 4, D), torch.randn(2, 6, D)
    out = layer(x, memory, None, causal_mask(4)[None, None])
    # causal: changing the last position leaves the first three unchanged
    x2 = x.clone()
    x2[:, -1] += 1.0
    torch.testing.assert_close(
        layer(x2, memory, None, causal_mask(4)[None, None])[:, :3], out[:, :3]
    )


def test_decode_hides_padded_target_keys():
    model = small()
    src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 13, (2, 4))
    memory, mask = model.encode(src)  # (the checks of both: in BAD)
    # changing the pad embedding moves no other position's output
    padded = tgt.clone()
    padded[:, 1] = 0
    with torch.no_grad():
        a = model.decode(padded, memory, mask)
        model.tgt_embed.lut.weight[0] += 1.0
        b = model.decode(padded, memory, mask)
    others = torch.ones(4, dtype=torch.bool)
    others[1] = False
    torch.testing.assert_close(a[:, others], b[:, others])
    # the change is visible where it may be
    assert not torch.allclose(a[:, 1], b[:, 1])
