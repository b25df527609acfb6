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

pytestmark = pytest.mark.slow  # four launches, each starting torch


def run(tmp_path, name: str, procs: int, *flags: str) -> dict:
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, "-m", "tools.runs.ddp", "--procs", str(procs)]
    cmd += ["--out", str(out), *flags]
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=300, capture_output=True)
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ddp")
    got = {"one": run(tmp, "one", 1), "two": run(tmp, "two", 2)}
    for first, then in ((2, 1), (1, 2)):
        ckpt = str(tmp / f"from{first}.pt")
        run(tmp, "stop", first, "--checkpoint", ckpt, "--stop-after", "3")
        got[f"{first}to{then}"] = run(tmp, "go", then, "--checkpoint", ckpt)
    return got


def test_two_processes_equal_one(runs):
    one, two = runs["one"], runs["two"]
    assert (one["processes"], two["processes"]) == (1, 2)
    assert len(one["train_loss"]) == one["config"]["steps"] == 6
    assert one["train_loss"] == two["train_loss"]  # every step's loss
    assert one["valid_loss"] == two["valid_loss"]
    assert one["weights_sha256"] == two["weights_sha256"]
    # it trained: the loss fell, the rate rose and fell
    assert one["train_loss"][-1] < one["train_loss"][0]
    assert max(one["lr"]) == one["config"]["peak_lr"] > one["lr"][-1]


@pytest.mark.parametrize("change", ["2to1", "1to2"])
def test_stopped_run_goes_on_in_the_other_mode(runs, change):
    assert runs[change]["train_loss"] == runs["one"]["train_loss"]
    assert runs[change]["weights_sha256"] == runs["one"]["weights_sha256"]
