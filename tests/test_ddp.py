"""The launcher of the stored runs (tools/runs/ddp.py): a pronouncer trained by
two processes (one part of each batch each, gradients averaged by one
all-reduce) equals, bit for bit, one process that computes both parts in
turn; and a run stopped in one mode continues in the other to the same
bits. The run has dropout (each part its own random stream), clipping and
a last batch of uneven parts, so each of those could break it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tools import ROOT

pytestmark = pytest.mark.slow  # five launches, each starting torch


def run(tmp_path, name: str, procs: int, *flags: str) -> dict:
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, "-m", "tools.runs.ddp", "--procs", str(procs)]
    cmd += ["--out", str(out), *flags]
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=300, capture_output=True)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One process all the way; each mode stopped after 3 of the 6 steps
    and resumed in the other."""
    tmp = tmp_path_factory.mktemp("ddp")
    got = {"one": run(tmp, "one", 1)}
    for first, then in ((2, 1), (1, 2)):
        ckpt = str(tmp / f"from{first}.pt")
        stop = ("--checkpoint", ckpt, "--stop-after", "3")
        got[f"stop{first}"] = run(tmp, f"stop{first}", first, *stop)
        got[f"{first}to{then}"] = run(tmp, "go", then, "--checkpoint", ckpt)
    return got


def test_two_processes_equal_one(runs):
    """Two processes make steps 1-3 of the first crossing, steps 4-6 (the
    uneven last batch) and the last scores of the second."""
    one, head, tail = runs["one"], runs["stop2"], runs["1to2"]
    assert [r["processes"] for r in (one, head, tail)] == [1, 2, 2]
    assert len(one["train_loss"]) == one["config"]["steps"] == 6
    assert head["train_loss"] == one["train_loss"][:3]
    assert head["valid_loss"] == one["valid_loss"][:1]  # at step 3
    assert tail["train_loss"][3:] == one["train_loss"][3:]
    assert tail["valid_loss"][1:] == one["valid_loss"][1:]  # at step 6
    assert tail["weights_sha256"] == one["weights_sha256"]
    # it trained: the loss fell, the rate rose and fell
    assert one["train_loss"][-1] < one["train_loss"][0]
    assert max(one["lr"]) == one["config"]["peak_lr"] > one["lr"][-1]


@pytest.mark.parametrize("change", ["2to1", "1to2"])
def test_stopped_run_goes_on_in_the_other_mode(runs, change):
    assert runs[change]["train_loss"] == runs["one"]["train_loss"]
    assert runs[change]["weights_sha256"] == runs["one"]["weights_sha256"]
