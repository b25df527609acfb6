"""The number-translation task: hand-checked translations, disjoint splits, vocabularies, batches."""

from __future__ import annotations

import pytest
import torch

from utils.numerals import MAX_NUMBER, chinese_numerals, english_words
from utils.translation import (
    Vocab,
    encode_batch,
    make_batches,
    make_splits,
    pad_fraction,
    source_vocab,
    target_vocab,
)

# Written by hand (not by the code under test): number, English, Chinese.
HAND = [
    (7, "seven", "七"),
    (10, "ten", "十"),
    (19, "nineteen", "十九"),
    (40, "forty", "四十"),
    (101, "one hundred and one", "一百零一"),
    (110, "one hundred and ten", "一百一十"),
    (1001, "one thousand and one", "一千零一"),
    (2020, "two thousand and twenty", "二千零二十"),
    (10010, "ten thousand and ten", "一万零一十"),
    (20017, "twenty thousand and seventeen", "二万零一十七"),
    (30600, "thirty thousand six hundred", "三万零六百"),
    (12305, "twelve thousand three hundred and five", "一万二千三百零五"),
    (
        45678,
        "forty five thousand six hundred and seventy eight",
        "四万五千六百七十八",
    ),
    (
        99999,
        "ninety nine thousand nine hundred and ninety nine",
        "九万九千九百九十九",
    ),
]


@pytest.mark.parametrize("n, en, zh", HAND)
def test_hand_translated_numbers(n, en, zh):
    assert english_words(n) == en.split()
    assert chinese_numerals(n) == list(zh)


def _chinese_value(chars):
    """Read Chinese numerals back into an int (an independent parser, for the round trip)."""
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")}
    units = {"十": 10, "百": 100, "千": 1000, "万": 10000}
    total, digit = 0, None
    for c in chars:
        if c in digits:
            digit = digits[c]
        else:
            total += (1 if digit is None else digit) * units[c]
            digit = None
    return total + (digit or 0)


def test_every_number_reads_back_and_is_unique():
    seen = set()
    for n in range(1, MAX_NUMBER + 1):
        zh = chinese_numerals(n)
        assert _chinese_value(zh) == n
        assert zh[0] != "零" and zh[-1] != "零" and "零零" not in "".join(zh)
        seen.add(" ".join(english_words(n)))
    assert len(seen) == MAX_NUMBER


def test_splits_are_disjoint_cover_everything_and_long_is_longer():
    s = make_splits(seed=0)
    keys = {k: {" ".join(src) for src, _ in v} for k, v in s.items()}
    assert set(s) == {"train", "valid", "test", "long"}
    assert sum(len(v) for v in keys.values()) == MAX_NUMBER
    names = list(keys)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not keys[a] & keys[b], (a, b)
    longest_train = max(
        len(src) for src, _ in s["train"] + s["valid"] + s["test"]
    )
    assert min(len(src) for src, _ in s["long"]) > longest_train
    assert len(s["valid"]) == 1000 and len(s["test"]) == 2000


def test_splits_are_deterministic_and_depend_on_the_seed():
    assert make_splits(seed=0)["test"][:50] == make_splits(seed=0)["test"][:50]
    assert make_splits(seed=0)["test"][:50] != make_splits(seed=1)["test"][:50]


def test_vocab_round_trip_and_specials():
    vs, vt = source_vocab(), target_vocab()
    assert (vs.pad_id, vs.bos_id, vs.eos_id) == (0, 1, 2)
    assert len(vt) == 3 + 14 and len(vs) == 3 + 30
    ids = vt.encode(list("一万零五"), bos=True)
    assert ids[0] == vt.bos_id and ids[-1] == vt.eos_id and len(ids) == 6
    assert vt.decode(ids + [vt.pad_id, 5]) == list("一万零五")  # stops at EOS
    assert vt.decode(torch.tensor(ids)) == list("一万零五")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vs.encode(["eleventy"])
    with pytest.raises(TypeError, match="not a str"):
        vs.encode("one")
    with pytest.raises(ValueError, match="outside"):
        vt.decode([99])
    with pytest.raises(ValueError, match="special"):
        Vocab(["<pad>"])


