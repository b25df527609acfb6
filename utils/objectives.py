"""Chapter 10's three pre-training objectives as data: words as ids, BERT's
corruption, each objective's attention mask and its batches.

The unlabelled data is the spelling of dictionary words; letters are the
tokens (ids of ``utils.pronunciation.letter_vocab``: PAD 0, BOS 1, EOS 2,
the letters 3-28) plus one more, ``MASK`` (29). The same stack of the
course's ``EncoderLayer``s is trained three ways; what differs is the
input, the attention mask and where the loss is taken:

==========  =====================  ===================  ====================
objective   input                  attention mask       loss on
==========  =====================  ===================  ====================
``"mlm"``   letters EOS, corrupted bidirectional        the chosen letters
``"clm"``   BOS letters            causal               every next token
``"plm"``   BOS letters            prefix both ways,    the tokens after the
                                   then causal          prefix
==========  =====================  ===================  ====================

The masked LM's input is exactly what chapter 8's pronouncer encoder reads
(letters, EOS). Masks are boolean, True = may attend. The stack itself, its
training and sampling are in ``utils.pretraining``.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .checks import (
    check_at_most,
    check_choice,
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
]

OBJECTIVES = ("mlm", "clm", "plm")
PAD, BOS, EOS = 0, 1, 2
FIRST_LETTER = 3
N_LETTERS = 26
MASK = FIRST_LETTER + N_LETTERS  # 29: one id past the pronouncer's letters
VOCAB = MASK + 1


def check_words(words, name: str = "words") -> list[str]:
    """``words`` as a list; TypeError or ValueError unless >= 1 words of
    a-z."""
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
    """BERT's corruption, as its ``create_pretraining_data.py`` does it.
    ids ``(B, L)`` of letters, EOS, PAD -> ``(inputs, chosen)``.

    Each row gets exactly ``max(1, round(p * n))`` chosen letters, ``n``
    its length with EOS (BERT counts its [CLS] and [SEP] too), drawn
    without replacement; a chosen letter becomes MASK with probability
    ``p_mask``, a random letter with ``p_random``, and stays itself
    otherwise. The loss is taken at ``chosen`` positions only.
    """
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
    """The objective's mask ``(B, 1, L, L)``: its pattern AND real keys.

    ``"plm"`` needs ``prefix_len`` ``(B,)``: query t sees key s when
    ``s < prefix_len`` or ``s <= t``.
    """
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
    """[BOS] plus a number of letters per row: ``prefix_letters`` (capped
    at the word's length - 1), or uniform in 1..len-1 when None."""
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
    """``(inputs, mask, targets, loss_mask)`` of one objective on words.

    MLM: letters EOS corrupted by ``bert_mask``; targets the original ids,
    loss at the chosen positions. CLM and PLM: ``[BOS] letters EOS``, inputs
    all but the last token, targets all but the first (the next token);
    PLM's prefix is [BOS] and the first letters (``prefix_letters``, or a
    random 1..len-1 per word), and it keeps only targets after the prefix;
    so does CLM when ``prefix_letters`` is given (the same job, scored on
    the same tokens).
    """
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
