"""The portable numeric mode (tools/numeric_mode.py): the bits the stored
outputs were made with, reproduced wherever the tests run.

The fingerprint (tools/fingerprint.py) hashes the exact result of every kind of
operation the notebooks run, from a matrix product to three training steps of
the course's Transformer. If this machine computes any of them differently in
the portable mode, the first test here names the operations, which says far
more than nbval's failing cells would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from tools import ROOT, numeric_mode

STORED = ROOT / "tests" / "portable_fingerprint.json"


def _fingerprint(env: dict[str, str], qemu_cpu: str | None = None) -> dict:
    cmd = [sys.executable, "-m", "tools.fingerprint"]
    if qemu_cpu is not None:
        # the same program, shown another CPU by the emulator
        cmd = ["qemu-x86_64", "-cpu", qemu_cpu, *cmd]
    run = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _differences(got: dict, expected: dict) -> list[str]:
    return sorted(
        k
        for k in expected.keys() | got.keys()
        if got.get(k) != expected.get(k)
    )


def test_the_tests_run_in_the_portable_mode():
    """conftest.py switched this process (and so every kernel nbval starts) to
    the mode."""
    for name, value in numeric_mode.PORTABLE.items():
        assert os.environ.get(name) == value, name
    assert torch.backends.cpu.get_cpu_capability() == "AVX2"
    assert torch.get_num_threads() == 1


def test_this_machine_computes_the_stored_bits():
    got = _fingerprint(numeric_mode.environment("portable"))
    differ = _differences(got, json.loads(STORED.read_text()))
    assert not differ, (
        f"in the portable mode this machine computes {differ} differently "
        f"from the machine that stored the notebooks' outputs (torch "
        f"{torch.__version__}, {torch.backends.cpu.get_cpu_capability()}); "
        "nbval will fail where they are used. A CPU without AVX2, or another "
        "torch, numpy or MKL version, does this."
    )


def test_native_code_paths_compute_other_bits():
    """The fingerprint can fail: ATen's baseline and AVX2 kernels (with MKL's
    matching branches) round differently, and it sees it."""
    native = numeric_mode.environment("robust")
    native.pop("COURSE_SEED")
    native.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    baseline = _fingerprint(
        {**native, "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
    )
    avx2 = _fingerprint(
        {**native, "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
    )
    differ = _differences(baseline, avx2)
    assert {"softmax", "exp", "sqrt", "transformer_training"} <= set(differ), (
        differ
    )


@pytest.mark.slow
def test_the_same_bits_on_a_cpu_without_avx512():
    """qemu-user shows the same programs an Intel Haswell (AVX2, no AVX-512):
    every library sees another CPU and must still compute the stored bits.
    (.ci/run installs qemu-user; elsewhere the test is skipped without it.
    About a minute on an idle machine.)

    Not asserted, and said in the README: on qemu's AMD EPYC, MKL ignores its
    AVX2 reproducibility branch, as Intel documents for non-Intel CPUs, and its
    vector maths (exp, sqrt, sin: 5 of the 18 operations, training among them)
    compute other bits.
    """
    if shutil.which("qemu-x86_64") is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "qemu-x86_64 missing under CI: .ci/run installs qemu-user"
            )
        pytest.skip("qemu-x86_64 not installed (apt-get install qemu-user)")
    got = _fingerprint(
        numeric_mode.environment("portable"), qemu_cpu="Haswell"
    )
    differ = _differences(got, json.loads(STORED.read_text()))
    assert not differ, f"on an emulated Haswell: {differ} differ"


def test_robust_mode_undoes_the_portable_one():
    env = numeric_mode.environment(
        "robust", base={"PATH": "/bin", **numeric_mode.PORTABLE}
    )
    assert env == {"PATH": "/bin", "COURSE_SEED": "1"}


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode must be one of"):
        numeric_mode.environment("fast")
