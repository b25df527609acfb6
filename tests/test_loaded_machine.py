"""Chapter 6 and the complexity unit tests pass while both cores are busy
(a pure-Python spin loop and a NumPy matrix-product loop that also evicts
the caches). With ``-s`` the chapter runs once more under load to print the
slopes its timing cells measured (``make test`` skips that). The busy
processes die in the fixture's teardown, whatever happens. (Chapter 10's
cost under load is proven on a count instead: its loops run on one thread,
tests/test_pretraining.py.)"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "06_complexity.ipynb"
NBVAL = [
    "--nbval",
    "--nbval-current-env",
    "--nbval-sanitize-with",
    "tests/sanitize.cfg",
    "--nbval-cell-timeout=300",
]
SPIN = "while True:\n    pass\n"
MATMUL = (
    "import numpy as np\n"
    "a = np.random.default_rng(0).random((512, 512))\n"
    "while True:\n"
    "    a @ a\n"
)


@pytest.fixture
def busy_cpu():
    """Start one busy process per core; kill them however the test ends."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    procs = []
    try:
        for code in (SPIN, MATMUL):
            procs.append(
                subprocess.Popen([sys.executable, "-c", code], env=env)
            )
        time.sleep(1.0)  # let both reach their loops
        assert all(p.poll() is None for p in procs), "a busy process died"
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)


def _pytest(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )


def _timing_outputs() -> str:
    # run the chapter once more and keep what its timing cells printed
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(CHAPTER, as_version=4)
    NotebookClient(
        nb, timeout=300, resources={"metadata": {"path": str(CHAPTER.parent)}}
    ).execute()
    texts = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and "nbval-ignore-output" in tags:
            for out in cell.outputs:
                if out.get("output_type") == "stream":
                    texts.append(out["text"])
    return "".join(texts)


def test_chapter_6_and_complexity_tests_pass_on_a_busy_cpu(busy_cpu, request):
    start = time.perf_counter()
    notebook = _pytest(*NBVAL, str(CHAPTER.relative_to(ROOT)))
    nbval_s = time.perf_counter() - start
    assert notebook.returncode == 0, notebook.stdout[-4000:] + notebook.stderr
    start = time.perf_counter()
    unit = _pytest("tests/test_complexity.py")
    unit_s = time.perf_counter() - start
    assert unit.returncode == 0, unit.stdout[-4000:] + unit.stderr
    assert all(p.poll() is None for p in busy_cpu), "the load stopped early"
    print(f"\nunder load: nbval {nbval_s:.0f} s, unit tests {unit_s:.0f} s")
    if request.config.getoption("capture") == "no":  # -s: show the margins
        print(_timing_outputs())
