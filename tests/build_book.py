"""Build the site strictly (warnings are errors, every page rebuilt) and check its pages exist.

python tests/build_book.py        (or: make book)
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from notebook_tools import ROOT, toc_files  # noqa: E402


def build() -> subprocess.CompletedProcess:
    # A page dropped from _toc.yml must not linger in the output from an earlier build.
    shutil.rmtree(ROOT / "_build" / "html", ignore_errors=True)
    # --all: a partial rebuild would hide the warnings of unchanged pages.
    cmd = [
        str(pathlib.Path(sys.executable).parent / "jupyter-book"),
        "build",
        str(ROOT),
        "--all",
        "--warningiserror",
        "--keep-going",
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def missing_pages() -> list[str]:
    html = ROOT / "_build" / "html"
    return [
        f for f in ["index", *toc_files()] if not (html / f"{f}.html").exists()
    ]


if __name__ == "__main__":
    result = build()
    sys.stdout.write(result.stdout[-4000:])
    sys.stderr.write(result.stderr[-8000:])
    if result.returncode != 0:
        raise SystemExit(
            f"jupyter-book build failed (exit {result.returncode})"
        )
    if missing := missing_pages():
        raise SystemExit(f"built, but these pages are missing: {missing}")
