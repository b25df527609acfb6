"""BLEU from scratch, checked on cases small enough to compute by hand."""

from __future__ import annotations

import math
import random

import pytest

from utils.bleu import brevity_penalty, closest_ref_length, corpus_bleu
from utils.bleu import modified_precision, ngrams, sentence_bleu
from tests.conftest import raises

REF = "Thank you so much , my brother".split()
CAT = "the cat sat on the mat".split()
CAT_REF = "the cat is on the mat".split()
PLAIN = dict(tokenize="none", smooth_method="none")  # sacreBLEU's settings


def test_ngrams_are_contiguous_and_counted():
    grams = ngrams("Thank you so much".split(), 2)
    assert grams == {("Thank", "you"): 1, ("you", "so"): 1, ("so", "much"): 1}
    assert ngrams("a b a b".split(), 2)[("a", "b")] == 2
    assert ngrams(["a"], 2) == {}


def test_thank_thank_thank_is_clipped_to_one_third():
    assert modified_precision("Thank Thank Thank".split(), [REF], 1) == (1, 3)


def test_clipping_uses_the_largest_count_in_any_single_reference():
    cand = "the the the".split()
    refs = ["the cat".split(), "the the dog".split()]
    assert modified_precision(cand, refs, 1) == (2, 3)  # not 1 + 2 = 3


def test_hand_computed_precisions_and_scores():
    # unigrams: the x2, cat, on, mat match; sat does not -> 5/6
    # bigrams: "the cat", "on the", "the mat" match -> 3/5;
    # trigrams: only "on the mat" -> 1/4
    got = [modified_precision(CAT, [CAT_REF], n) for n in (1, 2, 3, 4)]
    assert got == [(5, 6), (3, 5), (1, 4), (0, 3)]
    bleu = [sentence_bleu(CAT, [CAT_REF], max_n=n) for n in (2, 3, 4)]
    assert math.isclose(bleu[0], math.sqrt(5 / 6 * 3 / 5))  # sqrt(1/2)
    assert math.isclose(bleu[1], 0.5)  # (1/8)^(1/3)
    assert bleu[2] == 0.0  # p_4 = 0


def test_weights_are_not_raised_to_an_extra_power():
    # the formula with an extra ^(1/N) would give sqrt(sqrt(1/2)) = 0.84
    # here instead of 0.71
    two = sentence_bleu(CAT, [CAT_REF], max_n=2)
    assert not math.isclose(two, math.sqrt(0.5) ** 0.5)
    w = sentence_bleu(CAT, [CAT_REF], max_n=2, weights=[0.25, 0.75])
    assert math.isclose(w, (5 / 6) ** 0.25 * (3 / 5) ** 0.75)


def test_identical_is_one_and_no_overlap_is_zero():
    assert sentence_bleu(REF, [REF]) == 1.0
    assert sentence_bleu("a b c d e".split(), [REF]) == 0.0


def test_brevity_penalty():
    assert brevity_penalty(8, 7) == 1.0
    assert math.isclose(brevity_penalty(7, 7), 1.0)
    assert math.isclose(brevity_penalty(2, 7), math.exp(1 - 7 / 2))
    assert brevity_penalty(0, 7) == 0.0
    # "Thank you": both n-gram precisions are perfect, only the penalty remains
    thank_you = sentence_bleu("Thank you".split(), [REF], max_n=2)
    assert math.isclose(thank_you, math.exp(-2.5))


def test_closest_reference_length_prefers_the_shorter_on_a_tie():
    refs = ["a b c".split(), "a b c d e".split()]
    assert closest_ref_length("a b c d".split(), refs) == 3
    assert closest_ref_length("a b c d e f".split(), refs) == 5


def test_corpus_bleu_pools_counts_before_dividing():
    cands = [CAT, "Thank you".split()]
    refs = [[CAT_REF], [REF]]
    # unigrams (5 + 2) / (6 + 2), bigrams (3 + 1) / (5 + 1),
    # lengths c = 8, r = 13
    expected = math.exp(1 - 13 / 8) * math.sqrt(7 / 8 * 4 / 6)
    assert math.isclose(corpus_bleu(cands, refs, max_n=2), expected)
    each = sentence_bleu(CAT, [CAT_REF], 2), sentence_bleu(cands[1], [REF], 2)
    assert not math.isclose(corpus_bleu(cands, refs, max_n=2), sum(each) / 2)


