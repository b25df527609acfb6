"""utils.pretraining: BERT's masking rule (statistically), the loss on
chosen positions only, the three attention masks, and one row of chapter
10's stored sweep re-run."""

from __future__ import annotations

import json
import pathlib
import random

import pytest
import torch

from utils import corpus
from utils import pretraining as pt
from utils.loss import masked_cross_entropy
from utils.masks import causal_mask, prefix_lm_mask
from utils.runtime import threads

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIG = corpus.encode(corpus.make_splits(0)["train"]).repeat(30, 1)


def _within(k: int, n: int, p: float, sds: float = 4.0) -> bool:
    return abs(k / n - p) < sds * (p * (1 - p) / n) ** 0.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bert_rule_15_percent_then_80_10_10(seed):
    inputs, chosen = pt.bert_mask(BIG, torch.Generator().manual_seed(seed))
    normal = BIG >= len(corpus.SPECIALS)
    assert not chosen[~normal].any()
    assert torch.equal(inputs[~chosen], BIG[~chosen])  # the rest untouched
    n_normal, n_chosen = int(normal.sum()), int(chosen.sum())
    assert n_normal > 100_000
    assert _within(n_chosen, n_normal, 0.15)
    same = 1 / len(corpus.NORMAL_IDS)
    masked = chosen & (inputs == corpus.MASK)
    kept = chosen & (inputs == BIG)
    randomised = chosen & ~masked & ~kept
    assert _within(int(masked.sum()), n_chosen, 0.8)
    assert _within(int(randomised.sum()), n_chosen, 0.1 * (1 - same))
    assert _within(int(kept.sum()), n_chosen, 0.1 * (1 + same))
    # random replacements are normal tokens, never a special one
    assert (inputs[randomised] >= len(corpus.SPECIALS)).all()


def test_bert_rule_other_rates_and_bad_rates():
    inputs, chosen = pt.bert_mask(
        BIG, torch.Generator().manual_seed(0), p=0.5, p_mask=1.0, p_random=0.0
    )
    normal = BIG >= len(corpus.SPECIALS)
    assert _within(int(chosen.sum()), int(normal.sum()), 0.5)
    assert (inputs[chosen] == corpus.MASK).all()
    with pytest.raises(ValueError, match="p_mask \\+ p_random"):
        pt.bert_mask(BIG[:2], p_mask=0.95, p_random=0.1)


def test_mlm_loss_ignores_unchosen_positions():
    torch.manual_seed(0)
    ids = BIG[:16]
    _, chosen = pt.bert_mask(ids, torch.Generator().manual_seed(4))
    assert chosen.any() and (~chosen).any()
    logits = torch.randn(*ids.shape, len(corpus.TOKENS), requires_grad=True)
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


def test_prefix_lm_mask_hand_written():
    # [CLS] seven = 7 [EOS] and a padded row; prefix "[CLS] seven =" is 3
    ids = corpus.encode([7, 15])[:, :5]
    ids[1, 4] = corpus.PAD
    mask = pt.attention_mask("plm", ids, torch.tensor([3, 3]))
    expected = torch.tensor(
        [
            [1, 1, 1, 0, 0],
            [1, 1, 1, 0, 0],
            [1, 1, 1, 0, 0],
            [1, 1, 1, 1, 0],
            [1, 1, 1, 1, 1],
        ],
        dtype=torch.bool,
    )
    assert mask.shape == (2, 1, 5, 5)
    assert torch.equal(mask[0, 0], expected)
    assert torch.equal(
        mask[1, 0], expected & torch.tensor([1, 1, 1, 1, 0]).bool()
    )
    assert torch.equal(mask[0, 0], prefix_lm_mask(5, 3))


def test_causal_and_bidirectional_masks_hide_padding():
    ids = corpus.encode([7, 777])
    real = ids != corpus.PAD
    clm = pt.attention_mask("clm", ids)
    mlm = pt.attention_mask("mlm", ids)
    size = ids.size(1)
    for b in range(2):
        assert torch.equal(clm[b, 0], causal_mask(size) & real[b][None, :])
        assert torch.equal(mlm[b, 0], real[b][None, :].expand(size, size))
    with pytest.raises(ValueError, match="prefix_len"):
        pt.attention_mask("plm", ids)
    with pytest.raises(ValueError, match="kind"):
        pt.attention_mask("gpt", ids)


@pytest.mark.parametrize("kind", ["clm", "plm"])
def test_no_scored_row_sees_its_target(kind):
    ids = corpus.encode([305, 7, 999, 40])
    _, mask, targets, on = pt.objective_batch(kind, ids)
    torch.testing.assert_close(targets, ids[:, 1:])
    for b, t in on.nonzero().tolist():
        assert t + 1 >= mask.size(-1) or not mask[b, 0, t, t + 1]
    if kind == "plm":  # scored: the digits and [EOS] only
        assert on.sum(1).tolist() == [4, 2, 4, 3]


def test_causal_model_output_ignores_the_future():
    torch.manual_seed(0)
    model = pt.TinyLM().eval()
    ids = corpus.encode([305])
    changed = ids.clone()
    changed[0, 6:] = corpus.TOKEN_ID["9"]  # rewrite the digits
    with torch.no_grad():
        a = model(ids, pt.attention_mask("clm", ids))
        b = model(changed, pt.attention_mask("clm", changed))
        c = model(changed, pt.attention_mask("mlm", changed))
        d = model(ids, pt.attention_mask("mlm", ids))
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert not torch.allclose(c[:, :6], d[:, :6])  # bidirectional sees it


def test_statement_data_changes_one_digit_in_false_rows():
    numbers = list(range(1, 400))
    ids, labels = pt.statement_data(numbers, seed=3)
    truth = corpus.encode(numbers)
    diff = (ids != truth).sum(1)
    assert torch.equal(diff == 0, labels == 1)
    assert (diff[labels == 0] == 1).all()
    assert 0.4 < labels.float().mean() < 0.6


@pytest.mark.exact
def test_sweep_row_reproduces():
    """Re-run seed 0 of tools/sweep_ch10.py (about 30 s): the pre-trained
    masked LM's test accuracy and one fine-tuning row, against the JSON."""
    sweep = json.loads((ROOT / "book/data/ch10_sweep.json").read_text())
    steps = sweep["config"]["body_steps"]
    splits = corpus.make_splits(0)
    with threads(1):
        body, _ = pt.train_lm("mlm", splits["train"], steps, seed=0)
    stats = pt.evaluate_lm("mlm", body, splits["test"])
    stored = sweep["pretrain"][0]
    assert stored["seed"] == 0
    assert abs(stats["accuracy"] - stored["mlm_body"]["accuracy"]) < 0.03
    row = next(
        r
        for r in sweep["finetune"]
        if (r["seed"], r["labels"], r["init"], r["pooling"])
        == (0, 16, "pretrained", "cls")
    )
    train = list(splits["train"])
    random.Random(1000).shuffle(train)
    acc = pt.fine_tune_row(body, train, splits["test"], 16, "cls", 0)
    assert abs(acc - row["accuracy"]) < 0.05
