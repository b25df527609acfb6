"""The previous-letter and next-letter heads over every stored pronouncer
(chapters 2 and 4, issue 64).

Chapter 2 finds an encoder head of the stored pronouncer that reads the next
letter and one that reads the previous letter; chapter 4 shows that they lose
it without the positional encoding. ``neighbour_heads`` measures the same on
every stored run (the stored pronouncer, ``book/data/pronouncer.pt``, and
the first recipe's seven runs, ``book/data/pronouncer_seeds/s*/``), so the
chapters can say what holds on every run and what is one run's choice
(which head does it).
"""

from __future__ import annotations

import pathlib

import torch

from utils import pronunciation as pr
from utils.masks import padding_mask
from utils.pronouncer import SEEDS_DIR, STORED_PRONOUNCER, load_pronouncer

__all__ = [
    "stored_pronouncers",
    "offset_shares",
    "neighbour_heads",
    "heads_table",
]

NEIGHBOURS = {"previous": -1, "next": 1}  # letter offset of each finding


def stored_pronouncers() -> dict[str, pathlib.Path]:
    """Every stored pronouncer run: ``{name: path}``, the stored one
    (``"stored"``) first, then the first recipe's seeds (``"s0"``, ...)."""
    seeds = sorted(SEEDS_DIR.glob("s*/pronouncer.pt"), key=_seed)
    return {"stored": STORED_PRONOUNCER, **{p.parent.name: p for p in seeds}}


def _seed(path: pathlib.Path) -> int:
    return int(path.parent.name[1:])


def offset_shares(model, src, offsets=(-1, 1), encoding=True):
    """``(layers, heads, len(offsets))``: the mean encoder self-attention
    weight that a letter of ``src`` (ids from ``pr.encode_words``) puts on
    the letter ``k`` places away, over the letters that have one (EOS and
    padding are neither queries nor keys). ``encoding=False`` runs the same
    encoder on the scaled embeddings alone, without the positional
    encoding."""
    letters = (src != model.pad_id) & (src != pr.letter_vocab().eos_id)
    pos = torch.arange(src.size(1))
    gap = pos[None, :] - pos[:, None]  # (S, S): key position - query's
    pairs = letters[:, :, None] & letters[:, None, :]  # (B, S, S)
    with torch.no_grad():
        if encoding:
            model.encode(src)
        else:
            model.encoder(
                model.src_embed(src), padding_mask(src, model.pad_id)
            )
    weights = [ly.self_attn.last_weights for ly in model.encoder.layers]
    shares = []
    for k in offsets:
        sel = (pairs & (gap == k))[:, None]  # (B, 1, S, S)
        if not sel.any():
            raise ValueError(f"no letter has a letter {k} places away")
        per_layer = [(w * sel).sum((0, 2, 3)) for w in weights]  # (h,) each
        shares.append(torch.stack(per_layer) / sel.sum())
    return torch.stack(shares, -1)


def neighbour_heads(words, runs=None) -> list[dict]:
    """For every run of ``runs`` (``{name: path}``, default every stored
    one) and each of ``NEIGHBOURS``: the encoder head (``layer``, ``head``,
    both counted from 1 as the chapters name them) that puts the most
    weight on that neighbour over ``words``, its ``share`` and the same
    head's ``share_no_pe`` without the positional encoding. One dict per
    (run, neighbour), the runs in order."""
    src = pr.encode_words(words)
    offsets = list(NEIGHBOURS.values())
    rows = []
    for run, path in (runs or stored_pronouncers()).items():
        model = load_pronouncer(path)[0]
        with_pe = offset_shares(model, src, offsets)
        no_pe = offset_shares(model, src, offsets, encoding=False)
        for j, name in enumerate(NEIGHBOURS):
            layer, head = divmod(
                int(with_pe[..., j].argmax()), model.num_heads
            )
            rows.append({
                "run": run, "neighbour": name,
                "layer": layer + 1, "head": head + 1,
                "share": with_pe[layer, head, j].item(),
                "share_no_pe": no_pe[layer, head, j].item(),
            })  # fmt: skip
    return rows


def heads_table(rows) -> str:
    """``neighbour_heads``'s rows as the chapters print them: one line per
    run, the previous-letter head then the next-letter head, each with its
    share with the positional encoding ("PE") and without it."""
    cols = "  layer head     PE  no PE"
    names = "".join(f"  {n + ' letter':<24}" for n in NEIGHBOURS)
    lines = [("      " + names).rstrip()]
    lines.append("   run" + cols * len(NEIGHBOURS))
    by_run = {(r["run"], r["neighbour"]): r for r in rows}
    for run in dict.fromkeys(r["run"] for r in rows):
        line = f"{run:>6}"
        for name in NEIGHBOURS:
            r = by_run[run, name]
            line += f"  {r['layer']:>5} {r['head']:>4} {r['share']:>6.1%}"
            line += f" {r['share_no_pe']:>6.1%}"
        lines.append(line)
    return "\n".join(lines)
