"""Chapter 10's pre-training objectives as data: letters
(``letter_vocab``) and ``MASK`` (29). ``"mlm"``: corrupted letters,
bidirectional; ``"clm"``: causal; ``"plm"``: prefix both ways, then causal."""

from __future__ import annotations

import random
from typing import Sequence

import torch

from .batches import Vocab
from .checks import (
    check_at_most,
    check_choice,
    check_instance,
    check_int,
    check_probability,
)
from .masks import causal_mask
from .pronunciation import letter_vocab

__all__ = [
    "OBJECTIVES",
    "MASK",
    "VOCAB",
    "check_words",
    "encode",
    "decode",
    "bert_mask",
    "attention_mask",
    "objective_batch",
    "SENTINELS",
    "span_vocab",
    "span_corruption",
]

OBJECTIVES = ("mlm", "clm", "plm")
PAD, BOS, EOS = 0, 1, 2
FIRST_LETTER = 3
N_LETTERS = 26
MASK = FIRST_LETTER + N_LETTERS  # 29: one id past the pronouncer's letters
VOCAB = MASK + 1


def check_words(words, name: str = "words") -> list[str]:
    """``words`` as a list of >= 1 words of a-z (else TypeError/ValueError)."""
    if isinstance(words, str) or not isinstance(words, Sequence):
        raise TypeError(f"{name} must be a list of words, got {words!r:.40}")
    bad = [w for w in words if not (isinstance(w, str) and w.isalpha())]
    bad += [w for w in words if isinstance(w, str) and not w.islower()]
    if bad or not words:
        raise ValueError(f"{name} must be >= 1 words of a-z, got {bad[:3]}")
    return list(words)


def encode(words, bos: bool = False) -> torch.Tensor:
    """Words -> ids ``(N, L)``: [BOS] (if ``bos``), the letters, EOS, PAD."""
    words = check_words(words)
    vocab = letter_vocab()
    rows = [[BOS] * bos + vocab.encode(list(w)) for w in words]
    width = max(map(len, rows))
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])


def decode(ids) -> str:
    """Letter ids -> the word they spell (specials dropped; MASK is '_')."""
    out = []
    for i in torch.as_tensor(ids).tolist():
        if i == MASK:
            out.append("_")
        elif FIRST_LETTER <= i < MASK:
            out.append(chr(ord("a") + i - FIRST_LETTER))
    return "".join(out)


