"""Route every figure a notebook shows through ``proof.figures``.

``install`` (called by ``proof.setup`` in IPython, under the test harness or
in a Chinese notebook) replaces the inline backend's figure formatters with
one that finishes (translates and, with ``check``, checks) and encodes the
figure, and appends a call to the end of every cell, so figures the backend
shows after the cell are finished too and a failed check raises in the cell
that drew the figure. Without ``check`` nothing it adds can raise.
"""

from __future__ import annotations

import ast

import matplotlib.pyplot as plt
from matplotlib._pylab_helpers import Gcf
from matplotlib.figure import Figure

from .figures import FigureError, encode, finish

_errors: list[BaseException] = []
_check = {"on": True}


def _drop_inline_formatters(ip) -> None:
    """Remove the inline backend's own figure formatters (it registers them
    when it is first loaded, possibly after ``install``)."""
    formatters = ip.display_formatter.formatters
    for mime in (
        "image/png",
        "image/svg+xml",
        "image/jpeg",
        "application/pdf",
    ):
        formatters[mime].pop(Figure, None)


def _bundle(fig: Figure):
    """IPython's display formatter for figures: finish, then encode."""
    from IPython import get_ipython

    _drop_inline_formatters(get_ipython())
    try:
        finish(fig, check=_check["on"])
    except FigureError as error:
        _errors.append(error)  # raised at the end of the cell (_cell_end)
    return encode(fig)


def _cell_end(value=None):
    """Run at the end of every cell: finish the figures still open (the
    inline backend shows them after the cell), raise any figure error."""
    for manager in Gcf.get_all_fig_managers():
        try:
            finish(manager.canvas.figure, check=_check["on"])
        except FigureError as error:
            _errors.append(error)
    if _errors:
        errors = list(_errors)
        _errors.clear()
        raise FigureError("\n".join(str(e) for e in errors))
    return value


class _AtCellEnd(ast.NodeTransformer):
    """Appends ``_cell_end()`` to a cell, wrapping its last expression so
    its value is still displayed."""

    def visit_Module(self, node):
        call = ast.Name("__course_cell_end__", ast.Load())
        last = node.body[-1] if node.body else None
        if isinstance(last, ast.Expr):
            last.value = ast.Call(call, [last.value], [])
        else:
            node.body.append(ast.Expr(ast.Call(call, [], [])))
        return ast.fix_missing_locations(node)


def install(ip, check: bool = True) -> None:
    """Route every figure ``ip`` displays through the funnel; ``check``:
    also check each (legible, no overlaps) and raise on a failure."""
    _check["on"] = bool(check)
    plt.get_backend()  # loads the inline backend, which adds formatters
    _drop_inline_formatters(ip)
    ip.display_formatter.mimebundle_formatter.for_type(Figure, _bundle)
    ip.user_ns["__course_cell_end__"] = _cell_end
    if not any(isinstance(t, _AtCellEnd) for t in ip.ast_transformers):
        ip.ast_transformers.append(_AtCellEnd())
        ip.events.register("pre_run_cell", lambda *_: _errors.clear())
