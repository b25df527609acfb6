"""``make robust``: execute every chapter in the robust numeric mode and fail
on any error.

    python -m tools.robust [book/08_training_translator.ipynb ...]

Each notebook of _toc.yml (or each one named) runs top to bottom in a fresh
kernel with every library on its native code path, every core, and another seed
(tools/numeric_mode.py, ``ROBUST``). Outputs are expected to differ from the
stored ones and are not compared, and nothing is written back; a cell that
raises (a failed assert above all) fails the run. That is the proof that a
learner on another machine does not stop at an AssertionError. A translator
trained here is cached under _build/robust/, never beside the notebooks.
"""

from __future__ import annotations

import pathlib
import shutil
import sys
import time

import nbformat

from . import ROOT, numeric_mode
from .notebooks import notebook_client, toc_notebooks

WORK = ROOT / "_build" / "robust"


def run(path: pathlib.Path) -> tuple[float, str | None]:
    """Execute one notebook from a scratch copy of book/; (seconds, error or
    None)."""
    nb = nbformat.read(path, as_version=4)
    copy = (
        WORK / "book" / path.name
    )  # inside the checkout: the setup cell finds utils
    start = time.perf_counter()
    try:
        notebook_client(nb, copy, timeout=600).execute()
    except (
        Exception
    ) as error:  # nbclient's CellExecutionError names the cell and the line
        return time.perf_counter() - start, str(error)[-2000:]
    return time.perf_counter() - start, None


def main(paths: list[pathlib.Path]) -> int:
    numeric_mode.apply("robust")
    shutil.rmtree(WORK, ignore_errors=True)
    (WORK / "book").mkdir(parents=True)
    for data in (
        ROOT / "book"
    ).iterdir():  # data files the chapters read (not .pt caches)
        if (
            data.is_dir()
            and not data.name.startswith((".", "_"))
            and data.name != "transformer-course"
        ):
            shutil.copytree(data, WORK / "book" / data.name)
    failed = []
    for path in paths:
        seconds, error = run(path)
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
