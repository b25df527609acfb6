"""Export the stored pronouncer for the live page (book/pronouncer_live.md).

    python -m tools.export_pronouncer        (tools/build_book.py calls it)

Writes ``_static/pronouncer/weights.js`` (generated, not committed: it is
rebuilt whenever ``book/data/pronouncer.pt`` or this exporter changes, found
by their SHA-256 written in the file). The file is one JavaScript
statement, ``window.PRONOUNCER_DATA = {...}``, so the page can load it with
a ``<script>`` tag: that works from ``file://`` too, where ``fetch()``
fails.
It holds (format ``FORMAT``, version ``VERSION``; the page refuses any
other, and any export that lacks a field or a tensor it needs):

- ``architecture``: everything the forward pass depends on, read from the
  model itself (``architecture()``): d_model, heads, encoder and decoder
  layer counts, d_ff, the FFN's activation, the norm placement (``"post"``:
  LN(x + F(x)); ``"pre"``: x + F(LN(x)), then a final LayerNorm after each
  stack), LayerNorm eps, the embedding scale (sqrt(d_model)), the
  positional encoding (kind, base, max_len), whether the attention
  projections have biases and whether the embeddings and the output layer
  share one matrix;
- ``letters`` / ``phonemes``: the vocabularies (``letter_vocab()``,
  ``phoneme_vocab(stress)``), ``tokens`` in id order and the ids of PAD,
  BOS and EOS;
- ``examples``: an example word for each phoneme (``PHONEMES``);
- ``tensors``: ``[name, shape, offset]`` into ``fp16``, the state dict's
  tensors in order, each row-major, little-endian IEEE half floats, base64;
  the SAME fp16 numbers as the checkpoint (no re-rounding): decoded to
  float32 they equal, bit for bit, the weights ``load_pronouncer`` gives
  the chapters (checked here before writing);
- ``test``: the held-out test words (``split_words()["test"]``) with their
  pronunciations without stress, ``"word": "P1 P2|Q1 Q2"``. Only the test
  words ship: they are the ones the model never saw, so comparing with them
  is honest, and the whole dictionary would triple the file.

Bump ``VERSION`` whenever the layout or the meaning of a field changes, and
teach ``_static/pronouncer/pronouncer.js`` (``FORMAT_VERSION``) the new one.
"""

from __future__ import annotations

import base64
import pathlib

from . import ROOT, live_export

CHECKPOINT = ROOT / "book" / "data" / "pronouncer.pt"
OUT = ROOT / "_static" / "pronouncer" / "weights.js"
PREFIX = "window.PRONOUNCER_DATA = "
FORMAT = "course-pronouncer"
VERSION = 2  # 1: Post-Norm assumed, sizes only; 2: the whole architecture


def checkpoint_hash(path: pathlib.Path = CHECKPOINT) -> str:
    """SHA-256 of the checkpoint and of this exporter: a change to either
    makes the build export again."""
    return live_export.source_hash(path, [pathlib.Path(__file__)])


def is_current(
    out: pathlib.Path = OUT, checkpoint: pathlib.Path = CHECKPOINT
) -> bool:
    """True if ``out`` exists and was made from this checkpoint."""
    return live_export.written_hash(out) == checkpoint_hash(checkpoint)


def architecture(model) -> dict:
    """What the page needs to compute ``model`` (a ``utils.model.Transformer``
    in eval mode), read from its modules.

    Raises ValueError for anything the page does not compute (another
    class, mixed norm placements or eps, another positional encoding), so a
    model the page would get wrong is never exported.
    """
    import math

    import torch
    from torch import nn

    from utils.layers import (
        DecoderLayer,
        Embeddings,
        EncoderLayer,
        FeedForward,
        Residual,
    )
    from utils.model import Transformer
    from utils.positional import PositionalEncoding, sinusoidal_encoding

    def unsupported(what: str):
        return ValueError(f"the live page cannot compute this model: {what}")

    if type(model) is not Transformer:
        raise unsupported(f"model is {type(model).__name__}, not Transformer")
    enc, dec = list(model.encoder.layers), list(model.decoder.layers)
    if not all(type(x) is EncoderLayer for x in enc) or not all(
        type(x) is DecoderLayer for x in dec
    ):
        raise unsupported("a layer is not the course's Encoder/DecoderLayer")
    layers = enc + dec
    if not all(type(x.ffn) is FeedForward for x in layers):
        raise unsupported("an FFN is not utils.layers.FeedForward (ReLU)")
    subs = [m for m in model.modules() if isinstance(m, Residual)]
    placements = {m.norm_first for m in subs}
    if len(placements) != 1:
        raise unsupported("Pre-Norm and Post-Norm sublayers mixed")
    norm_first = placements.pop()
    finals = [model.encoder.norm, model.decoder.norm]
    if any(isinstance(f, nn.LayerNorm) != norm_first for f in finals):
        raise unsupported("a final LayerNorm that does not match norm_first")
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    if not all(m.elementwise_affine and m.bias is not None for m in norms):
        raise unsupported("a LayerNorm without its weight and bias")
    eps = {m.eps for m in norms}
    if len(eps) != 1:
        raise unsupported(f"LayerNorms with different eps {sorted(eps)}")
    embeds = (model.src_embed, model.tgt_embed)
    if not all(type(e) is Embeddings for e in embeds):
        raise unsupported("an embedding is not utils.layers.Embeddings")
    pos = model.pos
    if type(pos) is not PositionalEncoding:
        raise unsupported(f"positions by {type(pos).__name__}")
    base = 10000.0
    if not torch.equal(pos.pe, sinusoidal_encoding(pos.max_len, pos.d_model)):
        raise unsupported("the positional table is not sinusoidal, base 1e4")
    attns = [x.self_attn for x in layers] + [x.cross_attn for x in dec]
    biases = {a.w_q.bias is not None for a in attns}
    if len(biases) != 1:
        raise unsupported("attention projections with and without biases")
    lut = model.src_embed.lut.weight
    shared = model.tgt_embed.lut.weight is lut
    if shared != (model.generator.weight is lut):
        raise unsupported("only some of the embeddings and output tied")
    d_ff = {x.ffn.w_1.out_features for x in layers}
    if len(d_ff) != 1:
        raise unsupported(f"layers with different d_ff {sorted(d_ff)}")
    return {
        "model": "encoder-decoder",
        "d_model": model.d_model,
        "num_heads": model.num_heads,
        "num_encoder_layers": len(enc),
        "num_decoder_layers": len(dec),
        "d_ff": d_ff.pop(),
        "activation": "relu",
        "norm": "pre" if norm_first else "post",
        "final_norm": norm_first,
        "layer_norm_eps": eps.pop(),
        # Embeddings multiplies by math.sqrt(d_model), a double
        "embedding_scale": math.sqrt(model.src_embed.d_model),
        "positional": {
            "kind": "sinusoidal",
            "base": base,
            "max_len": pos.max_len,
        },
        "attention_bias": biases.pop(),
        "share_embeddings": shared,
    }


