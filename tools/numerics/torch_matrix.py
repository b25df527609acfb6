"""``make torch-matrix TORCH=2.11.0``: every notebook of both editions, alone,
as Colab runs it, on a given PyTorch (default: the newest release).

    python -m tools.numerics.torch_matrix [--torch 2.11.0|newest] [--venv DIR]
                                 [--report FILE.json] [NOTEBOOK ...]

1. **A venv of its own** (``make_venv``, default ``.venv-torch/<torch>``):
   that torch, the CPU build from ``TORCH_INDEX_URL`` (default PyTorch's CPU
   index; empty: pip's default index), then every other pin of
   ``requirements.txt``. Made once; a stamp records what it holds.
2. **Every notebook alone** (the chapters of ``_toc.yml`` in ``book/`` and
   ``zh/book/``, or those named), in a fresh kernel of that venv, copied
   into an empty folder, so its setup cell clones the course (from a
   snapshot of the working tree, ``COURSE_REPO_URL``) as in Colab. No
   numeric mode, no ``COURSE_SEED``, no ``PYTHONPATH`` (``CLEARED``): every
   assert runs, no output is compared; a last cell checks that the kernel
   ran this torch and the clone's ``utils``.

A notebook fails on an error or on a **new warning**: one a cell's output
shows that the stored notebook's same cell does not (``new_warnings``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

from tools import ROOT
from tools.numerics.numeric_mode import PORTABLE, ROBUST

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Set by the numeric modes, ``make robust`` or the Chinese generator: a
# reader's Colab has none of them.
CLEARED = (*PORTABLE, *ROBUST, "COURSE_LANGUAGE", "PYTHONPATH")
# A warning as Python prints it ("path:line: FutureWarning: text") or as a
# library logs it ("FutureWarning: text").
WARNING = re.compile(
    r"^(?:.*?:\d+: )?(?P<kind>[A-Z]\w*Warning): (?P<text>.*\S)\s*$",
    re.MULTILINE,
)
CHECK_CELL = """\
import pathlib, torch, utils
print(torch.__version__)
print(pathlib.Path(utils.__file__).resolve())"""


# ---------------------------------------------------------------- the venv
def other_pins() -> list[str]:
    """``requirements.txt`` without its torch pin."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [
        line.strip()
        for line in lines
        if line.strip()
        and not line.lstrip().startswith("#")
        and re.split(r"[=<>!~ ;\[]", line.strip())[0].lower() != "torch"
    ]


def torch_requirement(version: str) -> str:
    """What pip is asked for: ``torch`` (newest) or ``torch==version``."""
    if version == "newest":
        return "torch"
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", version):
        raise ValueError(
            f"torch must be 'newest' or a version such as 2.11.0, "
            f"got {version!r}"
        )
    return f"torch=={version}"


def make_venv(venv: pathlib.Path, version: str) -> pathlib.Path:
    """The venv's Python, with ``version`` of torch and the other pins."""
    python = venv / "bin" / "python"
    pins = other_pins()
    index = os.environ.get("TORCH_INDEX_URL", CPU_INDEX)
    stamp_text = json.dumps([version, index, pins])
    stamp = venv / ".torch-matrix"
    if python.exists() and stamp.is_file() and stamp.read_text() == stamp_text:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    start = time.perf_counter()
    where = ["--index-url", index] if index else []
    subprocess.run([*pip, *where, torch_requirement(version)], check=True)
    subprocess.run([*pip, *pins], check=True)
    stamp.write_text(stamp_text)
    took = time.perf_counter() - start
    print(f"{venv}: installed in {took:.0f} s", flush=True)
    return python


# ----------------------------------------------------------------- the run
def warnings_in(cell) -> set[str]:
    """The warnings a code cell's outputs show, as ``Kind: text``."""
    found = set()
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            text = out.get("text", "")
        elif out.get("output_type") == "error":
            text = "\n".join(out.get("traceback", []))
        else:
            text = str(out.get("data", {}).get("text/plain", ""))
        for m in WARNING.finditer(text):
            found.add(f"{m['kind']}: {m['text']}")
    return found


def new_warnings(stored, ran) -> list[str]:
    """Warnings in notebook ``ran`` that the same cell of ``stored`` lacks,
    each as ``cell id: Kind: text``."""
    before = {
        c.get("id"): warnings_in(c)
        for c in stored.cells
        if c.cell_type == "code"
    }
    return [
        f"cell {c.get('id')}: {w}"
        for c in ran.cells
        if c.cell_type == "code"
        for w in sorted(warnings_in(c) - before.get(c.get("id"), set()))
    ]


