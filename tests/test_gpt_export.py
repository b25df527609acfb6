"""The live GPT's export (tools/editions/export_gpt.py) and its JavaScript
(_static/gpt/gpt.js on _static/engine/engine.js) equal the Python side,
under Node, no browser: the seeded generator (``proof.rng.Mulberry32``);
``drawToken`` at every sampler setting, ties included; the tokenizer on the
real merges, for text in every Unicode plane, and back; a small random GPT
(odd sizes, a context of 12 so the window restarts) generating
``generate_seeded``'s ids with its logits and attention within
``LOGIT_TOL`` / ``ATTENTION_TOL``; tampered exports refused with a reason.
The stored model in Chromium: tests/test_live_gpt.py; shared with the
pronouncer's: tests/live_pages.py, tests/export_checks.py."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import random
import re

import pytest
import torch

from proof.rng import Mulberry32, draw_token, generate_seeded
from tests import export_checks as ec
from tests import live_pages as lp
from tools import ROOT
from tools.editions import export_gpt as ex
from utils import bpe
from utils.gpt import GPT, GPTConfig, load_gpt
from tests.conftest import raises

ENGINE = ROOT / "_static" / "gpt" / "gpt.js"
LOGIT_TOL = 1e-4  # logits of a random model; seen: 2.9e-6
ATTENTION_TOL = 1e-5  # softmax weights in [0, 1]; seen: below 1e-7
SIZES = dict(d_model=18, num_heads=3, num_layers=2, d_ff=30, context=12)
SETTINGS = [  # temperature, top-k, top-p
    (0.0, None, None), (1.0, None, None), (0.7, None, None), (1.3, 5, None),
    (1.0, 1, None), (1.0, None, 0.5), (0.9, 40, 0.9), (2.0, None, 0.99),
]  # fmt: skip
STRINGS = [
    "", "BANQUO.\nThe earth hath bubbles, as the water has,\n",
    "don't won't I'll you're we've he'd she's I'm",
    "  leading and trailing  \n\n\n  \t\r\n ",
    "naïve café, Œdipus, straße, ÆTHELRED", "Привет, мир! Как дела?",
    "汉字和中文标点：你好，世界。", "🙂👍🏽 family: 👨‍👩‍👧 flags 🇬🇧",
    "x² + y³ = z⁴; ½ ¼ Ⅻ ٣٤٥ ०१२", "e\u0301 a\u0308 Devanagari: नमस्ते",
    "nbsp\u00a0here, ideographic\u3000space, nel\u0085, fs\x1c gs\x1d",
    "zero\u200bwidth, bom\ufeff, rtl \u05e9\u05dc\u05d5\u05dd",
    "under_score __init__ a_b_c 123_456", "tabs\tand\vvertical\fform feeds",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 math letters",
]  # fmt: skip

# argv: the engine, a job file (JSON). Prints a JSON answer.
DRIVER = r"""
const [engine, jobFile] = process.argv.slice(2);
const G = require(engine);
const job = JSON.parse(fs.readFileSync(jobFile, "utf8"));
const out = {};
if (job.rng) {
  out.rng = job.rng.seeds.map((s) => {
    const a = new G.Mulberry32(s), b = new G.Mulberry32(s);
    const ints = [], floats = [];
    for (let i = 0; i < job.rng.n; i++) ints.push(a.nextUint32());
    for (let i = 0; i < job.rng.n; i++) floats.push(b.random());
    return { ints, floats };
  });
}
if (job.draws) {
  out.draws = job.draws.map(({ logits, seed, t, k, p, n }) => {
    const rng = new G.Mulberry32(seed);
    const x = Float32Array.from(logits);
    return Array.from({ length: n }, () => G.drawToken(x, rng, t, k, p));
  });
}
if (job.tokenizer) {
  const tok = new G.Tokenizer(job.tokenizer);
  out.encode = job.strings.map((s) => tok.encode(s));
  out.roundtrip = job.strings.map((s) => tok.decode(tok.encode(s)) === s);
  out.tokens = tok.table.map((_, i) => tok.decode([i]));
}
if (job.weights) {
  const model = exported(job.weights, G.GPTModel, "GPT_DATA", G.ExportError);
  out.runs = (job.runs || []).map(({ prompt, n, seed, t, k, p }) => {
    const rng = new G.Mulberry32(seed);
    const settings = { temperature: t, topK: k, topP: p };
    const steps = [...model.generate(prompt, n, rng, settings)];
    return {
      ids: prompt.concat(steps.map((s) => s.token)),
      logits: steps.map((s) => Array.from(s.logits)),
      attention: steps.map(
        (s) => s.attention.map((h) => h.map((w) => Array.from(w)))),
      start: steps.map((s) => s.start),
    };
  });
}
console.log(JSON.stringify(out));
"""


def _run(node: str, tmp: pathlib.Path, job: dict) -> dict:
    (tmp / "job.json").write_text(json.dumps(job))
    return lp.run_node(node, DRIVER, ENGINE, tmp / "job.json")


def test_the_generators_agree(node, tmp_path):
    seeds = [0, 1, 42, 2**31, 2**32 - 1]
    got = _run(node, tmp_path, {"rng": {"seeds": seeds, "n": 2000}})["rng"]
    for seed, js in zip(seeds, got):
        a, b = Mulberry32(seed), Mulberry32(seed)
        assert js["ints"] == [a.next_uint32() for _ in range(2000)], seed
        assert js["floats"] == [b.random() for _ in range(2000)], seed
    # a generator, not a constant: the integers spread over [0, 2**32)
    ints = got[0]["ints"]
    lo, hi = min(ints), max(ints)
    assert len(set(ints)) == len(ints) and lo < 2**28 < 2**32 - 2**28 < hi
    raises(ValueError, "seed", Mulberry32, 2**32)


def _logits(kind: str, seed: int, vocab: int = 300) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(vocab, generator=gen) * 3
    if kind == "ties":  # many exact ties, in the top ones too
        x = (x * 2).round() / 2
    return x.float()


def test_draws_agree_on_the_same_logits(node, tmp_path):
    jobs, want = [], []
    for kind in ("random", "ties"):
        for i, (t, k, p) in enumerate(SETTINGS):
            logits = _logits(kind, i)
            for seed in (0, 7):
                rng = Mulberry32(seed)
                want.append(
                    [draw_token(logits, rng, t, k, p) for _ in range(200)]
                )
                jobs.append(dict(seed=seed, t=t, k=k, p=p, n=200))
                jobs[-1]["logits"] = logits.tolist()
    got = _run(node, tmp_path, {"draws": jobs})["draws"]
    for job, g, w in zip(jobs, got, want):
        assert g == w, {k: v for k, v in job.items() if k != "logits"}
    # the draws vary where they should: not a constant answer
    assert len(set(want[2])) > 20 and len(set(want[0])) == 1


def _random_strings(n: int) -> list[str]:
    rng = random.Random(0)
    pools = [  # (lowest, highest) code points, in hexadecimal
        [int(end, 16) for end in pool.split("-")]
        for pool in "20-7E 0-20 80-24F 370-52F 590-6FF 900-97F 2000-206F "
        "3000-30FF 4E00-9FFF AC00-D7A3 1F300-1FAFF 10000-10FFFF".split()
    ]
    out = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(pools)
            c = rng.randint(lo, hi)
            chars.append(chr(c if not 0xD800 <= c <= 0xDFFF else 0x41))
        out.append("".join(chars))
    return out


def test_the_tokenizer_is_pythons(node, tmp_path):
    _, merges = load_gpt(ex.CHECKPOINT)
    from utils import shakespeare as sh

    test = sh.split_works("test")
    strings = STRINGS + [test[i : i + 3000] for i in (0, 50_000)]
    strings += _random_strings(300)
    job = {"tokenizer": ex.tokenizer(merges), "strings": strings}
    got = _run(node, tmp_path, job)
    for s, ids in zip(strings, got["encode"]):
        assert ids == bpe.encode(s, merges), repr(s[:80])
    assert all(got["roundtrip"])
    assert got["tokens"] == [
        bpe.decode([i], merges) for i in range(len(got["tokens"]))
    ]
    # the strings do reach outside ASCII and past the merges
    assert sum(not s.isascii() for s in strings) > 250
    assert any(
        len(bpe.encode(s, merges)) < len(s.encode()) // 2 for s in strings
    )


def _random_checkpoint(path: pathlib.Path) -> GPT:
    """A random GPT with its own small BPE, stored as tools/runs/train_gpt.py
    stores chapter 11's (config, merges, fp16 state dict)."""
    from utils import shakespeare as sh

    merges = bpe.train_bpe(sh.split_works("valid")[:20_000], 300)
    config = GPTConfig(vocab_size=256 + len(merges), **SIZES)
    torch.manual_seed(3)
    model = GPT(config)
    lp.spread_norms(model)
    with torch.no_grad():  # sharper distributions than N(0, 0.02) gives
        model.tok_emb.weight.mul_(20)
        model.pos_emb.weight.mul_(20)
    state = {k: v.half() for k, v in model.state_dict().items()}
    saved = dict(config=dataclasses.asdict(config), state_dict=state)
    torch.save(dict(saved, merges=[list(pair) for pair in merges]), path)
    loaded, stored = load_gpt(path)
    assert stored == merges
    return loaded


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpt-export")
    model = _random_checkpoint(tmp / "gpt.pt")
    return model, ex.export(tmp / "gpt.pt", tmp / "weights.js")


