"""Chapter 8's pronouncer: its config, model, and a deterministic run that a
checkpoint continues (on the numbers task's pairs: any pairs will do)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tools.runs.numbers_task import make_splits, source_vocab, target_vocab
from utils.pronouncer import PronouncerConfig, build_pronouncer
from utils.pronouncer import train_pronouncer
from utils.training import noam_lr
from tests.conftest import raises, raising

TINY = PronouncerConfig(
    d_model=16, num_heads=2, num_layers=1, d_ff=32, eval_every=3, steps=6
)
VOCABS = (source_vocab(), target_vocab())
SPLITS = make_splits(0)


def _train(cfg, splits=SPLITS, **kwargs):
    return train_pronouncer(cfg, splits, VOCABS, progress=False, **kwargs)


pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_config_builds_the_model_it_describes():
    cfg = PronouncerConfig()
    model = build_pronouncer(dataclasses.replace(cfg, num_layers=3), *VOCABS)
    assert len(model.encoder.layers) == len(model.decoder.layers) == 3
    layer = model.encoder.layers[0]
    assert layer.self_attn.w_q.weight.shape == (cfg.d_model, cfg.d_model)
    assert model.src_embed.lut.weight.shape[0] == len(source_vocab())
    assert model.generator.weight.shape[0] == len(target_vocab())


def test_train_pronouncer_is_deterministic_and_restores_threads():
    torch.set_num_threads(2)
    a = _train(TINY)
    b = _train(TINY)
    c = _train(dataclasses.replace(TINY, seed=1))
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
    assert h["config"] == TINY.as_dict()
    # greedy exact match on the validation set at every check: a share
    assert len(h["valid_exact"]) == len(h["valid_step"])
    assert all(0 <= x <= 1 for x in h["valid_exact"])
    assert h["valid_exact"] == b[1]["valid_exact"]
    for p, q in zip(a[0].parameters(), b[0].parameters()):
        assert torch.equal(p, q)


def test_the_splits_are_the_data_trained_on():
    # only numbers with "five": the batches cannot hold anything else
    five = [p for p in SPLITS["train"] if "five" in p[0]]
    own = {"train": five, "valid": SPLITS["valid"][:50]}
    _, h_own = _train(TINY, own)
    _, h_all = _train(TINY)
    assert h_own["train_loss"] != h_all["train_loss"]
    # the validation pairs are only measured: other ones change no loss
    other = {"train": SPLITS["train"], "valid": SPLITS["valid"][50:99]}
    _, h_other = _train(TINY, other)
    assert h_other["train_loss"] == h_all["train_loss"]
    assert h_other["valid_loss"] != h_all["valid_loss"]


def test_a_stopped_run_continues_to_the_same_result(tmp_path):
    """Stopped mid-epoch and continued, a run ends as one never stopped."""
    splits = {"train": SPLITS["train"][:300], "valid": SPLITS["valid"]}
    cfg = dataclasses.replace(TINY, steps=8, eval_every=4)  # 3 batches/epoch
    whole = _train(cfg, splits)
    path = tmp_path / "run.pt"
    for done in (1, 2):  # max_seconds=0: stop after one step
        _, h = _train(cfg, splits, checkpoint=path, max_seconds=0)
        assert len(h["train_loss"]) == done
    model, h = _train(cfg, splits, checkpoint=path, checkpoint_every=3)
    for key in ("train_loss", "lr", "valid_step", "valid_loss", "valid_exact"):
        assert h[key] == whole[1][key], key
    for p, q in zip(model.parameters(), whole[0].parameters()):
        assert torch.equal(p, q)
    other = dataclasses.replace(cfg, dropout=0.0)
    raises(ValueError, "another cfg", _train, other, splits, checkpoint=path)


def test_exact_match_counts_any_target_of_a_source():
    from utils.batches import _first_sources

    pairs = [(["a"], ["x"]), (["b"], ["y"]), (["a"], ["z"]), (["c"], ["w"])]
    firsts, refs = _first_sources(pairs, 2)
    assert firsts == [(["a"], ["x"]), (["b"], ["y"])]
    assert refs == [[["x"], ["z"]], [["y"]]]


def test_stop_after_replays_the_first_steps():
    whole = _train(TINY)[1]
    first = _train(TINY, stop_after=4)[1]
    assert first["train_loss"] == whole["train_loss"][:4]
    assert first["lr"] == whole["lr"][:4] and first["valid_step"] == [3]


RECORD = TINY.as_dict()
BAD = r"""
TypeError | unexpected keyword | PronouncerConfig(d_modle=8)
ValueError | steps | PronouncerConfig(steps=0)
TypeError | d_model | PronouncerConfig(d_model=64.0)
ValueError | label_smoothing | PronouncerConfig(label_smoothing=1.0)
ValueError | factor | PronouncerConfig(factor=0)
ValueError | cooldown_steps must be < steps | PronouncerConfig(steps=10,
    cooldown_steps=10)