def test_encode_batch_layout():
    vs, vt = source_vocab(), target_vocab()
    pairs = [(english_words(n), chinese_numerals(n)) for n in (5, 12305)]
    src, tgt = encode_batch(pairs, vs, vt)
    assert src.shape == (2, 7) and tgt.shape == (2, 10)
    assert src[0].tolist() == [vs.stoi["five"], vs.eos_id] + [vs.pad_id] * 5
    assert tgt[0, :3].tolist() == [vt.bos_id, vt.stoi["五"], vt.eos_id]
    assert (tgt[0, 3:] == vt.pad_id).all() and (tgt[1] != vt.pad_id).all()
    with pytest.raises(ValueError, match="pairs"):
        encode_batch([], vs, vt)


def test_bucketing_keeps_every_pair_and_saves_padding():
    vs, vt = source_vocab(), target_vocab()
    pairs = make_splits(seed=0)["valid"]
    plain = make_batches(pairs, 32, vs, vt, seed=0, bucket=False)
    bucketed = make_batches(pairs, 32, vs, vt, seed=0, bucket=True)

    def rows(batches):
        return sorted(tuple(vs.decode(r)) for s, _ in batches for r in s)

    assert rows(plain) == rows(bucketed) == sorted(tuple(s) for s, _ in pairs)
    assert pad_fraction(bucketed) < 0.5 * pad_fraction(plain)
    with pytest.raises(TypeError, match="batch_size"):
        make_batches(pairs, 3.0, vs, vt)


def test_bad_numbers():
    with pytest.raises(ValueError, match="n must be"):
        english_words(0)
    with pytest.raises(ValueError, match="at most"):
        chinese_numerals(MAX_NUMBER + 1)
    with pytest.raises(TypeError, match="n must be an int"):
        chinese_numerals(5.0)
    with pytest.raises(ValueError, match="n_valid"):
        make_splits(n_valid=60000)


def test_use_chinese_font_both_paths(monkeypatch):
    """With a CJK font it joins matplotlib's family list; without one it says False
    and leaves the style alone, so figures fall back to ``PINYIN``."""
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    from utils.numerals import PINYIN
    from utils.translation import use_chinese_font

    class Font:
        def __init__(self, name):
            self.name = name

    with plt.rc_context({"font.family": ["DejaVu Sans"]}):
        monkeypatch.setattr(
            font_manager.fontManager, "ttflist", [Font("DejaVu Sans")]
        )
        assert use_chinese_font() is False
        assert list(plt.rcParams["font.family"]) == ["DejaVu Sans"]
        monkeypatch.setattr(
            font_manager.fontManager,
            "ttflist",
            [Font("DejaVu Sans"), Font("WenQuanYi Zen Hei")],
        )
        assert use_chinese_font() is True
        assert list(plt.rcParams["font.family"]) == [
            "DejaVu Sans",
            "WenQuanYi Zen Hei",
        ]
    assert set(PINYIN) == set("零一二三四五六七八九十百千万")
    assert all(name.isascii() for name in PINYIN.values())


def test_read_english_and_size_classes_agree_with_the_generator():
    from utils.translation import SIZE_CLASSES, read_english, size_class

    for n in (1, 19, 99, 100, 999, 1000, 1005, 9999, 10000, 12305, 99999):
        words = english_words(n)
        assert read_english(words) == n
        lo, hi = SIZE_CLASSES[size_class(words)]
        assert lo <= n <= hi


def test_balance_by_size_repeats_rare_sizes_only():
    from collections import Counter

    from utils.translation import balance_by_size, size_class

    train = make_splits(seed=0)["train"]
    assert balance_by_size(train, 0.0) == train
    balanced = balance_by_size(train, 0.1)
    before = Counter(size_class(s) for s, _ in train)
    after = Counter(size_class(s) for s, _ in balanced)
    assert before[0] < 0.01 * len(train)  # 1-99: rare before
    for c in after:
        assert after[c] >= 0.1 * len(train)  # every class filled
        assert after[c] % before[c] == 0  # by whole repetitions
    assert after[3] == before[3]  # the common class is not repeated
    assert {(tuple(s), tuple(t)) for s, t in balanced} == {
        (tuple(s), tuple(t)) for s, t in train
    }  # the same numbers: the splits stay disjoint
