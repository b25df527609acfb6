"""Count baselines: Kneser-Ney and its modified discounts by hand, sums to 1,
a word bigram that pays for every character; the stored rows recomputed."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tools.runs import ch11_baselines
from utils import bpe, kneser_ney, ngram
from utils import shakespeare as sh
from tests.conftest import raises, raising

# a b a b a c b over the alphabet {a, b, c} = {0, 1, 2}
TINY = [0, 1, 0, 1, 0, 2, 1]


def test_kneser_ney_by_hand():
    model = ngram.KneserNey(TINY, order=2, base=3)
    # Unigrams use continuation counts: a follows {b}, b follows {a, c},
    # c follows {a}: counts 1, 2, 1; D1 = n1 / (n1 + 2 n2) = 2 / 4; so
    # P1(a) = (1 - 1/2) / 4 + (1/2)(3/4)(1/3) = 1/4, P1(b) = 1/2.
    assert model.levels[0].discounts == (0.5, 0.5, 0.5)
    assert np.allclose(model.next_probs([]), [0.25, 0.5, 0.25])
    # Bigram counts ab 2, ac 1, ba 2, cb 1: D2 = 2 / (2 + 2*2) = 1/3.
    # After a (3 times, 2 kinds): P(b|a) = (2 - 1/3)/3 + (1/3)(2/3)(1/2)
    assert model.levels[1].discounts == pytest.approx([1 / 3] * 3)
    assert np.allclose(model.next_probs([0]), [1 / 18, 2 / 3, 5 / 18])
    assert np.allclose(model.next_probs([2]), [1 / 12, 5 / 6, 1 / 12])
    # the context "b" (twice, always a): P(a|b) = (2 - 1/3)/2 + (1/6)(1/4)
    assert model.next_probs([1])[0] == pytest.approx(5 / 6 + 1 / 24)
    # log2probs scores a sequence symbol by symbol; the first has no
    # context and is scored by the unigrams
    lp = model.log2probs([0, 1, 0])
    assert np.allclose(2.0**lp, [0.25, 2 / 3, 5 / 6 + 1 / 24])


# bigrams over a b c d = 0 1 2 3 and how often each was seen: the top
# order's counts-of-counts are n1..n4 = 4 (ad bd bc ab), 3 (cd dc ba), 1
# (dd), 1 (ac), with cb seen 5 times; the unigrams' continuation counts
# (how many different symbols come before) a 1, b 2, c 3, d 4: n1..n4 = 1
COUNTED = {(0, 3): 1, (1, 3): 1, (2, 3): 2, (3, 3): 3, (0, 2): 4,
           (1, 2): 1, (3, 2): 2, (0, 1): 1, (2, 1): 5, (1, 0): 2}  # fmt: skip


def chen_goodman(n1, n2, n3, n4) -> tuple[float, float, float]:
    y = n1 / (n1 + 2 * n2)
    return (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)


def test_modified_discounts_from_counts_of_counts():
    grams = [g for g, c in COUNTED.items() for _ in range(c)]
    model = ngram.KneserNey.from_grams(grams, base=4, modified=True)
    unigrams, bigrams = model.levels
    assert kneser_ney.counts_of_counts(bigrams.counts) == (4, 3, 1, 1)
    assert list(unigrams.counts) == [1, 2, 3, 4]  # a b c d
    # Y = 4 / (4 + 2*3) = 0.4: D1 = 1 - 2(0.4)(3/4), D2 = 2 - 3(0.4)(1/3),
    # D3+ = 3 - 4(0.4)(1/1); the unigrams: Y = 1/3, D = 1/3, 1, 5/3
    assert bigrams.discounts == pytest.approx(chen_goodman(4, 3, 1, 1))
    assert bigrams.discounts == pytest.approx((0.4, 1.6, 1.4))
    assert unigrams.discounts == pytest.approx((1 / 3, 1, 5 / 3))
    # P1(d) = (4 - 5/3)/10 + (1/3 + 1 + 2(5/3))/10 * 1/4 = 7/20; after c
    # (cd twice, cb 5 times): (2 - D2)/7 + (D2 + D3+)/7 * P1(d) = 29/140
    assert model.next_probs([])[3] == pytest.approx(7 / 20)
    assert model.next_probs([2])[3] == pytest.approx(29 / 140)
    # one discount: Y for every count, a different model
    plain = ngram.KneserNey.from_grams(grams, base=4)
    assert plain.levels[1].discounts == pytest.approx((0.4, 0.4, 0.4))
    assert plain.next_probs([2])[3] != pytest.approx(29 / 140)


def test_modified_discounts_fall_back_where_the_formula_cannot_serve():
    # no count of 3 (n3 = 0): D3+ is undefined and takes D2; counts 1 1 2
    # 2 2 5: Y = 2/8, D2 = 2 - 3 Y n3/n2 = 2
    seq = [0, 1, 2, 2, 3, 3, 4, 4] + [5] * 5
    model = ngram.KneserNey(seq, 1, 7, modified=True)
    assert model.levels[0].discounts == pytest.approx((0.25, 2.0, 2.0))
    # D2 = 2 - 3 (1/3)(4/1) < 0 would leave nothing for the unseen: D1
    counts = [1, 2] + [3] * 4
    seq = [s for s, c in enumerate(counts) for _ in range(c)]
    model = ngram.KneserNey(seq, 1, 8, modified=True)
    assert model.levels[0].discounts[:2] == pytest.approx((1 / 3, 1 / 3))
    assert model.next_probs([]).sum() == pytest.approx(1.0)
    assert model.next_probs([])[7] > 0


def test_an_unseen_symbol_and_context_still_get_probability():
    model = ngram.KneserNey(TINY, order=3, base=5)  # 3 and 4 never seen
    for context in ([], [4], [4, 3], [0, 1], [2, 2]):
        probs = model.next_probs(context)
        assert probs.sum() == pytest.approx(1.0, abs=1e-12)
        assert probs.min() > 0


def test_grams_listed_one_per_row():
    # the bigrams of TINY, one per row: the same model as from the sequence
    grams = np.stack([TINY[:-1], TINY[1:]], 1)
    listed = ngram.KneserNey.from_grams(grams, base=3)
    model = ngram.KneserNey(TINY, order=2, base=3)
    table = listed.probs([[0], [1], [2]])
    assert table.shape == (3, 3)
    for s in range(3):
        assert np.allclose(table[s], model.next_probs([s]))
    # any grams: rows need not chain; every row of probs sums to 1
    rows = ngram.KneserNey.from_grams([[0, 1, 2], [2, 1, 0], [0, 1, 0]], 4)
    probs = rows.probs([[0, 1], [3, 3], [2, 1]])
    assert np.allclose(probs.sum(1), 1.0) and probs.min() > 0
    # after (0, 1), 2 and 0 were seen once each, but "1 0" follows two
    # different symbols and "1 2" one: the continuation counts break the tie
    assert probs[0, 0] > probs[0, 2] > probs[0, 3]
    unigrams = ngram.KneserNey.from_grams([[2], [2], [1]], 3)
    assert unigrams.probs(np.zeros((1, 0), int))[0].argmax() == 2
    raises(ValueError, "contexts", rows.probs, [[0]])


@pytest.fixture(scope="module")
def small() -> tuple[str, str]:
    train = sh.split_works("train")
    return train[:300_000], sh.split_works("valid")[:20_000]


@pytest.mark.parametrize("order", [1, 3, 5])
def test_char_model_sums_to_one(order, small):
    train, _ = small
    model = ngram.char_model(train, order)
    for context in ("", "the", "\nMACB", "zzqx", "é"):
        probs = model.next_probs(list(context.encode()))
        assert probs.shape == (256,)
        assert probs.sum() == pytest.approx(1.0, abs=1e-9), context
        assert probs.min() > 0


# contexts never seen in training (bytes outside its ASCII among them)
UNSEEN = ("zzqx", "\xff\xfe", "é", "QQQQQQQQ")


def _last_bytes(context: str, width: int) -> list[int]:
    """The last ``width`` bytes of ``context``, spaces before if short."""
    data = b" " * width + context.encode()
    return list(data[len(data) - width :])


def test_modified_sums_to_one_at_every_order(small):
    """Over all 256 bytes, after seen contexts and unseen ones."""
    train, _ = small
    for order in range(1, 10):
        model = ngram.char_model(train, order, modified=True)
        width = order - 1
        contexts = ("", "the", "\nMACB", "ing ", *UNSEEN)
        grid = np.array([_last_bytes(c, width) for c in contexts], int)
        probs = model.probs(grid.reshape(len(contexts), width))
        assert probs.shape == (len(contexts), 256)
        assert np.allclose(probs.sum(1), 1.0, atol=1e-9), order
        assert probs.min() > 0
        # a shorter context: the lower orders alone, also a distribution
        short = model.next_probs(list(b"zq"[: max(width - 1, 0)]))
        assert short.sum() == pytest.approx(1.0, abs=1e-9)


def test_modified_sums_to_one_over_a_token_vocabulary():
    """BPE-sized: 1024 symbols, 300 of them never seen in training."""
    rng = np.random.default_rng(0)
    seq = (rng.zipf(1.3, 50_000) - 1) % 724  # skewed, as tokens are
    model = ngram.KneserNey(seq, 4, 1024, modified=True)
    contexts = np.array([seq[100:103], seq[:3], [5, 900, 1023], [1000] * 3])
    probs = model.probs(contexts)
    assert np.allclose(probs.sum(1), 1.0, atol=1e-9)
    assert probs[:, 724:].min() > 0  # the never-seen tokens too


def test_char_bits_are_the_sum_of_the_log_probabilities(small):
    train, valid = small
    model = ngram.char_model(train, 3)
    bits = ngram.text_bits(model, valid)
    by_hand = 0.0
    data = list(valid.encode())
    for i in range(30):  # the first 30 characters, one at a time
        context = data[max(i - 2, 0) : i]
        by_hand -= math.log2(model.next_probs(context)[data[i]])
    first = -model.log2probs(data[:30]).sum()
    assert first == pytest.approx(by_hand)
    assert 2.0 < bits < 4.0
    assert ngram.text_bits(ngram.char_model(train, 5), valid) < bits


def test_word_tokens_cover_every_character():
    text = "O'er the hills, nam'd 'tis\n\n  [Exit.] 42 café"
    tokens = ngram.tokenize_words(text)
    assert "".join(tokens) == text
    assert tokens[:4] == ["O'er", " ", "the", " "]
    assert "nam'd" in tokens and "'" in tokens and "tis" in tokens
    assert "café" in tokens and "4" in tokens


def test_word_bigram_pays_for_every_character():
    train = "the cat sat on the mat. the cat ran. a dog sat.\n" * 3
    model = ngram.WordBigram(train + "zebra", min_count=2, spell_order=3)
    assert "zebra" not in model.words and "cat" in model.words
    # the bigram's distribution over the vocabulary and <unk> sums to 1
    ids = model._ids(["the"])
    probs = model.bigram.next_probs(ids)
    assert probs.shape == (len(model.words) + 1,)
    assert probs.sum() == pytest.approx(1.0)
    # so does the speller's, over 256 bytes and the end mark
    assert model.speller.next_probs([256, 256]).sum() == pytest.approx(1.0)
    # a held-out text with an unknown word: bigram bits + its spelling
    held_out = "the cat sat on the yak."
    out = model.bits(held_out)
    assert out["chars"] == len(held_out) and out["unknown"] == 1
    tokens = ngram.tokenize_words(held_out)
    bigram_bits = -model.bigram.log2probs(model._ids(tokens)).sum()
    spell = [256, 256, *b"yak", 256]
    spell_bits = -model.speller.log2probs(spell, start=2).sum()
    assert out["spelling_bits"] == pytest.approx(spell_bits)
    assert out["bits"] == pytest.approx(bigram_bits + spell_bits)
    assert out["bits_per_char"] == pytest.approx(out["bits"] / len(held_out))


def test_the_codes_hold_the_symbols_seen_only():
    assert ngram.KneserNey(TINY, order=8, base=256).radix == 4  # 3 seen


BAD = """
ValueError | grams | ngram.KneserNey.from_grams([0, 1], 3)
TypeError | grams | ngram.KneserNey.from_grams([[0.5, 1.0]], 3)
ValueError | grams | ngram.KneserNey.from_grams([[0, 5]], 3)
ValueError | order | ngram.KneserNey(TINY, order=0, base=3)
TypeError | order | ngram.KneserNey(TINY, order=2.0, base=3)
ValueError | 256 symbols seen: codes overflow | ngram.KneserNey(np.arange(256),
    order=8, base=256)
