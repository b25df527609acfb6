"""The course's own seeded random generator: Mulberry32, small enough to
write the same in Python and in JavaScript (``_static/gpt/gpt.js``), so a
seeded sample drawn in the browser can be checked against PyTorch token for
token (book/gpt_live.md).

Mulberry32 (Tommy Ettinger, 2017, public domain) keeps one 32-bit integer
of state. Each call adds the constant ``0x6D2B79F5`` to it (mod 2**32) and
scrambles a copy by shifts, xors and two 32-bit multiplications; the result
is an integer in ``[0, 2**32)``. Every step is integer arithmetic mod
2**32, so both languages give exactly the same integers (JavaScript:
``Math.imul`` and ``>>>``). ``random()`` turns one integer ``x`` into the
float ``x / 2**32``, exact in both (a double holds 53 bits), in ``[0, 1)``.

It is a generator for reproducible examples, not for statistics at scale
or secrets: its period is 2**32 and some outputs never occur.

    rng = Mulberry32(0)
    rng.next_uint32(), rng.random()
"""

from __future__ import annotations

from .checks import check_int

__all__ = ["Mulberry32", "MASK32"]

MASK32 = 0xFFFFFFFF
STEP = 0x6D2B79F5


def _imul(a: int, b: int) -> int:
    """``a * b`` mod 2**32, as JavaScript's ``Math.imul`` (unsigned)."""
    return (a * b) & MASK32


class Mulberry32:
    """Seeded generator: ``next_uint32() -> int`` in ``[0, 2**32)``,
    ``random() -> float`` in ``[0, 1)``; ``seed`` an int in ``[0, 2**32)``.
    """

    def __init__(self, seed: int):
        seed = check_int(seed, "seed", 0)
        if seed > MASK32:
            raise ValueError(f"seed must be an int below 2**32, got {seed}")
        self.state = seed

    def next_uint32(self) -> int:
        """The next 32-bit integer; advances the state by one step."""
        self.state = (self.state + STEP) & MASK32
        t = self.state
        t = _imul(t ^ (t >> 15), t | 1)
        t ^= (t + _imul(t ^ (t >> 7), t | 61)) & MASK32
        return t ^ (t >> 14)

    def random(self) -> float:
        """The next integer divided by 2**32: a float in ``[0, 1)``."""
        return self.next_uint32() / 4294967296.0
