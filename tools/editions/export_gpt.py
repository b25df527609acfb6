"""Export chapter 11's stored GPT for the live page (book/gpt_live.md).

    python -m tools.editions.export_gpt     (tools/editions/build_book.py too)

Writes ``_static/gpt/weights.js``, ``window.GPT_DATA = {...}``, made again
whenever ``book/data/ch11_gpt.pt``, ``utils/bpe.py`` or an exporter changes
(tools/editions/live_export.py says how, and makes the weights). Besides
the weights it holds (format ``FORMAT``, version ``VERSION``, which
``_static/gpt/gpt.js`` checks):

- ``architecture``: everything the forward pass depends on, read from the
  model itself (``architecture()``);
- ``tokenizer``: the BPE merges in the order learned (token ``256 + i`` is
  ``merges[i]``), and the pre-tokenizer: ``utils.bpe.PATTERN``'s text (the
  page knows this one pattern and refuses another) and its four character
  classes (``CLASSES``) as ranges of code points, found by Python's ``re``
  over every code point, so the page cuts text exactly as Python does,
  outside ASCII too.
"""

from __future__ import annotations

import functools
import pathlib
import re
import sys

from tools import ROOT
from tools.editions import live_export
from tools.editions.live_export import unsupported

CHECKPOINT = ROOT / "book" / "data" / "ch11_gpt.pt"
OUT = ROOT / "_static" / "gpt" / "weights.js"
PREFIX = "window.GPT_DATA = "
FORMAT = "course-gpt"
VERSION = 1
# the regular expression each character class stands for in PATTERN
CLASSES = {
    "letter": r"[^\W\d_]",
    "digit": r"\d",
    "space": r"\s",
    "other": r"(?:[^\s\w]|_)",
}
# utils.bpe.PATTERN with its classes named: the one pre-tokenizer the page
# computes (checked against the pattern's text before export)
TEMPLATE = (
    "'s|'t|'re|'ve|'m|'ll|'d| ?{letter}+| ?{digit}+| ?{other}+"
    "|{space}+(?!\\S)|{space}+"
)


def architecture(model) -> dict:
    """What the page needs to compute ``model`` (a ``utils.gpt.GPT``), read
    from its modules. Raises ValueError for anything the page does not
    compute, so a model it would get wrong is never exported."""
    from torch import nn

    from utils.gpt import GPT, GPTBlock

    if type(model) is not GPT:
        raise unsupported(
            f"model is {type(model).__name__}, not utils.gpt.GPT"
        )
    layers = list(model.stack.layers)
    if not layers or not all(type(x) is GPTBlock for x in layers):
        raise unsupported("a block is not utils.gpt.GPTBlock")
    # the page has ReLU, not GPT-2's GELU
    shared = live_export.layers(model, layers, [x.self_attn for x in layers])
    if shared["norm"] != "pre":
        raise unsupported("a Post-Norm sublayer (the page computes Pre-Norm)")
    if not isinstance(model.stack.norm, nn.LayerNorm):
        raise unsupported("no final LayerNorm")
    c = model.config
    return {
        "model": "decoder-only",
        "vocab_size": c.vocab_size,
        "context": c.context,
        "d_model": c.d_model,
        "num_heads": c.num_heads,
        "num_layers": len(layers),
        "d_ff": shared["d_ff"],
        "activation": shared["activation"],
        "norm": "pre",
        "final_norm": True,
        "layer_norm_eps": shared["layer_norm_eps"],
        "positional": "learned",
        "attention_bias": shared["attention_bias"],
        "tied_output": True,  # GPT._run: x @ tok_emb.weight.T
        "window_restart": c.context // 2,  # GPT.generate
    }


@functools.cache
def char_classes() -> dict[str, list[list[int]]]:
    """Each of ``CLASSES`` as sorted, disjoint ``[first, last]`` ranges of
    code points, found by Python's ``re`` itself over every code point
    (surrogates included: ``re`` classifies them too)."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    out = {}
    for name, regex in CLASSES.items():
        runs = re.finditer(f"(?:{regex})+", every)
        out[name] = [[m.start(), m.end() - 1] for m in runs]
    return out


def tokenizer(merges: dict) -> dict:
    """The BPE merges and the pre-tokenizer, as the page reads them."""
    from utils import bpe

    names = {k: "{" + k + "}" for k in CLASSES}
    if bpe.PATTERN.pattern != TEMPLATE.format(**CLASSES):
        raise ValueError(
            "utils.bpe.PATTERN is not the pattern the live page computes: "
            f"{bpe.PATTERN.pattern!r}; teach _static/gpt/gpt.js the new one"
        )
    if bpe.PATTERN.flags != re.UNICODE:
        raise ValueError(f"utils.bpe.PATTERN has flags {bpe.PATTERN.flags}")
    pairs = list(merges)
    if [merges[p] for p in pairs] != list(range(256, 256 + len(pairs))):
        raise ValueError("the merges are not numbered 256, 257, ... in order")
    return {
        "kind": "byte-bpe",
        "merges": [list(p) for p in pairs],
        "pattern": bpe.PATTERN.pattern,
        # the pattern with its classes named, \S too: the page's regex
        "template": TEMPLATE.format(**names).replace("\\S", "{nonspace}"),
        "classes": char_classes(),
    }


def payload(checkpoint: pathlib.Path = CHECKPOINT) -> dict:
    """The exported data as a dict (``fp16`` as base64 text)."""
    from utils.gpt import load_gpt

    model, merges = load_gpt(checkpoint)
    arch = architecture(model)
    weights = live_export.fp16(checkpoint, model)
    if len(merges) + 256 != arch["vocab_size"]:
        raise ValueError(
            f"{len(merges)} merges for a vocabulary of {arch['vocab_size']}"
        )
    return {
        "format": FORMAT,
        "format_version": VERSION,
        "architecture": arch,
        "tokenizer": tokenizer(merges),
        **weights,
    }


EXPORT = live_export.Export(
    CHECKPOINT, OUT, PREFIX, payload, (__file__, ROOT / "utils" / "bpe.py")
)
export, ensure, is_current = EXPORT.export, EXPORT.ensure, EXPORT.is_current

if __name__ == "__main__":
    EXPORT.main()
