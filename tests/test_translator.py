"""Chapter 8's translator: one config, the model it builds, a deterministic
training run, the cache keyed by config, data and numeric mode."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from utils.training import noam_lr
from utils.translation import make_splits, source_vocab, target_vocab
from utils.translator import (
    TranslatorConfig,
    build_translator,
    load_or_train_translator,
    train_translator,
)

TINY = TranslatorConfig(
    d_model=16, num_heads=2, num_layers=1, d_ff=32, eval_every=3, steps=6
)


pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_config_builds_the_model_it_describes():
    cfg = TranslatorConfig()
    model = build_translator(dataclasses.replace(cfg, num_layers=3))
    assert len(model.encoder.layers) == len(model.decoder.layers) == 3
    layer = model.encoder.layers[0]
    assert layer.self_attn.w_q.weight.shape == (cfg.d_model, cfg.d_model)
    assert model.src_embed.lut.weight.shape[0] == len(source_vocab())
    assert model.generator.weight.shape[0] == len(target_vocab())


def test_train_translator_is_deterministic_and_restores_threads():
    torch.set_num_threads(2)
    a = train_translator(TINY, progress=False)
    b = train_translator(TINY, progress=False)
    c = train_translator(dataclasses.replace(TINY, seed=1), progress=False)
    assert torch.get_num_threads() == 2
    model, h = a
    assert not model.training
    assert len(h["train_loss"]) == len(h["lr"]) == 6
    assert h["valid_step"] == [3, 6]
    assert h["train_loss"] == b[1]["train_loss"]
    assert h["valid_loss"] == b[1]["valid_loss"]
    assert h["train_loss"] != c[1]["train_loss"]
    w, f = TINY.warmup_steps, TINY.factor
    assert h["lr"] == [noam_lr(s, 16, w, f) for s in range(1, 7)]
    assert h["config"] == dataclasses.asdict(TINY)
    # greedy exact match on the validation set at every check: a share
    assert len(h["valid_exact"]) == len(h["valid_step"])
    assert all(0 <= x <= 1 for x in h["valid_exact"])
    assert h["valid_exact"] == b[1]["valid_exact"]
    for p, q in zip(a[0].parameters(), b[0].parameters()):
        assert torch.equal(p, q)


def test_a_callers_splits_are_the_data_trained_on():
    splits = make_splits(0)
    # only numbers with "five": the batches cannot hold anything else
    five = [p for p in splits["train"] if "five" in p[0]]
    own = {"train": five, "valid": splits["valid"][:50]}
    _, h_own = train_translator(TINY, splits=own, progress=False)
    _, h_all = train_translator(TINY, progress=False)
    assert h_own["train_loss"] != h_all["train_loss"]
    # the default is make_splits(cfg.seed): passing it changes nothing
    _, h_same = train_translator(TINY, splits=splits, progress=False)
    assert h_same["train_loss"] == h_all["train_loss"]


def test_a_stopped_run_continues_to_the_same_result(tmp_path):
    """Stopped after steps 1 and 2 (mid-epoch) and continued from its
    checkpoint, a run crosses epochs and ends as one never stopped."""
    splits = make_splits(0)
    splits = {"train": splits["train"][:300], "valid": splits["valid"]}
    cfg = dataclasses.replace(TINY, steps=8, eval_every=4)  # 3 batches/epoch
    whole = train_translator(cfg, splits, progress=False)
    path = tmp_path / "run.pt"
    for done in (1, 2):  # max_seconds=0: stop after one step
        _, h = train_translator(
            cfg, splits, progress=False, checkpoint=path, max_seconds=0
        )
        assert len(h["train_loss"]) == done
    model, h = train_translator(
        cfg, splits, progress=False, checkpoint=path, checkpoint_every=3
    )
    for key in ("train_loss", "lr", "valid_step", "valid_loss", "valid_exact"):
        assert h[key] == whole[1][key], key
    for p, q in zip(model.parameters(), whole[0].parameters()):
        assert torch.equal(p, q)
    other = dataclasses.replace(cfg, dropout=0.0)
    with pytest.raises(ValueError, match="another cfg"):
        train_translator(other, splits, progress=False, checkpoint=path)


def test_exact_match_counts_any_target_of_a_source():
    from utils.translator import _first_sources

    pairs = [(["a"], ["x"]), (["b"], ["y"]), (["a"], ["z"]), (["c"], ["w"])]
    firsts, refs = _first_sources(pairs, 2)
    assert firsts == [(["a"], ["x"]), (["b"], ["y"])]
    assert refs == [[["x"], ["z"]], [["y"]]]


def test_load_or_train_translator_caches_by_config(tmp_path):
    cfg = dataclasses.replace(TINY, steps=3)
    m1, h1 = load_or_train_translator(cfg, progress=False, directory=tmp_path)
    m2, h2 = load_or_train_translator(cfg, progress=False, directory=tmp_path)
    assert (h1["cached"], h2["cached"]) == (False, True)
    assert len(list(tmp_path.glob("translator-*.pt"))) == 1
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert torch.equal(p, q)
    assert h2["train_loss"] == h1["train_loss"] and not m2.training
    other = dataclasses.replace(cfg, label_smoothing=0.0)
    load_or_train_translator(other, progress=False, directory=tmp_path)
    assert len(list(tmp_path.glob("translator-*.pt"))) == 2  # another file
    splits = make_splits(0)
    own = {"train": splits["train"][:500], "valid": splits["valid"]}
    *_, h = load_or_train_translator(
        cfg, splits=own, progress=False, directory=tmp_path
    )
    assert h["cached"] is False  # other data, other file
    assert len(list(tmp_path.glob("translator-*.pt"))) == 3
    *_, h3 = load_or_train_translator(
        cfg, progress=False, directory=tmp_path, force=True
    )
    assert h3["cached"] is False and h3["train_loss"] == h1["train_loss"]


def test_the_cache_key_holds_the_numeric_mode(tmp_path, monkeypatch):
    import utils.translator as translator

    cfg = dataclasses.replace(TINY, steps=2)
    load_or_train_translator(cfg, progress=False, directory=tmp_path)
    # the same settings under another CPU code path (as natively vs portable)
    real = translator.numeric_fingerprint()
    monkeypatch.setattr(
        translator,
        "numeric_fingerprint",
        lambda: {**real, "cpu_capability": "AVX512"},
    )
    *_, h = load_or_train_translator(cfg, progress=False, directory=tmp_path)
    assert h["cached"] is False
    assert len(list(tmp_path.glob("translator-*.pt"))) == 2
    monkeypatch.setattr(
        translator, "numeric_fingerprint", lambda: {**real, "torch": "9.9.9"}
    )
    *_, h = load_or_train_translator(cfg, progress=False, directory=tmp_path)
    assert h["cached"] is False
    assert len(list(tmp_path.glob("translator-*.pt"))) == 3


def test_bad_settings_name_the_field():
    with pytest.raises(TypeError, match="unexpected keyword"):
        TranslatorConfig(d_modle=8)
    with pytest.raises(ValueError, match="steps"):
        TranslatorConfig(steps=0)
    with pytest.raises(TypeError, match="d_model"):
        TranslatorConfig(d_model=64.0)
    with pytest.raises(ValueError, match="label_smoothing"):
        TranslatorConfig(label_smoothing=1.0)
    with pytest.raises(ValueError, match="factor"):
        TranslatorConfig(factor=0)
    with pytest.raises(ValueError, match=r"cooldown_steps must be < steps"):
        TranslatorConfig(steps=10, cooldown_steps=10)
    with pytest.raises(TypeError, match="cfg must be a TranslatorConfig"):
        train_translator({"steps": 1}, progress=False)
