"""Shared helpers for the notebook tooling: the canonical setup cell and the _toc.yml reader.

Used by `make refresh` (tests/refresh.py), conftest.py and the tests, so that the setup cell
and the list of chapters are each defined once.
"""
from __future__ import annotations

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]

SETUP_MARKER = "# Setup, the same in every chapter"

SETUP_CELL = '''\
# Setup, the same in every chapter: make `utils` importable from a checkout or, alone
# (as in Colab), by cloning the course next to the notebook; seed; pick the device.
import os, pathlib, subprocess, sys

REPO_URL = os.environ.get("COURSE_REPO_URL", "{url}")
IN_COLAB = "google.colab" in sys.modules
here = pathlib.Path.cwd().resolve()
root = next((p for p in (here, *here.parents) if (p / "utils" / "__init__.py").is_file()), None)
if root is None:  # not inside a checkout: fetch the course (Colab installs nothing else)
    root = here / "transformer-course"
    if not (root / "utils").is_dir():
        subprocess.run(["git", "clone", "--depth", "1", "--quiet", REPO_URL, str(root)], check=True)
sys.path.insert(0, str(root))

import utils
device = utils.setup(seed=0)'''


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def repo_url() -> str:
    return config()["repository"]["url"]


def setup_source() -> str:
    return SETUP_CELL.format(url=repo_url())


def toc_files() -> list[str]:
    """Every `file:`/`root:` entry of _toc.yml, relative to the repository root, no suffix."""
    text = (ROOT / "_toc.yml").read_text()
    return [m.group(1) for m in re.finditer(r"^\s*(?:-\s*)?(?:file|root):\s*(\S+)", text, re.M)]


def toc_notebooks() -> list[pathlib.Path]:
    """The notebooks listed in _toc.yml (the ones nbval must test)."""
    return [ROOT / f"{f}.ipynb" for f in toc_files() if (ROOT / f"{f}.ipynb").exists()]


def notebook_client(nb, path: pathlib.Path, timeout: int):
    """An nbclient runner whose widget front end never talks back to the kernel mid-cell.

    nbclient plays the front end of every Output widget (interact draws into one): it routes
    the widget's outputs and `clear_output` calls into the widget, and answers each captured
    output with a comm message sent synchronously on the kernel's shell socket, from inside
    the event loop that is at that moment awaiting the cell's reply on that same socket.
    That is the pattern reported to block until the cell timeout (nbclient issue #312), and
    it matches what was seen here: random multi-minute stalls in chapter 4 and in the
    ipywidgets 7.7 test, never an error. The kernel does not need those messages (they only
    mirror the widget's outputs back to it), so here the Output widget keeps its outputs
    client-side and sends nothing; widgets still display as before.
    """
    from nbclient import NotebookClient
    from nbclient.output_widget import OutputWidget

    class QuietOutputWidget(OutputWidget):
        def _publish_msg(self, *args, **kwargs) -> None:
            pass  # no shell traffic while a cell runs (see above)

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            record_timing=False, store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.widget_registry["@jupyter-widgets/output"]["OutputModel"] = QuietOutputWidget
    return client
