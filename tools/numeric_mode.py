"""The numeric modes the notebooks are executed in: one place for `make test`,
`make refresh` and `make robust`.

PyTorch's CPU kernels (ATen), Intel MKL, oneDNN, OpenBLAS (NumPy's) and glibc's
maths library each pick a code path for the CPU they find (SSE, AVX2, AVX-512,
FMA...), and the paths round differently in the last bits. A training run
amplifies those bits, so outputs stored on one CPU did not reproduce on
another. ``PORTABLE`` pins every one of them to its AVX2 path, which every
x86-64 CPU since 2013 has (Intel Haswell, AMD Excavator/Zen):

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's AVX2 kernels, never its AVX-512 ones
  (``torch.backends.cpu.get_cpu_capability()`` then says ``AVX2``);
- ``MKL_CBWR=AVX2``: MKL's conditional numerical reproducibility on its AVX2
branch: the
  same results on every Intel CPU with AVX2 (Intel's documented guarantee),
  with fixed cache sizes, deterministic reductions and static scheduling;
- ``ONEDNN_MAX_CPU_ISA=AVX2`` (and the old name ``DNNL_MAX_CPU_ISA``): oneDNN's
JIT kernels
  (convolutions, some activations) capped at AVX2;
- ``OPENBLAS_CORETYPE=Haswell``: NumPy's OpenBLAS on its AVX2 kernels;
- ``NPY_DISABLE_CPU_FEATURES``: NumPy's own loops (``np.exp`` differed between
its
  x86-64-v3 and v4 versions) at x86-64-v3, never v4 (AVX-512);
- ``GLIBC_TUNABLES`` hides AVX-512 from glibc's ifunc selection;
- one thread everywhere (OpenMP, MKL, OpenBLAS): a parallel reduction's order
depends on
  the thread count.

Why AVX2 and not the baseline (SSE2) paths: those were tried and cost 1.8x in
training time (a chapter-8 step: 125 ms against 70 ms natively; AVX2: 70 ms),
and they are not more portable: MKL's SSE2 (``COMPATIBLE``) square root starts
from the approximate RSQRTPS instruction, whose tables differ between CPU
vendors, while its AVX2 one is exact. ``tests/test_numeric_mode.py`` proves
what the mode buys: the fingerprint of every operation the course relies on
(``tools/fingerprint.py``) is the stored one, is the same on an Intel Haswell
as qemu presents it (no AVX-512), and differs between native code paths (so the
check can fail). Not on AMD: MKL honours its AVX2 branch on Intel CPUs only
(README).

``ROBUST`` is the opposite: every library on its native path, every core, and
another seed (``COURSE_SEED``, read by ``utils.setup``). ``make robust``
executes every chapter in it and fails on any error: the asserts must hold on a
learner's machine, not only in ``PORTABLE``.

    python -m tools.numeric_mode portable -- CMD ARGS...   runs CMD in that
    mode
"""

from __future__ import annotations

import os
import sys

PORTABLE: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "DNNL_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    # glibc >= 2.33 names the features plainly; older ones add "_Usable"
    # (unknown names are ignored, so both are listed)
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps="
    + ",".join(f"-AVX512{f}{s}" for f in ("F", "DQ") for s in ("", "_Usable")),
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}

ROBUST: dict[str, str] = {"COURSE_SEED": "1"}

MODES = {"portable": PORTABLE, "robust": ROBUST}


def environment(
    mode: str, base: dict[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) switched to ``mode``.

    Every variable of ``PORTABLE`` is removed first, so ``robust`` really is
    native even when called from a shell (or a test run) that is in the
    portable mode.
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

    Call it before torch is imported: ATen, MKL and OpenMP read their variables
    once. glibc reads ``GLIBC_TUNABLES`` only when a process starts, so it
    takes effect in the kernels this process launches, which is where the
    notebooks run.
    """
    if "torch" in sys.modules and mode == "portable":
        import torch

        if torch.backends.cpu.get_cpu_capability() != "AVX2":
            raise RuntimeError(
                "torch was imported before the portable numeric mode was set"
            )
    new = environment(mode)
    for name in set(os.environ) - set(new):
        del os.environ[name]
    os.environ.update(new)


def reexec_in(mode: str, module: str) -> None:
    """Start ``python -m module`` again in ``mode`` unless this process already
    runs in it: glibc reads its tunables only when a process starts, so a
    script that must compute in the mode (a stored sweep) restarts itself."""
    wanted = MODES[mode]
    if any(os.environ.get(k) != v for k, v in wanted.items()):
        argv = [sys.executable, "-m", module, *sys.argv[1:]]
        os.execvpe(sys.executable, argv, environment(mode))


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) < 3 or args[0] not in MODES or args[1] != "--":
        raise SystemExit(__doc__)
    os.execvpe(args[2], args[2:], environment(args[0]))
