"""The live pronouncer's export (tools/editions/export_pronouncer.py) carries
the whole architecture, and the page's engine, under Node (no browser),
computes what PyTorch does for a random Pre-Norm and Post-Norm model: the
greedy phonemes exactly, log-probabilities within ``LOGP_TOL``, attention
within ``ATTENTION_TOL``, the beam list with scores within ``SCORE_TOL``. A
tampered export, and a model the page would get wrong, are refused by name.
tests/test_live_pronouncer.py (slow) checks the stored model in Chromium.
"""

from __future__ import annotations

import json
import math
import pathlib

import pytest
import torch

from tests import export_checks as ec
from tests import live_pages as lp
from tools import ROOT
from tools.editions import export_pronouncer as ex
from utils import pronunciation as pr
from utils.layers import Residual
from utils.model import Transformer
from utils.pronouncer import load_pronouncer
from tests.conftest import raises

ENGINE = ROOT / "_static" / "pronouncer" / "pronouncer.js"
LOGP_TOL = 1e-4  # log-probabilities; seen: below 2e-6
ATTENTION_TOL = 1e-5  # softmax weights in [0, 1]; seen: below 1e-6
SCORE_TOL = 1e-4  # summed log-probabilities; seen: below 1e-5
WORDS = ["a", "cat", "queue", "xylophone", "zzzq"]
# odd sizes: d_model and d_ff not multiples of 4, 3 heads of 6
SIZES = {"d_model": 18, "num_heads": 3, "num_layers": 2, "d_ff": 30}

# Runs the engine on an export: argv = engine, weights.js, words (JSON).
# Prints {"refused": message} or, per word, the greedy output, the
# log-probabilities of each step of it (teacher-forced through the KV
# cache; -inf as null), the greedy run's cross-attention and the beam list.
DRIVER = r"""
const [engine, weights, words] = process.argv.slice(2);
const { Pronouncer, ExportError } = require(engine);
const model = exported(weights, Pronouncer, "PRONOUNCER_DATA", ExportError);
const out = {};
for (const word of JSON.parse(words)) {
  const g = model.greedy(word);
  const src = model.source(word);
  const enc = model.encode(src);
  const cache = model.startCache();
  const ids = [model.ids.bos_id];
  for (const p of g.phonemes) ids.push(model.phonemes.indexOf(p));
  const logp = ids.slice(0, src.length + 15).map((t) => Array.from(
    model.step(enc, cache, t).logp, (v) => (v === -Infinity ? null : v)));
  out[word] = {
    greedy: g.phonemes.join(" "),
    logp,
    attention: g.attention,
    beam: model.beam(word, 4, 4, 0).map(
      (r) => [r.phonemes.join(" "), r.score]),
  };
}
console.log(JSON.stringify(out));
"""


def _random_checkpoint(path: pathlib.Path, norm_first: bool) -> Transformer:
    """A random pronouncer saved as the stored one; load_pronouncer's model."""
    torch.manual_seed(1 if norm_first else 2)
    letters, phonemes = pr.letter_vocab(), pr.phoneme_vocab(False)
    config = dict(SIZES, norm_first=norm_first, max_len=40, dropout=0.0)
    model = Transformer(
        len(letters), len(phonemes), pad_id=letters.pad_id, **config
    )
    lp.spread_norms(model)
    state = {k: v.half() for k, v in model.state_dict().items()}
    torch.save({"config": config, "state_dict": state}, path)
    loaded, cfg, stress = load_pronouncer(path)
    assert cfg.norm_first is norm_first and not stress
    return loaded


def _run(node: str, weights: pathlib.Path, words: list[str]) -> dict:
    return lp.run_node(
        node, DRIVER, ENGINE, weights, json.dumps(words), timeout=120
    )


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict:
    """norm ("pre" or "post") -> (random model, path of its weights.js)."""
    out = {}
    for norm in ("pre", "post"):
        tmp = tmp_path_factory.mktemp(f"export-{norm}")
        model = _random_checkpoint(tmp / "pronouncer.pt", norm == "pre")
        out[norm] = (model, ex.export(tmp / "pronouncer.pt", tmp / "w.js"))
    return out


