"""The counters the layout tests hold to budgets: visible code, main-path
words, validation share."""

import argparse
import pathlib


def print_table(doc: str, table, default) -> None:
    """A counter's command line: ``table(paths)``'s lines for the notebooks
    named, or for ``default()`` if none is."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path)
    paths = [p.resolve() for p in parser.parse_args().notebooks]
    print("\n".join(table(paths or default())[0]))
