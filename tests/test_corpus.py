"""utils.corpus: the sentences, the vocabulary, and splits that share no
number."""

from __future__ import annotations

import pytest
import torch

from utils import corpus
from utils.translation import english_words


def test_splits_are_disjoint_seeded_and_cover_every_number():
    splits = corpus.make_splits(seed=0)
    sets = {k: set(v) for k, v in splits.items()}
    assert sets["train"].isdisjoint(sets["valid"])
    assert sets["train"].isdisjoint(sets["test"])
    assert sets["valid"].isdisjoint(sets["test"])
    assert set.union(*sets.values()) == set(range(1, corpus.MAX_NUMBER + 1))
    assert [len(splits[k]) for k in ("valid", "test")] == [100, 200]
    assert corpus.make_splits(seed=0) == splits
    assert corpus.make_splits(seed=1)["test"] != splits["test"]


def test_split_sizes_must_leave_training_data():
    with pytest.raises(ValueError, match="training data"):
        corpus.make_splits(n_valid=500, n_test=499)


def test_sentence_is_cls_words_equals_digits_eos():
    assert corpus.sentence(305) == [
        "[CLS]",
        "three",
        "hundred",
        "and",
        "five",
        "=",
        "3",
        "0",
        "5",
        "[EOS]",
    ]
    assert corpus.sentence(15, digits=False) == ["[CLS]", "fifteen", "[EOS]"]
    for n in (1, 99, 100, 999):
        assert corpus.sentence(n)[1:-1] == english_words(n) + ["="] + list(
            str(n)
        )
    for bad in (0, 1000):
        with pytest.raises(ValueError, match="n must be"):
            corpus.sentence(bad)


def test_vocabulary_has_every_token_once_and_specials_first():
    assert corpus.TOKENS[:4] == ["[PAD]", "[CLS]", "[MASK]", "[EOS]"]
    assert len(set(corpus.TOKENS)) == len(corpus.TOKENS)
    used = {t for n in range(1, 1000) for t in corpus.sentence(n)}
    assert used | {"[PAD]", "[MASK]"} == set(corpus.TOKENS)


def test_encode_pads_right_and_decode_inverts():
    ids = corpus.encode([7, 777])
    assert ids.shape == (2, len(corpus.sentence(777)))
    assert ids[0, len(corpus.sentence(7)) :].eq(corpus.PAD).all()
    assert corpus.decode(ids[0]) == "seven = 7"
    assert corpus.decode(ids[1], keep_specials=True).startswith("[CLS] seven")


def test_prefix_lengths_count_cls_words_and_equals():
    ids = corpus.encode([305, 7, 15])
    assert corpus.prefix_lengths(ids).tolist() == [6, 3, 3]
    assert corpus.prefix_lengths(
        corpus.encode([5], digits=False)
    ).tolist() == [0]
    assert isinstance(corpus.prefix_lengths(ids), torch.Tensor)
