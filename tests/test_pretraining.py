"""utils.pretraining on English words: masking, losses, masks, the
hand-over to the pronouncer, sampling, and chapter 10's stored runs."""

from __future__ import annotations

import functools
import json
import math
import pathlib
import random

import pytest
import torch

from tools.runs import sweep_ch10 as sw
from utils import ngram
from utils import finetuning as ft
from utils import pretraining as pt
from utils import pronunciation as pr
from utils.loss import masked_cross_entropy
from utils.masks import causal_mask, prefix_lm_mask
from utils.pronouncer import PronouncerConfig, build_pronouncer
from utils.pronouncer import train_pronouncer
from utils.training import noam_scheduler, threads
from tests.conftest import raises

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = [w for w, _ in pr.split_words(2000, 12000, 0)["train"][:20000]]
IDS = pt.encode(WORDS)
CFG = PronouncerConfig(d_model=32, d_ff=64, num_layers=2, dropout=0.0)
SRC = pr.encode_words(["cat", "pronounce"])


def _within(k: int, n: int, p: float, sds: float = 4.0) -> bool:
    return abs(k / n - p) < sds * (p * (1 - p) / n) ** 0.5


def test_encode_decode_and_bad_words():
    ids = pt.encode(["cat", "a"], bos=True)
    assert ids.tolist() == [[1, 5, 3, 22, 2], [1, 3, 2, 0, 0]]
    assert pt.decode(ids[0]) == "cat"
    assert pt.decode(torch.tensor([5, pt.MASK, 22])) == "c_t"
    raises(TypeError, "words", pt.encode, "cat")
    raises(ValueError, "Cat", pt.encode, ["Cat"])
    raises(ValueError, "words", pt.encode, [])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bert_chooses_a_fixed_count_per_word(seed):
    inputs, chosen = pt.bert_mask(IDS, torch.Generator().manual_seed(seed))
    length = (IDS != 0).sum(1)  # letters and EOS
    letters = (IDS >= 3) & (IDS < pt.MASK)
    want = [
        min(max(1, round(0.15 * int(n))), int(m))
        for n, m in zip(length, letters.sum(1))
    ]
    assert chosen.sum(1).tolist() == want  # BERT's count, never random
    assert not chosen[~letters].any()  # EOS and PAD are never chosen
    assert torch.equal(inputs[~chosen], IDS[~chosen])  # the rest untouched
    # about 1.3 per word: the dictionary's words are short
    assert 1.0 < chosen.sum(1).float().mean() < 1.6


@pytest.mark.parametrize("seed", [0, 1])
def test_bert_80_10_10(seed):
    big = IDS.repeat(3, 1)
    inputs, chosen = pt.bert_mask(big, torch.Generator().manual_seed(seed))
    n = int(chosen.sum())
    same = 1 / 26  # a random letter may be the letter that was there
    masked = chosen & (inputs == pt.MASK)
    kept = chosen & (inputs == big)
    randomised = chosen & ~masked & ~kept
    assert _within(int(masked.sum()), n, 0.8)
    assert _within(int(randomised.sum()), n, 0.1 * (1 - same))
    assert _within(int(kept.sum()), n, 0.1 * (1 + same))
    assert ((inputs[randomised] >= 3) & (inputs[randomised] < pt.MASK)).all()


def test_bert_other_rates_and_bad_rates():
    inputs, chosen = pt.bert_mask(
        IDS, torch.Generator().manual_seed(0), p=0.5, p_mask=1.0, p_random=0
    )
    assert (inputs[chosen] == pt.MASK).all()
    assert chosen.sum() > 0.4 * ((IDS >= 3).sum())
    raises(ValueError, "p_mask \\+ p_random", pt.bert_mask, IDS[:2],
           p_mask=0.95, p_random=0.1)  # fmt: skip


def test_mlm_loss_ignores_unchosen_positions():
    torch.manual_seed(0)
    ids = IDS[:16]
    _, chosen = pt.bert_mask(ids, torch.Generator().manual_seed(4))
    logits = torch.randn(*ids.shape, pt.VOCAB, requires_grad=True)
    loss = masked_cross_entropy(logits, ids, chosen)
    (grad,) = torch.autograd.grad(loss, logits)
    other = logits.detach().clone()
    other[~chosen] = 50 * torch.randn_like(other[~chosen])
    other.requires_grad_(True)
    loss2 = masked_cross_entropy(other, ids, chosen)
    (grad2,) = torch.autograd.grad(loss2, other)
    torch.testing.assert_close(loss2, loss)
    torch.testing.assert_close(grad2, grad)
    assert (grad[~chosen] == 0).all() and (grad[chosen] != 0).any()
    theirs = torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), ids.masked_fill(~chosen, -100)
    )
    torch.testing.assert_close(loss, theirs)


