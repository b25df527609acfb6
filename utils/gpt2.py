"""GPT-2's published weights and tokenizer files, read into the course's own
``GPT`` and byte-level BPE (chapter 11).

GPT-2 is the course's ``GPT`` at other sizes with GELU's tanh form in the
FFN (:class:`GPT2Config`): Pre-Norm blocks, learned positions, biases in
every projection and LayerNorm (eps 1e-5, PyTorch's default), the output
layer tied to the token embedding. Only the storage differs; ``load_gpt2``
maps Hugging Face's ``GPT2LMHeadModel`` state dict (or the hub's file,
without the ``transformer.`` prefix):

==============================  ===========================================
Hugging Face (block ``h.i``)    ``GPT`` (block ``stack.layers.i``)
==============================  ===========================================
``wte.weight`` (V, d)           ``tok_emb.weight``; ``lm_head.weight`` = it
``wpe.weight`` (C, d)           ``pos_emb.weight``
``ln_1.weight, .bias``          ``sub1.norm.weight, .bias``
``attn.c_attn.weight`` (d, 3d)  ``self_attn.w_q, w_k, w_v.weight``: split,
                                each transposed
``attn.c_attn.bias`` (3d,)      ``self_attn.w_q, w_k, w_v.bias``: split
``attn.c_proj.weight`` (d, d)   ``self_attn.w_o.weight``: transposed
``ln_2.weight, .bias``          ``sub2.norm.weight, .bias``
``mlp.c_fc.weight`` (d, 4d)     ``ffn.w_1.weight``: transposed
``mlp.c_proj.weight`` (4d, d)   ``ffn.w_2.weight``: transposed
``ln_f.weight, .bias``          ``stack.norm.weight, .bias``
``attn.bias``/``masked_bias``   skipped: buffers, the causal mask
==============================  ===========================================

(each ``c_*.bias`` goes to the same layer's bias, as it is). Transposed:
GPT-2's linear layers are ``Conv1D``, ``x @ W + b`` with ``W (in, out)``;
``nn.Linear`` computes ``x @ W.T + b`` with ``W (out, in)``.

The tokenizer: ``vocab.json`` (token -> id) and ``merges.txt`` (the merges
in the order learned) write each byte as a printable character
(:func:`byte_chars`). :class:`GPT2BPE` reads them into ``utils.bpe``'s
merges and translates the ids. It cuts text with GPT-2's own pattern
(:data:`GPT2_PATTERN`, Unicode's letters ``\\p{L}`` and numbers
``\\p{N}``), which Python's ``re`` cannot write: ``utils.bpe.PATTERN``
approximates it and differs on numerals that are not decimal digits (``²``,
``½``, ``Ⅻ``: letters to ``re``, numbers to GPT-2) and on the separators
U+001C-U+001F (whitespace to ``re`` only).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import torch

from . import bpe
from .checks import check_instance, check_int
from .gpt import GPT, GPTConfig

__all__ = [
    "GPT2Config",
    "load_gpt2",
    "byte_chars",
    "GPT2_PATTERN",
    "GPT2BPE",
    "write_bpe",
]


@dataclasses.dataclass(frozen=True)
class GPT2Config(GPTConfig):
    """GPT-2's ``GPTConfig``: the FFN's GELU in its tanh form (GPT-2 was
    trained with it), and by default GPT-2 small's sizes (124M parameters).
    Not ``transformers.GPT2Config``, whose names differ (``n_embd``...)."""

    vocab_size: int = 50257
    context: int = 1024
    d_model: int = 768
    num_heads: int = 12
    num_layers: int = 12
    d_ff: int = 3072
    dropout: float = 0.1
    activation: ClassVar[str] = "gelu_tanh"


# HF's -> ours, per block; the fused c_attn is split apart (load_gpt2)
BLOCK = {
    "ln_1": "sub1.norm",
    "attn.c_proj": "self_attn.w_o",
    "ln_2": "sub2.norm",
    "mlp.c_fc": "ffn.w_1",
    "mlp.c_proj": "ffn.w_2",
}
TOP = {"wte": "tok_emb", "wpe": "pos_emb", "ln_f": "stack.norm"}
# the causal mask, kept by HF as buffers: the course's GPT builds its own
BUFFERS = (".attn.bias", ".attn.masked_bias")
# GPT-2's published sizes all have heads of 64 dimensions (768 / 12, 1024 /
# 16, 1280 / 20, 1600 / 25); the state dict does not record the head count
D_HEAD = 64


def _hf_names(num_layers: int) -> list[str]:
    """Every name, without ``.weight`` / ``.bias``, GPT-2 stores weights
    under."""
    blocks = [*BLOCK, "attn.c_attn"]
    each = [f"h.{i}.{m}" for i in range(num_layers) for m in blocks]
    return [*TOP, *each]


def _course_tensors(hf: str, w: torch.Tensor) -> dict:
    """Our name -> tensor for HF's tensor ``hf``: Conv1D weights (2-D,
    ``(in, out)``) transposed to ``(out, in)``; ``c_attn`` split into q,
    k, v (its output columns, in that order)."""
    module, kind = hf.rsplit(".", 1)
    if module in TOP:
        return {f"{TOP[module]}.{kind}": w}
    _, i, rest = module.split(".", 2)
    if kind == "weight" and rest not in ("ln_1", "ln_2"):
        w = w.T  # (in, out) -> (out, in)
    where = f"stack.layers.{i}."
    if rest == "attn.c_attn":  # (3d, d) or (3d,): q's rows, k's, v's
        qkv = zip(("w_q", "w_k", "w_v"), w.chunk(3))
        return {f"{where}self_attn.{n}.{kind}": t for n, t in qkv}
    return {f"{where}{BLOCK[rest]}.{kind}": w}


@torch.no_grad()
def load_gpt2(state_dict: Mapping, num_heads: int | None = None) -> GPT:
    """The course's ``GPT`` (eval mode, float32) holding a GPT-2 state dict:
    ``GPT2LMHeadModel(...).state_dict()`` or the hub's ``model.safetensors``
    read as a dict. The sizes come from the tensors; ``num_heads`` (not
    stored) defaults to ``d_model // 64``. A key it does not know, a
    missing one, a shape that does not fit, or an output layer that is not
    the token embedding raise ``ValueError`` naming it."""
    check_instance(state_dict, "state_dict", Mapping, "a state dict")
    sd = {k.removeprefix("transformer."): v for k, v in state_dict.items()}
    sd = {k: v for k, v in sd.items() if not k.endswith(BUFFERS)}
    head = sd.pop("lm_head.weight", None)
    if "wte.weight" not in sd or "wpe.weight" not in sd:
        raise ValueError("state_dict has no wte.weight or wpe.weight")
    (vocab, d), context = sd["wte.weight"].shape, len(sd["wpe.weight"])
    if head is not None and not torch.equal(head, sd["wte.weight"]):
        raise ValueError("lm_head.weight is not wte.weight (GPT ties them)")
    blocks = {int(m[1]) for k in sd if (m := re.match(r"h\.(\d+)\.", k))}
    layers = max(blocks, default=0) + 1  # a gap: keys missing below
    want = {f"{n}.{k}" for n in _hf_names(layers) for k in ("weight", "bias")}
    want -= {"wte.bias", "wpe.bias"}  # embeddings have no bias
    missing, unknown = sorted(want - set(sd)), sorted(set(sd) - want)
    if missing or unknown:
        raise ValueError(f"state_dict: missing {missing}, unknown {unknown}")
    d_ff = len(sd["h.0.mlp.c_fc.bias"])  # a bias: no orientation to mistake
    heads = d // D_HEAD if num_heads is None else num_heads
    sizes = vocab, context, d, check_int(heads, "num_heads", 1), layers, d_ff
    model = GPT(GPT2Config(*sizes, dropout=0.0))
    ours = model.state_dict()
    for name in sorted(sd):
        for key, w in _course_tensors(name, sd[name]).items():
            if w.shape != ours[key].shape:  # e.g. a weight not transposed
                got, fit = tuple(sd[name].shape), tuple(ours[key].shape)
                raise ValueError(
                    f"state_dict[{name!r}] {got} gives {key} "
                    f"{tuple(w.shape)}, not {fit}"
                )
            ours[key] = w
    model.load_state_dict(ours)
    return model.eval()


def byte_chars() -> dict[int, str]:
    """GPT-2's character for each byte, in the order of its ids 0-255: a
    printable byte stands for itself, the other 68 (the space, controls,
    ...) for chr(256), chr(257), ... in byte order, so a token in the files
    holds no space to split on (``" the"`` is written ``"Ġthe"``)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    others = [b for b in range(256) if b not in printable]
    table = {b: chr(b) for b in printable}
    table.update({b: chr(256 + i) for i, b in enumerate(others)})
    return table


