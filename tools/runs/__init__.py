"""The scripts that make the stored runs and baselines in ``book/data/``.

Each runs as ``python -m tools.runs.NAME`` and computes in the portable
numeric mode, like the stored outputs: started otherwise, it restarts in it
here, before it imports torch (glibc reads its tunables only when a process
starts), with its arguments. The helpers below read and write the stored
files the same way in every script."""

import json
import sys

from tools.numerics import numeric_mode

_ARGV = getattr(sys, "orig_argv", [])
_AT = _ARGV.index("-m") + 1 if "-m" in _ARGV[:-1] else None  # the module
if _AT is not None and _ARGV[_AT].startswith(__name__ + "."):
    numeric_mode.reexec_in("portable", _ARGV[_AT])


def r5(x: float) -> float:
    """A score as the stored tables keep it: five decimals."""
    return round(float(x), 5)


def write_json(path, data, indent: int | None = 1) -> None:
    """Store ``data`` as every stored result is: JSON, a final newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")


def read_rows(path) -> list[dict]:
    """The rows of a JSON-lines file; none before the first is stored."""
    if not path.is_file():
        return []
    return [json.loads(r) for r in path.read_text().splitlines() if r.strip()]


def write_rows(path, rows) -> None:
    """A JSON-lines file of ``rows``, written whole."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def table_rows(path, same_mode: bool = False) -> list[dict]:
    """The rows of a table stored by ``write_table`` (none before the first);
    ``same_mode``: exit if they were computed in another numeric mode."""
    if not path.is_file():
        return []
    table = json.loads(path.read_text())
    if (
        same_mode
        and table["rows"]
        and table["numeric_mode"] != numeric_mode.stamp()
    ):
        raise SystemExit(f"{path} was made in {table['numeric_mode']}")
    return table["rows"]


def write_table(path, meta: dict, rows: list[dict]) -> None:
    """A table of runs: the numeric mode they ran in, what they are, rows."""
    table = {"numeric_mode": numeric_mode.stamp(), "meta": meta, "rows": rows}
    write_json(path, table)


def shortest(x: float) -> float:
    """A float32 loss written with the fewest digits that read back as the
    same float32 (compare as ``np.float32(stored) == np.float32(live)``)."""
    import numpy as np

    return float(str(np.float32(x)))


def fp16(model, copy):
    """``model`` as stored: its weights rounded to fp16 (returned too), in
    ``copy`` (a fresh model of its shape), which computes in fp32."""
    half = {k: v.half() for k, v in model.state_dict().items()}
    copy.load_state_dict({k: v.float() for k, v in half.items()})
    return copy.eval(), half


def error_rates(hyps, refs, digits: int | None = None) -> dict:
    """Greedy WER and PER of ``hyps`` against ``refs`` (multi-reference,
    scored without stress), rounded if ``digits``."""
    from utils import pronunciation as pr

    rates = {"wer": pr.word_error_rate, "per": pr.phoneme_error_rate}
    out = {k: f(hyps, refs, stress=False) for k, f in rates.items()}
    if digits is not None:
        out = {k: round(v, digits) for k, v in out.items()}
    return out
