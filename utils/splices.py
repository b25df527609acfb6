"""Chapter 9: mixes of two right answers; the model's scores of right ones.

A **splice** is a wrong output made of the start of one right answer and the
end of another, joined where the two answers line up: ``out == a[:i] +
b[j:]`` for two different references ``a`` and ``b``, with ``a[:i]`` and
``b[j:]`` not empty and the cut ``(i, j)`` *aligned*: editing ``a[:i]`` into
``b[:j]`` and ``a[i:]`` into ``b[j:]`` costs no more edits than editing
``a`` into ``b`` (the cut lies on a cheapest alignment of the two). For
*exit* (EH G Z IH T or EH K S AH T), EH K S IH T is a splice at (3, 3)."""

from __future__ import annotations

from typing import Sequence

from .error_rates import levenshtein

__all__ = ["aligned_cuts", "splice", "best_reference_scores"]

Seq = tuple


def aligned_cuts(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Every cut ``(i, j)`` where ``a`` and ``b`` line up: edits(a[:i],
    b[:j]) + edits(a[i:], b[j:]) == edits(a, b)."""
    for name, s in (("a", a), ("b", b)):
        if isinstance(s, str):
            raise TypeError(f"{name} must hold tokens, not the str {s!r}")
    total = levenshtein(a, b)
    return [
        (i, j)
        for i in range(len(a) + 1)
        for j in range(len(b) + 1)
        if levenshtein(a[:i], b[:j]) + levenshtein(a[i:], b[j:]) == total
    ]


def splice(
    out: Sequence[str], refs: Sequence[Sequence[str]]
) -> tuple[Seq, Seq, int, int] | None:
    """``(a, b, i, j)`` if ``out`` is a splice of two of ``refs`` (``out ==
    a[:i] + b[j:]``, see the module), else None. A right output (one of
    ``refs``) is never a splice."""
    if isinstance(out, str) or any(isinstance(r, str) for r in refs):
        raise TypeError("out and refs must hold token sequences, not str")
    out, refs = tuple(out), [tuple(r) for r in refs]
    if out in refs:
        return None
    for a in refs:
        for b in refs:
            if a == b:
                continue
            for i, j in aligned_cuts(a, b):
                if 0 < i and j < len(b) and a[:i] + b[j:] == out:
                    return a, b, i, j
    return None


def best_reference_scores(
    model,
    words: Sequence[str],
    refs: Sequence[Sequence[Sequence[str]]],
    stress: bool = True,
) -> list[float]:
    """Per word, the highest log p(reference | word) over its references
    (``utils.pronunciation.log_prob``, teacher-forced): ``(len(words),)``."""
    from .pronunciation import log_prob

    if len(words) != len(refs) or any(len(r) == 0 for r in refs):
        raise ValueError(
            f"refs must hold >= 1 reference for each of the {len(words)} "
            f"words, got {len(refs)} entries"
        )
    flat = [(i, p) for i, r in enumerate(refs) for p in r]
    scores = log_prob(
        model, [words[i] for i, _ in flat], [p for _, p in flat], stress=stress
    )
    best = [float("-inf")] * len(words)
    for (i, _), s in zip(flat, scores):
        best[i] = max(best[i], s)
    return best