def test_the_export_carries_the_architecture(exported):
    model, weights = exported
    _, data = lp.read_export(weights, ex.PREFIX)
    assert (data["format"], data["format_version"]) == (ex.FORMAT, 1)
    want = dict(model="decoder-only", vocab_size=300, context=12, d_model=18)
    want |= dict(num_heads=3, num_layers=2, d_ff=30, activation="relu")
    want |= dict(norm="pre", final_norm=True, layer_norm_eps=1e-5)
    want |= dict(positional="learned", attention_bias=True, tied_output=True)
    assert data["architecture"] == dict(want, window_restart=6)
    assert [n for n, _, _ in data["tensors"]] == list(model.state_dict())


def _reference(model: GPT, ids: list[int], start: int):
    """PyTorch's logits of the next token after ``ids[start:]`` and every
    head's attention of its last query, (layers, heads, positions)."""
    with torch.no_grad():
        logits = model(torch.tensor([ids[start:]]))[0, -1]
    attention = torch.stack(
        [b.self_attn.last_weights[0, :, -1] for b in model.stack.layers]
    )
    return logits, attention


def test_the_engine_computes_the_exported_model(node, exported, tmp_path):
    model, weights = exported
    runs = [
        dict(prompt=[5, 80, 290, 32, 7], n=30, seed=s, t=t, k=k, p=p)
        for s, (t, k, p) in enumerate(SETTINGS[:4] + SETTINGS[5:7])
    ]
    # a prompt longer than the context: the window starts inside it
    long = list(range(3, 300, 15))
    runs += [dict(prompt=long, n=10, seed=9, t=0.9, k=None, p=None)]
    got = _run(node, tmp_path, {"weights": str(weights), "runs": runs})["runs"]
    worst = ec.Worst()
    restarts = 0
    for run, js in zip(runs, got):
        prompt, n, rng = run["prompt"], run["n"], Mulberry32(run["seed"])
        settings = dict(temperature=run["t"], top_k=run["k"], top_p=run["p"])
        want = generate_seeded(model, prompt, n, rng, **settings)
        assert js["ids"] == want, run
        if run["t"] == 0:
            greedy = model.generate(torch.tensor([prompt]), n, temperature=0)
            assert js["ids"] == greedy[0].tolist()
        restarts += len(set(js["start"])) - 1
        for i, start in enumerate(js["start"]):
            ids = js["ids"][: len(run["prompt"]) + i]
            logits, attention = _reference(model, ids, start)
            worst.see("logits", js["logits"][i], logits)
            worst.see("attention", js["attention"][i], attention)
    print(
        f"\nlargest differences from PyTorch {worst}; "
        f"{restarts} window restarts"
    )
    assert restarts >= len(runs)  # every run went past the context
    worst.within(logits=LOGIT_TOL, attention=ATTENTION_TOL)


