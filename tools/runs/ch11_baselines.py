"""Chapter 11's count and compression baselines and BPE table, stored small.

    python -m tools.runs.ch11_baselines      (about two minutes of one core)

Writes ``book/data/ch11_baselines.json``: the data's fingerprint, then
bits per character of the validation and test works for

* ``char_kn`` and ``char_mkn``: character (byte) n-grams with interpolated
  Kneser-Ney, plain (orders 1-7) and modified (``utils.kneser_ney``, orders
  1-9, the most its codes hold), with their discounts;
* ``bpe_mkn``: modified Kneser-Ney over BPE tokens (vocabulary 1024), in
  bits per *character* (an upper bound: ``utils.ngram.token_bits``);
* ``ppmd``: PPMd variant H (``utils.ppmd``) at each of ``PPMD_ORDERS``,
  each held-out play alone after the training works (the prime) and
  without them, with the checks that its memory never fills and that a
  play decodes back (``ppmd_checks``);
* ``word_bigram``: the Kneser-Ney word bigram that spells its unknown words,
  and a small grid over its two settings, on validation only;

and ``bpe``, byte-level BPE (``utils.bpe``) at vocabularies 256 to 4096
(tokens and bytes per token of the held-out works), and ``bpe_vs_hf``, its
merges against Hugging Face ``tokenizers``. The best order of a table is
chosen on validation. Nothing here is random, and nothing uses torch.
``tests/test_ngram.py``, ``test_ppmd.py`` and ``test_bpe.py`` recompute
rows and check them against the stored numbers.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections import Counter

import numpy as np

from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import r5, write_json
from utils import bpe, ngram, ppmd
from utils import shakespeare as sh
from utils.gpt2 import byte_chars

OUT = ROOT / "book" / "data" / "ch11_baselines.json"
ORDERS = tuple(range(1, 8))
MKN_ORDERS = tuple(range(1, 10))
BPE_MKN = {"vocab_size": 1024, "orders": tuple(range(1, 7))}
PPMD_ORDERS = (3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 64)
PPMD_SMALL_MEMORY = 256 << 20
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


def order_rows(orders, fit, bits) -> list[dict]:
    """Per order, the held-out bits of the model ``fit(order)``
    (``bits(model, split)``) and its discounts per level."""
    rows = []
    for order in orders:
        model = fit(order)
        row = {"order": order}
        row.update({s: r5(bits(model, s)) for s in HELD_OUT})
        row["discounts"] = [
            [round(d, 4) for d in lv.discounts] for lv in model.levels
        ]
        rows.append(row)
    return rows


def best_on_valid(rows: list[dict]) -> int:
    return min(rows, key=lambda row: row["valid"])["order"]


def char_rows(texts: dict[str, str], modified: bool = False):
    """The character n-grams: plain Kneser-Ney, one discount per order (a
    list of rows), or modified, three (the rows and the best order)."""
    rows = order_rows(
        MKN_ORDERS if modified else ORDERS,
        lambda n: ngram.char_model(texts["train"], n, modified=modified),
        lambda model, s: ngram.text_bits(model, texts[s]),
    )
    if modified:
        return {"rows": rows, "best_on_valid": best_on_valid(rows)}
    for row in rows:
        row["discounts"] = [lv[0] for lv in row["discounts"]]
    return rows


@functools.lru_cache(maxsize=None)
def merges(vocab_size: int) -> dict:
    return bpe.train_bpe(sh.split_works("train"), vocab_size)


def bpe_mkn_rows(texts: dict[str, str]) -> dict:
    size = BPE_MKN["vocab_size"]
    ids = {s: np.array(bpe.encode(texts[s], merges(size))) for s in texts}
    rows = order_rows(
        BPE_MKN["orders"],
        lambda n: ngram.KneserNey(ids["train"], n, size, modified=True),
        lambda model, s: ngram.token_bits(model, ids[s], texts[s]),
    )
    return {
        "vocab_size": size,
        "tokens": {s: len(ids[s]) for s in ids},
        "rows": rows,
        "best_on_valid": best_on_valid(rows),
    }


def ppmd_row(prime: str, plays: dict, texts: list, order: int) -> dict:
    """One order: each play's bits after the prime and alone; per split,
    the plays' bits over their characters."""
    names = [n for s in HELD_OUT for n in plays[s]]
    primed = dict(zip(names, ppmd.primed_bits(prime, texts, order)))
    alone = dict(zip(names, ppmd.primed_bits("", texts, order)))
    row = {"order": order}
    for s in HELD_OUT:
        chars = sum(len(t) for t in plays[s].values())
        row[s] = r5(sum(primed[n] for n in plays[s]) / chars)
        row[f"{s}_unprimed"] = r5(sum(alone[n] for n in plays[s]) / chars)
    row["bits"] = {
        n: {"primed": primed[n], "unprimed": alone[n]} for n in names
    }
    return row


