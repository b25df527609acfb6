"""Token lists as padded id batches (chapter 8). Ids: 0 PAD, 1 BOS, 2 EOS,
then the tokens; source = tokens + EOS, target = BOS + tokens + EOS."""

from __future__ import annotations

import random
from typing import Iterable, Sequence

import torch

from .checks import check_int

__all__ = [
    "Vocab",
    "encode_batch",
    "make_batches",
    "group_pairs",
    "pad_fraction",
    "source_blocks",
]

_SPECIALS = ["<pad>", "<bos>", "<eos>"]

Pair = tuple[list[str], list[str]]


class Vocab:
    """Tokens <-> ids, PAD = 0, BOS = 1, EOS = 2 first; ``len(vocab)`` ids."""

    def __init__(self, tokens: Iterable[str]):
        tokens = list(tokens)
        if any(not isinstance(t, str) or not t for t in tokens):
            raise TypeError("tokens must be non-empty strings")
        clash = set(tokens) & set(_SPECIALS)
        if clash or len(set(tokens)) != len(tokens):
            raise ValueError(
                f"tokens must be distinct and not special, got {sorted(clash)}"
            )
        self.itos = _SPECIALS + tokens
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.itos)

    def __repr__(self) -> str:
        return f"Vocab({len(self)} ids: {' '.join(self.itos[3:])})"

    def encode(
        self, tokens: Sequence[str], bos: bool = False, eos: bool = True
    ) -> list[int]:
        """Token list -> ids, optionally with BOS first and EOS last."""
        if isinstance(tokens, str):
            raise TypeError(
                "tokens must be a list of tokens, not a str (split it first)"
            )
        unknown = [t for t in tokens if t not in self.stoi or t in _SPECIALS]
        if unknown:
            raise ValueError(f"tokens not in the vocabulary: {unknown[:5]}")
        ids = [self.stoi[t] for t in tokens]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids) -> list[str]:
        """Ids (list or 1-D tensor) -> tokens up to EOS, without PAD, BOS."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        out = []
        for i in ids:
            if not 0 <= i < len(self):
                raise ValueError(
                    f"id {i} is outside the vocabulary of {len(self)} ids"
                )
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.itos[i])
        return out


def _pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor(
        [r + [pad_id] * (width - len(r)) for r in rows], dtype=torch.long
    )


def encode_batch(
    pairs: Sequence[Pair],
    vocab_src: Vocab,
    vocab_tgt: Vocab,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pairs -> ``src (B, S)``, ``tgt (B, T)``, each padded to its longest."""
    if not pairs:
        raise ValueError("pairs must hold at least one (source, target) pair")
    src = _pad([vocab_src.encode(s) for s, _ in pairs], vocab_src.pad_id)
    tgt = _pad(
        [vocab_tgt.encode(t, bos=True) for _, t in pairs], vocab_tgt.pad_id
    )
    return src.to(device), tgt.to(device)


def make_batches(
    pairs: Sequence[Pair],
    batch_size: int,
    vocab_src: Vocab,
    vocab_tgt: Vocab,
    seed: int | None = 0,
    bucket: bool = True,
    device: torch.device | str | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of padded batches, shuffled with ``seed``; ``bucket=True``
    sorts pools of 50 batches by length (less padding)."""
    groups = group_pairs(pairs, batch_size, seed, bucket)
    return [encode_batch(g, vocab_src, vocab_tgt, device) for g in groups]


def group_pairs(
    pairs: Sequence[Pair],
    batch_size: int,
    seed: int | None = 0,
    bucket: bool = True,
) -> list[list[Pair]]:
    """``make_batches``'s grouping without encoding: lists of pairs."""
    check_int(batch_size, "batch_size", 1)
    pairs = list(pairs)
    rng = random.Random(seed)
    if seed is not None:
        rng.shuffle(pairs)
    if bucket:
        pool = 50 * batch_size
        ordered = []
        for i in range(0, len(pairs), pool):
            ordered += sorted(
                pairs[i : i + pool], key=lambda p: (len(p[0]), len(p[1]))
            )
        pairs = ordered
    groups = [
        pairs[i : i + batch_size] for i in range(0, len(pairs), batch_size)
    ]
    if bucket and seed is not None:
        rng.shuffle(groups)
    return groups


def pad_fraction(
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]], pad_id: int = 0
) -> float:
    """Share of the source and target positions in ``batches`` that pad."""
    pads = total = 0
    for src, tgt in batches:
        pads += int((src == pad_id).sum()) + int((tgt == pad_id).sum())
        total += src.numel() + tgt.numel()
    if total == 0:
        raise ValueError("batches is empty")
    return pads / total


def source_blocks(
    pairs: Sequence[Pair],
    n: int,
    size: int | None,
    vocabs: tuple[Vocab, Vocab],
    device: torch.device | str | None = None,
) -> list[tuple[torch.Tensor, list[list[list[str]]]]]:
    """The first ``n`` distinct sources of ``pairs`` and all their targets
    (every right answer), ``[(src (B, S), refs), ...]`` in blocks of
    ``size`` sources (None: one block): what exact match is scored on."""
    sources, refs = _first_sources(pairs, check_int(n, "n", 1))
    size = len(sources) if size is None else check_int(size, "size", 1)
    return [
        (encode_batch(sources[i : i + size], *vocabs, device)[0],
         refs[i : i + size])
        for i in range(0, len(sources), size)
    ]  # fmt: skip


def _first_sources(pairs, n: int) -> tuple[list, list]:
    """The first ``n`` distinct sources of ``pairs``, with all targets."""
    refs: dict[tuple, list] = {}
    for src, tgt in pairs:
        key = tuple(src)
        if key in refs or len(refs) < n:
            refs.setdefault(key, []).append(list(tgt))
    return [(list(k), v[0]) for k, v in refs.items()], list(refs.values())