def test_prefix_mask_hand_written():
    # [BOS] c a t, prefix [BOS] c a (3), and "a" padded
    ids = pt.encode(["cat", "a"], bos=True)[:, :-1]
    mask = pt.attention_mask("plm", ids, torch.tensor([3, 3]))
    expected = torch.tensor([[1, 1, 1, 0]] * 3 + [[1, 1, 1, 1]]).bool()
    assert torch.equal(mask[0, 0], expected)
    assert torch.equal(mask[0, 0], prefix_lm_mask(4, 3))
    real = torch.tensor([1, 1, 1, 0]).bool()  # [BOS] a [EOS] [PAD]
    assert torch.equal(mask[1, 0], expected & real)


def test_masks_hide_padding_and_bad_kind():
    ids = pt.encode(["a", "word"])
    real = ids != 0
    size = ids.size(1)
    clm, mlm = pt.attention_mask("clm", ids), pt.attention_mask("mlm", ids)
    for b in range(2):
        assert torch.equal(clm[b, 0], causal_mask(size) & real[b][None, :])
        assert torch.equal(mlm[b, 0], real[b][None, :].expand(size, size))
    raises(ValueError, "prefix_len", pt.attention_mask, "plm", ids)
    raises(ValueError, "kind", pt.attention_mask, "gpt", ids)


@pytest.mark.parametrize("kind", ["clm", "plm"])
def test_no_scored_row_sees_its_target(kind):
    words = ["pronounce", "cat", "a", "dictionary"]
    gen = torch.Generator().manual_seed(0)
    inputs, mask, targets, on = pt.objective_batch(kind, words, gen)
    ids = pt.encode(words, bos=True)
    assert torch.equal(inputs, ids[:, :-1])
    assert torch.equal(targets, ids[:, 1:])
    for b, t in on.nonzero().tolist():
        assert t + 1 >= mask.size(-1) or not mask[b, 0, t, t + 1]
    if kind == "plm":  # 3 letters of prefix: the rest of the word and EOS
        _, _, _, on3 = pt.objective_batch(kind, words, prefix_letters=3)
        # "cat" and "a": the prefix is capped at all letters but one
        assert on3.sum(1).tolist() == [7, 2, 1, 8]


def test_causal_output_ignores_the_future():
    torch.manual_seed(0)
    model = pt.TinyLM().eval()
    ids = pt.encode(["pronounce"], bos=True)
    changed = ids.clone()
    changed[0, 5:] = 3  # rewrite the end of the word
    with torch.no_grad():
        a = model(ids, pt.attention_mask("clm", ids))
        b = model(changed, pt.attention_mask("clm", changed))
        c = model(changed, pt.attention_mask("mlm", changed))
        d = model(ids, pt.attention_mask("mlm", ids))
    torch.testing.assert_close(a[:, :5], b[:, :5])
    assert not torch.allclose(c[:, :5], d[:, :5])  # bidirectional sees it


def _pronouncer_with(state, cfg=CFG):
    """A seeded pronouncer (``cfg``) with ``state`` loaded over its weights."""
    torch.manual_seed(2)
    model = build_pronouncer(cfg, pr.letter_vocab(), pr.phoneme_vocab(False))
    model.load_state_dict({**model.state_dict(), **state})
    return model


# the chapter's sizes, and the d128 curves' stacks in the pilot's pronouncer
@pytest.mark.parametrize("cfg, lm_cfg", [
    (CFG, pt.LMConfig.like(CFG)), (sw.TUNE128, sw.CURVE_SIZES["d128"][0]),
])  # fmt: skip
def test_masked_lm_becomes_the_pronouncer_encoder(cfg, lm_cfg):
    torch.manual_seed(1)
    lm = pt.TinyLM(lm_cfg).eval()
    model = _pronouncer_with(ft.encoder_state(lm), cfg)
    with torch.no_grad():
        memory, _ = model.eval().encode(SRC)
        hidden = lm(SRC, pt.attention_mask("mlm", SRC))
    real = SRC != 0
    torch.testing.assert_close(memory[real], hidden[real])
    raises(TypeError, "lm", ft.encoder_state, model)


