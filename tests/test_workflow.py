"""The fork's CI workflow: valid (check-jsonschema's own copy of GitHub's
schema, nothing downloaded) and running what the README says CI runs."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import yaml

from tools import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
CHECKER = pathlib.Path(sys.executable).with_name("check-jsonschema")


def _validate(path: pathlib.Path) -> subprocess.CompletedProcess:
    cmd = [str(CHECKER), "--builtin-schema", "vendor.github-workflows", path]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_the_workflow_is_valid_for_github_actions():
    run = _validate(WORKFLOW)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_validator_rejects_a_broken_workflow(tmp_path):
    broken = yaml.safe_load(WORKFLOW.read_text())
    broken["jobs"]["linux"]["step"] = broken["jobs"]["linux"].pop("steps")
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump(broken))
    run = _validate(path)
    assert run.returncode != 0 and "step" in run.stdout + run.stderr


@pytest.fixture(scope="module")
def jobs() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]


def _runs(job: dict) -> list[str]:
    return [s["run"] for s in job["steps"] if "run" in s]


def test_linux_runs_ci_run_which_runs_the_readme_commands(jobs):
    linux = jobs["linux"]
    assert linux["runs-on"] == "ubuntu-latest"
    assert _runs(linux)[-1].strip() == "bash .ci/run"
    ci_run = (ROOT / ".ci" / "run").read_text().split()
    assert ci_run[-4:] == ["make", "robust", "make", "test"]
    packages = " ".join(_runs(linux))
    assert "fonts-noto-cjk" in packages and "qemu-user" in packages


def test_macos_runs_the_readme_commands_in_claims_mode(jobs):
    macos = jobs["macos"]
    assert macos["runs-on"] == "macos-latest"
    last = [r.strip() for r in _runs(macos)[-2:]]
    assert last == ["make robust", "make test"]


@pytest.mark.parametrize("name", ["linux", "macos", "torch"])
def test_each_job_prints_its_cpu_first_and_caches_pip(jobs, name):
    steps = jobs[name]["steps"]
    assert "CPU" in steps[0]["name"]
    setup = next(s for s in steps if "setup-python" in s.get("uses", ""))
    assert setup["with"]["cache"] == "pip"
    assert "requirements.txt" in setup["with"]["cache-dependency-path"]


def test_torch_job_runs_every_notebook_alone_on_oldest_and_newest(jobs):
    """Issue 37: the newest torch release (and the oldest the course
    supports, 2.11) checked on every change, by the Makefile's target."""
    torch = jobs["torch"]
    assert torch["runs-on"] == "ubuntu-latest"
    assert torch["strategy"]["matrix"]["torch"] == ["2.11.0", "newest"]
    assert torch["strategy"]["fail-fast"] is False
    runs = [r.strip() for r in _runs(torch)]
    assert "make torch-matrix PYTHON=python TORCH=${{ matrix.torch }}" in runs
    assert any("fonts-noto-cjk" in r for r in runs)
    setup = next(
        s for s in torch["steps"] if "setup-python" in s.get("uses", "")
    )
    assert setup["with"]["python-version"] == "3.12"
    makefile = (ROOT / "Makefile").read_text()
    assert (
        "\ntorch-matrix:\n\t$(PYTHON) -m tools.numerics.torch_matrix "
        "--torch $(TORCH)" in (makefile)
    )
