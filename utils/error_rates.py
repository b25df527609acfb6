"""The grapheme-to-phoneme scores (chapter 8), multi-reference (Yao & Zweig
2015): a word is right if it equals ANY of its pronunciations; without
stress, the stress digits are stripped first. Importable from
``utils.pronunciation``."""

from __future__ import annotations

from typing import Sequence

from .checks import check_bool

__all__ = [
    "strip_stress",
    "levenshtein",
    "word_error_rate",
    "phoneme_error_rate",
]


def strip_stress(pron: Sequence[str]) -> tuple[str, ...]:
    """``("IY1", "DH", "ER0")`` -> ``("IY", "DH", "ER")``."""
    return tuple(p.rstrip("012") for p in pron)


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """The fewest insertions, deletions, substitutions from ``a`` to ``b``."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = (
                row[j],
                min(row[j] + 1, row[j - 1] + 1, prev + (x != y)),
            )
    return row[-1]


def _check_scored(hyps, refs, stress) -> tuple[list, list]:
    check_bool(stress, "stress")
    if len(hyps) != len(refs) or not refs:
        raise ValueError(
            f"hyps and refs must have one entry per word (at least one), "
            f"got {len(hyps)} hyps and {len(refs)} refs"
        )
    for name, seqs in (("hyps", hyps), *(("refs", r) for r in refs)):
        if any(isinstance(s, str) for s in seqs):
            raise TypeError(f"{name} must hold phoneme sequences, not str")
    if any(not r for r in refs):
        raise ValueError("every word in refs needs >= 1 pronunciation")
    fix = (lambda p: tuple(p)) if stress else strip_stress
    return [fix(h) for h in hyps], [[fix(p) for p in r] for r in refs]


def word_error_rate(
    hyps: Sequence[Sequence[str]],
    refs: Sequence[Sequence[Sequence[str]]],
    stress: bool = True,
) -> float:
    """Share of words whose ``hyps[i]`` is none of ``refs[i]``."""
    hyps, refs = _check_scored(hyps, refs, stress)
    return sum(h not in r for h, r in zip(hyps, refs)) / len(refs)


def phoneme_error_rate(
    hyps: Sequence[Sequence[str]],
    refs: Sequence[Sequence[Sequence[str]]],
    stress: bool = True,
) -> float:
    """Edit distance to the closest pronunciation (ties: the first), summed,
    over the summed lengths of those pronunciations."""
    hyps, refs = _check_scored(hyps, refs, stress)
    edits = length = 0
    for h, r in zip(hyps, refs):
        d, ref = min((levenshtein(h, p), k) for k, p in enumerate(r))
        edits, length = edits + d, length + len(r[ref])
    return edits / length
