"""Chapter 11's count baselines and BPE table, stored small.

    python -m tools.ch11_baselines      (about a minute on one core)

Writes ``book/data/ch11_baselines.json``: the data's fingerprint
(``utils.shakespeare.fingerprint``), then, in bits per character of the
validation and test works (``utils.ngram``):

* ``char_kn``: a character (byte) n-gram with interpolated Kneser-Ney, for
  each order 1 to 7, with its discounts;
* ``word_bigram``: the Kneser-Ney word bigram that spells its unknown words
  (vocabulary: tokens seen twice or more; spelling: a byte 5-gram), and a
  small grid over those two settings, on validation only;
* ``bpe``: byte-level BPE (``utils.bpe``) trained on the training works for
  vocabulary sizes 256 (bytes alone) to 4096: tokens and bytes per token of
  the validation and test works;
* ``bpe_vs_hf``: the merges compared with Hugging Face ``tokenizers``
  (tests/test_bpe.py checks the same claims).

Nothing here is random, and nothing uses torch; the script still runs in
the portable numeric mode and records it, as every stored result does
(``tests/test_repo.py``). ``tests/test_ngram.py`` and ``tests/test_bpe.py``
recompute rows and check them against the stored numbers.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

from tools import numeric_mode

if __name__ == "__main__":  # before torch is imported (utils imports it)
    numeric_mode.reexec_in("portable", "tools.ch11_baselines")

from tools import ROOT  # noqa: E402
from utils import bpe, ngram  # noqa: E402
from utils import shakespeare as sh  # noqa: E402
from utils.gpt2 import byte_chars  # noqa: E402

OUT = ROOT / "book" / "data" / "ch11_baselines.json"
ORDERS = tuple(range(1, 8))
VOCAB_SIZES = (256, 512, 1024, 2048, 4096)
WORD = {"min_count": 2, "spell_order": 5}
GRID = [(m, s) for m in (2, 3) for s in (3, 4, 5, 6)]
HELD_OUT = ("valid", "test")


CHARS = byte_chars()  # GPT-2's byte -> character table
BYTES = {ch: b for b, ch in CHARS.items()}


def as_bytes(token: str) -> bytes:
    """A byte-level token's characters as the bytes they stand for."""
    return bytes(BYTES[ch] for ch in token)


def hf_tokenizer(text: str, vocab_size: int):
    """HF's byte-level BPE with our settings: GPT-2's split without a
    prefix space, all 256 bytes as the initial alphabet, no special tokens,
    no minimum frequency."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = level
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([text], trainer=trainer)
    return tok


def hf_merges(tok) -> list[tuple[bytes, bytes]]:
    """A trained HF tokenizer's merges, in order, as pairs of bytes."""
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [(as_bytes(a), as_bytes(b)) for a, b in merges]


def pairs(merges: dict) -> list[tuple[bytes, bytes]]:
    """``utils.bpe`` merges, in order, as pairs of bytes."""
    table = bpe.vocab(merges)
    return [(table[a], table[b]) for a, b in merges]


def merges_in_hf_byte_order(
    text: str, vocab_size: int
) -> list[tuple[bytes, bytes]]:
    """``utils.bpe``'s merge loop on ``text`` with the 256 bytes numbered as
    HF numbers them (in the order of the characters that show them, so a
    space, chr(288), comes after the letters): ties are then broken as HF
    breaks them. As pairs of bytes."""
    order = sorted(range(256), key=lambda b: CHARS[b])  # HF's id -> byte
    rank = {b: i for i, b in enumerate(order)}
    chunks = Counter(bpe.pretokenize(text))
    words = [[rank[b] for b in chunk.encode()] for chunk in chunks]
    merges = bpe.learn_merges(words, list(chunks.values()), vocab_size - 256)
    table = [bytes([b]) for b in order]
    for a, b in merges:
        table.append(table[a] + table[b])
    return [(table[a], table[b]) for a, b in merges]


def r(x: float) -> float:
    return round(float(x), 5)


def char_rows(texts: dict[str, str]) -> list[dict]:
    rows = []
    for order in ORDERS:
        model = ngram.char_model(texts["train"], order)
        row = {"order": order}
        row.update({s: r(ngram.text_bits(model, texts[s])) for s in HELD_OUT})
        row["discounts"] = [round(lv.discount, 4) for lv in model.levels]
        rows.append(row)
    return rows


def word_rows(texts: dict[str, str]) -> dict:
    model = ngram.WordBigram(texts["train"], **WORD)
    out = {**WORD, "vocab": len(model.words)}
    for s in HELD_OUT:
        bits = model.bits(texts[s])
        bits["bits_per_char"] = r(bits["bits_per_char"])
        bits["bits"] = round(bits["bits"], 1)
        bits["spelling_bits"] = round(bits["spelling_bits"], 1)
        out[s] = bits
    out["grid_valid"] = [
        {
            "min_count": m,
            "spell_order": o,
            "valid": r(
                ngram.WordBigram(texts["train"], m, o).bits(texts["valid"])[
                    "bits_per_char"
                ]
            ),
        }
        for m, o in GRID
    ]
    return out


def bpe_rows(texts: dict[str, str]) -> list[dict]:
    rows = []
    for size in VOCAB_SIZES:
        merges = bpe.train_bpe(texts["train"], size)
        row = {"vocab_size": size, "merges": len(merges)}
        for s in HELD_OUT:
            ids = bpe.encode(texts[s], merges)
            assert bpe.decode(ids, merges) == texts[s]
            row[f"{s}_tokens"] = len(ids)
            row[f"{s}_bytes_per_token"] = r(len(texts[s].encode()) / len(ids))
        rows.append(row)
    return rows


def hf_rows(texts: dict[str, str]) -> list[dict]:
    """Our merges against HF's: equal sets; the first merges in the same
    order; all in the same order once the bytes are numbered as HF does."""
    rows = []
    for size in VOCAB_SIZES[1:]:
        theirs = hf_merges(hf_tokenizer(texts["train"], size))
        ours = pairs(bpe.train_bpe(texts["train"], size))
        same = [x == y for x, y in zip(ours, theirs)] + [False]
        hf_order = merges_in_hf_byte_order(texts["train"], size)
        rows.append(
            {
                "vocab_size": size,
                "merges": [len(ours), len(theirs)],
                "same_set": set(ours) == set(theirs),
                "same_order_prefix": same.index(False),
                "same_position": sum(same),
                "identical_in_hf_byte_order": hf_order == theirs,
            }
        )
    return rows


def main() -> None:
    start = time.perf_counter()
    texts = sh.split_works()
    out = {"numeric_mode": numeric_mode.stamp(), "data": sh.fingerprint()}
    out["char_kn"] = char_rows(texts)
    print("char n-grams", f"{time.perf_counter() - start:.1f} s")
    out["word_bigram"] = word_rows(texts)
    print("word bigram", f"{time.perf_counter() - start:.1f} s")
    out["bpe"] = bpe_rows(texts)
    print("bpe", f"{time.perf_counter() - start:.1f} s")
    out["bpe_vs_hf"] = hf_rows(texts)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
