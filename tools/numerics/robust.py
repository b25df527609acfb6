"""``make robust``: every chapter in the robust numeric mode; fail on any
error.

    python -m tools.numerics.robust [book/08_training_pronouncer.ipynb ...]

Each notebook of _toc.yml (or each one named) runs top to bottom in a fresh
kernel with every library on its native code path, every core and another
seed (``numeric_mode.ROBUST``), from a scratch copy of book/ in
_build/robust/. Outputs are not compared and nothing is written back; a
cell that raises (a failed assert above all) fails the run: the proof that a
learner on another machine does not stop at an AssertionError. A last cell,
added here, checks that the chapter left the session's thread count,
gradient mode and default dtype as it found them.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import time

import nbformat

from tools import ROOT
from tools.numerics import numeric_mode
from tools.editions.notebooks import notebook_client, toc_notebooks

WORK = ROOT / "_build" / "robust"
STATE = (
    "(torch.get_num_threads(), torch.is_grad_enabled(), "
    "str(torch.get_default_dtype()))"
)


def fresh_state() -> str:
    """What a new Python process in this mode reports for ``STATE``."""
    code = [sys.executable, "-c", f"import torch; print({STATE})"]
    done = subprocess.run(code, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def run(path: pathlib.Path, state: str) -> tuple[float, str | None]:
    """Execute one notebook from a scratch copy of book/ (inside the checkout,
    so the setup cell finds utils); (seconds, error or None)."""
    nb = nbformat.read(path, as_version=4)
    check = (
        f"import torch\nleft = {STATE}\nassert str(left) == {state!r}, left"
    )
    nb.cells.append(nbformat.v4.new_code_cell(check))
    start = time.perf_counter()
    try:
        notebook_client(nb, WORK / "book" / path.name, timeout=600).execute()
    except Exception as error:  # noqa: BLE001  nbclient names the cell and line
        return time.perf_counter() - start, str(error)[-2000:]
    return time.perf_counter() - start, None


def main(paths: list[pathlib.Path]) -> int:
    numeric_mode.apply("robust")
    shutil.rmtree(WORK, ignore_errors=True)
    (WORK / "book").mkdir(parents=True)
    for data in (ROOT / "book").iterdir():  # data the chapters read, no caches
        skip = (
            data.name.startswith((".", "_"))
            or data.name == "transformer-course"
        )
        if data.is_dir() and not skip:
            shutil.copytree(data, WORK / "book" / data.name)
    failed, state = [], fresh_state()
    for path in paths:
        seconds, error = run(path, state)
        status = "ok" if error is None else "FAILED"
        print(
            f"{seconds:6.1f} s  {status:6}  {path.relative_to(ROOT)}",
            flush=True,
        )
        if error is not None:
            print(error, flush=True)
            failed.append(path)
    print(f"{len(paths) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    args = [pathlib.Path(p).resolve() for p in sys.argv[1:]]
    raise SystemExit(main(args or toc_notebooks()))
