"""Byte-level byte-pair encoding (BPE), written from scratch (chapter 11).

Tokens are byte strings. The vocabulary starts as the 256 single bytes (ids
0-255: id = byte value), so any text, in any script, can be encoded; each
merge adds one token, the concatenation of two existing ones, with the next
id (256, 257, ...). ``vocab_size = 256 + number of merges``.

* Pre-tokenization: the text is first cut into chunks with GPT-2's pattern
  (:data:`PATTERN`): a word with the space before it (``" thou"``), a run
  of digits, a run of punctuation, a run of whitespace, and the contractions
  ``'s 't 're 've 'm 'll 'd``. Merges never cross a chunk boundary, so a
  token never spans two words, and a chunk that occurs 5,000 times is
  counted once with weight 5,000: training works on the few tens of
  thousands of distinct chunks, not on millions of characters. The pattern
  is GPT-2's written for Python's ``re`` (``[^\\W\\d_]`` for a letter,
  ``\\d`` for a digit): it cuts as GPT-2 does, except around numerals
  that are not decimal digits (``"²"`` is a letter to ``re``).
* Training: count every adjacent pair of tokens inside the chunks, weighted
  by the chunks' frequencies; merge the most frequent pair everywhere; update
  the counts of the chunks that changed only; repeat.
* Ties: among pairs of equal count, the pair with the smaller ids wins
  (compared as ``(left, right)``), so training is deterministic.
* Hugging Face ``tokenizers`` (its byte-level BPE trainer, same split, all
  256 bytes to start, no minimum count) learns the same merges from the same
  text; it breaks ties by the smaller ids too, but numbers the bytes in the
  order of the characters it shows them as (a space after the letters), so
  pairs of equal count can come out in another order (tests/test_bpe.py).
* Encoding applies the merges to each chunk in the order they were learned
  (lowest rank first, left to right), as training did; decoding joins the
  tokens' bytes. ``decode(encode(s)) == s`` for every string (that UTF-8
  can encode: a lone surrogate such as ``"\\ud800"`` cannot).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, defaultdict

from .checks import check_int

__all__ = [
    "PATTERN",
    "pretokenize",
    "train_bpe",
    "learn_merges",
    "vocab",
    "encode",
    "decode",
    "merge",
]

Pair = tuple[int, int]

# GPT-2's split, for Python's re: contractions, letters, digits, other
# symbols (each with an optional space before), then whitespace: a run of it
# that stops before a word leaves its last space to that word (" thou").
PATTERN = re.compile(
    r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+"
    r"|\s+(?!\S)|\s+"
)


def pretokenize(text: str, pattern=PATTERN) -> list[str]:
    """``text`` cut into chunks by :data:`PATTERN` (or another compiled
    ``pattern``: ``utils.gpt2.GPT2BPE`` passes GPT-2's); they join back to
    it."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return pattern.findall(text)


def merge(ids: list[int], pair: Pair, new: int) -> list[int]:
    """``ids`` with every occurrence of ``pair`` replaced by ``new``, left to
    right (``a a a`` with pair ``(a, a)`` becomes ``new a``)."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train_bpe(text: str, vocab_size: int) -> dict[Pair, int]:
    """Learn ``vocab_size - 256`` merges on ``text``.

    Returns ``{(left_id, right_id): new_id}`` in the order learned (new ids
    256, 257, ...); fewer if no pair is left to merge.
    """
    vocab_size = check_int(vocab_size, "vocab_size", 256)
    chunks = Counter(pretokenize(text))
    words = [list(chunk.encode("utf-8")) for chunk in chunks]
    return learn_merges(words, list(chunks.values()), vocab_size - 256)


def learn_merges(
    words: list[list[int]], freq: list[int], num_merges: int
) -> dict[Pair, int]:
    """The merge loop of :func:`train_bpe`: ``words`` are the distinct
    chunks as token ids (< 256 at the start), ``freq`` how often each
    occurs. Merges them in place; returns the merges learned."""
    num_merges = check_int(num_merges, "num_merges", 0)
    pairs: Counter = Counter()  # pair -> weighted count
    where = defaultdict(set)  # pair -> the words it may occur in
    for w, (word, n) in enumerate(zip(words, freq)):
        for pair in zip(word, word[1:]):
            pairs[pair] += n
            where[pair].add(w)
    heap = [(-n, pair) for pair, n in pairs.items()]  # max count first
    heapq.heapify(heap)
    merges: dict[Pair, int] = {}
    while len(merges) < num_merges and heap:
        n, pair = heapq.heappop(heap)
        if -n != pairs[pair]:  # stale entry: the count fell since
            if pairs[pair] > 0:
                heapq.heappush(heap, (-pairs[pair], pair))
            continue
        new = merges[pair] = 256 + len(merges)
        made = set()  # the pairs this merge creates, holding `new`
        for w in where.pop(pair):  # only the words holding the pair change
            old = words[w]
            words[w] = word = merge(old, pair, new)
            for p in zip(old, old[1:]):
                pairs[p] -= freq[w]
            for p in zip(word, word[1:]):
                pairs[p] += freq[w]
                if new in p:
                    where[p].add(w)
                    made.add(p)
        del pairs[pair]
        for p in made:
            heapq.heappush(heap, (-pairs[p], p))
    return merges


def _check_merges(merges) -> dict[Pair, int]:
    """``merges`` must be a dict as :func:`train_bpe` returns it."""
    if not isinstance(merges, dict):
        raise TypeError(f"merges must be a dict, got {type(merges).__name__}")
    for rank, (pair, new) in enumerate(merges.items()):
        if new != 256 + rank or not all(0 <= t < new for t in pair):
            raise ValueError(
                f"merges must map pairs of earlier ids to 256, 257, ... in "
                f"order; entry {rank} is {pair} -> {new}"
            )
    return merges


def vocab(merges: dict[Pair, int]) -> list[bytes]:
    """The bytes of every token: ``vocab(merges)[i]`` is token ``i``'s
    (256 single bytes, then one token per merge)."""
    table = [bytes([b]) for b in range(256)]
    for a, b in _check_merges(merges):
        table.append(table[a] + table[b])
    return table


def _encode_chunk(chunk: bytes, ranks: dict[Pair, int]) -> list[int]:
    ids = list(chunk)
    while len(ids) > 1:
        # the pair learned first among those present; unknown pairs rank last
        pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, 1 << 62))
        if pair not in ranks:
            break
        ids = merge(ids, pair, ranks[pair])
    return ids


def encode(text: str, merges: dict[Pair, int], pattern=PATTERN) -> list[int]:
    """Token ids of ``text``: its UTF-8 bytes, chunk by chunk (cut by
    ``pattern``), merged in the order the merges were learned (a chunk seen
    before is looked up)."""
    _check_merges(merges)
    done: dict[str, list[int]] = {}
    ids: list[int] = []
    for chunk in pretokenize(text, pattern):
        if chunk not in done:
            done[chunk] = _encode_chunk(chunk.encode("utf-8"), merges)
        ids.extend(done[chunk])
    return ids


def decode(ids: list[int], merges: dict[Pair, int]) -> str:
    """The text of token ``ids``: their bytes joined, read as UTF-8 (a byte
    sequence that is not valid UTF-8, possible only for ids not made by
    :func:`encode`, shows U+FFFD)."""
    table = vocab(merges)
    out = []
    for i, t in enumerate(ids):
        t = check_int(t, f"ids[{i}]", 0)
        if t >= len(table):
            raise ValueError(f"ids[{i}] must be < {len(table)}, got {t}")
        out.append(table[t])
    return b"".join(out).decode("utf-8", errors="replace")
