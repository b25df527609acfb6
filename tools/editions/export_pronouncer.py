"""Export the stored pronouncer for the live page (book/pronouncer_live.md).

    python -m tools.editions.export_pronouncer     (build_book.py calls it)

Writes ``_static/pronouncer/weights.js``, ``window.PRONOUNCER_DATA =
{...}``, made again whenever ``book/data/pronouncer.pt`` or an exporter
changes (tools/editions/live_export.py says how, and makes the weights).
Besides the weights it holds (format ``FORMAT``, version ``VERSION``, which
``_static/pronouncer/pronouncer.js`` checks):

- ``architecture``: everything the forward pass depends on, read from the
  model itself (``architecture()``; ``norm``, ``"post"``: LN(x + F(x));
  ``"pre"``: x + F(LN(x)), then a final LayerNorm after each stack);
- ``letters`` / ``phonemes``: the vocabularies, ``tokens`` in id order and
  the ids of PAD, BOS and EOS;
- ``examples``: an example word for each phoneme (``PHONEMES``);
- ``test``: the held-out test words (``split_words()["test"]``) with their
  pronunciations without stress, ``"word": "P1 P2|Q1 Q2"``. Only the test
  words ship: they are the ones the model never saw, so comparing with them
  is honest, and the whole dictionary would triple the file.
"""

from __future__ import annotations

import pathlib

from tools import ROOT
from tools.editions import live_export
from tools.editions.live_export import unsupported

CHECKPOINT = ROOT / "book" / "data" / "pronouncer.pt"
OUT = ROOT / "_static" / "pronouncer" / "weights.js"
PREFIX = "window.PRONOUNCER_DATA = "
FORMAT = "course-pronouncer"
VERSION = 2  # 1: Post-Norm assumed, sizes only; 2: the whole architecture


def _embeddings(model) -> bool:
    """Checks the embeddings and the positions the page computes (the
    course's Embeddings, sinusoidal positions of base 1e4); whether the
    embeddings and the output layer share one matrix."""
    import torch

    from utils.layers import Embeddings
    from utils.positional import PositionalEncoding, sinusoidal_encoding

    embeds = (model.src_embed, model.tgt_embed)
    if not all(type(e) is Embeddings for e in embeds):
        raise unsupported("an embedding is not utils.layers.Embeddings")
    pos = model.pos
    if type(pos) is not PositionalEncoding:
        raise unsupported(f"positions by {type(pos).__name__}")
    if not torch.equal(pos.pe, sinusoidal_encoding(pos.max_len, pos.d_model)):
        raise unsupported("the positional table is not sinusoidal, base 1e4")
    lut = model.src_embed.lut.weight
    tied = model.tgt_embed.lut.weight is lut
    if tied != (model.generator.weight is lut):
        raise unsupported("only some of the embeddings and output tied")
    return tied


def architecture(model) -> dict:
    """What the page needs to compute ``model`` (a ``utils.model.Transformer``
    in eval mode), read from its modules. Raises ValueError for anything the
    page does not compute, so a model it would get wrong is never exported."""
    import math

    from torch import nn

    from utils.layers import DecoderLayer, EncoderLayer
    from utils.model import Transformer

    if type(model) is not Transformer:
        raise unsupported(f"model is {type(model).__name__}, not Transformer")
    enc, dec = list(model.encoder.layers), list(model.decoder.layers)
    if not all(type(x) is EncoderLayer for x in enc) or not all(
        type(x) is DecoderLayer for x in dec
    ):
        raise unsupported("a layer is not the course's Encoder/DecoderLayer")
    attns = [x.self_attn for x in enc + dec] + [x.cross_attn for x in dec]
    shared = live_export.layers(model, enc + dec, attns)
    norm_first = shared["norm"] == "pre"
    finals = [model.encoder.norm, model.decoder.norm]
    if any(isinstance(f, nn.LayerNorm) != norm_first for f in finals):
        raise unsupported("a final LayerNorm that does not match norm_first")
    tied = _embeddings(model)
    return {
        "model": "encoder-decoder",
        "d_model": model.d_model,
        "num_heads": model.num_heads,
        "num_encoder_layers": len(enc),
        "num_decoder_layers": len(dec),
        "d_ff": shared["d_ff"],
        "activation": shared["activation"],
        "norm": shared["norm"],
        "final_norm": norm_first,
        "layer_norm_eps": shared["layer_norm_eps"],
        # Embeddings multiplies by math.sqrt(d_model), a double
        "embedding_scale": math.sqrt(model.src_embed.d_model),
        "positional": {
            "kind": "sinusoidal",
            "base": 10000.0,
            "max_len": model.pos.max_len,
        },
        "attention_bias": shared["attention_bias"],
        "share_embeddings": tied,
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
    from utils import pronunciation as pr
    from utils.pronouncer import load_pronouncer

    model, cfg, stress = load_pronouncer(checkpoint)
    if stress:
        raise ValueError(
            f"checkpoint {checkpoint} predicts stress digits; the live page "
            "shows the 39 phonemes without stress"
        )
    arch = architecture(model)
    if arch["norm"] != ("pre" if cfg.norm_first else "post"):
        raise ValueError(f"norm_first={cfg.norm_first} but the model's is not")
    weights = live_export.fp16(checkpoint, model)
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
        **weights,
        "test": test,
    }


EXPORT = live_export.Export(
    CHECKPOINT,
    OUT,
    PREFIX,
    payload,
    (__file__,),
    notes=(
        "The test words' pronunciations: CMUdict, Copyright (C) "
        "1993-2015 Carnegie Mellon University, BSD-style licence "
        "(book/data/CMUDICT_LICENSE.txt).",
    ),
)
export, ensure, is_current = EXPORT.export, EXPORT.ensure, EXPORT.is_current

if __name__ == "__main__":
    EXPORT.main()