@pytest.fixture(params=["pre", "post"])
def exported(request, exports):
    """(norm, model, path of its weights.js), for each placement."""
    return (request.param, *exports[request.param])


def test_the_export_carries_the_architecture(exported):
    norm, model, weights = exported
    _, data = lp.read_export(weights, ex.PREFIX)
    assert (data["format"], data["format_version"]) == (ex.FORMAT, 2)
    want = dict(model="encoder-decoder", d_model=18, num_heads=3, d_ff=30)
    want |= dict(num_encoder_layers=2, num_decoder_layers=2, activation="relu")
    want |= dict(norm=norm, final_norm=norm == "pre", layer_norm_eps=1e-5)
    want |= dict(embedding_scale=18**0.5, attention_bias=True)
    want["positional"] = {"kind": "sinusoidal", "base": 10000.0, "max_len": 40}
    assert data["architecture"] == dict(want, share_embeddings=False)
    assert data["letters"]["tokens"] == pr.letter_vocab().itos
    assert data["phonemes"]["eos_id"] == pr.phoneme_vocab(False).eos_id
    names = [n for n, _, _ in data["tensors"]]
    assert names == list(model.state_dict())
    assert ("encoder.norm.weight" in names) == (norm == "pre")


def _torch_answers(model, word: str, greedy: str) -> dict:
    """PyTorch on ``word``: greedy, beam, and greedy's teacher-forced
    log-probabilities and cross-attention."""
    vocab = pr.phoneme_vocab(False)
    src = pr.encode_words([word])
    ys = torch.tensor([vocab.encode(greedy.split(), bos=True, eos=False)])
    ys = ys[:, : src.size(1) + 15]
    with torch.no_grad():
        logp = torch.log_softmax(model(src, ys), dim=-1)[0]  # (T, V)
    attention = torch.stack(
        [layer.cross_attn.last_weights[0] for layer in model.decoder.layers]
    )  # (layers, heads, T, S)
    beam = pr.pronounce_beam(model, [word], 4, num_return=4, stress=False)
    return {
        "greedy": " ".join(pr.pronounce(model, [word], stress=False)[0]),
        "logp": logp,
        "attention": attention,
        "beam": [(" ".join(p), s) for p, s in beam[0]],
    }


def test_the_engine_computes_the_exported_model(node, exported):
    norm, model, weights = exported
    got = _run(node, weights, WORDS)
    pad = pr.phoneme_vocab(False).pad_id
    worst = ec.Worst()
    for word in WORDS:
        js = got[word]
        want = _torch_answers(model, word, js["greedy"])
        assert js["greedy"] == want["greedy"], (norm, word)
        rows = [[-math.inf if v is None else v for v in r] for r in js["logp"]]
        logp = torch.tensor(rows)
        assert logp.shape == want["logp"].shape, (norm, word)
        finite = logp.isfinite()
        assert torch.isinf(logp[:, pad]).all() and finite[:, pad + 1 :].all()
        keep = torch.arange(logp.size(1)) != pad
        worst.see("logp", logp[:, keep], want["logp"][:, keep])
        # the greedy run's attention: one row per step it took
        attention = torch.tensor(js["attention"])
        steps = attention.size(2)
        assert attention.shape == want["attention"][:, :, :steps].shape
        worst.see("attention", attention, want["attention"][:, :, :steps])
        beams = js["beam"], want["beam"]
        assert [p for p, _ in beams[0]] == [p for p, _ in beams[1]], beams
        for (_, s), (_, t) in zip(*beams):
            worst.see("score", s, t)
    print(f"\n{norm}-norm: largest differences from PyTorch {worst}")
    worst.within(logp=LOGP_TOL, attention=ATTENTION_TOL, score=SCORE_TOL)


