"""The KV cache computes what full recomputation computes, at a linear cost
per step; the cached step is the model's own ``decode(..., cache=...)``."""

from __future__ import annotations

import functools

import pytest
import torch

from utils.attention import AttentionCache
from utils.cache import KVCache
from utils.complexity import count_flops
from utils.model import Transformer
from tests.conftest import raises

PAD, BOS, EOS = 0, 1, 2


def small_model(norm_first=False, seed=0, layers=2):
    torch.manual_seed(seed)
    sizes = dict(d_model=32, num_heads=4, num_layers=layers, d_ff=64)
    model = Transformer(11, 13, dropout=0.1, norm_first=norm_first, **sizes)
    return model.eval()


def ids(high, shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, high, shape, generator=g)


def step(model, cache, memory, src_mask, tokens):
    return model.decode(tokens, memory, src_mask, cache=cache)


def steps(model, cache, memory, src_mask, tgt, times):
    """Positions ``times`` one by one through ``cache`` (None: fresh each)."""
    out = []
    for t in times:
        now = model.start_cache() if cache is None else cache
        out.append(step(model, now, memory, src_mask, tgt[:, t : t + 1]))
    return torch.cat(out, 1)


@pytest.mark.parametrize("norm_first", [False, True])
def test_step_by_step_equals_full_recomputation(norm_first):
    model = small_model(norm_first)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(3, 11, (4, 7), generator=g)
    src[1, 5:] = PAD  # a padded source row
    tgt = torch.randint(3, 13, (4, 9), generator=g)
    tgt[:, 0] = BOS
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)  # (B, T, d)
        cache = model.start_cache()
        cached = steps(model, cache, memory, src_mask, tgt, range(9))
    assert cache.length == 9
    own, cross = cache.layers[0]
    assert own.keys.shape == (4, 4, 9, 8)  # (B, h, t, d_head)
    assert cross.keys.shape == (4, 4, 7, 8)  # (B, h, S, d_head), once
    assert (cached - full).abs().max() < 1e-5


def test_a_prefix_block_then_steps_and_padding_in_the_target():
    model = small_model(seed=2)
    g = torch.Generator().manual_seed(3)
    src = torch.randint(3, 11, (3, 5), generator=g)
    tgt = torch.randint(3, 13, (3, 8), generator=g)
    tgt[:, 0] = BOS
    tgt[0, 6:] = PAD  # a finished row, as greedy decoding leaves it
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)
        cache = model.start_cache()
        head = step(model, cache, memory, src_mask, tgt[:, :5])
        tail = steps(model, cache, memory, src_mask, tgt, (5, 6, 7))
    cached = torch.cat([head, tail], dim=1)
    real = tgt != PAD  # states at PAD positions are never used
    assert (cached - full)[real].abs().max() < 1e-5


def test_the_cache_is_wrong_if_the_position_offset_is_ignored():
    # can fail: restart the cache at every step, the states no longer match
    model, src = small_model(seed=4), ids(11, (2, 5), 5)
    tgt = torch.tensor([[BOS, 4, 5, 6], [BOS, 7, 8, 9]])
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)
        fresh = steps(model, None, memory, src_mask, tgt, range(4))
    assert (fresh - full)[:, 1:].abs().max() > 1e-2


def test_reorder_follows_beam_parents():
    model, src = small_model(seed=6), ids(11, (1, 5), 7)
    with torch.no_grad():
        memory, src_mask = model.encode(src.expand(3, -1))
        cache = model.start_cache()
        tgt = torch.tensor([[BOS, 4], [BOS, 5], [BOS, 6]])
        step(model, cache, memory, src_mask, tgt)
        cache.reorder(torch.tensor([2, 2, 0]))
        nxt = torch.tensor([[7], [8], [9]])
        got = step(model, cache, memory, src_mask, nxt)[:, -1]
        beams = torch.tensor([[BOS, 6, 7], [BOS, 6, 8], [BOS, 4, 9]])
        want = model.decode(beams, memory, src_mask)[:, -1]
    assert (got - want).abs().max() < 1e-5


