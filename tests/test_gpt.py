"""Chapter 11's GPT: its parameter count is the formula's, it computes what
PyTorch's own Pre-Norm encoder layers compute under a causal mask, it never
looks ahead, generation through the KV cache draws what recomputation
draws, and ``stream_nats`` scores every token of a stream exactly once."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from utils.gpt import (
    GPT,
    GPTBlock,
    GPTConfig,
    load_torch_gpt_weights,
    num_parameters,
    torch_reference,
)
from utils.layers import EncoderLayer
from utils.stream_scoring import dynamic_nats, stream_nats
from tests.conftest import raises, raising

# vocab_size, context, d_model, num_heads, num_layers, d_ff
SMALL = GPTConfig(50, 16, 32, 4, 3, 48, dropout=0.1)


def model(config=SMALL, seed=0) -> GPT:
    torch.manual_seed(seed)
    return GPT(config).eval()


def ids(b, t, vocab=SMALL.vocab_size, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(vocab, (b, t), generator=g)


@pytest.mark.parametrize(
    "config",
    [SMALL, GPTConfig(1024, 256, 128, 4, 4, 512), GPTConfig(7, 3, 8, 2, 1, 5)],
)
def test_parameter_count_is_the_formula(config):
    gpt = GPT(config)
    assert sum(p.numel() for p in gpt.parameters()) == num_parameters(config)
    # tied: the output layer is the token embedding, no V x d matrix more
    vd = [p for p in gpt.parameters() if p.shape == gpt.tok_emb.weight.shape]
    assert len(vd) == 1 and vd[0] is gpt.tok_emb.weight


def test_forward_shape_and_tied_output():
    gpt = model()
    x = ids(2, 16)
    logits = gpt(x)
    assert logits.shape == (2, 16, SMALL.vocab_size)
    with torch.no_grad():
        gpt.tok_emb.weight[7] += 1.0  # the output row of token 7 moves too
    assert not torch.equal(gpt(x)[..., 7], logits[..., 7])


def test_equals_pytorch_encoder_layers_with_a_causal_mask():
    torch.manual_seed(3)
    theirs = torch_reference(SMALL).eval()
    gpt = load_torch_gpt_weights(model(), theirs)
    x = ids(3, 16)
    with torch.no_grad():
        h = gpt.tok_emb(x) + gpt.pos_emb(torch.arange(16))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(16)
        ref = theirs(h, mask=mask, is_causal=True) @ gpt.tok_emb.weight.T
        ours = gpt(x)
    assert (ours - ref).abs().max() < 1e-5
    # the check can fail: another layer's weights give other logits
    with torch.no_grad():
        theirs.layers[1].linear1.weight.mul_(1.5)
        moved = theirs(h, mask=mask, is_causal=True) @ gpt.tok_emb.weight.T
    assert (ours - moved).abs().max() > 1e-3


def test_training_attends_through_the_fused_kernel_alike(monkeypatch):
    """In training (no cache) a ``fused`` GPT's blocks call PyTorch's
    fused causal attention; it computes what the course's attention
    computes under the causal mask, values and gradients, within float
    rounding."""
    attn = model().stack.layers[0].self_attn.train()  # dropout 0.1: set 0
    attn.dropout.p = 0.0
    x = torch.randn(3, 16, SMALL.d_model, requires_grad=True)
    fused = attn.causal(x)
    mask = torch.ones(16, 16, dtype=torch.bool).tril()[None, None]
    ours, _ = attn(x, x, x, mask)
    assert (fused - ours).abs().max() < 1e-5
    (g_fused,) = torch.autograd.grad(fused.square().sum(), x)
    (g_ours,) = torch.autograd.grad(ours.square().sum(), x)
    assert (g_fused - g_ours).abs().max() < 1e-4
    # the check can fail: without the mask the values differ
    assert (attn(x, x, x)[0] - fused).abs().max() > 1e-3
    calls = []
    kernel = F.scaled_dot_product_attention
    monkeypatch.setattr(
        F, "scaled_dot_product_attention",
        lambda *a, **k: calls.append(k["is_causal"]) or kernel(*a, **k),
    )  # fmt: skip
    torch.manual_seed(0)
    gpt = GPT(SMALL, fused=True)
    gpt.eval()(ids(2, 8))  # eval: the course's attention, weights kept
    model().train()(ids(2, 8))  # not fused: the course's attention
    assert calls == []
    gpt.train()(ids(2, 8))
    assert calls == [True] * SMALL.num_layers
    # the fused kernel forms no weights: none kept from the eval call
    assert all(b.self_attn.last_weights is None for b in gpt.stack.layers)
    # GPT's blocks run the course's one encoder layer, cache and all
    assert GPTBlock.forward is EncoderLayer.forward


def test_causal_the_future_does_not_change_the_past():
    gpt = model()
    x = ids(2, 12)
    y = x.clone()
    y[:, 8:] = (y[:, 8:] + 1) % SMALL.vocab_size
    with torch.no_grad():
        a, b = gpt(x), gpt(y)
    assert torch.equal(a[:, :8], b[:, :8])
    assert not torch.allclose(a[:, 8:], b[:, 8:])


def test_loss_is_next_token_cross_entropy():
    gpt = model()
    x = ids(2, 17)
    with torch.no_grad():
        want = F.cross_entropy(
            gpt(x[:, :-1]).reshape(-1, 50), x[:, 1:].ravel()
        )
        assert torch.equal(gpt.loss(x), want)
    # untrained: about log V nats a token (GPT-2's small initialisation)
    assert abs(want.item() - math.log(50)) < 0.1


@pytest.mark.parametrize("kwargs", [dict(temperature=1.0),
    dict(temperature=0.8, top_k=5), dict(temperature=1.2, top_p=0.9),
    dict(temperature=0.0)])  # fmt: skip
def test_cached_generation_draws_what_recomputation_draws(kwargs):
    gpt = model()
    prompt = ids(3, 5)
    # 40 new tokens with a context of 16: the window restarts twice
    runs = [
        gpt.generate(prompt, 40, generator=torch.Generator().manual_seed(7),
                     use_cache=use_cache, **kwargs)
        for use_cache in (True, False)
    ]  # fmt: skip
    assert runs[0].shape == (3, 45)
    assert torch.equal(runs[0][:, :5], prompt)
    assert torch.equal(runs[0], runs[1])
    if kwargs["temperature"] > 0:  # another seed, other tokens
        g = torch.Generator().manual_seed(8)
        other = gpt.generate(prompt, 40, generator=g, **kwargs)
        assert not torch.equal(other, runs[0])


def test_cached_logits_equal_the_full_forward():
    gpt = model()
    x = ids(2, 16)
    from utils.attention import AttentionCache

    with torch.no_grad():
        full = gpt(x)
        caches = [AttentionCache() for _ in gpt.stack.layers]
        steps = [gpt._run(x[:, :4], 0, caches)]  # a prompt, then one by one
        steps += [gpt._run(x[:, t : t + 1], t, caches) for t in range(4, 16)]
    assert caches[0].keys.shape == (2, 4, 16, 8)  # (B, h, t, d_head)
    assert (torch.cat(steps, 1) - full).abs().max() < 1e-5


def test_generate_restores_training_mode_and_greedy_is_argmax():
    gpt = model().train()
    out = gpt.generate(ids(1, 3), 1, temperature=0.0)
    assert gpt.training
    with torch.no_grad():
        assert out[0, -1] == gpt.eval()(ids(1, 3))[0, -1].argmax()


def test_stream_nats_scores_each_token_once():
    gpt = model()
    stream = ids(1, 64)[0]  # with the prefix, 4 windows of 16 + 1
    prefix = torch.tensor([3])
    full = torch.cat([prefix, stream])
    # stride = context: disjoint windows, each a plain forward pass
    want = 0.0
    with torch.no_grad():
        for s in range(0, 64, 16):
            chunk = full[s : s + 17][None]
            logits = gpt(chunk[:, :-1])
            nats = F.cross_entropy(logits[0], chunk[0, 1:], reduction="sum")
            want += nats.item()
    got = stream_nats(gpt, stream, prefix, stride=16, batch=3)
    assert got == pytest.approx(want, rel=1e-6)
    # overlapping windows: each token has more history; the same count
    half = stream_nats(gpt, stream, prefix)
    assert half != pytest.approx(want, rel=1e-6)
    assert abs(half - want) < 0.1 * want


def test_dynamic_evaluation_scores_before_it_learns():
    gpt = model()
    stream, prefix = ids(1, 96)[0], torch.tensor([3])
    before = [p.clone() for p in gpt.parameters()]
    # at rate 0 it is the static score, window by window
    static = dynamic_nats(gpt, stream, prefix, lr=0.0, stride=8)
    plain = stream_nats(gpt, stream, prefix, stride=8, batch=1)
    assert float(static.sum()) == pytest.approx(plain, rel=1e-6)
    # learning: window k is scored by a model that has read windows < k
    # only, so changing the tokens after it leaves its score alone
    learnt = dynamic_nats(gpt, stream, prefix, lr=0.5, stride=8)
    later = torch.cat([stream[:40], ids(1, 56, seed=7)[0]])
    changed = dynamic_nats(gpt, later, prefix, lr=0.5, stride=8)
    first = 4  # windows 0-3 score stream tokens 0-39 (15, then 8 each)
    assert torch.equal(learnt[:first], changed[:first])
    assert not torch.equal(learnt[first:], changed[first:])
    assert torch.equal(learnt[0], static[0])  # nothing read yet
    assert all(torch.equal(a, b) for a, b in zip(before, gpt.parameters()))


def test_dynamic_evaluation_learns_what_repeats():
    gpt = model()
    phrase = ids(1, 24, seed=3)[0]
    stream = phrase.repeat(16)  # a play's names come back: so does this
    prefix = torch.tensor([3])
    static = dynamic_nats(gpt, stream, prefix, lr=0.0)
    learnt = dynamic_nats(gpt, stream, prefix, lr=0.3)
    # the last windows cost far less once it has read the phrase
    assert learnt[-4:].sum() < 0.5 * static[-4:].sum()
    three = dynamic_nats(gpt, stream, prefix, lr=0.3, windows=3)
    assert torch.equal(learnt[:3], three)
    raises(ValueError, "diverged", dynamic_nats, gpt, stream, prefix, lr=3.0)


def _dynamic(gpt, *args):
    return dynamic_nats(gpt, ids(1, 4)[0], ids(1, 1)[0], *args)


BAD = r"""
ValueError | lr must be in | _dynamic(g, -1)
TypeError | lr must be a real number | _dynamic(g, "1")
ValueError | windows must be | _dynamic(g, 1, 4, 0)
ValueError | 17 positions, more than context=16 | g(ids(1, 17))
ValueError | ids must be in \[0, 50\) | g(ids(1, 4, vocab=60))
TypeError | ids must hold integer | g(ids(1, 4).float())
ValueError | ids must have 2 dims | g(ids(1, 4)[0])
ValueError | new_tokens | g.generate(ids(1, 4), -1)
ValueError | top_k | g.generate(ids(1, 4), 2, top_k=0)
ValueError | prefix | stream_nats(g, ids(1, 4)[0], None)
ValueError | stride must be at most | stream_nats(g, ids(1, 4)[0],
    ids(1, 1)[0], 17)
