"""How much of ``utils`` is argument validation, per module and in total.

    python -m tools.validation_share            # a table, worst module first
    python -m tools.validation_share --max 0.15 # exit 1 if the total is over

The counting rule (read from the source with ``ast`` and ``tokenize``):

* **Executable lines**: the physical lines that hold a code token. Blank
  lines, comment lines and docstrings (the string that opens a module,
  class or function) do not count; a statement spread over four lines
  counts four.
* **Validation lines**, a subset of those:

  - a ``raise`` of ``TypeError`` or ``ValueError`` (an argument error), all
    of its lines;
  - a statement whose value is a call to a check, a function whose name
    starts with ``check_`` or ``_check`` (``x = check_int(x, "x", 1)``,
    ``check_mask(...)``), all of its lines;
  - an ``if`` or ``for`` whose body (and ``else``) holds only validation
    statements, its header lines included (the test that guards a raise);
  - an ``if`` whose body ends in such a raise (and whose ``else`` is
    validation), whole: the lines that prepare the message count too.

The same rule applies to every module, ``utils/checks.py`` included (its
raises and the tests guarding them count; its message helpers do not). The
share is validation lines / executable lines. ``tests/test_lint.py`` keeps
the total at or under 15%.
"""

from __future__ import annotations

import argparse
import ast
import io
import pathlib
import sys
import tokenize

from . import ROOT

LIMIT = 0.15
ERRORS = {"TypeError", "ValueError"}
NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
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


def _is_validation(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        exc = stmt.exc
        if isinstance(exc, ast.Call):
            exc = exc.func
        return isinstance(exc, ast.Name) and exc.id in ERRORS
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)):
        return _is_check_name(_called_name(stmt.value))
    if isinstance(stmt, ast.If) and _is_validation(stmt.body[-1]):
        # a guard: whatever prepares the message counts with the raise
        return all(_is_validation(s) for s in stmt.orelse)
    if isinstance(stmt, (ast.If, ast.For)):
        body = stmt.body + stmt.orelse
        return all(_is_validation(s) for s in body)
    return False


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(
            node,
            (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef),
        ):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines |= _lines(first)
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
        if isinstance(node, ast.stmt) and _is_validation(node):
            checks |= _lines(node)
    return len(checks & code), len(code)


def shares(folder: pathlib.Path = ROOT / "utils") -> dict[str, tuple]:
    """Module name -> (validation lines, executable lines)."""
    return {
        path.stem: count(path.read_text())
        for path in sorted(folder.glob("*.py"))
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max", type=float, default=None)
    args = parser.parse_args(argv)
    table = shares()
    rows = sorted(table.items(), key=lambda kv: -kv[1][0] / max(kv[1][1], 1))
    print(f"{'module':<20}{'checks':>8}{'lines':>8}{'share':>8}")
    for name, (checks, lines) in rows:
        share = checks / max(lines, 1)
        print(f"{name:<20}{checks:>8}{lines:>8}{share:>8.1%}")
    total_checks = sum(c for c, _ in table.values())
    total_lines = sum(n for _, n in table.values())
    total = total_checks / total_lines
    print(f"{'total':<20}{total_checks:>8}{total_lines:>8}{total:>8.1%}")
    if args.max is not None and total > args.max:
        print(f"validation share {total:.1%} is over {args.max:.0%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