def ppmd_checks(prime: str, plays: dict, texts: list, best: int) -> dict:
    """The memory never fills (a restart would change the bytes): the same
    streams at 256 MiB as at ``ppmd.MEMORY``, at the chosen order and the
    highest; and the chosen order's stream of the prime and The Tempest
    decodes back to them."""
    same, streams = {}, {}
    for order in dict.fromkeys((best, PPMD_ORDERS[-1])):
        streams[order] = ppmd.primed_streams(prime, texts, order)
        small = ppmd.primed_streams(prime, texts, order, PPMD_SMALL_MEMORY)
        same[str(order)] = streams[order] == small
    play = plays["test"]["tempest"]
    whole = (prime + play).encode()
    stream = streams[best][1][texts.index(play)]
    back = ppmd.decompress(stream, len(whole), best)
    return {
        "same_bytes_at_256MiB": same,
        "lossless": {"play": "tempest", "order": best, "ok": back == whole},
    }


def ppmd_rows(texts: dict[str, str]) -> dict:
    import pyppmd

    prime, works = texts["train"] + sh.SEPARATOR, sh.load_works()
    names = {"valid": sh.VALID_WORKS, "test": sh.TEST_WORKS}
    plays = {s: {n: works[n] for n in names[s]} for s in HELD_OUT}
    texts = [t for s in HELD_OUT for t in plays[s].values()]
    rows = [ppmd_row(prime, plays, texts, n) for n in PPMD_ORDERS]
    best = best_on_valid(rows)
    return {
        "pyppmd": pyppmd.__version__,
        "variant": "H (7-Zip's Ppmd7)",
        "memory": ppmd.MEMORY,
        "restore": "restart (variant H's only way), never reached",
        "prime": "the training works and the separator",
        "chars": {s: {n: len(t) for n, t in plays[s].items()} for s in plays},
        "rows": rows,
        "best_on_valid": best,
        **ppmd_checks(prime, plays, texts, best),
    }


def word_rows(texts: dict[str, str]) -> dict:
    model = ngram.WordBigram(texts["train"], **WORD)
    out = {**WORD, "vocab": len(model.words)}
    for s in HELD_OUT:
        bits = model.bits(texts[s])
        bits["bits_per_char"] = r5(bits["bits_per_char"])
        bits["bits"] = round(bits["bits"], 1)
        bits["spelling_bits"] = round(bits["spelling_bits"], 1)
        out[s] = bits
    out["grid_valid"] = []
    for m, o in GRID:
        bits = ngram.WordBigram(texts["train"], m, o).bits(texts["valid"])
        row = {"min_count": m, "spell_order": o}
        out["grid_valid"].append({**row, "valid": r5(bits["bits_per_char"])})
    return out


def bpe_rows(texts: dict[str, str]) -> list[dict]:
    rows = []
    for size in VOCAB_SIZES:
        table = merges(size)
        row = {"vocab_size": size, "merges": len(table)}
        for s in HELD_OUT:
            ids = bpe.encode(texts[s], table)
            assert bpe.decode(ids, table) == texts[s]
            row[f"{s}_tokens"] = len(ids)
            row[f"{s}_bytes_per_token"] = r5(len(texts[s].encode()) / len(ids))
        rows.append(row)
    return rows


def hf_rows(texts: dict[str, str]) -> list[dict]:
    """Our merges against HF's: equal sets; the first merges in the same
    order; all in the same order once the bytes are numbered as HF does."""
    rows = []
    for size in VOCAB_SIZES[1:]:
        theirs = hf_merges(hf_tokenizer(texts["train"], size))
        ours = pairs(merges(size))
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
    tables = [  # (key in the file, what makes it), in the order they run
        ("char_kn", char_rows),
        ("char_mkn", functools.partial(char_rows, modified=True)),
        ("word_bigram", word_rows),
        ("bpe", bpe_rows),
        ("bpe_vs_hf", hf_rows),
        ("bpe_mkn", bpe_mkn_rows),
        ("ppmd", ppmd_rows),
    ]
    for key, make in tables:
        out[key] = make(texts)
        print(key, f"{time.perf_counter() - start:.1f} s")
    write_json(OUT, out)
    print(f"wrote {OUT} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
