"""The interactive cells also run on ipywidgets 7.7 (Colab's), installed in
.venv/widgets7 by `make`: every notebook that calls `interact` runs, up to
its last `interact` cell, in a kernel importing it from there, through
`tools.editions.notebooks.notebook_client` (no widget front end, which made
runs stall before); a slow cell fails fast with a message."""

from __future__ import annotations

import os

import nbformat
import pytest
from nbclient.exceptions import CellTimeoutError

from tools.editions.notebooks import ROOT, notebook_client, toc_notebooks

pytestmark = pytest.mark.slow
WIDGETS7 = ROOT / ".venv" / "widgets7"
WIDGET_NOTEBOOKS = [p for p in toc_notebooks() if "interact(" in p.read_text()]
CELL_TIMEOUT = (
    120  # seconds; the slowest cell of any chapter takes under 30 s here
)


def test_some_chapters_have_widgets():
    assert WIDGET_NOTEBOOKS, (
        "no notebook uses interact(): this test would check nothing"
    )


@pytest.mark.skipif(
    not (WIDGETS7 / "ipywidgets").is_dir(),
    reason="run `make test` to install .venv/widgets7",
)
@pytest.mark.parametrize(
    "path", WIDGET_NOTEBOOKS, ids=[p.stem for p in WIDGET_NOTEBOOKS]
)
def test_notebook_runs_on_ipywidgets_7(path, monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join([str(WIDGETS7), os.environ.get("PYTHONPATH", "")]),
    )
    nb = nbformat.read(path, as_version=4)
    shown = [
        c
        for c in nb.cells
        if c.cell_type == "code" and "interact(" in c.source
    ]
    # the cells after the last interact hold no widget: they need not run
    del nb.cells[nb.cells.index(shown[-1]) + 1 :]
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import ipywidgets; print(ipywidgets.__version__)"
        )
    )
    client = notebook_client(nb, path, timeout=CELL_TIMEOUT)
    try:
        client.execute()  # raises on any error
    except CellTimeoutError as exc:
        pytest.fail(
            f"{path.name}: a cell did not finish within {CELL_TIMEOUT} s "
            "under ipywidgets 7.7 (a stall, not slowness: no chapter cell "
            f"needs that long):\n{str(exc)[:400]}"
        )
    assert nb.cells[-1].outputs[0]["text"].strip().startswith("7.7"), (
        "the kernel did not use ipywidgets 7.7"
    )
    for cell in shown:
        views = [
            o
            for o in cell.outputs
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        ]
        assert views, (
            f"{path.name}: an interact cell displayed no widget under "
            f"ipywidgets 7.7:\n{cell.source[:200]}"
        )
