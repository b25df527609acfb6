"""utils/batches.py: vocabularies, padded batches, bucketing."""

from __future__ import annotations

import pytest
import torch

from tools.runs.numbers_task import chinese_numerals, english_words
from tools.runs.numbers_task import make_splits, source_vocab, target_vocab
from utils.batches import Vocab, encode_batch, make_batches, pad_fraction
from utils.batches import source_blocks
from tests.conftest import raises


def test_vocab_round_trip_and_specials():
    vs, vt = source_vocab(), target_vocab()
    assert (vs.pad_id, vs.bos_id, vs.eos_id) == (0, 1, 2)
    assert len(vt) == 3 + 14 and len(vs) == 3 + 30
    ids = vt.encode(list("一万零五"), bos=True)
    assert ids[0] == vt.bos_id and ids[-1] == vt.eos_id and len(ids) == 6
    assert vt.decode(ids + [vt.pad_id, 5]) == list("一万零五")  # stops at EOS
    assert vt.decode(torch.tensor(ids)) == list("一万零五")
    raises(ValueError, "not in the vocabulary", vs.encode, ["eleventy"])
    raises(TypeError, "not a str", vs.encode, "one")
    raises(ValueError, "outside", vt.decode, [99])
    raises(ValueError, "special", Vocab, ["<pad>"])


def test_encode_batch_layout():
    vs, vt = source_vocab(), target_vocab()
    pairs = [(english_words(n), chinese_numerals(n)) for n in (5, 12305)]
    src, tgt = encode_batch(pairs, vs, vt)
    assert src.shape == (2, 7) and tgt.shape == (2, 10)
    assert src[0].tolist() == [vs.stoi["five"], vs.eos_id] + [vs.pad_id] * 5
    assert tgt[0, :3].tolist() == [vt.bos_id, vt.stoi["五"], vt.eos_id]
    assert (tgt[0, 3:] == vt.pad_id).all() and (tgt[1] != vt.pad_id).all()
    raises(ValueError, "pairs", encode_batch, [], vs, vt)


def test_bucketing_keeps_every_pair_and_saves_padding():
    vs, vt = source_vocab(), target_vocab()
    pairs = make_splits(seed=0)["valid"]
    plain = make_batches(pairs, 32, vs, vt, seed=0, bucket=False)
    bucketed = make_batches(pairs, 32, vs, vt, seed=0, bucket=True)

    def rows(batches):
        return sorted(tuple(vs.decode(r)) for s, _ in batches for r in s)

    assert rows(plain) == rows(bucketed) == sorted(tuple(s) for s, _ in pairs)
    assert pad_fraction(bucketed) < 0.5 * pad_fraction(plain)
    raises(TypeError, "batch_size", make_batches, pairs, 3.0, vs, vt)


def test_source_blocks_hold_each_source_once_with_all_its_targets():
    vocabs = (Vocab("abc"), Vocab("xyz"))
    pairs = [(["a"], ["x"]), (["b"], ["y"]), (["a"], ["z"]), (["c"], ["x"])]
    blocks = source_blocks(pairs, 3, 2, vocabs)
    assert [refs for _, refs in blocks] == [
        [[["x"], ["z"]], [["y"]]],
        [[["x"]]],
    ]
    (src, _), _ = blocks
    assert torch.equal(
        src, encode_batch([(["a"], []), (["b"], [])], *vocabs)[0]
    )
    whole = source_blocks(pairs, 2, None, vocabs)  # one block, two sources
    assert len(whole) == 1 and whole[0][0].shape == (2, 2)
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        source_blocks(pairs, 0, None, vocabs)
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        source_blocks(pairs, 2, 0, vocabs)
