"""The portable numeric mode (tools/numerics/numeric_mode.py) reproduces the
stored bits here, natively and under qemu (Intel, AMD), and the claims mode
(tools/numerics/claims_mode.py) takes over where it cannot: the fingerprint
(tools/fingerprint.py) hashes every kind of operation the notebooks run, so
a failure names the operations nbval's cells would only hint at."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
import torch

from tools import ROOT, fingerprint
from tools.numerics import numeric_mode
from tests.conftest import raises

STORED = ROOT / "tests" / "portable_fingerprint.json"
TEXT = dict(capture_output=True, text=True)  # subprocess.run's output as str


def _fingerprint(env: dict[str, str]) -> dict:
    cmd = fingerprint.command()
    run = subprocess.run(cmd, cwd=ROOT, env=env, timeout=1800, **TEXT)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _differences(got: dict, expected: dict) -> list[str]:
    keys = expected.keys() | got.keys()
    return sorted(k for k in keys if got.get(k) != expected.get(k))


@pytest.mark.exact
def test_the_tests_run_in_the_portable_mode():
    """conftest.py switched this process (and so every kernel nbval starts) to
    the mode."""
    for name, value in numeric_mode.PORTABLE.items():
        assert os.environ.get(name) == value, name
    assert torch.backends.cpu.get_cpu_capability() == "AVX2"
    assert torch.get_num_threads() == 1


@pytest.mark.exact
def test_this_machine_computes_the_stored_bits():
    got = _fingerprint(numeric_mode.environment("portable"))
    differ = _differences(got, json.loads(STORED.read_text()))
    assert not differ, (
        f"in the portable mode this machine computes {differ} differently "
        f"from the machine that stored the notebooks' outputs (torch "
        f"{torch.__version__}, {torch.backends.cpu.get_cpu_capability()}); "
        "nbval will fail where they are used. Another torch, numpy or MKL "
        "version does this, and so does a new torch.sqrt or unfused Adam."
    )


@pytest.mark.exact
def test_native_code_paths_compute_other_bits():
    """The fingerprint can fail: ATen's baseline and AVX2 kernels round
    differently, and it sees it, down to the training runs."""
    native = {**numeric_mode.environment("robust"), "MKL_CBWR": "COMPATIBLE"}
    native.pop("COURSE_SEED")
    native.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    baseline = _fingerprint({**native, "ATEN_CPU_CAPABILITY": "default"})
    avx2 = _fingerprint({**native, "ATEN_CPU_CAPABILITY": "avx2"})
    differ = set(_differences(baseline, avx2))
    expected = {"softmax", "exp", "transformer_training", "ch1_priors"}
    assert expected <= differ, sorted(differ)


@pytest.fixture(scope="module")
def emulated() -> dict[str, dict]:
    """The fingerprint under each of ``QEMU_CPUS`` (minutes each; reused
    while nothing it depends on changes)."""
    if shutil.which("qemu-x86_64") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("qemu-x86_64 missing under CI: .ci/run installs it")
        pytest.skip("qemu-x86_64 not installed (apt-get install qemu-user)")
    return fingerprint.emulated(numeric_mode.environment("portable"))


@pytest.mark.exact
@pytest.mark.slow
@pytest.mark.parametrize("cpu", fingerprint.QEMU_CPUS)
def test_the_same_bits_on_an_emulated_intel_and_amd_cpu(emulated, cpu):
    """qemu-user shows the same programs an Intel Haswell and an AMD EPYC:
    every library sees another vendor's CPU and must still compute the
    stored bits. (.ci/run installs qemu-user.)"""
    differ = _differences(emulated[cpu], json.loads(STORED.read_text()))
    assert not differ, f"on an emulated {cpu}: {differ} differ"


def test_an_emulated_fingerprint_is_reused_until_an_input_changes(
    tmp_path, monkeypatch
):
    """A warm run reads what an equal run stored; a changed numeric variable
    or file the fingerprint imports runs it again (here: one that fails)."""
    monkeypatch.setattr("tools.ROOT", tmp_path)
    for name in ("tools/fingerprint.py", "utils/a.py", "utils/b.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("from utils import a")
    printer = [sys.executable, "-c", 'print(\'{"x": "1"}\')']
    monkeypatch.setattr(fingerprint, "command", lambda cpu: printer)
    env = {"MKL_CBWR": "1", "PYTEST_CURRENT_TEST": "a"}
    run = fingerprint.emulated
    want = {cpu: {"x": "1"} for cpu in fingerprint.QEMU_CPUS}
    assert run(env) == want
    monkeypatch.setattr(fingerprint, "command", lambda cpu: ["false"])
    assert run({**env, "PYTEST_CURRENT_TEST": "b"}) == want
    raises(RuntimeError, "on Haswell failed", run, {**env, "MKL_CBWR": "2"})
    (tmp_path / "utils/b.py").write_text("3")  # not imported: still kept
    assert run(env) == want
    (tmp_path / "utils/a.py").write_text("3")
    raises(RuntimeError, "on Haswell failed", run, env)


def test_robust_mode_undoes_the_portable_one():
    base = {"PATH": "/bin", **numeric_mode.PORTABLE}
    env = numeric_mode.environment("robust", base=base)
    # the harness still checks figures in the robust mode
    want = {"PATH": "/bin", "COURSE_SEED": "1", "COURSE_CHECK_FIGURES": "1"}
    assert env == want


def test_both_modes_check_figures():
    for mode in numeric_mode.MODES:
        env = numeric_mode.environment(mode, base={"PATH": "/bin"})
        assert env["COURSE_CHECK_FIGURES"] == "1"


def test_an_unknown_mode_is_refused():
    raises(ValueError, "mode must be one of", numeric_mode.environment, "fast")


@pytest.mark.parametrize(
    "faked, why",
    [
        ("Darwin/arm64", "Darwin on arm64"),
        ("Windows/AMD64", "Windows on AMD64"),
        ("Linux/aarch64", "Linux on aarch64"),
        ("Linux/x86_64", None),
    ],
)
def test_exact_comparison_holds_on_linux_x86_only(monkeypatch, faked, why):
    monkeypatch.setenv("COURSE_PLATFORM", faked)
    reason = numeric_mode.exact_comparison()
    if why is None:
        assert reason is None
    else:
        assert reason.startswith(why), reason


def _notebook(path, source: str, stored_output: str) -> None:
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", text=stored_output)]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)


def _pytest(tmp_path, platform: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("COURSE_PLATFORM", None)
    if platform is not None:
        env["COURSE_PLATFORM"] = platform
    flags = "-p tools.numerics.claims_mode --noconftest -p no:cacheprovider"
    flags += " --nbval --nbval-current-env -rs"
    cmd = [sys.executable, "-m", "pytest", *flags.split(), str(tmp_path)]
    return subprocess.run(cmd, cwd=tmp_path, env=env, timeout=600, **TEXT)


def test_another_platform_runs_every_assert_and_says_so(tmp_path):
    """``make test`` on a faked Mac: a notebook whose stored output differs
    passes (outputs are not compared there), one whose assert fails still
    fails, an exact test is skipped with the reason, and the run says so in
    one line. On this machine the same stored output fails."""
    _notebook(tmp_path / "a_output.ipynb", "print(1 + 1)", "3\n")
    (tmp_path / "test_exact.py").write_text(
        "import pytest\n\n\n@pytest.mark.exact\n"
        "def test_stored_bits():\n    assert False\n"
    )
    mac = _pytest(tmp_path, "Darwin/arm64")
    assert mac.returncode == 0, mac.stdout[-3000:]
    notices = [x for x in mac.stdout.splitlines() if "claims mode:" in x]
    assert len(notices) == 2 and "Darwin on arm64" in notices[0]
    assert "1 passed, 1 skipped" in mac.stdout
    assert "exact comparison: Darwin on arm64" in mac.stdout  # the reason

    here = _pytest(tmp_path, "Linux/x86_64")
    assert here.returncode == 1 and "2 failed" in here.stdout
    assert "claims mode:" not in here.stdout

    (tmp_path / "test_exact.py").unlink()
    _notebook(tmp_path / "b_assert.ipynb", "assert 1 + 1 == 3", "")
    mac = _pytest(tmp_path, "Darwin/arm64")
    assert mac.returncode == 1 and "1 failed, 1 passed" in mac.stdout