def snapshot(target: pathlib.Path) -> str:
    """The working tree (tracked and new files, ignored ones left out)
    committed to a git repository at ``target``; its file:// URL."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@localhost"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run([*git, *args], cwd=target, check=True)
    subprocess.run(
        [*git, "commit", "-q", "-m", "snapshot"], cwd=target, check=True
    )
    return target.as_uri()


def run_alone(path: pathlib.Path, folder: pathlib.Path, timeout: int):
    """Run notebook ``path`` copied into the empty ``folder``:
    (seconds, problems)."""
    import nbformat
    import torch

    from tools.editions.notebooks import notebook_client

    stored = nbformat.read(path, as_version=4)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(CHECK_CELL))
    folder.mkdir(parents=True)
    shutil.copy2(path, folder / path.name)
    start = time.perf_counter()
    try:
        client = notebook_client(nb, folder / path.name, timeout=timeout)
        # a kernel starting on a busy 2-core machine may take over a minute
        client.startup_timeout = timeout
        client.execute()
    except Exception as error:  # noqa: BLE001  nbclient names the cell
        took = time.perf_counter() - start
        return took, [f"error: {str(error)[-1500:]}"]
    took = time.perf_counter() - start
    problems = new_warnings(stored, nb)
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    clone = (folder / "transformer-course" / "utils").resolve()
    if printed.split() != [torch.__version__, str(clone / "__init__.py")]:
        problems.append(f"not this torch or not the clone's utils: {printed}")
    return took, problems


def notebooks(named: list[str]) -> list[pathlib.Path]:
    from tools.editions.notebooks import toc_notebooks
    from tools.editions.zh_notebooks import zh_path

    if named:
        return [pathlib.Path(n).resolve() for n in named]
    chapters = [p for p in toc_notebooks() if p.parent.name == "book"]
    return [*chapters, *(zh_path(p) for p in chapters)]


def run_all(named: list[str], report: str | None, timeout: int) -> int:
    import torch

    for name in CLEARED:
        os.environ.pop(name, None)
    paths = notebooks(named)
    results, total = [], 0.0
    print(f"torch {torch.__version__}: {len(paths)} notebooks", flush=True)
    with tempfile.TemporaryDirectory(prefix="torch-matrix-") as tmp:
        origin = pathlib.Path(tmp, "origin")
        origin.mkdir()
        os.environ["COURSE_REPO_URL"] = snapshot(origin)
        for i, path in enumerate(paths):
            rel = str(path.relative_to(ROOT))
            folder = pathlib.Path(tmp, f"content-{i}")
            took, problems = run_alone(path, folder, timeout)
            shutil.rmtree(folder, ignore_errors=True)
            total += took
            verdict = "ok" if not problems else "FAILED"
            print(f"{rel}: {took:.1f} s {verdict}", flush=True)
            for problem in problems:
                print(f"  {problem}", flush=True)
            row = {"notebook": rel, "seconds": round(took, 1)}
            results.append({**row, "problems": problems})
    failed = [r for r in results if r["problems"]]
    print(
        f"torch {torch.__version__}: {len(results)} notebooks in "
        f"{total:.0f} s, {len(failed)} failed",
        flush=True,
    )
    if report:
        summary = {
            "torch": torch.__version__,
            "python": sys.version.split()[0],
            "seconds": round(total, 1),
            "notebooks": results,
        }
        pathlib.Path(report).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(report).write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.numerics.torch_matrix",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument("--torch", default="newest")
    parser.add_argument("--venv", default=None)
    parser.add_argument("--report", default=None)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument(
        "--in-venv", action="store_true", help=argparse.SUPPRESS
    )
    parser.add_argument("notebooks", nargs="*")
    args = parser.parse_args(argv)
    if args.in_venv:
        return run_all(args.notebooks, args.report, args.timeout)
    torch_requirement(args.torch)  # a bad version fails before any install
    venv = pathlib.Path(args.venv or ROOT / ".venv-torch" / args.torch)
    python = make_venv(venv.resolve(), args.torch)
    command = [str(python), "-m", "tools.numerics.torch_matrix", "--in-venv"]
    command += ["--timeout", str(args.timeout)]
    if args.report:
        command += ["--report", str(pathlib.Path(args.report).resolve())]
    command += [str(pathlib.Path(n).resolve()) for n in args.notebooks]
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
