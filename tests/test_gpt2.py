"""GPT-2's weights and tokenizer files in the course's own code, proven
offline against a small random ``transformers`` GPT-2 (the same logits and
greedy tokens) and Hugging Face ``tokenizers`` (the same ids)."""

from __future__ import annotations

import dataclasses
import json
from typing import ClassVar

import pytest
import torch
import transformers
from tokenizers import ByteLevelBPETokenizer, pre_tokenizers
from transformers import GPT2LMHeadModel

from utils import bpe
from utils import shakespeare as sh
from utils.gpt import GPT, GPTConfig, num_parameters
from utils.layers import FeedForward
from utils.gpt2 import GPT2BPE, GPT2Config, byte_chars, load_gpt2, write_bpe
from tests.conftest import raises

SIZES = dict(n_layer=2, n_head=4, n_embd=64, vocab_size=97, n_positions=32)
# float32 on both sides, the same sums in other orders (HF: PyTorch's fused
# attention and its own tanh-GELU formula; ours: the course's attention and
# F.gelu): the logits (std 2.3, up to ~10) differ by rounding only, 4.8e-6
# at most (measured; float32 keeps ~7 digits); a wrong weight moves them by
# 6.7 to 10 (test_a_wrong_weight_changes_the_logits)
ATOL = 1e-5


@pytest.fixture(scope="module")
def theirs() -> GPT2LMHeadModel:
    torch.manual_seed(0)
    config = transformers.GPT2Config(**SIZES, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    # GPT-2's init (std 0.02) leaves the logits near 0 and the attention
    # nearly uniform; larger random weights make every tensor count
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.3)
            if ".ln_" in name and name.endswith("weight"):
                p.add_(1.0)
    return model