def bert_mask(
    ids: torch.Tensor,
    generator: torch.Generator | None = None,
    p: float = 0.15,
    p_mask: float = 0.8,
    p_random: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption: ids ``(B, L)`` -> ``(inputs, chosen)``;
    ``max(1, round(p * n))`` letters per row, each MASK (``p_mask``), random
    (``p_random``) or kept."""
    p = check_probability(p, "p", allow_one=True)
    p_mask = check_probability(p_mask, "p_mask", allow_one=True)
    p_random = check_probability(p_random, "p_random", allow_one=True)
    check_at_most(p_mask + p_random, "p_mask + p_random", 1)
    letters = (ids >= FIRST_LETTER) & (ids < MASK)
    length = (ids != PAD).sum(1)
    # Python's round (half to even), as BERT's script
    k = torch.tensor([max(1, round(p * int(n))) for n in length])
    k = torch.minimum(k, letters.sum(1))  # never more than the letters
    score = torch.rand(ids.shape, generator=generator)
    score = score.masked_fill(~letters, 2.0)  # non-letters sort last
    rank = score.argsort(1).argsort(1)
    chosen = rank < k[:, None]
    u = torch.rand(ids.shape, generator=generator)
    to_mask = chosen & (u < p_mask)
    to_random = chosen & (u >= p_mask) & (u < p_mask + p_random)
    random_ids = FIRST_LETTER + torch.randint(
        N_LETTERS, ids.shape, generator=generator
    )
    inputs = torch.where(to_mask, torch.full_like(ids, MASK), ids)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, chosen


def attention_mask(
    kind: str, ids: torch.Tensor, prefix_len: torch.Tensor | None = None
) -> torch.Tensor:
    """Pattern AND real keys ``(B, 1, L, L)`` (``"plm"``: ``prefix_len``)."""
    check_choice(kind, "kind", OBJECTIVES)
    b, size = ids.shape
    real = (ids != PAD)[:, None, None, :]  # (B, 1, 1, L)
    if kind == "mlm":
        return real.expand(b, 1, size, size)
    pattern = causal_mask(size, device=ids.device)[None, None]  # (1,1,L,L)
    if kind == "plm":
        if prefix_len is None:
            raise ValueError("kind='plm' needs prefix_len (B,)")
        keys = torch.arange(size, device=ids.device)
        in_prefix = keys[None, :] < prefix_len[:, None]  # (B, L)
        pattern = pattern | in_prefix[:, None, None, :]
    return real & pattern


def _prefix_lengths(ids, generator, prefix_letters) -> torch.Tensor:
    """BOS + ``prefix_letters`` letters per row (None: random 1..len-1)."""
    n = (ids >= FIRST_LETTER).sum(1)  # letters per row
    top = torch.clamp(n - 1, min=1)
    if prefix_letters is None:
        k = 1 + (torch.rand(n.shape, generator=generator) * top).long()
    else:
        k = torch.minimum(torch.full_like(n, prefix_letters), top)
    return 1 + k


def objective_batch(
    kind: str,
    words,
    generator: torch.Generator | None = None,
    prefix_letters: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(inputs, mask, targets, loss_mask)`` of one objective: MLM loss at
    the chosen letters; CLM, PLM next tokens (PLM, or CLM given
    ``prefix_letters``: only after the prefix)."""
    check_choice(kind, "kind", OBJECTIVES)
    if prefix_letters is not None:
        check_int(prefix_letters, "prefix_letters", 1)
    if kind == "mlm":
        ids = encode(words)
        inputs, chosen = bert_mask(ids, generator)
        return inputs, attention_mask("mlm", ids), ids, chosen
    ids = encode(words, bos=True)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    loss_mask = targets != PAD
    prefix = _prefix_lengths(ids, generator, prefix_letters)
    if kind == "plm" or prefix_letters is not None:
        # target t is token t + 1: keep it when it lies past the prefix
        t = torch.arange(targets.size(1))
        loss_mask = loss_mask & (t[None, :] + 1 >= prefix[:, None])
    return inputs, attention_mask(kind, inputs, prefix), targets, loss_mask


# T5's span corruption (Raffel et al. 2020), on letters: a word has room
# for few spans, so a handful of sentinels is enough
SENTINELS = ("<0>", "<1>", "<2>", "<3>")


def span_vocab() -> Vocab:
    """The letters (ids as ``letter_vocab``'s), then the sentinels."""
    return Vocab(list(letter_vocab().itos[FIRST_LETTER:]) + list(SENTINELS))


def span_corruption(
    word: str, rng: random.Random
) -> tuple[list[str], list[str]]:
    """T5's objective on one word -> ``(source, target)`` token lists:
    about 15% of the letters (at least one, never all) fall in spans of
    mean length 3 at random places; the source shows a sentinel for each
    span, the target lists each sentinel and then its letters."""
    check_words([word], "word")
    check_instance(rng, "rng", random.Random)
    n = len(word)
    if n < 2:
        raise ValueError(f"word needs 2 letters (one to hide), got {word!r}")
    noise = min(n - 1, max(1, round(n * 0.15)))
    spans = max(1, min(round(noise / 3), n - noise + 1, len(SENTINELS)))
    lengths = _parts(noise, spans, rng, least=1)
    gaps = _parts(n - noise - (spans - 1), spans + 1, rng, least=0)
    gaps = [g + (0 < i < spans) for i, g in enumerate(gaps)]  # spans apart
    source, target, at = [], [], 0
    for i, length in enumerate(lengths):
        source += list(word[at : at + gaps[i]])
        at += gaps[i]
        source.append(SENTINELS[i])
        target += [SENTINELS[i], *word[at : at + length]]
        at += length
    return source + list(word[at:]), target


def _parts(total: int, k: int, rng: random.Random, least: int) -> list[int]:
    """``total`` split into ``k`` random parts of at least ``least``."""
    free = total - k * least
    cuts = sorted(rng.randint(0, free) for _ in range(k - 1))
    return [least + b - a for a, b in zip([0, *cuts], [*cuts, free])]
