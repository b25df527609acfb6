"""How much of ``utils`` is argument validation, per module and in total.

    python -m tools.budgets.validation_share     # a table, worst first

The counting rule (read from the source with ``ast`` and ``tokenize``):

* **Executable lines**: the physical lines that hold a code token. Blank
  lines, comment lines and docstrings (the string that opens a module,
  class or function) do not count; a statement spread over four lines
  counts four.
* **Validation lines**, a subset of those (the rule of issue #22):

  - a ``raise`` of ``TypeError`` or ``ValueError`` (an argument error), all
    of its lines;
  - the test of an ``if`` that guards such a raise (the header lines, from
    ``if`` to the colon);
  - a simple statement that calls a check, a function whose name starts
    with ``check_`` or ``_check`` (``x = check_int(x, "x", 1)``,
    ``check_mask(...)``, ``return check_at_most(...)``), all of its lines;
    an ``if`` whose test calls one, its test.

The same rule applies to every module, ``utils/checks.py`` included (its
raises and the tests guarding them count; its message helpers do not). The
share is validation lines / executable lines. ``tests/test_lint.py`` keeps
the total at or under 15%.
"""

from __future__ import annotations

import ast
import io
import pathlib
import tokenize

from tools import ROOT

LIMIT = 0.15
ERRORS = {"TypeError", "ValueError"}
NOT_CODE = {
    getattr(tokenize, name)
    for name in "COMMENT NL NEWLINE INDENT DEDENT ENDMARKER ENCODING".split()
}


def _lines(node: ast.AST) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def _is_check_name(name: str) -> bool:
    return name.startswith(("check_", "_check"))


def _called_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return ""


def _is_raise(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise):
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id in ERRORS


def _calls_a_check(node: ast.AST | None) -> bool:
    return node is not None and any(
        _is_check_name(_called_name(n)) for n in ast.walk(node)
    )


def _is_check(stmt: ast.stmt) -> bool:
    """A simple statement that calls a check anywhere in it."""
    simple = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)
    return isinstance(stmt, simple) and _calls_a_check(stmt)


def _validation(stmt: ast.stmt) -> set[int]:
    """The validation lines of one statement (not of its children)."""
    if _is_raise(stmt) or _is_check(stmt):
        return _lines(stmt)
    if isinstance(stmt, (ast.If, ast.While)) and _calls_a_check(stmt.test):
        return set(range(stmt.lineno, stmt.body[0].lineno))  # the test
    if isinstance(stmt, ast.If) and any(map(_is_raise, stmt.body)):
        return set(range(stmt.lineno, stmt.body[0].lineno))  # the guard
    return set()


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        if isinstance(node, kinds) and ast.get_docstring(node) is not None:
            lines |= _lines(node.body[0])
    return lines


def count(source: str) -> tuple[int, int]:
    """(validation lines, executable lines) of one module's source."""
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in NOT_CODE:
            code |= set(range(tok.start[0], tok.end[0] + 1))
    tree = ast.parse(source)
    code -= _docstring_lines(tree)
    checks: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            checks |= _validation(node)
    return len(checks & code), len(code)


def shares(folder: pathlib.Path = ROOT / "utils") -> dict[str, tuple]:
    """Module name -> (validation lines, executable lines)."""
    return {
        path.stem: count(path.read_text())
        for path in sorted(folder.glob("*.py"))
    }


if __name__ == "__main__":
    table = shares()
    print(f"{'module':<20}{'checks':>8}{'lines':>8}{'share':>8}")
    for name, (checks, lines) in sorted(
        table.items(), key=lambda kv: -kv[1][0] / max(kv[1][1], 1)
    ):
        share = checks / max(lines, 1)
        print(f"{name:<20}{checks:>8}{lines:>8}{share:>8.1%}")
    checks = sum(c for c, _ in table.values())
    lines = sum(n for _, n in table.values())
    print(f"{'total':<20}{checks:>8}{lines:>8}{checks / lines:>8.1%}")