@pytest.mark.parametrize("kind", pt.OBJECTIVES)
def test_every_row_the_pronouncer_reads_was_trained(kind):
    """Every row the pronouncer reads comes out moved (a causal LM's BOS row
    stands in for its EOS row, which it never reads); no other is touched."""
    pangram = ["thequickbrownfoxjumpsoverthelazydog"]  # every letter
    torch.manual_seed(0)
    start = pt.TinyLM().embed.lut.weight.detach().clone()
    lm, _ = pt.train_lm(kind, pangram, steps=2, batch=4, seed=0)
    trained = lm.embed.lut.weight.detach()
    read = sorted(set(pr.encode_words(pangram).flatten().tolist()))
    assert read == [pt.EOS, *range(pt.FIRST_LETTER, pt.MASK)]
    # the cause: a causal or prefix LM never reads EOS
    assert torch.equal(trained[pt.EOS], start[pt.EOS]) == (kind != "mlm")
    handed = ft.encoder_state(lm, kind)["src_embed.lut.weight"]
    for i in read:
        assert not torch.equal(handed[i], start[i]), (kind, i)
    want = trained[pt.BOS if kind != "mlm" else pt.EOS]
    torch.testing.assert_close(handed[pt.EOS], want, rtol=0, atol=0)
    others = [i for i in range(pt.MASK) if i != pt.EOS]
    torch.testing.assert_close(handed[others], trained[others], rtol=0, atol=0)
    assert handed.size(0) == len(pr.letter_vocab())
    raises(ValueError, "kind", ft.encoder_state, lm, "bart")


def _trainer(steps: int, n_train: int):
    """train_pronouncer, quietly, on a 32-wide config and a few words."""
    cfg = PronouncerConfig(d_model=32, d_ff=64, steps=steps, eval_every=steps)
    split = pr.split_words(20, 20, 0)
    data = {"train": split["train"][:n_train], "valid": split["valid"]}
    splits, vocabs = pr.pronouncer_data(data, stress=False)
    kw = dict(vocabs=vocabs, progress=False)
    return functools.partial(train_pronouncer, cfg, splits, **kw), cfg


def test_train_pronouncer_init_is_checked():
    train, _ = _trainer(steps=2, n_train=40)
    bad = {"encoder.nothing": torch.zeros(1)}
    raises(ValueError, "encoder.nothing", train, init=bad)
    wrong = {"src_embed.lut.weight": torch.zeros(30, 32)}
    raises(ValueError, "shape", train, init=wrong)
    raises(TypeError, "init", train, init=[1])


def test_sampling_and_completion():
    torch.manual_seed(0)
    model = pt.TinyLM().eval()
    words = pt.sample_words(model, 20, 1.0, seed=3, max_len=6)
    assert words == pt.sample_words(model, 20, 1.0, seed=3, max_len=6)
    assert all(w == "" or (w.isalpha() and len(w) <= 6) for w in words)
    assert words != pt.sample_words(model, 20, 1.0, seed=4, max_len=6)
    raises(ValueError, "temperature", pt.sample_words, model, 2, 0.0)
    done = pt.complete("plm", model, ["pro", "th"], max_new=4)
    assert [w[: len(p)] for w, p in zip(done, ["pro", "th"])] == ["pro", "th"]
    assert all(len(w) <= len(p) + 4 for w, p in zip(done, ["pro", "th"]))
    raises(ValueError, "kind", pt.complete, "mlm", model, ["pro"])


def test_chapter_10s_loops_compute_on_one_thread(monkeypatch):
    """Beside two busy processes chapter 10 took 506 s while its loops ran on
    two threads each, 101 s on one: whatever the caller set, training,
    fine-tuning, sampling and completion run on one (a count, not a time)."""
    seen = []
    record = lambda *_: seen.append(torch.get_num_threads())  # noqa: E731
    step = pt._next_logits
    monkeypatch.setattr(pt, "_next_logits", lambda *a: record() or step(*a))
    tune, _ = _trainer(steps=2, n_train=8)
    with threads(2):
        pt.train_lm("clm", WORDS[:64], steps=2, batch=8, hooks=[record])
        tune(hooks=[record])
        pt.sample_words(pt.TinyLM().eval(), 2, 1.0, max_len=2)
        pt.complete("plm", pt.TinyLM().eval(), ["a"], max_new=2)
        assert torch.get_num_threads() == 2
    assert len(seen) >= 6 and set(seen) == {1}, seen


