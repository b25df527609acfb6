"""What the live pages' exporters share (tools/editions/export_pronouncer.py,
tools/editions/export_gpt.py): the generated file's form, when to make it
again, the checks on the layers both pages compute the same way (the shared
engine, _static/engine/engine.js) and the fp16 tensors.

An export (``_static/<page>/weights.js``, not committed) is one JavaScript
statement, ``<prefix>{json};``, which a ``<script>`` tag loads, from
``file://`` too, where ``fetch()`` fails. Comment lines come first, the
second ``// source sha256 <hex>``: the SHA-256 of the checkpoint and of the
sources the export is made by (the exporter, this module and what else it
names). The build exports again only when that hash changes. Each export
holds its exporter's ``FORMAT`` and ``VERSION``; the page refuses any other,
and any export that lacks a field or a tensor it needs. Bump an exporter's
``VERSION`` whenever the layout or the meaning of a field changes, and teach
the page's script (``FORMAT_VERSION``) the new one.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import itertools
import json
import pathlib
from typing import Callable

from tools import ROOT

HASH_LINE = "// source sha256 "


def unsupported(what: str) -> ValueError:
    return ValueError(f"the live page cannot compute this model: {what}")


def layers(model, blocks, attentions) -> dict:
    """What the engine computes the same way for both models, read from
    ``model``'s modules, ``blocks`` (its layers) and ``attentions``; a
    ValueError (``unsupported``) for anything the engine does not compute."""
    from torch import nn

    from utils.layers import FeedForward, Residual

    if not all(
        type(x.ffn) is FeedForward and x.ffn.activation == "relu"
        for x in blocks
    ):
        raise unsupported("an FFN is not utils.layers.FeedForward (ReLU)")
    subs = {m.norm_first for m in model.modules() if isinstance(m, Residual)}
    if len(subs) != 1:
        raise unsupported("Pre-Norm and Post-Norm sublayers mixed")
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    if not all(m.elementwise_affine and m.bias is not None for m in norms):
        raise unsupported("a LayerNorm without its weight and bias")
    eps = {m.eps for m in norms}
    if len(eps) != 1:
        raise unsupported(f"LayerNorms with different eps {sorted(eps)}")
    biases = {a.w_q.bias is not None for a in attentions}
    if len(biases) != 1:
        raise unsupported("attention projections with and without biases")
    d_ff = {x.ffn.w_1.out_features for x in blocks}
    if len(d_ff) != 1:
        raise unsupported(f"layers with different d_ff {sorted(d_ff)}")
    return {
        "d_ff": d_ff.pop(),
        "activation": "relu",
        "norm": "pre" if subs.pop() else "post",
        "layer_norm_eps": eps.pop(),
        "attention_bias": biases.pop(),
    }


def fp16(checkpoint: pathlib.Path, model) -> dict:
    """The checkpoint's fp16 state dict as the page reads it: ``tensors``
    (``[name, shape, offset]``, in order) and ``fp16`` (the numbers
    row-major, little-endian, base64), the SAME numbers as the checkpoint:
    checked to decode to float32 exactly as ``model``'s weights."""
    import numpy as np
    import torch

    stored = torch.load(checkpoint, map_location="cpu", weights_only=True)
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
    fp16 = base64.b64encode(b"".join(chunks)).decode("ascii")
    return {"tensors": tensors, "fp16": fp16}


@dataclasses.dataclass(frozen=True)
class Export:
    """One model's export: ``payload(checkpoint)`` is its data, written to
    ``out`` with ``prefix`` whenever the checkpoint or ``sources`` change
    (the first source is the exporter's module; this one always counts)."""

    checkpoint: pathlib.Path
    out: pathlib.Path
    prefix: str
    payload: Callable[[pathlib.Path], dict]
    sources: tuple[str | pathlib.Path, ...]
    notes: tuple[str, ...] = ()

    def source_hash(self, checkpoint) -> str:
        digest = hashlib.sha256(checkpoint.read_bytes())
        for source in (self.sources[0], __file__, *self.sources[1:]):
            digest.update(pathlib.Path(source).read_bytes())
        return digest.hexdigest()

    def is_current(self, out=None, checkpoint=None) -> bool:
        """True if ``out`` exists and its hash line (among its first comment
        lines) is this checkpoint's."""
        want = self.source_hash(pathlib.Path(checkpoint or self.checkpoint))
        out = pathlib.Path(out or self.out)
        if not out.is_file():
            return False
        with out.open() as f:
            head = itertools.takewhile(lambda line: line.startswith("//"), f)
            found = [x for x in head if x.startswith(HASH_LINE)]
        return bool(found) and found[0][len(HASH_LINE) :].strip() == want

    def export(self, checkpoint=None, out=None) -> pathlib.Path:
        """Write ``out`` from ``checkpoint``: who made it, the source hash,
        ``notes`` (one comment line each), then ``prefix`` and the payload
        as compact JSON; return ``out``."""
        checkpoint = pathlib.Path(checkpoint or self.checkpoint)
        out = pathlib.Path(out or self.out)
        made_by = pathlib.Path(self.sources[0]).resolve().relative_to(ROOT)
        source = self.checkpoint.relative_to(ROOT)
        head = [
            f"// Generated by {made_by} from {source}: do not edit.",
            HASH_LINE + self.source_hash(checkpoint),
            *(f"// {n}" for n in self.notes),
        ]
        data = self.payload(checkpoint)
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(head) + "\n" + self.prefix + body + ";\n")
        return out

    def ensure(self, checkpoint=None, out=None) -> bool:
        """Export unless ``out`` is current; True if it wrote the file."""
        if self.is_current(out, checkpoint):
            return False
        self.export(checkpoint, out)
        return True

    def main(self) -> None:
        path = self.export()
        size = path.stat().st_size
        print(f"wrote {path.relative_to(ROOT)} ({size / 1e6:.2f} MB)")
