"""The KV cache computes what full recomputation computes, at a cost that
grows linearly per step instead of quadratically. The cached step is
``Transformer.decode(tokens, memory, src_mask, cache=...)``: the model's own
code path, fed only the new positions."""

from __future__ import annotations

import pytest
import torch

from utils.attention import AttentionCache
from utils.cache import KVCache
from utils.complexity import count_flops
from utils.model import Transformer

PAD, BOS, EOS = 0, 1, 2


def small_model(norm_first=False, seed=0, layers=2):
    torch.manual_seed(seed)
    model = Transformer(
        11,
        13,
        d_model=32,
        num_heads=4,
        num_layers=layers,
        d_ff=64,
        dropout=0.1,
        norm_first=norm_first,
    )
    return model.eval()


def step(model, cache, memory, src_mask, tokens):
    return model.decode(tokens, memory, src_mask, cache=cache)


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
        steps = [
            step(model, cache, memory, src_mask, tgt[:, t : t + 1])
            for t in range(9)
        ]
    cached = torch.cat(steps, dim=1)
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
        tail = [
            step(model, cache, memory, src_mask, tgt[:, t : t + 1])
            for t in (5, 6, 7)
        ]
    cached = torch.cat([head, *tail], dim=1)
    real = tgt != PAD  # states at PAD positions are never used
    assert (cached - full)[real].abs().max() < 1e-5


def test_the_cache_is_wrong_if_the_position_offset_is_ignored():
    # a check that can fail: restart the cache at every step (position 0,
    # no history) and the states no longer match
    model = small_model(seed=4)
    src = torch.randint(
        3, 11, (2, 5), generator=torch.Generator().manual_seed(5)
    )
    tgt = torch.tensor([[BOS, 4, 5, 6], [BOS, 7, 8, 9]])
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        full = model.decode(tgt, memory, src_mask)
        fresh = [
            step(
                model, model.start_cache(), memory, src_mask, tgt[:, t : t + 1]
            )
            for t in range(4)
        ]
    assert (torch.cat(fresh, 1) - full)[:, 1:].abs().max() > 1e-2


def test_reorder_follows_beam_parents():
    model = small_model(seed=6)
    src = torch.randint(
        3, 11, (1, 5), generator=torch.Generator().manual_seed(7)
    )
    with torch.no_grad():
        memory, src_mask = model.encode(src.expand(3, -1))
        cache = model.start_cache()
        tgt = torch.tensor([[BOS, 4], [BOS, 5], [BOS, 6]])
        step(model, cache, memory, src_mask, tgt)
        cache.reorder(torch.tensor([2, 2, 0]))
        nxt = torch.tensor([[7], [8], [9]])
        got = step(model, cache, memory, src_mask, nxt)[:, -1]
        want = model.decode(
            torch.tensor([[BOS, 6, 7], [BOS, 6, 8], [BOS, 4, 9]]),
            memory,
            src_mask,
        )[:, -1]
    assert (got - want).abs().max() < 1e-5


def test_flops_per_step_grow_linearly_with_cache_and_faster_without():
    model, T = small_model(seed=8, layers=1), 10
    src = torch.randint(
        3, 11, (1, 6), generator=torch.Generator().manual_seed(9)
    )
    tgt = torch.randint(
        3, 13, (1, T), generator=torch.Generator().manual_seed(10)
    )
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        cache = model.start_cache()
        cached, full = [], []
        for t in range(T):
            cached.append(
                count_flops(
                    lambda: step(
                        model, cache, memory, src_mask, tgt[:, t : t + 1]
                    )
                )
            )
            full.append(
                count_flops(
                    lambda: model.decode(tgt[:, : t + 1], memory, src_mask)
                )
            )
    # the first step projects the memory for the cross-attention, later
    # steps reuse it: then constant + linear in t, second difference zero
    d1 = [b - a for a, b in zip(cached[1:], cached[2:])]
    assert len(set(d1)) == 1 and d1[0] > 0
    # full recomputation: quadratic in t, the second difference is a positive
    # constant
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
        cache = model.start_cache()
        cached = torch.cat(
            [
                step(model, cache, memory, src_mask, tgt[:, t : t + 1])
                for t in range(6)
            ],
            dim=1,
        )
        unmasked = model.decode(
            tgt, memory, src_mask, cache=_no_padding_mask(model)
        )
    real = tgt != PAD
    assert (cached - full)[real].abs().max() < 1e-5
    # and the mask matters here: attending to the PADs changes row 0
    assert (unmasked - full)[0, 3:].abs().max() > 1e-3


def _no_padding_mask(model) -> KVCache:
    """A cache whose mask is causal only: what the cache computes without
    its padding mask."""
    cache = model.start_cache()
    cache.extend = lambda tokens, pad_id: KVCache.extend(
        cache, tokens, pad_id=-1
    )
    return cache


def test_cached_and_uncached_decoding_fail_alike_past_max_len():
    model = Transformer(
        11, 13, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8
    )
    model.eval()
    src = torch.tensor([[3, 4, 5]])
    memory, src_mask = model.encode(src)
    tgt = torch.full((1, 9), 4)
    with pytest.raises(
        ValueError, match="sequence length 9 exceeds max_len=8"
    ):
        model.decode(tgt, memory, src_mask)
    cache = model.start_cache()
    model.decode(tgt[:, :8], memory, src_mask, cache=cache)
    with pytest.raises(
        ValueError, match="sequence length 9 exceeds max_len=8"
    ):
        model.decode(tgt[:, 8:], memory, src_mask, cache=cache)


def test_bad_input():
    model = small_model()
    with torch.no_grad():
        memory, src_mask = model.encode(torch.tensor([[3, 4]]))
        cache = model.start_cache()
        with pytest.raises(ValueError, match="tgt"):
            model.decode(torch.tensor([BOS]), memory, src_mask, cache=cache)
        model.decode(torch.tensor([[BOS]]), memory, src_mask, cache=cache)
        with pytest.raises(ValueError, match="batch"):
            cache.extend(torch.tensor([[BOS], [BOS]]), PAD)
        with pytest.raises(TypeError, match="cache"):
            model.decode(
                torch.tensor([[BOS]]), memory, src_mask, cache=KVCache
            )
    with pytest.raises(TypeError, match="cache"):
        model.decoder.layers[0].self_attn.check_inputs(
            memory, memory, memory, cache=(None, None)
        )
    with pytest.raises(TypeError, match="static"):
        AttentionCache(static=1)


def test_num_bytes_counts_both_attentions():
    model = small_model(layers=2)
    with torch.no_grad():
        memory, src_mask = model.encode(torch.tensor([[3, 4, 5, 6, 7]]))
        cache = model.start_cache()
        model.decode(
            torch.tensor([[BOS, 4, 5]]), memory, src_mask, cache=cache
        )
    # per layer: keys and values, float32, (1, 4 heads, t, 8): t = 3 (self)
    # and t = 5 (cross)
    assert cache.num_bytes() == 2 * 2 * 4 * 8 * 4 * (3 + 5)
