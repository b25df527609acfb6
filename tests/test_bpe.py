"""Byte-level BPE from scratch: exact round trips, a training run small
enough to follow by hand, and agreement with Hugging Face ``tokenizers``
(its byte-level BPE trained on the same text with the same settings)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from utils import bpe
from utils import shakespeare as sh

UNICODE = "naïve café — “quotes” 汉字 😀\n\tend_of_line  _x_ 42!"


@pytest.fixture(scope="module")
def train_text() -> str:
    return sh.split_works("train")


@pytest.fixture(scope="module")
def valid_text() -> str:
    return sh.split_works("valid")


def test_pretokenize_cuts_like_gpt2():
    assert bpe.pretokenize("Thou art  nam'd, 2024 times!\n\n  Go") == [
        "Thou", " art", " ", " nam", "'d", ",", " 2024", " times", "!",
        "\n\n ", " Go",
    ]  # fmt: skip
    for text in ("", " ", UNICODE, "a\n"):
        assert "".join(bpe.pretokenize(text)) == text


def test_merges_by_hand():
    # aaabdaaabac: (a,a) occurs 4 times (overlaps counted) -> 256; then
    # (a,b) and (256,a) tie at 2: the smaller ids win -> 257 = "ab"; then
    # (256,257) -> 258 = "aaab"; then four pairs of count 1: (a,c) is the
    # smallest.
    merges = bpe.train_bpe("aaabdaaabac", 260)
    a, b, c = 97, 98, 99
    assert merges == {(a, a): 256, (a, b): 257, (256, 257): 258, (a, c): 259}
    assert bpe.vocab(merges)[256:] == [b"aa", b"ab", b"aaab", b"ac"]
    assert bpe.encode("aaabdaaabac", merges) == [258, 100, 258, 259]
    assert bpe.merge([a, a, a], (a, a), 256) == [256, a]  # left to right
    # no pair left: fewer merges than asked for, never a merge across chunks
    assert bpe.train_bpe("ab ab", 1000) == {(a, b): 256, (32, 256): 257}


@pytest.mark.parametrize("text", ["", "a", UNICODE, "   \n\n x", "🙂" * 9])
def test_round_trip_is_exact(text, train_text):
    merges = bpe.train_bpe(train_text[:200_000] + UNICODE, 600)
    ids = bpe.encode(text, merges)
    assert bpe.decode(ids, merges) == text
    assert all(0 <= i < 600 for i in ids)


def test_training_counts_distinct_chunks(train_text):
    chunks = bpe.pretokenize(train_text)
    assert len(chunks) > 1_000_000  # millions of characters ...
    assert 10_000 < len(set(chunks)) < 100_000  # ... tens of thousands


def test_round_trip_on_the_validation_plays(train_text, valid_text):
    merges = bpe.train_bpe(train_text, 1024)
    assert len(merges) == 768
    ids = bpe.encode(valid_text, merges)
    assert bpe.decode(ids, merges) == valid_text
    assert 2.2 < len(valid_text.encode()) / len(ids) < 2.4  # bytes per token
    from tools.runs import ch11_baselines  # the stored table's row

    stored = json.loads(ch11_baselines.OUT.read_text())["bpe"]
    row = next(r for r in stored if r["vocab_size"] == 1024)
    assert row["valid_tokens"] == len(ids)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: bpe.train_bpe("abc", 300.0), TypeError, "vocab_size"),
        (lambda: bpe.train_bpe("abc", 100), ValueError, "vocab_size"),
        (lambda: bpe.train_bpe(b"abc", 300), TypeError, "text"),
        (lambda: bpe.encode("abc", [(97, 98)]), TypeError, "merges"),
        (lambda: bpe.encode("abc", {(97, 98): 300}), ValueError, "merges"),
        (lambda: bpe.decode([97, 256], {}), ValueError, r"ids\[1\]"),
        (lambda: bpe.decode([97.0], {}), TypeError, r"ids\[0\]"),
    ],
)
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---- agreement with Hugging Face tokenizers (byte-level BPE) ----

tokenizers = pytest.importorskip("tokenizers")
from tools.runs.ch11_baselines import (  # noqa: E402
    as_bytes,
    hf_merges,
    hf_tokenizer,
    merges_in_hf_byte_order,
    pairs,
)


def test_pretokenize_matches_hf_byte_level(valid_text):
    from tokenizers import pre_tokenizers

    level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    for text in (valid_text, UNICODE):
        theirs = [as_bytes(t) for t, _ in level.pre_tokenize_str(text)]
        assert theirs == [c.encode() for c in bpe.pretokenize(text)]
    # The one known difference: GPT-2's digits are Unicode's numbers, ours
    # re's decimal digits, so "²" is a letter to re (the text has none).
    assert bpe.pretokenize(" 42²") == [" 42", "²"]
    assert [t for t, _ in level.pre_tokenize_str(" 42²")] == ["Ġ42Â²"]


@pytest.mark.parametrize("vocab_size", [1024, 4096])
def test_same_merges_as_hf(vocab_size, train_text):
    theirs = hf_merges(hf_tokenizer(train_text, vocab_size))
    ours = pairs(bpe.train_bpe(train_text, vocab_size))
    assert len(ours) == len(theirs) == vocab_size - 256
    assert set(ours) == set(theirs)  # the same merges ...
    # ... in the same order up to ties: HF breaks a tie of counts by the
    # smaller ids too, but numbers the 256 bytes in the order of their
    # printable characters (space, shown as chr(288), after the letters).
    # Merge 272 is the first tie that the numbering decides: " O" and "au"
    # both occur 1,779 times.
    first = next(i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y)
    assert first == 271
    assert {ours[first], theirs[first]} == {(b" ", b"O"), (b"a", b"u")}
    chunks = Counter(bpe.pretokenize(train_text))
    words = [list(chunk.encode()) for chunk in chunks]
    bpe.learn_merges(words, list(chunks.values()), first)  # merges words
    counts = Counter()
    for word, n in zip(words, chunks.values()):
        for pair in zip(word, word[1:]):
            counts[pair] += n
    assert counts.most_common(2) == [((32, 79), 1779), ((97, 117), 1779)]
    # With the bytes numbered as HF numbers them, the same loop gives HF's
    # merges exactly, in order: the only difference was the tie-breaking.
    assert merges_in_hf_byte_order(train_text, vocab_size) == theirs


def test_encode_matches_hf(train_text, valid_text):
    tok = hf_tokenizer(train_text, 1024)
    # HF's merges, in HF's order, written with our ids
    ids = {bytes([b]): b for b in range(256)}
    merges = {}
    for a, b in hf_merges(tok):
        merges[(ids[a], ids[b])] = ids[a + b] = 256 + len(merges)
    text = valid_text + UNICODE
    table = bpe.vocab(merges)
    ours = [table[i] for i in bpe.encode(text, merges)]
    theirs = [as_bytes(t) for t in tok.encode(text).tokens]
    assert ours == theirs
