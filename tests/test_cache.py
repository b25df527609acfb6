"""The KV cache computes what full recomputation computes, at a cost that
grows linearly per step instead of quadratically."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from utils.cache import KVCache, decode_step, start_cache, supports_cache
from utils.decoding import BigramModel
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
        cache = start_cache(model, memory, src_mask)
        steps = [
            decode_step(model, cache, tgt[:, t : t + 1]) for t in range(9)
        ]
    cached = torch.cat(steps, dim=1)
    assert cache.length == 9
    assert cache.keys[0].shape == (4, 4, 9, 8)
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
        cache = start_cache(model, memory, src_mask)
        head = decode_step(model, cache, tgt[:, :5])
        tail = [
            decode_step(model, cache, tgt[:, t : t + 1]) for t in (5, 6, 7)
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
            decode_step(
                model, start_cache(model, memory, src_mask), tgt[:, t : t + 1]
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
        cache = start_cache(model, memory, src_mask)
        tgt = torch.tensor([[BOS, 4], [BOS, 5], [BOS, 6]])
        decode_step(model, cache, tgt)
        cache.reorder(torch.tensor([2, 2, 0]))
        nxt = torch.tensor([[7], [8], [9]])
        got = decode_step(model, cache, nxt)[:, -1]
        want = model.decode(
            torch.tensor([[BOS, 6, 7], [BOS, 6, 8], [BOS, 4, 9]]),
            memory,
            src_mask,
        )[:, -1]
    assert (got - want).abs().max() < 1e-5


def count_flops(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


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
        start = count_flops(lambda: start_cache(model, memory, src_mask))
        cache = start_cache(model, memory, src_mask)
        cached, full = [], []
        for t in range(T):
            cached.append(
                count_flops(
                    lambda: decode_step(model, cache, tgt[:, t : t + 1])
                )
            )
            full.append(
                count_flops(
                    lambda: model.decode(tgt[:, : t + 1], memory, src_mask)
                )
            )
    # cached: constant + linear in t, so the second difference is zero
    d1 = [b - a for a, b in zip(cached, cached[1:])]
    assert len(set(d1)) == 1 and d1[0] > 0
    # full recomputation: quadratic in t, the second difference is a positive
    # constant
    f1 = [b - a for a, b in zip(full, full[1:])]
    f2 = [b - a for a, b in zip(f1, f1[1:])]
    assert len(set(f2)) == 1 and f2[0] > 0
    # the first step costs the same once the cross-attention keys and values
    # (computed once by start_cache) are added; later steps do not
    assert start + cached[0] == full[0]
    assert full[-1] > 4 * cached[-1]


def test_supports_and_bad_input():
    assert supports_cache(small_model())
    bigram = BigramModel(torch.zeros(4, 4))
    assert not supports_cache(bigram)
    with pytest.raises(TypeError, match="model"):
        start_cache(bigram, torch.zeros(1, 1, 4), None)
    model = small_model()
    with torch.no_grad():
        memory, src_mask = model.encode(torch.tensor([[3, 4]]))
        cache = start_cache(model, memory, src_mask)
        with pytest.raises(ValueError, match="tokens"):
            decode_step(model, cache, torch.tensor([BOS]))
        with pytest.raises(ValueError, match="batch"):
            decode_step(model, cache, torch.tensor([[BOS], [BOS]]))
    with pytest.raises(TypeError, match="cache"):
        decode_step(model, KVCache, torch.tensor([[BOS]]))
    with pytest.raises(ValueError, match="memory"):
        start_cache(model, torch.zeros(2, 3), None)
