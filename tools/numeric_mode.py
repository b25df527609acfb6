"""The numeric modes the notebooks are executed in: one place for `make test`, `make refresh`
and `make robust`.

PyTorch's CPU kernels (ATen), Intel MKL, oneDNN, OpenBLAS (NumPy's) and glibc's maths
library each pick a code path for the CPU they find (SSE, AVX2, AVX-512, FMA...), and the
paths round differently in the last bits. A training run amplifies those bits, so outputs
stored on one CPU did not reproduce on another. ``PORTABLE`` pins every one of them to its
baseline x86-64 path, which every x86-64 CPU has and runs identically:

- ``ATEN_CPU_CAPABILITY=default``: ATen's kernels without AVX2/AVX-512 (PyTorch's
  ``torch.backends.cpu.get_cpu_capability()`` then says ``DEFAULT``);
- ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility on its SSE2 branch,
  the one Intel documents as giving the same results on every Intel *and compatible* CPU
  (the AVX2 branch falls back to automatic dispatch on AMD); fixed cache sizes and
  deterministic reductions;
- ``ONEDNN_MAX_CPU_ISA=SSE41`` (and the old name ``DNNL_MAX_CPU_ISA``): oneDNN's JIT kernels
  (convolutions, some activations) capped at SSE4.1;
- ``OPENBLAS_CORETYPE=Prescott``: NumPy's OpenBLAS on its SSE3 kernels;
- ``NPY_DISABLE_CPU_FEATURES``: NumPy's own ufuncs (``np.exp`` differed between its
  x86-64-v3 and v4 loops) on its baseline loops (x86-64-v2 for the pinned NumPy 2.4);
- ``GLIBC_TUNABLES`` hides AVX/AVX2/FMA from glibc, whose ``sin``, ``exp``, ``log``... have
  FMA variants that round differently (``np.sin`` changed with it here);
- one thread everywhere (OpenMP, MKL, OpenBLAS): a parallel reduction's order depends on
  the thread count.

``tests/test_numeric_mode.py`` proves what this buys: a fingerprint of the operations the
course uses is the same under every CPU model this machine can present (its own, and
``qemu-x86_64 -cpu Nehalem / Haswell / EPYC`` when qemu-user is installed), and differs
between the native paths (so the check can fail). The cost: chapters run about 1.5 times
slower than with AVX-512 (chapter 8: 41 s instead of 27 s), still within the 60 s budget.

``ROBUST`` is the opposite: every library on its native path, every core, and another seed
(``COURSE_SEED``, read by ``utils.setup``). ``make robust`` executes every chapter in it and
fails on any error: the asserts must hold on a learner's machine, not only in ``PORTABLE``.

    python -m tools.numeric_mode portable -- CMD ARGS...   runs CMD in that mode
"""

from __future__ import annotations

import os
import sys

PORTABLE: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "DNNL_MAX_CPU_ISA": "SSE41",
    "OPENBLAS_CORETYPE": "Prescott",
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    # glibc >= 2.33 names the features plainly; older ones add "_Usable" (unknown names
    # are ignored, so both are listed)
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps="
    + ",".join(
        f"-{f}{suffix}"
        for f in ("AVX", "AVX2", "FMA", "FMA4", "AVX512F")
        for suffix in ("", "_Usable")
    ),
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}

ROBUST: dict[str, str] = {"COURSE_SEED": "1"}

MODES = {"portable": PORTABLE, "robust": ROBUST}


def environment(mode: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) switched to ``mode``.

    Every variable of ``PORTABLE`` is removed first, so ``robust`` really is native even
    when called from a shell (or a test run) that is in the portable mode.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    env = dict(os.environ if base is None else base)
    for name in (*PORTABLE, *ROBUST):
        env.pop(name, None)
    env.update(MODES[mode])
    return env


def apply(mode: str = "portable") -> None:
    """Switch this process (and every kernel it starts) to ``mode``.

    Call it before torch is imported: ATen, MKL and OpenMP read their variables once.
    glibc reads ``GLIBC_TUNABLES`` only when a process starts, so it takes effect in the
    kernels this process launches, which is where the notebooks run.
    """
    if "torch" in sys.modules and mode == "portable":
        import torch

        if torch.backends.cpu.get_cpu_capability() != "DEFAULT":
            raise RuntimeError(
                "torch was imported before the portable numeric mode was set"
            )
    new = environment(mode)
    for name in set(os.environ) - set(new):
        del os.environ[name]
    os.environ.update(new)


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 3 or args[0] not in MODES or args[1] != "--":
        raise SystemExit(__doc__)
    os.execvpe(args[2], args[2:], environment(args[0]))