def test_count_models_score_the_same_tokens():
    valid = WORDS[:300]
    for kind in pt.OBJECTIVES:
        accs = []
        for order in (1, 2, 3):
            counts = ngram.LetterCounts(kind, WORDS[300:5000], order)
            out = pt.evaluate_lm(kind, counts, valid)
            model = pt.TinyLM().eval()
            assert out["n"] == pt.evaluate_lm(kind, model, valid)["n"]
            accs.append(out["accuracy"])
        assert 0 < accs[0] < accs[1] < accs[2] < 1, kind
        # their logits are log-probabilities: each position's sum to 1
        ids = pt.encode(valid[:5], bos=kind != "mlm")
        probs = counts.logits(ids, None).exp().sum(-1)
        torch.testing.assert_close(probs, torch.ones_like(probs))


def test_a_causal_seven_gram_reads_six_tokens_back():
    # "abcdefx" and "zbcdefy" share the five letters before their last
    # one: a 6-gram cannot tell which comes, a 7-gram (6 back) can
    words = ["abcdefx", "zbcdefy"] * 4
    ids = pt.encode(["abcdef"], bos=True)  # [BOS] a b c d e f [EOS]
    for order, certain in ((6, False), (7, True)):
        counts = ngram.LetterCounts("clm", words, order)
        p = counts.logits(ids)[0, 6].exp()  # what follows f
        assert (p.max() > 0.9) == certain, order
        torch.testing.assert_close(p.sum(), torch.tensor(1.0))


def test_count_models_by_hand():
    train = ["abc"] * 5 + ["abd"] * 2
    # causal: a from the start, then b, c (5 against 2), then the end
    clm = ngram.LetterCounts("clm", train, 2)
    guess = clm.logits(pt.encode(["abc"], bos=True)).argmax(-1)[0]
    assert pt.decode(guess[:3]) == "abc" and guess[3] == pt.EOS
    # masked: both sides as the input shows them: a _ c -> b, a b _ -> c
    mlm = ngram.LetterCounts("mlm", train, 3)
    ids = pt.encode(["abc", "abd"])
    ids[0, 1], ids[1, 2] = pt.MASK, pt.MASK
    guess = mlm.logits(ids).argmax(-1)
    assert pt.decode([guess[0, 1], guess[1, 2]]) == "bc"
    # a letter's own input is never read
    other = ids.clone()
    other[:, 0] = pt.MASK
    torch.testing.assert_close(mlm.logits(other)[:, 0], mlm.logits(ids)[:, 0])
    five = ngram.LetterCounts("mlm", train, 5)  # two letters each side
    assert pt.decode(five.logits(other)[0, 0].argmax(-1, keepdim=True)) == "a"
    raises(ValueError, "order", ngram.LetterCounts, "clm", train, 8)
    # 2 + 2 is the widest masked one
    raises(ValueError, "order", ngram.LetterCounts, "mlm", train, 6)
    raises(ValueError, "kind", ngram.LetterCounts, "gpt", train, 2)
    raises(ValueError, "words", ngram.LetterCounts, "clm", ["Abc"], 2)


def test_count_models_sample_like_the_models():
    counts = ngram.LetterCounts("clm", ["ab"] * 10, 3)
    cold = pt.sample_words(counts, 20, temperature=0.1, seed=0)
    assert cold == ["ab"] * 20  # the only word it knows, nearly surely
    bigram = ngram.LetterCounts("clm", WORDS[:2000], 2)
    hot = pt.sample_words(bigram, 50, 1.2, seed=1)
    assert hot == pt.sample_words(bigram, 50, 1.2, seed=1)
    assert hot != pt.sample_words(bigram, 50, 1.2, seed=2)
    assert all(w == "" or w.isalpha() for w in hot)


def test_masked_accuracy_by_input():
    torch.manual_seed(0)
    model = pt.TinyLM().eval()
    valid = WORDS[:400]
    out = pt.evaluate_lm("mlm", model, valid)
    gen = torch.Generator().manual_seed(123)
    inputs, _, targets, chosen = pt.objective_batch("mlm", valid, gen)
    kinds = pt.input_kinds(inputs, targets, chosen)
    counts = {k: int(v.sum()) for k, v in kinds.items()}
    assert sum(counts.values()) == out["n"] and min(counts.values()) > 0
    assert not (kinds["mask"] & kinds["kept"]).any()
    weighted = sum(counts[k] * out["by_input"][k] for k in counts) / out["n"]
    assert weighted == pytest.approx(out["accuracy"])
    for k in counts:
        assert out["share"][k] == pytest.approx(counts[k] / out["n"])
    assert "by_input" not in pt.evaluate_lm("clm", model, valid)