def test_the_engine_sees_the_norm_placement(node, exported, tmp_path):
    """Read as the other placement, other numbers: the comparison can fail."""
    norm, _, weights = exported
    head, data = lp.read_export(weights, ex.PREFIX)
    if norm == "pre":  # as Post-Norm, the final norms are refused: drop them
        ts = data["tensors"]
        ts[:] = [t for t in ts if ".layers." in t[0] or "norm" not in t[0]]
    data["architecture"]["norm"] = "post" if norm == "pre" else "pre"
    data["architecture"]["final_norm"] = norm == "post"
    if norm == "post":  # Pre-Norm needs final norms: borrow layer 0's
        fp16 = list(data["tensors"])
        for stack in ("encoder", "decoder"):
            for part in ("weight", "bias"):
                source = f"{stack}.layers.0.sub1.norm.{part}"
                offset = next(o for n, _, o in fp16 if n == source)
                data["tensors"].append([f"{stack}.norm.{part}", [18], offset])
    other = lp.write_export(tmp_path / "weights.js", head, data)
    original = _run(node, weights, WORDS[2:3])[WORDS[2]]
    flipped = _run(node, other, WORDS[2:3])[WORDS[2]]
    a, b = (torch.tensor(x["logp"][0][1:]) for x in (original, flipped))
    assert (a - b).abs().max().item() > 1e-2


TAMPERED = ec.tamperings(  # name | field | value | words the refusal holds
    """
version 1 | format_version | 1 | format version 1
version 3 | format_version | 3 | format version 3
no version | format_version | DROP | format version undefined
another format | format | "something-else" | not a pronouncer export
no norm | architecture.norm | DROP | lacks architecture.norm
no architecture | architecture | DROP | lacks architecture
unknown setting | architecture.rotary | True
    | architecture.rotary is a setting this page does not
sandwich norm | architecture.norm | "sandwich"
    | architecture.norm must be "post" or "pre"
learned positions | architecture.positional.kind | "learned"
    | architecture.positional.kind
gelu | architecture.activation | "gelu" | architecture.activation
heads | architecture.num_heads | 4 | multiple of num_heads
final norm | architecture.final_norm | lambda v: not v | final_norm
missing tensor | tensors | lambda ts: [t for t in ts
    if t[0] != "generator.bias"] | lacks tensor generator.bias
extra tensor | tensors | lambda ts: [*ts, ["encoder.layers.0.extra", [18], 0]]
    | encoder.layers.0.extra is not part
wrong shape | tensors.0.1 | [28, 18] | src_embed.lut.weight has shape [28,18]
short fp16 | fp16 | lambda s: s[:400] | fp16 holds
no export | - | None | holds no export
"""
)


@pytest.mark.parametrize("change, words", TAMPERED)
def test_a_tampered_export_is_refused(node, tmp_path, exports, change, words):
    def run(weights):
        return _run(node, weights, ["cat"])

    out = tmp_path / "weights.js"
    ec.assert_refused(run, exports["pre"][1], ex.PREFIX, change, words, out)


def test_the_exporter_refuses_what_the_page_cannot_compute(
    exported, monkeypatch
):
    _, model, _ = exported
    assert ex.architecture(model)["d_ff"] == 30
    sub = next(m for m in model.modules() if isinstance(m, Residual))
    with monkeypatch.context() as m:  # the shared model, put back after
        m.setattr(sub, "norm_first", not sub.norm_first)
        raises(ValueError, "Pre-Norm and Post-Norm", ex.architecture, model)
    with monkeypatch.context() as m:
        m.setattr(model.decoder.layers[0].sub1.norm, "eps", 1e-6)
        raises(ValueError, "different eps", ex.architecture, model)
    assert ex.architecture(model)["d_ff"] == 30  # as it was
    linear = torch.nn.Linear(2, 2)
    raises(ValueError, "not Transformer", ex.architecture, linear)