REFUSALS = ec.tamperings(  # name | field | value | words the refusal holds
    """
version 2 | format_version | 2 | format version 2
another format | format | "course-pronouncer" | not a GPT export
no heads | architecture.num_heads | DROP | lacks architecture.num_heads
unknown setting | architecture.rotary | True | architecture.rotary
post-norm | architecture.norm | "post" | architecture.norm
gelu | architecture.activation | "gelu" | architecture.activation
heads | architecture.num_heads | 4 | multiple of num_heads
sinusoidal | architecture.positional | "sinusoidal" | architecture.positional
another pattern | tokenizer.template | lambda t: t.replace("'s|", "")
    | tokenizer.template
merges | tokenizer.merges | lambda m: m[:-1] | tokenizer.merges
classes | tokenizer.classes.digit | DROP | tokenizer.classes
missing tensor | tensors | lambda ts: [t for t in ts
    if t[0] != "stack.norm.bias"] | lacks tensor stack.norm.bias
wrong shape | tensors.0.1 | [300, 17]
    | tensor tok_emb.weight has shape [300,17]
short fp16 | fp16 | lambda f: f[: len(f) // 2] | fp16 holds
no export | - | None | holds no export
"""
)


@pytest.mark.parametrize("change, words", REFUSALS)
def test_a_tampered_export_is_refused(node, exported, tmp_path, change, words):
    def run(weights):
        return _run(node, tmp_path, {"weights": str(weights)})

    ec.assert_refused(
        run, exported[1], ex.PREFIX, change, words, tmp_path / "w.js"
    )


def test_the_exporter_refuses_what_the_page_would_get_wrong(monkeypatch):
    from torch import nn

    model = GPT(GPTConfig(vocab_size=260, **SIZES))
    assert ex.architecture(model)["num_layers"] == 2
    model.stack.layers[1].ffn = nn.Sequential(nn.Linear(18, 18), nn.GELU())
    raises(ValueError, "FFN", ex.architecture, model)
    raises(ValueError, "not utils.gpt.GPT", ex.architecture, nn.Linear(2, 2))
    from utils.gpt2 import GPT2Config

    gpt2 = GPT(GPT2Config(vocab_size=260, **SIZES))
    raises(ValueError, "FFN", ex.architecture, gpt2)  # GPT-2's GELU
    monkeypatch.setattr(bpe, "PATTERN", re.compile(r"\w+|\s+|[^\w\s]+"))
    raises(ValueError, "PATTERN", ex.tokenizer, {(104, 101): 256})


def test_the_build_exports_only_when_the_sources_change(tmp_path):
    data = lp.exports_again_only_on_change(ex, tmp_path)
    assert data["architecture"]["context"] == 256