def test_the_adamw_recipe_warms_up_clips_and_decays_to_zero(monkeypatch):
    """AdamW, warm-up over 1/24 of the steps, decay to 0, clipping at 1."""
    seen = {}
    real = pt.train

    def spy(model, opt, batches, loss_fn, steps, **kw):
        rates = [opt.param_groups[0]["lr"]]  # then after each step: the next
        kw["hooks"] = [
            *kw["hooks"],
            lambda s, x: rates.append(opt.param_groups[0]["lr"]),
        ]
        seen.update(opt=opt, clip=kw["clip"], rates=rates)
        return real(model, opt, batches, loss_fn, steps, **kw)

    monkeypatch.setattr(pt, "train", spy)
    cfg = pt.LMConfig(d_model=32, num_layers=2, d_ff=64, norm_first=True)
    words = ["cat", "dog", "bird", "fish"] * 8
    _, losses = pt.train_lm("clm", words, 48, 16, 0, 3e-3, cfg, recipe="adamw")
    assert isinstance(seen["opt"], torch.optim.AdamW) and seen["clip"] == 1.0
    rates = seen["rates"]  # the rate of steps 1, 2, ..., 48, then 0
    assert rates[:3] == pytest.approx([1.5e-3, 3e-3, 3e-3 * 46 / 47])
    assert rates[-2:] == pytest.approx([3e-3 / 47, 0.0])
    assert sum(losses[-8:]) < 0.7 * sum(losses[:8])
    raises(ValueError, "recipe", pt.train_lm, "clm", words, 4, recipe="adam")


@pytest.mark.exact
def test_stored_runs_first_steps_replay():
    """The first steps of sweep_ch10.py's seed-1 runs (a causal LM, a
    pronouncer from scratch on 500 words), re-run."""
    lines = sw.OUT.read_text().splitlines()
    rows = {r["run"]: r for r in map(json.loads, lines)}
    d = sw.data()
    recipe = (sw.PRE_STEPS["clm"], sw.PRE_BATCH, 1, sw.PRE_LR, sw.LM)  # seed 1
    _, losses = pt.train_lm("clm", d["train"], *recipe, stop_after=sw.REPLAY)
    assert [round(x, 5) for x in losses] == rows["pre_clm_s1"]["losses"]
    entries = sw.label_order(d["split"]["train"], 1)[:500]
    data = {"train": entries, "valid": d["split"]["valid"]}
    splits, vocabs = pr.pronouncer_data(data, stress=False)
    cfg = sw.tune_config(sw.TUNE_STEPS, 1)
    kw = dict(progress=False, vocabs=vocabs, stop_after=sw.REPLAY)
    _, history = train_pronouncer(cfg, splits, **kw)
    got = [round(x, 5) for x in history["train_loss"]]
    assert got == rows[f"tune_500_scratch_{sw.TUNE_STEPS}_s1"]["losses"]


def test_the_stored_settings_are_the_sweeps():
    """Chapter 10 reads the settings from the meta row: a changed
    sweep_ch10.py needs a new sweep."""
    path = ROOT / "book" / "data" / "ch10_runs.jsonl"
    meta = json.loads(path.read_text().splitlines()[0])
    assert meta["run"] == "meta"
    assert meta["settings"] == json.loads(json.dumps(sw.settings()))


@pytest.mark.parametrize("seed", [0, 1])
def test_span_corruption_hides_spans_and_keeps_the_rest(seed):
    """T5's objective: sentinels stand for the target's spans; ~15% hidden,
    in spans that never touch."""
    rng = random.Random(seed)
    hidden = total = 0
    for word in WORDS[:3000]:
        if len(word) < 2:
            continue
        source, target = pt.span_corruption(word, rng)
        spans, at = {}, None
        for t in target:
            if t in pt.SENTINELS:
                at = spans.setdefault(t, [])
            else:
                at.append(t)
        assert list(spans) == list(pt.SENTINELS[: len(spans)])
        assert all(spans.values())  # no empty span
        put_back = [
            c for t in source for c in (spans[t] if t in spans else [t])
        ]
        assert "".join(put_back) == word
        assert sum(t in pt.SENTINELS for t in source) == len(spans)
        assert all(  # a letter always separates two spans
            not (a in pt.SENTINELS and b in pt.SENTINELS)
            for a, b in zip(source, source[1:])
        )
        hidden += sum(map(len, spans.values()))
        total += len(word)
    assert 0.13 < hidden / total < 0.17


