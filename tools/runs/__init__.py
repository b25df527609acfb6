"""The scripts that make the stored runs and baselines in ``book/data/``.

Each runs as ``python -m tools.runs.NAME`` and computes in the portable
numeric mode, like the stored outputs: started otherwise, it restarts in it
here, before it imports torch (glibc reads its tunables only when a process
starts), with its arguments."""

import sys

from tools.numerics import numeric_mode

_ARGV = getattr(sys, "orig_argv", [])
_AT = _ARGV.index("-m") + 1 if "-m" in _ARGV[:-1] else None  # the module
if _AT is not None and _ARGV[_AT].startswith(__name__ + "."):
    numeric_mode.reexec_in("portable", _ARGV[_AT])
