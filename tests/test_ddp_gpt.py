"""Data parallelism (tools/ddp_gpt.py): a DistributedDataParallel step of
the GPT on two CPU processes (gloo) equals, bit for bit, one process that
averages the two halves' gradients in the same order, and equals within
float rounding one process that takes the whole batch in one backward pass
(the sums over the batch then run in another order)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tools import ROOT

pytestmark = pytest.mark.slow  # two processes start torch: about 15 s


def test_ddp_step_equals_single_process_steps(tmp_path):
    out = tmp_path / "ddp.json"
    run = "-m torch.distributed.run --standalone --nproc_per_node=2"
    check = "-m tools.ddp_gpt --check --tiny --rows 8"
    cmd = [sys.executable, *run.split(), *check.split(), "--out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=300, capture_output=True)
    r = json.loads(out.read_text())
    assert r["world_size"] == 2 and r["numeric_mode"]["mode"] == "portable"
    # (a) the same additions in the same order: the same bits
    assert r["a_grads_equal"] and r["a_params_equal"]
    # (b) another order of summation: equal within rounding, not in bits
    assert not r["b_grads_equal"]  # (else (a) would prove nothing more)
    assert r["b_grad_max_abs_diff"] < 1e-6 * max(1.0, r["b_grad_max_abs"])
    assert r["b_param_max_abs_diff"] < 1e-5  # 1% of AdamW's first step