def test_span_corruption_bad_input_and_vocab():
    raises(ValueError, "'a'", pt.span_corruption, "a", random.Random(0))
    raises(TypeError, "rng", pt.span_corruption, "cat", 0)
    vocab = pt.span_vocab()
    assert vocab.itos[: pt.MASK] == pr.letter_vocab().itos  # same letter ids
    pairs = pt.span_pairs(["cat", "a", "dog"], seed=0, copies=2)
    assert len(pairs) == 4  # one letter has no span to hide beside it
    assert pairs == pt.span_pairs(["cat", "dog"], 0, 2)


def test_seq2seq_state_moves_both_stacks_to_the_pronouncer():
    """Both stacks and the letter rows move; the phoneme side is random."""
    vocab = pt.span_vocab()
    torch.manual_seed(1)
    t5 = build_pronouncer(CFG, vocab, vocab)
    state = ft.seq2seq_state(t5)
    assert not any(k.startswith(("tgt_embed", "generator")) for k in state)
    assert any(k.startswith("decoder.") for k in state)
    model = _pronouncer_with(state)
    with torch.no_grad():
        memory, _ = model.eval().encode(SRC)
        want, _ = t5.eval().encode(SRC)  # the letters' ids are the same
    torch.testing.assert_close(memory, want)


def test_init_lr_slows_or_freezes_the_started_weights():
    train, cfg = _trainer(steps=20, n_train=200)
    torch.manual_seed(3)
    lm = pt.TinyLM(pt.LMConfig.like(cfg))
    start = ft.encoder_state(lm)
    moved = {}
    for init_lr in (1.0, 0.1, 0.0):
        model, history = train(init=start, init_lr=init_lr)
        w = model.state_dict()
        moved[init_lr] = max(
            (w[k] - v).abs().max().item() for k, v in start.items()
        )
        assert all(p.requires_grad for p in model.parameters())
        assert history["lr"][-1] > 0
    assert moved[0.0] == 0.0 < moved[0.1] < moved[1.0]
    raises(ValueError, "init_lr", train, init=start, init_lr=1.5)
    raises(ValueError, "needs init", train, init_lr=0.5)


def test_noam_scales_each_group():
    a, b = (torch.nn.Parameter(torch.zeros(1)) for _ in "ab")
    opt = torch.optim.Adam([{"params": [a]}, {"params": [b]}], lr=1.0)
    noam_scheduler(opt, 64, 10, scales=(1.0, 0.25))
    lr_a, lr_b = (g["lr"] for g in opt.param_groups)
    assert lr_b == pytest.approx(0.25 * lr_a) and lr_a > 0
    raises(ValueError, "scales", noam_scheduler, opt, 64, 10, scales=(1.0,))
    with pytest.raises(ValueError, match="scales"):
        noam_scheduler(opt, 64, 10, scales=(1.0, 0.0))


def test_counting_on_the_denoising_task():
    """sweep_ch10.py's count baseline: word probabilities by hand, restore,
    and the stored 5-gram score replayed."""
    words = ["cat"] * 10 + ["cart", "chart"] * 2 + ["dog"] * 5
    counts = ngram.LetterCounts("clm", words, 3)
    ids = pt.encode(["cart"], bos=True)  # BOS c a r t EOS
    logp = counts.logits(ids[:, :-1])[0]  # the next token after each
    by_hand = sum(logp[i, ids[0, i + 1]].item() for i in range(5))
    got = sw.word_log2probs(counts, ["cart"])[0]
    assert math.isclose(got * math.log(2), by_hand, rel_tol=1e-5)
    filled = sw.restore(
        counts, [["c", "<0>", "t"], ["c", "<0>"], ["<0>", "g"]]
    )
    assert filled == ["cat", "cat", "dog"]
    raises(ValueError, "one sentinel", sw.restore, counts, [["c", "a", "t"]])
    with pytest.raises(ValueError, match="causal"):
        sw.restore(ngram.LetterCounts("mlm", words, 3), [["c", "<0>"]])
    d = sw.data()
    targets = sw.denoising_targets(d, 100)
    five = ngram.LetterCounts("clm", d["train"], 5)
    got = sw.restore(five, [list(s) for s in targets])
    hits = sum(g in t for g, t in zip(got, targets.values())) / 100
    stored = sw.stored_rows()["restore_counts"]
    assert round(hits, 5) == stored["exact_first_100"]["5"]


