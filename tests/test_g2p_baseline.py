"""The stored classic baseline (book/data/g2p_baseline.json: tools/
g2p_baseline.py, Phonetisaurus) was made on today's split of the
pronouncer's data, and its numbers are sane: scored on every validation and
test word, consistent with its own per-word record, and in the range a
joint-sequence n-gram reaches on CMUdict (published: about 24% WER on the
PRONALSYL split). Nothing here runs Phonetisaurus: ``make baseline`` does."""

from __future__ import annotations

import json
import math

import pytest

from tools import g2p_baseline
from tools.pronouncer_split import fingerprint
from utils import pronunciation as pr


@pytest.fixture(scope="module")
def stored():
    return json.loads(g2p_baseline.OUT.read_text())


def test_it_was_made_on_todays_split(stored):
    # a new cmudict release or another split changes this: make baseline
    assert stored["split"] == fingerprint()


def test_it_names_the_tool_and_its_settings(stored):
    assert stored["tool"] == "phonetisaurus" and stored["version"]
    s = stored["settings"]
    assert s["ngram_order"] >= 2 and s["decode"]["nbest"] == 1
    assert s["stress"] is False
    assert 0 < stored["train"]["seconds"] < 30 * 60


def test_it_trained_on_every_training_pronunciation(stored):
    split = pr.split_words(2000, 12000, 0)
    pairs = pr.to_pairs(split["train"], stress=False)
    assert stored["train"]["words"] == len(split["train"])
    assert stored["train"]["pronunciations"] == len(pairs)


@pytest.mark.parametrize("name, n", [("valid", 2000), ("test", 12000)])
def test_its_scores_are_sane_and_match_its_record(stored, name, n):
    s = stored[name]
    assert s["words"] == n == len(s["wrong"])
    assert set(s["wrong"]) <= {"0", "1"}
    # WER is the share of words marked wrong, every word scored
    assert math.isclose(s["wrong"].count("1") / n, s["wer"])
    assert s["no_output"] < 0.01 * n
    # a joint-sequence n-gram on CMUdict: near the published 24%, and
    # PER (phonemes) far below WER (words)
    assert 0.18 < s["wer"] < 0.35
    assert 0.03 < s["per"] < s["wer"] / 2


def test_the_examples_are_the_first_test_words_in_order(stored):
    split = pr.split_words(2000, 12000, 0)
    words = [w for w, _ in stored["test"]["examples"]]
    assert words == [w for w, _ in split["test"][: len(words)]]
    # each example agrees with the per-word record
    for i, (word, pron) in enumerate(stored["test"]["examples"]):
        refs = {pr.strip_stress(p) for p in split["test"][i][1]}
        wrong = tuple(pron.split()) not in refs
        assert stored["test"]["wrong"][i] == "01"[wrong], word


def test_published_results_name_their_source_and_version():
    # chapter 8's literature table: book/data/g2p_published.json
    root = g2p_baseline.ROOT
    data = json.loads((root / "book/data/g2p_published.json").read_text())
    bib = (root / "book/references.bib").read_text()
    for r in data["rows"]:
        assert r["split"] in ("PRONALSYL", "other"), r
        assert f"{{{r['source']},\n" in bib, r["source"]
        assert 15 < r["wer"] < 40 and (r["per"] is None or r["per"] < r["wer"])
    # numbers from READMEs and results pages change: each names its version
    software = {r["source"] for r in data["rows"] if r["per"] is None}
    assert set(data["versions"]) <= software
    assert {"g2pseq2seq", "balacoon2022learn"} <= set(data["versions"])
