"""The stored pronouncer (book/data/pronouncer.json, .pt: the second
recipe's run, tools/runs/train_pronouncer.py --store), the first recipe's
runs (book/data/pronouncer_seeds/) and its seed sweep
(book/data/pronouncer_sweep.json: tools/runs/sweep_pronouncer.py) are
complete, small, good enough, and what the code computes: the first steps of
each, trained again here in the portable numeric mode, give the stored
losses bit for bit."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from tools.runs import sweep_pronouncer, train_pronouncer
from utils import pronunciation as pr
from utils.pronouncer import SEEDS_DIR, STORED_PRONOUNCER, PronouncerConfig
from utils.pronouncer import load_pronouncer
from utils.pronouncer import train_pronouncer as train_run

LOG = train_pronouncer.OUT / "pronouncer.json"
FIRST = SEEDS_DIR / "s0" / "pronouncer.json"  # the first recipe's seed 0
STEPS = 12  # replayed


@pytest.fixture(scope="module")
def log():
    return json.loads(LOG.read_text())


@pytest.fixture(scope="module")
def first():
    return json.loads(FIRST.read_text())


@pytest.fixture(scope="module")
def sweep():
    return json.loads(sweep_pronouncer.OUT.read_text())


def test_the_stored_run_is_complete(log, recipe_rows, first):
    """The stored pronouncer is one model, trained on both cores within 4
    hours, better than the first recipe's run; its log is its recipe row
    and its mean loss every 100 steps."""
    name = train_pronouncer.STORED
    cfg = dataclasses.replace(train_pronouncer.RECIPES[name], seed=0)
    assert log["run"] == f"{name}_s0" and log["config"] == cfg.as_dict()
    assert log["steps_done"] == cfg.steps and log["processes"] == 2
    assert log["seconds"] < 4 * 3600
    assert log["test"]["wer"] < first["test"]["wer"] - 0.02
    (row,) = [r for r in recipe_rows if r["run"] == log["run"]]
    assert {k: log[k] for k in row} == row
    assert len(log["train_loss_per100"]) == cfg.steps // 100


@pytest.mark.xfail(
    strict=True,
    reason="issue 58's target is not met: l128_kd is level with the "
    "baseline (26.90% against 26.92%, McNemar p = 0.98)",
)
def test_the_stored_run_meets_issue_58s_target(log):
    """Issue 58: at most 25% of the 12,000 test words wrong, decoded
    greedily, ahead of the baseline by McNemar's test (p < 0.01). Strict:
    a model that meets it makes this test fail until the mark goes."""
    assert log["test"]["wer"] <= 0.25
    pair = log["test"]["mcnemar"]
    assert pair["fixes"] > pair["breaks"] and pair["p_exact"] < 0.01


def test_the_first_recipe_run_is_complete(first):
    cfg = train_pronouncer.CONFIG.as_dict()
    assert first["complete"] and first["meta"]["config"] == cfg
    assert len(first["train_loss"]) == cfg["steps"] == first["steps_done"]
    assert first["meta"]["stress"] is train_pronouncer.STRESS is False
    assert first["seconds"] < 60 * 60  # trained within the hour
    assert first["test"]["per"] < first["test"]["wer"] <= 0.30
    assert first["valid_step"][-1] == cfg["steps"]


def _configs(node):
    """Every pronouncer config recorded inside ``node`` (a JSON value)."""
    if isinstance(node, dict):
        if {"d_model", "warmup_steps", "label_smoothing"} <= set(node):
            yield node
        for value in node.values():
            yield from _configs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _configs(value)


def test_every_stored_config_reads_back_as_recorded():
    """Each config in book/data (the runs, the sweeps, the probes, the
    seeds, chapter 10's fine-tuning) is a PronouncerConfig that records
    itself as stored: the retired settings included, at their values; a
    record older than a field (the probes: cooldown_steps) ran it at its
    default."""
    default, found = PronouncerConfig().as_dict(), 0
    for path in sorted(train_pronouncer.OUT.rglob("*.json*")):
        text = path.read_text()
        lines = text.splitlines() if path.suffix == ".jsonl" else [text]
        for record in _configs([json.loads(x) for x in lines]):
            got = PronouncerConfig.from_dict(record).as_dict()
            assert {k: got[k] for k in record} == record, path.name
            assert all(got[k] == default[k] for k in got.keys() - record)
            found += 1
    assert found >= 10, found


def test_the_stored_weights_are_fp16_small_and_load():
    size = STORED_PRONOUNCER.stat().st_size
    assert size < 4e6, size  # the live page's budget
    model, cfg, stress = load_pronouncer()
    recipe = train_pronouncer.RECIPES[train_pronouncer.STORED]
    assert cfg == dataclasses.replace(recipe, seed=0) and stress is False
    n = sum(p.numel() for p in model.parameters())
    assert 2 * n <= size < 2 * n + 200_000  # two bytes a weight


def test_the_sweep_has_every_run_in_the_portable_mode(sweep):
    names = [r["name"] for r in sweep["rows"]]
    assert names == sweep_pronouncer.RUNS
    assert sweep["meta"]["recipe"] == sweep_pronouncer.RECIPE.as_dict()
    for r in sweep["rows"]:
        assert r["valid_step"][-1] == sweep_pronouncer.RECIPE.steps
        assert 0 < r["valid"]["per"] < r["valid"]["wer"] <= 1
        assert ("test" in r) == (r["variant"] == "recipe")


def _replay(cfg, steps):
    split = pr.split_words(
        train_pronouncer.N_VALID, train_pronouncer.N_TEST, 0
    )
    split["valid"] = split["valid"][:50]  # evaluation draws nothing
    splits, vocabs = pr.pronouncer_data(split, stress=False)
    # a run's first steps are the plain schedule: its cooldown, if any,
    # comes at its end
    cfg = dataclasses.replace(
        cfg, steps=steps, eval_every=steps, n_valid_exact=10, cooldown_steps=0
    )
    _, h = train_run(cfg, splits, progress=False, vocabs=vocabs)
    return np.array(h["train_loss"], dtype=np.float32)


@pytest.mark.exact
def test_the_first_recipe_run_replays_bit_for_bit(first):
    live = _replay(train_pronouncer.CONFIG, STEPS)
    stored = np.array(first["train_loss"][:STEPS], dtype=np.float32)
    assert np.array_equal(live, stored), (live, stored)


@pytest.mark.exact
def test_a_sweep_run_replays_bit_for_bit(sweep):
    row = sweep["rows"][-1]  # an ablation, on the last seed
    variant = sweep_pronouncer.VARIANTS[row["variant"]]
    cfg = dataclasses.replace(
        sweep_pronouncer.RECIPE, seed=row["seed"], **variant
    )
    live = _replay(cfg, STEPS)
    stored = np.array(row["train_loss_first"][:STEPS], dtype=np.float32)
    assert np.array_equal(live, stored), (live, stored)


@pytest.fixture(scope="module")
def recipe_rows():
    lines = train_pronouncer.RECIPE_ROWS.read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_recipe_rows_are_complete_and_consistent(recipe_rows):
    from proof.runtime import split_fingerprint as fingerprint

    assert recipe_rows and fingerprint() == recipe_rows[0]["split"]
    for row in recipe_rows:
        cfg = dataclasses.replace(
            train_pronouncer.RECIPES[row["recipe"]], seed=row["seed"]
        )
        assert row["config"] == cfg.as_dict() and row["processes"] == 2
        assert row["steps_done"] == cfg.steps == row["valid_step"][-1]
        assert row["numeric_mode"]["mode"] == "portable"
        # the fp16 weights' WER against the last check's exact match (in
        # fp32, the same 2,000 words): rounding flips a few words at most;
        # a run trained with stress matched stress, so scoring without it
        # can only find more words right; a full run stores the average
        # of its last k kept weights with the best validation WER, k = 1
        # being the final weights
        final = row["valid"]["wer"]
        if "averaged" in row:
            by_k = row["averaged"]["valid_wer_by_k"]
            assert final == min(by_k) == by_k[row["averaged"]["k"] - 1]
            final = by_k[0]
        gap = final - (1 - row["valid_exact"][-1])
        if row["recipe"] in train_pronouncer.TRAINED_WITH_STRESS:
            assert gap < 0.005
        else:
            assert abs(gap) < 0.005


@pytest.mark.exact
def test_a_run_on_both_cores_replays_in_one_process(recipe_rows):
    """The pilots trained in two processes, one half of each batch each
    (tools/runs/ddp.py); one process computing both halves in turn gives their
    first losses bit for bit."""
    row = recipe_rows[0]
    cfg = dataclasses.replace(
        train_pronouncer.RECIPES[row["recipe"]], seed=row["seed"]
    )
    _, splits, vocabs = train_pronouncer.data()
    _, h = train_run(cfg, splits, vocabs, progress=False, stop_after=2)
    live = np.array(h["train_loss"], dtype=np.float32)
    stored = np.array(row["train_loss_head"][:2], dtype=np.float32)
    assert np.array_equal(live, stored), (live, stored)


def test_the_recipe_rows_test_scores_meet_the_stored_baseline(recipe_rows):
    """A row's test words, paired with the baseline's as stored now: the
    McNemar counts it keeps are still those (the baseline not re-made
    since), and its WER is its share of wrong words."""
    scored = [row["test"] for row in recipe_rows if "test" in row]
    assert scored  # the runs finished since the test scoring
    for test in scored:
        assert len(test["wrong"]) == train_pronouncer.N_TEST
        assert test["wrong"].count("1") / len(test["wrong"]) == test["wer"]
        again = train_pronouncer.against_baseline(test["wrong"])
        assert again == test["mcnemar"]


@pytest.mark.exact
def test_a_distilled_run_replays_from_the_rows_it_read(recipe_rows):
    """A run taught by the 7 members replays its first steps from the
    stored head of the teacher's table (tools/runs/distill.py): the rows
    are those the run read, and its loss is the one it trained on."""
    from tools.runs import distill
    from utils.ensemble import distill_loss

    head = torch.load(distill.HEAD, weights_only=True)
    assert head["recipe"] in train_pronouncer.DISTILLED
    taught = [r for r in recipe_rows if r.get("distilled")]  # older: none
    assert taught
    _, splits, vocabs = train_pronouncer.data()
    pads = (vocabs[0].pad_id, vocabs[1].pad_id)
    for row in taught:  # the same first batches and warm-up as the head's
        cfg = dataclasses.replace(
            train_pronouncer.RECIPES[row["recipe"]], seed=row["seed"]
        )
        loss = distill_loss(
            head["rows"], row["distilled"], cfg.label_smoothing, pads
        )
        _, h = train_run(cfg, splits, vocabs, progress=False,
                         stop_after=head["steps"], loss=loss)  # fmt: skip
        live = np.array(h["train_loss"], dtype=np.float32)
        stored = row["train_loss_head"][: head["steps"]]
        assert np.array_equal(live, np.array(stored, dtype=np.float32))