def test_the_t5_probe_measures_what_the_decoder_reads():
    """sweep_ch10.py's probe of T5's target: the source-free loss by hand,
    swapped sources, the encoder's spread."""
    vocab = pt.span_vocab()
    train = [(["c", "<0>"], ["<0>", "e"])] * 2 + [(["c", "<0>"], ["<0>", "a"])]
    valid = [(["b", "<0>"], ["<0>", "e"])]
    # BOS -> <0> always, BOS <0> -> e 2 times in 3, BOS <0> e -> EOS always
    want = -math.log(2 / 3) / 3
    got = sw.source_free_loss(train, valid, vocab, 0.0)
    assert math.isclose(got, want, rel_tol=1e-12)
    v, eps, ids = len(vocab), 0.1, vocab.stoi

    def smoothed(law, right):  # label-smoothed loss under a known law
        q = [(1 - eps) * law.get(k, 0.0) + eps / v for k in range(v)]
        nll = [-math.log(x) for x in q]
        return (1 - eps) * nll[right] + eps * sum(nll) / v

    first, then = {ids["<0>"]: 1.0}, {ids["e"]: 2 / 3, ids["a"]: 1 / 3}
    want = (smoothed(first, ids["<0>"]) + smoothed(then, ids["e"])
            + smoothed({vocab.eos_id: 1.0}, vocab.eos_id)) / 3  # fmt: skip
    got = sw.source_free_loss(train, valid, vocab, eps)
    assert math.isclose(got, want, rel_tol=1e-9)
    unseen = [(["b", "<0>"], ["<1>", "z"])]  # after <1>: never seen, uniform
    want = (smoothed(first, ids["<1>"]) + 2 * math.log(v)) / 3
    got = sw.source_free_loss(train, unseen, vocab, eps)
    assert math.isclose(got, want, rel_tol=1e-9)

    pairs = [([c, "<0>"], ["<0>", c]) for c in "abcdefgh"]
    swapped = sw.swapped_sources(pairs, seed=5)
    assert [t for _, t in swapped] == [t for _, t in pairs]
    assert all(s != p[0] for (s, _), p in zip(swapped, pairs))
    assert sorted(s[0] for s, _ in swapped) == list("abcdefgh")
    raises(ValueError, "2 pairs", sw.swapped_sources, pairs[:1], 0)

    cfg = PronouncerConfig(d_model=32, d_ff=64, num_layers=1, dropout=0.0)
    torch.manual_seed(0)
    model = build_pronouncer(cfg, vocab, vocab)
    src = torch.tensor([[3, 4, 29, 5], [6, 29, 7, 0]])
    assert sw.memory_spread(model, src) > 0.3  # random: letters differ
    with torch.no_grad():  # the last LayerNorm writes its bias alone
        model.encoder.layers[-1].sub2.norm.weight.zero_()
        model.encoder.layers[-1].sub2.norm.bias.normal_()
    assert sw.memory_spread(model, src) < 1e-6


@pytest.mark.exact
def test_the_t5_probes_replay_their_first_steps():
    """The stored probes (T5's target at the recipe's rate and a quarter of
    it; T5's and BART's at a quarter on a Pre-Norm stack): their first
    steps re-run."""
    rows, d, vocab = sw.stored_rows(), sw.data(), pt.span_vocab()
    for factor, kind, pre in [
        (sw.PROBE_FACTOR, "t5", False), (0.25, "t5", False),
        (0.25, "t5", True), (0.25, "bart", True),
    ]:  # fmt: skip
        _, history = train_pronouncer(
            sw.ed_config(0, factor, pre), sw.ed_splits(d, 0, kind == "bart"),
            progress=False, vocabs=(vocab, vocab), stop_after=sw.REPLAY,
        )  # fmt: skip
        got = [round(x, 5) for x in history["train_loss"]]
        assert got == rows[sw.probe_name(0, factor, kind, pre)]["losses"]
