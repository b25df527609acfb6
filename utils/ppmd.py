"""PPMd, an adaptive compressor, as a baseline in bits per character.

PPM (prediction by partial matching) predicts each byte from the longest
context it has seen before, escaping to shorter ones for a byte that context
never showed, and learns as it goes; a range coder turns its probabilities
into bytes, so the compressed size is the model's code length. PPMd is
Shkarin's version; this is its variant H as 7-Zip has it, from the
``pyppmd`` package (its C code is 7-Zip's).

A held-out text *given* a prime (the training works) costs ``size(prime +
text) - size(prime)`` bytes, times 8: the encoder that has read the prime
codes the text. Each size ends with the range coder's flush (a few bytes),
so the difference is the text's code length to about one byte. With an
empty prime it is the text alone, less the flush of an empty stream.

``memory``: the model's memory. Variant H restarts its model from nothing
when it fills (its only way to go on), and the text it has read takes an
eighth of it, so the memory must be large: 1 GiB never fills on these
texts (``tools/runs/ch11_baselines.py`` finds the same bytes at 256 MiB).
"""

from __future__ import annotations

import os

from .checks import check_bool, check_int

__all__ = [
    "MEMORY",
    "compress",
    "decompress",
    "primed_streams",
    "primed_bits",
]

MEMORY = 1 << 30
MIN_ORDER, MAX_ORDER = 2, 64  # pyppmd's range
MIN_MEMORY, MAX_MEMORY = 1 << 11, 0xFFFFFFFF - 12 * 3  # and its limits


def _settings(order, memory) -> tuple[int, int]:
    order = check_int(order, "order", MIN_ORDER)
    if order > MAX_ORDER:
        raise ValueError(f"order must be <= {MAX_ORDER}, got {order}")
    memory = check_int(memory, "memory", MIN_MEMORY)
    if memory > MAX_MEMORY:
        raise ValueError(f"memory must be <= {MAX_MEMORY}, got {memory}")
    return order, memory


def _data(data, name: str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray)):
        kind = type(data).__name__
        raise TypeError(f"{name} must be a str or bytes, got {kind}")
    return bytes(data)


def _encoder(order: int, memory: int):
    import pyppmd  # here, not at the top: only this module needs it

    return pyppmd.Ppmd7Encoder(*_settings(order, memory))


def _end(encoder) -> bytes:
    """The range coder's last bytes, without an end mark: its cost would
    depend on the context the text stops in."""
    return encoder.flush(endmark=False)


def compress(data, order: int, memory: int = MEMORY) -> bytes:
    """``data`` (bytes, or a str as UTF-8) compressed: one stream, no end
    mark (:func:`decompress` is told the length)."""
    data = _data(data, "data")
    encoder = _encoder(order, memory)
    return encoder.encode(data) + _end(encoder)


def decompress(stream, length: int, order: int, memory=MEMORY) -> bytes:
    """The first ``length`` bytes that ``stream`` codes (compressed with
    the same ``order`` and ``memory``)."""
    import pyppmd

    length = check_int(length, "length", 0)
    decoder = pyppmd.Ppmd7Decoder(*_settings(order, memory))
    return decoder.decode(_data(stream, "stream"), length)


def _in_child(work) -> bytes:
    """``work()`` run in a forked copy of this process (encoder state and
    all): its bytes come back through a pipe; this process is unchanged."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        status = 1
        try:
            os.close(read)
            with os.fdopen(write, "wb") as out:
                out.write(work())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        out = pipe.read()
    if os.waitpid(pid, 0)[1] != 0:
        raise RuntimeError("the forked PPMd encoder failed")
    return out


def primed_streams(
    prime, texts, order: int, memory: int = MEMORY, fork: bool = True
) -> tuple[bytes, list[bytes]]:
    """The stream of ``prime`` alone and, for each of ``texts``, that of
    ``prime + text``. ``fork``: encode the prime once and go on from that
    encoder in a forked child per text (where the system can fork), rather
    than encode the prime again for each: the same bytes, in less time."""
    prime = _data(prime, "prime")
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError("texts must be a list of texts, got one text")
    texts = [_data(t, f"texts[{i}]") for i, t in enumerate(texts)]
    if not (check_bool(fork, "fork") and hasattr(os, "fork")):
        alone = compress(prime, order, memory)
        return alone, [compress(prime + t, order, memory) for t in texts]
    encoder = _encoder(order, memory)
    head = encoder.encode(prime)
    ends = [_in_child(lambda t=t: encoder.encode(t) + _end(encoder))
            for t in texts]  # fmt: skip
    return head + _end(encoder), [head + e for e in ends]


def primed_bits(
    prime, texts, order: int, memory: int = MEMORY, fork: bool = True
) -> list[int]:
    """The bits each of ``texts`` costs after ``prime``: ``8 (size(prime +
    text) - size(prime))``; over its characters, bits per character."""
    alone, streams = primed_streams(prime, texts, order, memory, fork)
    return [8 * (len(s) - len(alone)) for s in streams]