def test_works_on_token_ids():
    ids = sentence_bleu([5, 6, 7, 8], [[5, 6, 7, 8, 9]], max_n=4)
    assert math.isclose(ids, math.exp(1 - 5 / 4))


def test_bad_input():
    raises(TypeError, "list of tokens", sentence_bleu, "the cat", [CAT_REF])
    raises(TypeError, "references", sentence_bleu, CAT, " ".join(CAT_REF))
    raises(ValueError, "weights", sentence_bleu, CAT, [CAT_REF], max_n=2,
           weights=[0.5, 0.6])  # fmt: skip
    raises(ValueError, "max_n", sentence_bleu, CAT, [CAT_REF], max_n=0)
    raises(ValueError, "candidates", corpus_bleu, [CAT, CAT], [[CAT_REF]])
    raises(ValueError, "lengths", brevity_penalty, -1, 3)


def _random_corpus(g: random.Random, n_sent: int, n_refs: int):
    words = ["a", "b", "c", "d", "e"][: g.randint(3, 4)]

    def sentence():
        return [g.choice(words) for _ in range(g.randint(1, 12))]

    cands = [sentence() for _ in range(n_sent)]
    refs = [[sentence() for _ in range(n_refs)] for _ in range(n_sent)]
    return cands, refs


def test_equals_sacrebleu_on_random_corpora():
    """300 seeded random corpora, no smoothing: exactly sacreBLEU's."""
    sacrebleu = pytest.importorskip("sacrebleu")
    g = random.Random(0)
    nonzero = 0
    for _ in range(300):
        n_refs = g.randint(1, 3)
        cands, refs = _random_corpus(g, g.randint(2, 10), n_refs)
        theirs = sacrebleu.corpus_bleu(
            [" ".join(c) for c in cands],
            [[" ".join(r[j]) for r in refs] for j in range(n_refs)],
            force=True, **PLAIN,
        )  # fmt: skip
        ours = corpus_bleu(cands, refs)
        assert abs(100 * ours - theirs.score) < 1e-6 * 100
        for n in range(1, 5):
            m, t = 0, 0
            for c, r in zip(cands, refs):
                mc, tc = modified_precision(c, r, n)
                m, t = m + mc, t + tc
            assert (m, t) == (theirs.counts[n - 1], theirs.totals[n - 1])
        r_len = sum(closest_ref_length(c, r) for c, r in zip(cands, refs))
        assert r_len == theirs.ref_len
        assert sum(map(len, cands)) == theirs.sys_len
        nonzero += ours > 0
    # the comparison is informative: half the corpora have every p_n > 0
    assert nonzero > 120


def test_sentence_level_mean_differs_from_corpus_level_like_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    cands = [CAT, "Thank you so much , my brother".split()]
    refs = [[CAT_REF], [REF]]
    per_sentence = [
        sacrebleu.corpus_bleu([" ".join(c)], [[" ".join(r[0])]], **PLAIN).score
        for c, r in zip(cands, refs)
    ]
    ours = [sentence_bleu(c, r) for c, r in zip(cands, refs)]
    assert ours == pytest.approx([s / 100 for s in per_sentence], abs=1e-9)
    # the first sentence has no matching 4-gram: its BLEU is 0, the mean
    # halves the perfect second one, while the corpus pools the counts
    assert ours == [0.0, 1.0]
    assert corpus_bleu(cands, refs) > 0.7


def test_wrong_kinds_are_type_errors_and_wrong_values_value_errors():
    # the rule of utils.checks: TypeError for the wrong kind of thing,
    # ValueError for the right kind with a wrong value
    raises(TypeError, "n must be an int", ngrams, ["a"], 2.0)
    raises(ValueError, "n must be an int >= 1", ngrams, ["a"], 0)
    raises(TypeError, "max_n", corpus_bleu, [["a"]], [[["a"]]], max_n="4")
    raises(TypeError, "candidates", corpus_bleu, "a b", [[["a"]]])
    raises(ValueError, "candidates must not be empty", corpus_bleu, [], [])
    raises(ValueError, "references must not be empty", corpus_bleu, [["a"]],
           [[]])  # fmt: skip