def _vocab(vocab) -> dict:
    return {
        "tokens": [vocab.itos[i] for i in range(len(vocab))],
        "pad_id": vocab.pad_id,
        "bos_id": vocab.bos_id,
        "eos_id": vocab.eos_id,
    }


def payload(checkpoint: pathlib.Path = CHECKPOINT) -> dict:
    """The exported data as a dict (``fp16`` as base64 text)."""
    import numpy as np
    import torch

    from utils import pronunciation as pr

    checkpoint = pathlib.Path(checkpoint)
    stored = torch.load(checkpoint, map_location="cpu", weights_only=True)
    model, cfg, stress = pr.load_pronouncer(checkpoint)
    if stress:
        raise ValueError(
            f"checkpoint {checkpoint} predicts stress digits; the live page "
            "shows the 39 phonemes without stress"
        )
    arch = architecture(model)
    if arch["norm"] != ("pre" if cfg.norm_first else "post"):
        raise ValueError(f"norm_first={cfg.norm_first} but the model's is not")
    fp32 = model.state_dict()
    if list(stored["state_dict"]) != list(fp32):
        raise ValueError(
            f"checkpoint {checkpoint}: its tensors are not the model's"
        )
    chunks, tensors, offset = [], [], 0
    for name, t in stored["state_dict"].items():
        if t.dtype != torch.float16:
            raise TypeError(f"{name} is {t.dtype}, expected torch.float16")
        half = t.contiguous().numpy().astype("<f2")
        # the page decodes these halves to float32: exactly the chapters'
        back = torch.from_numpy(half.astype(np.float32))
        if not torch.equal(back, fp32[name]):
            raise ValueError(f"{name}: fp16 -> fp32 differs from the model")
        tensors.append([name, list(t.shape), offset])
        chunks.append(half.tobytes())
        offset += t.numel()
    letters, phonemes = pr.letter_vocab(), pr.phoneme_vocab(stress)
    test = {
        word: "|".join(
            dict.fromkeys(" ".join(pr.strip_stress(p)) for p in prons)
        )
        for word, prons in sorted(pr.split_words()["test"])
    }
    return {
        "format": FORMAT,
        "format_version": VERSION,
        "architecture": arch,
        "letters": _vocab(letters),
        "phonemes": _vocab(phonemes),
        "examples": {p: w for p, (_, w) in pr.PHONEMES.items()},
        "tensors": tensors,
        "fp16": base64.b64encode(b"".join(chunks)).decode("ascii"),
        "test": test,
    }


def export(
    checkpoint: pathlib.Path = CHECKPOINT, out: pathlib.Path = OUT
) -> pathlib.Path:
    """Write ``out`` from ``checkpoint``; return ``out``."""
    return live_export.write(
        out,
        "tools/export_pronouncer.py from book/data/pronouncer.pt",
        checkpoint_hash(checkpoint),
        (
            "The test words' pronunciations: CMUdict, Copyright (C) "
            "1993-2015 Carnegie Mellon University, BSD-style licence "
            "(book/data/CMUDICT_LICENSE.txt).",
        ),
        PREFIX,
        payload(checkpoint),
    )


def ensure(
    checkpoint: pathlib.Path = CHECKPOINT, out: pathlib.Path = OUT
) -> bool:
    """Export unless ``out`` is current; True if it wrote the file."""
    return live_export.ensure(
        out, checkpoint_hash(checkpoint), lambda: export(checkpoint, out)
    )


if __name__ == "__main__":
    path = export()
    size = path.stat().st_size
    print(f"wrote {path.relative_to(ROOT)} ({size / 1e6:.2f} MB)")