def ids(b: int, t: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(SIZES["vocab_size"], (b, t), generator=g)


def unprefixed(theirs) -> dict:
    """Their state dict without the ``transformer.`` prefix."""
    sd = theirs.state_dict()
    return {k.removeprefix("transformer."): v for k, v in sd.items()}


def logits_differ(theirs, state_dict) -> float:
    x = ids(3, SIZES["n_positions"])
    with torch.no_grad():
        ref = theirs(x).logits
        return float((load_gpt2(state_dict, num_heads=4)(x) - ref).abs().max())


def test_the_sizes_are_read_from_the_tensors(theirs):
    ours = load_gpt2(theirs.state_dict(), num_heads=4)
    assert ours.config == GPT2Config(97, 32, 64, 4, 2, 256, 0.0)
    assert ours.config.activation == "gelu_tanh" and not ours.training
    # GPT-2's LayerNorm eps is PyTorch's default, the course's
    eps = {m.eps for m in ours.modules() if isinstance(m, torch.nn.LayerNorm)}
    assert eps == {theirs.config.layer_norm_epsilon} == {1e-5}
    assert theirs.config.activation_function == "gelu_new"  # tanh form
    # GPT-2's published sizes: heads of 64 dimensions unless told otherwise
    assert load_gpt2(theirs.state_dict()).config.num_heads == 1


def test_gpt2_small_and_the_course_gpt(theirs):
    # GPT-2 small's 124,439,808 parameters (the output layer tied)
    assert num_parameters(GPT2Config()) == 124_439_808
    ours = load_gpt2(theirs.state_dict(), num_heads=4)
    assert num_parameters(ours.config) == theirs.num_parameters()
    # the course's GPT as before: ReLU, and a config that stores the same
    # seven sizes (the stored chapter 11 model's file holds them)
    stored = vars(GPTConfig())
    assert GPTConfig().activation == "relu" and "activation" not in stored
    assert {f.name for f in dataclasses.fields(GPT2Config)} == set(stored)
    gpt = GPT(GPTConfig(vocab_size=50))
    assert {b.ffn.activation for b in gpt.stack.layers} == {"relu"}


def test_an_unknown_activation_is_named():
    with pytest.raises(ValueError, match="activation.*'swish'"):
        FeedForward(8, 16, activation="swish")

    @dataclasses.dataclass(frozen=True)
    class Swish(GPTConfig):
        activation: ClassVar[str] = "swish"

    raises(ValueError, "activation", Swish)


def test_same_logits(theirs):
    x = ids(3, SIZES["n_positions"])
    with torch.no_grad():
        ref = theirs(x).logits
        ours = load_gpt2(theirs.state_dict(), num_heads=4)(x)
    assert ref.std() > 1  # logits that say something
    assert torch.allclose(ours, ref, rtol=0, atol=ATOL)


def test_the_hub_file_loads_too(theirs):
    """The hub's file: no ``transformer.`` prefix, no ``lm_head`` (tied), the
    causal mask as buffers (which the course's GPT builds itself)."""
    n, sd = SIZES["n_positions"], unprefixed(theirs)
    del sd["lm_head.weight"]
    for i in range(SIZES["n_layer"]):
        sd[f"h.{i}.attn.bias"] = torch.tril(torch.ones(1, 1, n, n))
        sd[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    assert logits_differ(theirs, sd) < ATOL


@pytest.mark.parametrize("use_cache", [True, False])
def test_same_greedy_tokens(theirs, use_cache):
    ours = load_gpt2(theirs.state_dict(), num_heads=4)
    prompt = ids(1, 6, seed=2)
    ref = theirs.generate(
        prompt, max_new_tokens=24, do_sample=False, pad_token_id=0
    )
    got = ours.generate(prompt, 24, temperature=0.0, use_cache=use_cache)
    assert got.tolist() == ref.tolist()
    assert len(set(got[0, 6:].tolist())) > 5  # not one token repeated


def _swap_q_k(sd: dict, d: int = SIZES["n_embd"]) -> dict:
    w = sd["transformer.h.0.attn.c_attn.weight"].clone()  # (d, 3d)
    w[:, :d], w[:, d : 2 * d] = w[:, d : 2 * d].clone(), w[:, :d].clone()
    return {**sd, "transformer.h.0.attn.c_attn.weight": w}


def _untransposed(sd: dict) -> dict:
    key = "transformer.h.1.attn.c_proj.weight"  # square: the shape passes
    return {**sd, key: sd[key].T}


@pytest.mark.parametrize("spoil", [_swap_q_k, _untransposed])
def test_a_wrong_weight_changes_the_logits(theirs, spoil):
    """The comparison can fail: q and k swapped, or a square Conv1D weight
    not transposed, load silently and miss by far more than ``ATOL``."""
    assert logits_differ(theirs, spoil(theirs.state_dict())) > 0.1


FC = "h.0.mlp.c_fc.weight"


def _drop(key):
    return lambda sd: {k: v for k, v in sd.items() if k != key}


@pytest.mark.parametrize(
    "spoil, error, words",
    [
        (  # a (d, 4d) Conv1D weight given as nn.Linear's (4d, d)
            lambda sd: {**sd, FC: sd[FC].T},
            ValueError,
            [f"['{FC}'] (256, 64)", "w_1.weight (64, 256), not (256, 64)"],
        ),
        (_drop("h.1.ln_2.bias"), ValueError, ["missing ['h.1.ln_2.bias']"]),
        (_drop("wpe.weight"), ValueError, ["wpe.weight"]),
        (
            lambda sd: {**sd, "h.0.attn.rotary.weight": torch.ones(2)},
            ValueError,
            ["unknown ['h.0.attn.rotary.weight']"],
        ),
        (
            lambda sd: {**sd, "lm_head.weight": sd["wte.weight"] + 1},
            ValueError,
            ["lm_head.weight"],
        ),
        (lambda sd: list(sd.items()), TypeError, ["state_dict", "list"]),
    ],
)
def test_what_it_does_not_understand_is_refused(theirs, spoil, error, words):
    sd = unprefixed(theirs)
    with pytest.raises(error) as info:
        load_gpt2(spoil(sd), num_heads=4)
    for word in words:
        assert word in str(info.value)


def test_num_heads_must_divide_d_model(theirs):
    with pytest.raises(ValueError, match="num_heads=5"):
        load_gpt2(theirs.state_dict(), num_heads=5)


# ---- GPT-2's tokenizer files: vocab.json and merges.txt ----

UNICODE = "naïve café — “quotes” 汉字 😀\n\tend_of_line  _x_ 42!"
# where GPT-2's split and the course's PATTERN differ: numerals that are not
# decimal digits, and the ASCII separators U+001C-U+001F
DIFFERENT = ["x² and ½ of Ⅻ", "a \x1cb \x1f c"]
TEXTS = [
    sh.SEPARATOR,
    UNICODE,
    *DIFFERENT,
    "Thou art  nam'd, 2024 times!\n\n  Go",
    "I'll say't: we're, you've, I'm, he'd -- 'tis",
    "Ça, señor? Ünïcödé e\u0301 (combining)",
    "日本語のテキスト，中文标点。한국어",
    "emoji 😀🙂👍🏽 flags 🇬🇧 zwj 👩‍👩‍👧",
    "   leading and trailing   ",
    "tabs\tand\r\nwindows\u00a0nbsp\u3000ideographic",
]


@pytest.fixture(scope="module")
def merges() -> dict:
    # small and fast: 344 merges on 200,000 characters of the training
    # plays, plus text outside ASCII so that some merges hold it
    return bpe.train_bpe(sh.split_works("train")[:200_000] + UNICODE, 600)


@pytest.fixture(scope="module")
def files(merges, tmp_path_factory):
    return write_bpe(merges, tmp_path_factory.mktemp("gpt2_bpe"))


def test_the_files_have_gpt2s_format(files, merges):
    vocab_file, merges_file = files
    vocab = json.loads(vocab_file.read_text("utf-8"))
    lines = merges_file.read_text("utf-8").splitlines()
    assert lines[0] == "#version: 0.2" and len(lines) == 1 + len(merges)
    assert vocab["!"] == 0 and vocab["Ġ"] == 220  # GPT-2's: the space's id
    assert vocab["<|endoftext|>"] == len(vocab) - 1 == 600
    assert all(" " not in t and "\n" not in t for t in vocab)
    # and they read back to the same merges
    assert GPT2BPE(*files).merges == merges


def test_same_ids_as_tokenizers(files):
    ours = GPT2BPE(*files)
    theirs = ByteLevelBPETokenizer(*map(str, files))  # GPT-2's settings
    test = sh.split_works("test")
    for text in [*TEXTS, test[:20_000]]:
        got = ours.encode(text)
        assert got == theirs.encode(text).ids, text[:60]
        assert ours.decode(got) == text
    assert ours.decode([600]) == "<|endoftext|>"


def test_the_split_is_gpt2s_not_the_courses(files):
    level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    chars = {c: b for b, c in byte_chars().items()}
    gpt2 = GPT2BPE(*files).pattern
    for text in TEXTS:
        hf = [
            bytes(chars[c] for c in t) for t, _ in level.pre_tokenize_str(text)
        ]
        assert hf == [c.encode() for c in gpt2.findall(text)], text
        same = bpe.pretokenize(text) == gpt2.findall(text)
        assert same == (text not in DIFFERENT), text
    assert bpe.pretokenize("x²") == ["x²"] and gpt2.findall("x²") == ["x", "²"]
    # U+001C is whitespace to re, a symbol to GPT-2 (a space may lead it)
    assert bpe.pretokenize("a \x1cb") == ["a", " ", "\x1c", "b"]
    assert gpt2.findall("a \x1cb") == ["a", " \x1c", "b"]


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda v, m: (v, m + "Ġ zzz\n"), ["merges.txt:346", "Ġ zzz"]),
        (lambda v, m: (v, m + "a\n"), ["merges.txt:346"]),
        (lambda v, m: (v, m + m.splitlines()[1] + "\n"), ["makes a token"]),
        (lambda v, m: (v.replace('"!"', '"?!"'), m), ["lacks ['!']"]),
    ],
)
def test_files_it_cannot_read_are_refused(files, tmp_path, edit, words):
    vocab, merges = edit(files[0].read_text("utf-8"), files[1].read_text())
    (tmp_path / "vocab.json").write_text(vocab, "utf-8")
    (tmp_path / "merges.txt").write_text(merges, "utf-8")
    with pytest.raises(ValueError) as info:
        GPT2BPE(tmp_path / "vocab.json", tmp_path / "merges.txt")
    for word in words:
        assert word in str(info.value)
