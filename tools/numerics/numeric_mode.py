"""The numeric modes the notebooks are executed in: one place for `make test`,
`make refresh` and `make robust`.

PyTorch's CPU kernels (ATen), Intel MKL, oneDNN, OpenBLAS (NumPy's) and glibc's
maths library each pick a code path for the CPU they find (SSE2, AVX2,
AVX-512, FMA...), and the paths round differently in the last bits. A training
run amplifies those bits, so outputs stored on one CPU did not reproduce on
another (a second Xeon failed 34 tests, an AMD EPYC 42). ``PORTABLE`` pins each
library to a path that computes the same bits on every x86-64 CPU with AVX2,
Intel or AMD:

- ``ATEN_CPU_CAPABILITY=avx2``: ATen's AVX2 kernels, never its AVX-512 ones;
  AVX2 is on every x86-64 CPU since 2013 (Intel Haswell, AMD Excavator, Zen).
- ``MKL_CBWR=COMPATIBLE``: MKL's vendor-neutral reproducibility branch. Intel
  honours its other branches (``AVX2``...) on Intel CPUs only; elsewhere MKL
  falls back to its own dispatch, which is why an earlier ``AVX2`` mode
  failed on AMD. Measured with ``tools/fingerprint.py`` on an AMD EPYC
  (Zen 3), natively and under ``qemu-x86_64 -cpu Haswell`` and ``-cpu
  EPYC``: every operation gives the same bits on all three but
  ``torch.sqrt``, which MKL's vector maths computes differently even here.
- So no ``torch.sqrt`` in anything stored or asserted exactly: Adam is fused
  (``utils.training.adam``: ATen's own square root; ``tests/test_repo.py``
  fails on one that is not), the course's LayerNorm uses ``torch.rsqrt``.
- ``ONEDNN_MAX_CPU_ISA`` (and its old name ``DNNL_MAX_CPU_ISA``),
  ``OPENBLAS_CORETYPE``, ``NPY_DISABLE_CPU_FEATURES`` (``np.exp`` differed
  between NumPy's x86-64-v3 and v4 loops) and ``GLIBC_TUNABLES``: oneDNN's
  JIT kernels, NumPy's OpenBLAS and own loops, glibc's ifuncs on AVX2.
- One thread everywhere: a parallel reduction's order depends on the count.

What the mode costs, and how ``tests/test_numeric_mode.py`` proves it:
README, "Proven on any machine". Where the exact comparison cannot hold
(not Linux on x86-64 with AVX2), ``exact_comparison()`` says why, and
``tools/numerics/claims_mode.py`` has ``make test`` run every notebook
with every assert instead of comparing its outputs.

``ROBUST`` is the opposite: every library on its native path, every core,
and another seed (``COURSE_SEED``, read by ``proof.setup``), for ``make
robust``: the asserts must hold on a learner's machine too.
"""

from __future__ import annotations

import os
import platform
import sys

PORTABLE: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
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
    """``base`` (default: this process's environment) switched to ``mode``,
    every variable of ``PORTABLE`` removed first: ``robust`` is native even
    when called from a shell (or a test run) in the portable mode."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    env = dict(os.environ if base is None else base)
    for name in (*PORTABLE, *ROBUST):
        env.pop(name, None)
    env.update(MODES[mode])
    # either mode is the harness: every figure shown is checked (proof.setup)
    env["COURSE_CHECK_FIGURES"] = "1"
    return env


def apply(mode: str = "portable") -> None:
    """Switch this process (and every kernel it starts) to ``mode``, before
    torch is imported: ATen, MKL and OpenMP read their variables once, glibc
    only when a process starts (in the kernels, where the notebooks run)."""
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


def exact_comparison() -> str | None:
    """``None`` where the portable mode reproduces the stored outputs bit for
    bit (Linux on x86-64 with AVX2 and FMA), else why not, in a few words;
    ``COURSE_PLATFORM`` ("System/machine", e.g. ``Darwin/arm64``) fakes
    another platform for the tests."""
    faked = os.environ.get("COURSE_PLATFORM")
    if faked is not None:
        system, _, machine = faked.partition("/")
    else:
        system, machine = platform.system(), platform.machine()
    if system != "Linux" or machine.lower() not in ("x86_64", "amd64"):
        return f"{system} on {machine}, not Linux on x86-64"
    if faked is None and not _has_avx2():
        return "this x86-64 CPU has no AVX2"
    return None


def _cpuinfo(field: str) -> str | None:
    """The first ``field`` line's value in ``/proc/cpuinfo`` (None off
    Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            line = next(x for x in f if x.startswith(field))
    except (OSError, StopIteration):
        return None
    return line.split(":", 1)[1].strip()


def _has_avx2() -> bool:
    return {"avx2", "fma"} <= set((_cpuinfo("flags") or "").split())


def cpu_name() -> str:
    """The processor's model name, for a timing that says where it ran."""
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def stamp() -> dict[str, str | int]:
    """The mode this process computes in, as a stored sweep records it:
    ``tests/test_repo.py`` fails on a sweep stored in another mode."""
    from proof.runtime import numeric_stamp

    portable = all(os.environ.get(k) == v for k, v in PORTABLE.items())
    return {"mode": "portable" if portable else "other", **numeric_stamp()}


def running_module() -> str:
    """The module this process runs (``python -m`` its name): a launcher
    restarts it by that name."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is None:
        raise RuntimeError("not started as python -m MODULE")
    return spec.name


def reexec_in(mode: str, module: str) -> None:
    """Start ``python -m module`` again in ``mode`` unless this process
    already runs in it: glibc reads its tunables only when a process
    starts, so a script that must compute in the mode restarts itself."""
    if any(os.environ.get(k) != v for k, v in MODES[mode].items()):
        argv = [sys.executable, "-m", module, *sys.argv[1:]]
        os.execvpe(sys.executable, argv, environment(mode))