def test_flops_per_step_grow_linearly_with_cache_and_faster_without():
    model, T = small_model(seed=8, layers=1), 10
    src, tgt = ids(11, (1, 6), 9), ids(13, (1, T), 10)
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        cache = model.start_cache()
        cached, full = [], []
        for t in range(T):
            new, upto = tgt[:, t : t + 1], tgt[:, : t + 1]
            cached.append(
                count_flops(lambda: step(model, cache, memory, src_mask, new))
            )
            full.append(
                count_flops(lambda: model.decode(upto, memory, src_mask))
            )
    # the first step projects the memory for the cross-attention, later
    # steps reuse it: then constant + linear in t, second difference zero
    d1 = [b - a for a, b in zip(cached[1:], cached[2:])]
    assert len(set(d1)) == 1 and d1[0] > 0
    # full recomputation: quadratic in t, the second difference a constant > 0
    f1 = [b - a for a, b in zip(full, full[1:])]
    f2 = [b - a for a, b in zip(f1, f1[1:])]
    assert len(set(f2)) == 1 and f2[0] > 0
    # the first step computes exactly what recomputation does; later ones
    # skip the memory's projection and the past positions
    assert cached[0] == full[0]
    assert cached[1] < cached[0]
    assert full[-1] > 4 * cached[-1]


def test_padding_inside_the_cached_prefix_is_masked():
    # PAD before real tokens (a left-padded prompt): causality does not hide
    # it, so only the cache's padding mask keeps it out of later positions
    model = small_model(seed=11)
    g = torch.Generator().manual_seed(12)
    src = torch.randint(3, 11, (2, 5), generator=g)
    tgt = torch.tensor([[BOS, PAD, PAD, 4, 5, 6], [BOS, 7, 8, 9, 10, 11]])
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)
        cached = steps(model, model.start_cache(), memory, src_mask, tgt,
                       range(6))  # fmt: skip
        unmasked = model.decode(
            tgt, memory, src_mask, cache=_no_padding_mask(model)
        )
    real = tgt != PAD
    assert (cached - full)[real].abs().max() < 1e-5
    # and the mask matters here: attending to the PADs changes row 0
    assert (unmasked - full)[0, 3:].abs().max() > 1e-3


def _no_padding_mask(model) -> KVCache:
    """A cache whose mask is causal only (no padding mask)."""
    cache = model.start_cache()
    cache.extend = lambda tokens, pad_id: KVCache.extend(
        cache, tokens, pad_id=-1
    )
    return cache


def test_cached_and_uncached_decoding_fail_alike_past_max_len():
    sizes = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8)
    model = Transformer(11, 13, **sizes).eval()
    memory, src_mask = model.encode(torch.tensor([[3, 4, 5]]))
    decode = functools.partial(model.decode, memory=memory, src_mask=src_mask)
    tgt = torch.full((1, 9), 4)
    too_long = "sequence length 9 exceeds max_len=8"
    raises(ValueError, too_long, decode, tgt)
    cache = model.start_cache()
    decode(tgt[:, :8], cache=cache)
    raises(ValueError, too_long, decode, tgt[:, 8:], cache=cache)


def test_bad_input():
    model = small_model()
    with torch.no_grad():
        mem, mask = model.encode(torch.tensor([[3, 4]]))
        cache, bos = model.start_cache(), torch.tensor([[BOS]])
        decode = functools.partial(model.decode, memory=mem, src_mask=mask)
        raises(ValueError, "tgt", decode, bos[0], cache=cache)
        decode(bos, cache=cache)
        raises(ValueError, "batch", cache.extend, bos.repeat(2, 1), PAD)
        raises(TypeError, "cache", decode, bos, cache=KVCache)
    check = model.decoder.layers[0].self_attn.check_inputs
    raises(TypeError, "cache", check, mem, mem, mem, cache=(None, None))
    raises(TypeError, "static", AttentionCache, static=1)


def test_num_bytes_counts_both_attentions():
    model = small_model(layers=2)
    with torch.no_grad():
        memory, src_mask = model.encode(torch.tensor([[3, 4, 5, 6, 7]]))
        cache = model.start_cache()
        model.decode(
            torch.tensor([[BOS, 4, 5]]), memory, src_mask, cache=cache
        )
    # per layer: K and V, float32, (1, 4 heads, t, 8), t = 3 self + 5 cross
    assert cache.num_bytes() == 2 * 2 * 4 * 8 * 4 * (3 + 5)