TypeError | modified | ngram.KneserNey(TINY, order=2, base=3, modified="yes")
TypeError | text | ngram.token_bits(ngram.KneserNey(TINY, 2, 3), TINY, TINY)
ValueError | empty | ngram.token_bits(ngram.KneserNey(TINY, 2, 3), [], "")
ValueError | seq | ngram.KneserNey(TINY, order=2, base=2)
TypeError | seq | ngram.KneserNey([0.5, 1.0], order=2, base=3)
ValueError | seq must be 1-D | ngram.KneserNey([[0, 1]], order=2, base=3)
TypeError | text | ngram.char_model(b"abc", 2)
ValueError | text | ngram.text_bits(ngram.char_model("abc", 2), "")
"""


@pytest.mark.parametrize("call, error, match", raising(BAD))
def test_bad_arguments(call, error, match):
    raises(error, match, eval, call, globals())


def _stored() -> dict:
    return json.loads(ch11_baselines.OUT.read_text())


def test_stored_baselines_name_this_data():
    stored = _stored()
    assert stored["data"] == sh.fingerprint()
    orders = [row["order"] for row in stored["char_kn"]]
    assert orders == list(range(1, 8))
    valid = [row["valid"] for row in stored["char_kn"]]
    assert valid[:6] == sorted(valid[:6], reverse=True)  # more context helps
    word = stored["word_bigram"]
    assert word["valid"]["chars"] == len(sh.split_works("valid"))
    assert word["test"]["chars"] == len(sh.split_works("test"))


def test_stored_rows_recomputed():
    stored = _stored()
    texts = sh.split_works()
    five = ngram.char_model(texts["train"], 5)
    row = stored["char_kn"][4]
    for split in ("valid", "test"):
        bits = ngram.text_bits(five, texts[split])
        assert bits == pytest.approx(row[split], abs=2e-5), split
    word = stored["word_bigram"]
    model = ngram.WordBigram(
        texts["train"], word["min_count"], word["spell_order"]
    )
    got, want = model.bits(texts["valid"]), word["valid"]["bits_per_char"]
    assert got["bits_per_char"] == pytest.approx(want, abs=2e-5)
    assert got["unknown"] == word["valid"]["unknown"]
    assert len(model.words) == word["vocab"]


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return sh.split_works()


def test_modified_beats_one_discount_on_the_held_out_plays(texts):
    """Order 5: three discounts give fewer bits (Chen and Goodman's)."""
    one = ngram.char_model(texts["train"], 5)
    three = ngram.char_model(texts["train"], 5, modified=True)
    for split in ("valid", "test"):
        bits = [ngram.text_bits(model, texts[split]) for model in (one, three)]
        assert bits[0] - bits[1] > 0.01, split


def test_stored_modified_rows(texts):
    stored = _stored()
    mkn = stored["char_mkn"]
    assert [row["order"] for row in mkn["rows"]] == list(range(1, 10))
    best = min(mkn["rows"], key=lambda row: row["valid"])
    assert mkn["best_on_valid"] == best["order"]
    kn = {row["order"]: row for row in stored["char_kn"]}
    for row in mkn["rows"][2:7]:  # orders 3-7: below one discount (at 2,
        assert row["valid"] < kn[row["order"]]["valid"]  # above, a little)
    # D1 < D2 < D3+ at every order, as Chen and Goodman found on their
    # text; but the unigram model's: its bytes' n1..n4 are 1, 0, 2, 1, so
    # Y = 1, D2 falls back to D1 and D3+ = 3 - 4 (1/2) = 1
    assert mkn["rows"][0]["discounts"] == [[1.0, 1.0, 1.0]]
    for row in mkn["rows"][1:]:
        for d1, d2, d3 in row["discounts"]:
            assert d1 < d2 < d3, row["order"]
    row = mkn["rows"][4]
    five = ngram.char_model(texts["train"], 5, modified=True)
    rounded = [[round(d, 4) for d in lv.discounts] for lv in five.levels]
    assert row["discounts"] == rounded
    for split in ("valid", "test"):
        bits = ngram.text_bits(five, texts[split])
        assert bits == pytest.approx(row[split], abs=2e-5), split


def test_stored_bpe_token_rows(texts):
    stored = _stored()["bpe_mkn"]
    vocab = stored["vocab_size"]
    merges = bpe.train_bpe(texts["train"], vocab)
    ids = {s: np.array(bpe.encode(texts[s], merges)) for s in texts}
    assert {s: len(i) for s, i in ids.items()} == stored["tokens"]
    row = stored["rows"][2]
    three = ngram.KneserNey(ids["train"], 3, vocab, modified=True)
    for split in ("valid", "test"):
        bits = ngram.token_bits(three, ids[split], texts[split])
        assert bits == pytest.approx(row[split], abs=2e-5), split