# GPT-2's split (its encoder.py), for the ``regex`` package: Unicode's
# letters \p{L} and numbers \p{N}, which Python's ``re`` cannot name
GPT2_PATTERN = (
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+"
    r"|\s+(?!\S)|\s+"
)


class GPT2BPE:
    """GPT-2's ``vocab.json`` and ``merges.txt`` run by ``utils.bpe``:
    ``encode(text) -> ids`` and ``decode(ids) -> text`` in ``vocab.json``'s
    numbering. ``merges`` are ``utils.bpe``'s (token ``256 + r`` is the
    ``r``-th merge's; bytes are their own ids). A token no merge makes
    (``<|endoftext|>``) decodes to its text; ``encode`` reads such text as
    plain text, as GPT-2's own encoder does."""

    def __init__(self, vocab_file, merges_file):
        import regex  # GPT2_PATTERN's \p{...}; installed with transformers

        self.pattern = regex.compile(GPT2_PATTERN)
        vocab = json.loads(Path(vocab_file).read_text(encoding="utf-8"))
        lines = Path(merges_file).read_text(encoding="utf-8").splitlines()
        chars = byte_chars()
        byte = {c: b for b, c in chars.items()}
        table = [bytes([b]) for b in range(256)]  # our id -> its bytes
        ids = {t: i for i, t in enumerate(table)}
        self.merges: dict[tuple[int, int], int] = {}
        for n, line in enumerate(lines, 1):
            if not line or n == 1 and line.startswith("#version"):
                continue
            try:  # two tokens, both known: bytes or merges above this line
                a, b = (ids[bytes(byte[c] for c in t)] for t in line.split())
            except (KeyError, ValueError):
                raise ValueError(f"{merges_file}:{n}: {line!r}") from None
            if table[a] + table[b] in ids:  # ours would number it twice
                raise ValueError(f"{merges_file}:{n} makes a token again")
            self.merges[a, b] = ids[table[a] + table[b]] = len(table)
            table.append(table[a] + table[b])
        self.tokens = table
        shown = ["".join(chars[b] for b in t) for t in table]
        if absent := [t for t in shown if t not in vocab]:
            raise ValueError(f"{vocab_file} lacks {absent[:5]}")
        self.to_gpt2 = [vocab[t] for t in shown]  # our id -> GPT-2's
        self.ours = {g: i for i, g in enumerate(self.to_gpt2)}
        self.special = {g: t for t, g in vocab.items() if g not in self.ours}

    def encode(self, text: str) -> list[int]:
        ours = bpe.encode(text, self.merges, self.pattern)
        return [self.to_gpt2[i] for i in ours]

    def decode(self, ids: list[int]) -> str:
        out = []
        for i in ids:
            if i in self.ours:
                out.append(self.tokens[self.ours[i]])
            elif i in self.special:
                out.append(self.special[i].encode("utf-8"))
            else:
                raise ValueError(f"ids holds {i!r}, not in the vocabulary")
        return b"".join(out).decode("utf-8", errors="replace")


def write_bpe(merges: dict, directory) -> tuple[Path, Path]:
    """``utils.bpe``'s ``merges`` as GPT-2's files ``vocab.json`` and
    ``merges.txt`` in ``directory``: ids 0-255 the bytes in GPT-2's order,
    then one per merge, then ``<|endoftext|>``, as GPT-2's. Returns the two
    paths."""
    table, chars = bpe.vocab(merges), byte_chars()  # bpe.vocab checks

    def show(token: bytes) -> str:
        return "".join(chars[b] for b in token)

    tokens = [*chars.values(), *map(show, table[256:]), "<|endoftext|>"]
    if len(set(tokens)) < len(tokens):  # GPT2BPE says which
        raise ValueError("merges makes a token twice: GPT-2's files cannot")
    lines = [f"{show(table[a])} {show(table[b])}" for a, b in merges]
    directory = Path(directory)
    vocab = {t: i for i, t in enumerate(tokens)}
    (directory / "vocab.json").write_text(json.dumps(vocab), "utf-8")
    text = "\n".join(["#version: 0.2", *lines]) + "\n"
    (directory / "merges.txt").write_text(text, "utf-8")
    return directory / "vocab.json", directory / "merges.txt"