ValueError | num_heads | GPTConfig(num_heads=3)
ValueError | dropout | GPTConfig(dropout=1.5)
TypeError | context | GPTConfig(context=2.0)
"""


@pytest.mark.parametrize("call, error, match", raising(BAD))
def test_bad_input_is_named(call, error, match):
    raises(error, match, eval, call, globals(), {"g": model()})  # g: fresh


# ------------------------------------------ the copy rate (utils.copying)
def test_copy_rate_finds_verbatim_spans_only():
    from utils.copying import SpanIndex, window_hashes

    g = torch.Generator().manual_seed(0)
    letters = "abcdefghij \n"
    text = "".join(letters[i] for i in torch.randint(12, (3000,), generator=g))
    index = SpanIndex(text, span=20)
    assert index.copy_rate(text[100:400]) == 1.0  # every window copied
    fresh = "".join(letters[i] for i in torch.randint(12, (300,), generator=g))
    assert index.copy_rate(fresh) == 0.0
    # half copied: 100 characters of the text then 100 new ones
    mixed = text[500:600] + fresh[:100]
    found = index.found(mixed)
    assert found.shape == (181,)
    assert found[:81].all() and not found[81:].any()  # windows inside text
    marks = index.copied_chars(mixed)
    assert marks[:100].all() and not marks[100:].any()
    assert index.copy_rate("short") == 0.0  # no window at all
    # the hash is a function of the window alone, wherever it starts
    h = window_hashes(text, 20)
    assert h[7] == window_hashes(text[7:27], 20)[0]
    windows = {text[i : i + 20] for i in range(2981)}
    assert len(set(h.tolist())) == len(windows)


def test_copy_rate_confirms_hash_matches():
    from utils.copying import SpanIndex, window_hashes

    index = SpanIndex("abcdefgh", span=4)
    assert index.copy_rate("cdef") == 1.0
    # fake a collision: every window of the text now has the hash of "zzzz"
    index.hashes[:] = window_hashes("zzzz", 4)[0]
    assert index.copy_rate("zzzz") == 0.0  # the characters differ: no copy


def test_copy_rate_bad_input():
    from utils.copying import SpanIndex

    raises(ValueError, "span", SpanIndex, "abc", span=5)
    raises(ValueError, "span", SpanIndex, "abc", span=0)
    raises(TypeError, "text", SpanIndex, b"abcdef", span=2)


# ------------------------------------ the stored run's script (train_gpt)
def _train(out, *extra):
    import subprocess
    import sys

    from tools import ROOT

    cmd = [sys.executable, "-m", "tools.runs.train_gpt", "--recipe", "tiny"]
    cmd = [*cmd, *extra, "--out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return json.loads((out / "tiny_run.json").read_text())


@pytest.mark.slow  # three runs of the script, about 60 s
def test_two_processes_stopped_and_continued_in_one_are_one_run(tmp_path):
    """The tiny recipe (dropout, two parts a batch): one process computing
    both parts in turn, against two processes (torchrun, one part each)
    stopped at step 13 and continued in one process: the same losses,
    scores and fp16 weights, bit for bit."""
    whole = _train(tmp_path / "whole")
    assert whole["complete"] and len(whole["train_loss"]) == 30
    assert whole["numeric_mode"]["mode"] == "portable"
    assert whole["meta"]["processes"] == 1
    parts = tmp_path / "parts"
    first = _train(parts, "--procs", "2", "--stop-at", "13")
    assert not first["complete"] and first["steps_done"] == 13
    assert first["meta"]["processes"] == 2
    resumed = _train(parts)
    assert resumed["train_loss"] == whole["train_loss"]
    assert resumed["replay_loss"] == whole["replay_loss"]
    for key in ("valid_bpc_fp16", "test_bpc_fp16", "samples"):
        assert resumed[key] == whole[key]
    a = torch.load(tmp_path / "whole" / "tiny_gpt.pt")["state_dict"]
    b = torch.load(parts / "tiny_gpt.pt")["state_dict"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert all(v.dtype == torch.float16 for v in a.values())
    rows = [json.loads(x) for x in (parts / "tiny_run.jsonl").open()]
    assert [r["step"] for r in rows] == [10, 20, 30]  # none twice
    assert [r["step"] for r in rows if "sample" in r] == [20]


def test_load_gpt_reads_what_train_gpt_stores(tmp_path):
    from tools.runs import fp16
    from utils.gpt import load_gpt

    gpt = model()
    _, half = fp16(gpt, GPT(gpt.config))
    path = tmp_path / "g.pt"
    merges = [[101, 32], [256, 116]]
    config = dict(SMALL.__dict__)
    torch.save({"config": config, "merges": merges, "state_dict": half}, path)
    loaded, table = load_gpt(path)
    assert table == {(101, 32): 256, (256, 116): 257}
    assert not loaded.training and loaded.config == SMALL
    x = ids(2, 8)
    with torch.no_grad():
        assert (loaded(x) - gpt(x)).abs().max() < 1e-2  # fp16 rounding only
        assert not torch.equal(loaded(x), gpt(x))
    torch.save({"weights": half}, path)
    raises(ValueError, "not a stored GPT", load_gpt, path)


# ------------------------------------------------ the stored run's files


def _stored():
    from tools import ROOT

    data = ROOT / "book" / "data"
    run = json.loads((data / "ch11_run.json").read_text())
    return data, run


def test_the_stored_run_beats_the_five_gram_and_fits_the_page():
    data, run = _stored()
    assert run["complete"] and run["numeric_mode"]["mode"] == "portable"
    base = json.loads((data / "ch11_baselines.json").read_text())
    five = next(r for r in base["char_kn"] if r["order"] == 5)
    assert run["valid_bpc_fp16"] < five["valid"]
    assert run["test_bpc_fp16"] < five["test"]
    assert run["meta"]["data"] == base["data"]  # the same split, same text
    # issue 60: about 2M parameters (d_model 192, 4 layers), 2 bytes each
    assert (data / "ch11_gpt.pt").stat().st_size <= 4_200_000
    assert run["meta"]["params"] <= 2_100_000
    assert run["seconds"] <= 90 * 60 and run["meta"]["processes"] == 2


def test_the_stored_rows_are_the_stored_runs():
    """Each validation row's training loss is the mean of the stored run's
    losses since the last row, the row at 300 (made by the same run again,
    stopped there) included; the dynamic evaluation took the rate best on
    the validation plays and did better than the static score."""
    data, run = _stored()
    rows = [json.loads(r) for r in (data / "ch11_run.jsonl").open()]
    steps = [r["step"] for r in rows]
    assert steps == sorted(set(steps)) and steps[-1] == run["steps_done"]
    losses = np.array(run["train_loss"])  # rounded to 4 digits
    every = run["meta"]["recipe"]["eval_every"]
    for r in rows:
        mean = losses[max(0, r["step"] - every) : r["step"]].mean()
        assert abs(r["train_loss"] - mean) < 1e-3, r["step"]
    sampled = {r["step"] for r in rows if "sample" in r}
    assert sampled == set(run["meta"]["recipe"]["sample_at"])
    dyn = json.loads((data / "ch11_dynamic.json").read_text())
    rates = {k: v for k, v in dyn["valid_bpc"].items() if v != str(v)}
    assert str(dyn["lr"]) == min(rates, key=rates.get)
    assert dyn["test_bpc"][str(dyn["lr"])] < dyn["test_bpc"]["0.0"]
    assert abs(dyn["test_bpc"]["0.0"] - run["test_bpc_fp16"]) < 1e-4


@pytest.mark.exact  # the portable numeric mode, as the run was made
def test_the_stored_run_replays_exactly():
    from tools.runs.train_gpt import STORED, replay

    _, run = _stored()
    if run["meta"]["recipe"] != STORED.as_dict():
        pytest.skip(
            "the stored run predates tools/runs/train_gpt.py's recipe (issue "
            "60 replaces it); chapter 11's replay cell checks it"
        )
    live = replay(3)
    stored = run["replay_loss"][:3]
    assert [np.float32(x) for x in live] == [np.float32(x) for x in stored]


def test_the_stored_pilots_are_their_recipes_run_to_the_end():
    """Chapter 11 compares the pilots of ch11_pilots.jsonl as the recipes
    of those names in tools/runs/train_gpt.py, each run to its last step."""
    from tools.runs.train_gpt import PILOTS, RECIPES

    data, _ = _stored()
    rows = [json.loads(x) for x in (data / "ch11_pilots.jsonl").open()]
    assert sorted(r["recipe_name"] for r in rows) == sorted(PILOTS)
    for row in rows:
        recipe, made = RECIPES[row["recipe_name"]], row["meta"]["recipe"]
        want = recipe.as_dict()  # lr2e3 was made before the "fused" field
        assert made == {k: want[k] for k in made}, row["recipe_name"]
        assert set(want) - set(made) <= {"fused"}
        assert row["complete"] and row["steps_done"] == recipe.steps
        assert [r["step"] for r in row["rows"]] == list(
            range(recipe.eval_every, recipe.steps + 1, recipe.eval_every)
        )


@pytest.mark.exact  # the portable numeric mode, as the run was made
def test_the_stored_weights_score_the_stored_test_bpc():
    """Chapter 11 scores the first 10,000 test tokens live and quotes the
    stored score of the whole test stream. Stored batch by batch (each
    batch scored alone), it adds up to that score bit for bit; the first,
    a middle and the last batch are scored again here."""
    from tools.runs.train_gpt import batch_nats
    from utils import shakespeare
    from utils.gpt import load_gpt

    data, run = _stored()
    stored = json.loads((data / "ch11_test_batches.json").read_text())
    assert stored["numeric_mode"]["mode"] == "portable"
    total = 0.0
    for nats in stored["nats"]:  # in order, as stream_nats adds them
        total += nats
    chars = len(shakespeare.split_works("test"))
    assert total / math.log(2) / chars == run["test_bpc_fp16"]
    model, merges = load_gpt(data / "ch11_gpt.pt")
    which = [0, len(stored["nats"]) // 2, len(stored["nats"]) - 1]
    live = batch_nats(model, merges, which)
    assert [live[b] for b in which] == [stored["nats"][b] for b in which]