TypeError | cfg must be a PronouncerConfig | train_pronouncer({"steps": 1},
    SPLITS, VOCABS, progress=False)
ValueError | 'min_size_share': 0.1 | PronouncerConfig.from_dict({**RECORD,
    "min_size_share": 0.1})
TypeError | unexpected keyword .*d_modle | PronouncerConfig.from_dict(
    {**RECORD, "d_modle": 8})
TypeError | unexpected keyword | PronouncerConfig(max_train_words=6)
TypeError | record must be a dict | PronouncerConfig.from_dict([("steps", 6)])
"""


@pytest.mark.parametrize("call, error, match", raising(BAD))
def test_bad_settings_name_the_field(call, error, match):
    raises(error, match, eval, call, globals())


def test_records_keep_the_retired_settings_at_their_one_value():
    """The numbers task's two settings left the config, not the records:
    written as they hold them, read at those values only (see BAD)."""
    record = TINY.as_dict()
    assert record["max_train_words"] == 6 and record["min_size_share"] == 0
    assert PronouncerConfig.from_dict(record) == TINY
    assert record == TINY.as_dict()  # not changed by reading it
    assert PronouncerConfig.from_dict(dataclasses.asdict(TINY)) == TINY


def _members():
    torch.manual_seed(0)
    wide = build_pronouncer(dataclasses.replace(TINY, d_model=32), *VOCABS)
    return [build_pronouncer(TINY, *VOCABS).eval(), wide.eval()]


def test_ensemble_is_the_mean_of_its_members_probabilities():
    from utils.ensemble import Ensemble

    members = _members()  # d_model 16 and 32: the states are split by width
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    tgt = torch.tensor([[1, 4, 5], [1, 6, 0]])
    ens = Ensemble(members)
    memory, mask = ens.encode(src)
    log_p = ens.generator(ens.decode(tgt, memory, mask))
    mean = sum(m(src, tgt).softmax(-1) for m in members) / 2
    assert torch.allclose(log_p.exp(), mean, atol=1e-6)
    one = torch.stack([m(src, tgt).softmax(-1) for m in members])
    assert (one - mean).abs().max() > 1e-3  # the members do differ


def test_an_ensemble_decodes_as_its_models_do():
    from utils.decoding import beam_search, greedy_decode
    from utils.ensemble import Ensemble

    member = _members()[0]
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 3, 4]])
    args = (src, 8, VOCABS[1].bos_id, VOCABS[1].eos_id)
    cached = greedy_decode(member, *args)  # with the member's KV cache
    assert torch.equal(greedy_decode(Ensemble([member]), *args), cached)
    two = Ensemble(_members())  # its caches give what recomputing gives
    plain = greedy_decode(two, *args, use_cache=False)
    assert torch.equal(greedy_decode(two, *args), plain)
    kw = dict(beam_size=3, num_return=3)
    plain = beam_search(two, *args, use_cache=False, **kw)
    for row, row_plain in zip(beam_search(two, *args, **kw), plain):
        assert [ids.tolist() for ids, _ in row] == [
            ids.tolist() for ids, _ in row_plain
        ]
        scores = [score for _, score in row]
        assert scores == pytest.approx([score for _, score in row_plain])


def test_ensemble_checks_its_members():
    from utils.ensemble import Ensemble

    raises(TypeError, "members must be a list", Ensemble, _members()[0])
    raises(TypeError, "members must be a list", Ensemble, [])
    other = build_pronouncer(TINY, VOCABS[0], source_vocab())
    with pytest.raises(ValueError, match="share the output vocabulary"):
        Ensemble([_members()[0], other])
