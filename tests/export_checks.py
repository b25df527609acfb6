"""What the Node tests of the two live models' exports share
(tests/test_gpt_export.py, tests/test_pronouncer_export.py): the largest
differences from PyTorch, and tables of tampered exports the engine must
refuse with a message naming the problem."""

from __future__ import annotations

import re

import pytest
import torch

from tests import live_pages as lp


class Worst(dict):
    """The largest absolute difference from PyTorch seen, by name."""

    def see(self, name: str, got, want) -> None:
        got, want = (
            torch.as_tensor(x, dtype=torch.float64) for x in (got, want)
        )
        diff = (got - want).abs().max().item()
        self[name] = max(self.get(name, 0.0), diff)

    def within(self, **tolerances: float) -> None:
        for name, tol in tolerances.items():
            assert self[name] <= tol, (name, dict(self))


def tamperings(table: str) -> list:
    """Rows ``name | field | value | words`` (an indented line goes on with
    the row above): params (change, words) named by ``name``, the change as
    ``lp.tampered`` takes it; ``value`` a Python expression (``DROP``: the
    field removed); field ``-``: a file without the export at all."""
    cases = []
    for row in re.sub(r"\n\s+", " ", table.strip()).splitlines():
        name, field, value, words = (p.strip() for p in row.split(" | ", 3))
        value = eval(value, {"DROP": lp.DROP})  # the table above
        change = None if field == "-" else (field, value)
        cases.append(pytest.param(change, words, id=name))
    return cases


def assert_refused(run, weights, prefix: str, change, words: str, out):
    """``weights`` with ``change`` (written to ``out``) is refused by the
    engine (``run(path)``: its answer) with a message holding ``words``."""
    got = run(lp.tampered(weights, prefix, change, out))
    assert "refused" in got, f"{change}: not refused"
    assert words in got["refused"], (change, got["refused"])
