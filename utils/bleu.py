"""BLEU (Papineni et al., 2002) on token lists (chapter 9): ``BP *
exp(sum_n w_n log p_n)``, ``BP = 1 if c > r else exp(1 - r/c)``, ``p_n``
clipped n-gram precision, ``w_n = 1/N`` (no extra ``1/N`` exponent)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

from .checks import check_instance, check_int

__all__ = [
    "ngrams",
    "modified_precision",
    "brevity_penalty",
    "closest_ref_length",
    "sentence_bleu",
    "corpus_bleu",
]

Tokens = Sequence  # a sentence: a list (or tuple) of tokens, e.g. words or ids


def _check_tokens(name: str, tokens) -> list:
    if isinstance(tokens, str):
        raise TypeError(f"{name} must be a list of tokens: split it first")
    return list(
        check_instance(tokens, name, (list, tuple), "a list of tokens")
    )


def _check_sentences(name: str, sentences) -> None:
    """A non-empty list (or tuple) of sentences."""
    what = "a list of token lists"
    check_instance(sentences, name, (list, tuple), what)
    if not sentences:
        raise ValueError(f"{name} must not be empty")


def _check_refs(references) -> list[list]:
    _check_sentences("references", references)
    return [
        _check_tokens(f"references[{i}]", r) for i, r in enumerate(references)
    ]


def ngrams(tokens: Tokens, n: int) -> Counter:
    """Counts of contiguous n-grams (as tuples) of ``tokens``."""
    tokens = _check_tokens("tokens", tokens)
    n = check_int(n, "n", 1)
    return Counter(
        tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)
    )


def modified_precision(
    candidate: Tokens, references: Sequence[Tokens], n: int
) -> tuple[int, int]:
    """(clipped matches, candidate n-grams) against ``references``."""
    cand = ngrams(candidate, n)
    max_ref = Counter()
    for ref in _check_refs(references):
        max_ref |= ngrams(ref, n)  # | keeps the maximum count of each n-gram
    clipped = sum(min(count, max_ref[g]) for g, count in cand.items())
    return clipped, sum(cand.values())


def closest_ref_length(candidate: Tokens, references: Sequence[Tokens]) -> int:
    """The reference length closest to the candidate's (shorter on a tie)."""
    c = len(_check_tokens("candidate", candidate))
    return min((abs(len(r) - c), len(r)) for r in _check_refs(references))[1]


def brevity_penalty(c: int, r: int) -> float:
    """1 if c > r, else exp(1 - r / c); 0 if c == 0."""
    if c < 0 or r < 0:
        raise ValueError(f"lengths must be >= 0, got c={c}, r={r}")
    if c > r:
        return 1.0
    return 0.0 if c == 0 else math.exp(1 - r / c)


def _weights(max_n: int, weights) -> list[float]:
    max_n = check_int(max_n, "max_n", 1)
    if weights is None:
        return [1.0 / max_n] * max_n
    weights = list(weights)
    bad = len(weights) != max_n or any(w < 0 for w in weights)
    if bad or not math.isclose(sum(weights), 1.0):
        raise ValueError(
            f"weights must be {max_n} non-negative numbers summing to 1, "
            f"got {weights}"
        )
    return weights


def corpus_bleu(
    candidates: Sequence[Tokens],
    references: Sequence[Sequence[Tokens]],
    max_n: int = 4,
    weights: Sequence[float] | None = None,
) -> float:
    """BLEU in [0, 1], counts summed over the corpus first; no smoothing (a
    p_n of 0 gives 0.0)."""
    w = _weights(max_n, weights)
    _check_sentences("candidates", candidates)
    if len(references) != len(candidates):
        raise ValueError(
            f"got {len(candidates)} candidates but {len(references)} "
            f"reference lists"
        )
    matches, totals = [0] * max_n, [0] * max_n
    c = r = 0
    for cand, refs in zip(candidates, references):
        for n in range(1, max_n + 1):
            m, t = modified_precision(cand, refs, n)
            matches[n - 1] += m
            totals[n - 1] += t
        c += len(cand)
        r += closest_ref_length(cand, refs)
    log_sum = 0.0
    for wn, m, t in zip(w, matches, totals):
        if wn == 0:
            continue
        if m == 0:  # log 0: the geometric mean is 0 (also with no n-grams)
            return 0.0
        log_sum += wn * math.log(m / t)
    return brevity_penalty(c, r) * math.exp(log_sum)


def sentence_bleu(
    candidate: Tokens,
    references: Sequence[Tokens],
    max_n: int = 4,
    weights: Sequence[float] | None = None,
) -> float:
    """``corpus_bleu`` of a one-sentence corpus."""
    return corpus_bleu(
        [_check_tokens("candidate", candidate)],
        [_check_refs(references)],
        max_n,
        weights,
    )
