"""nbval with the notebook's kernel on an emulated CPU: the stored outputs
checked bit for bit on another vendor's processor, cell by cell.

    python -m tools.numerics.qemu_nbval Haswell book/05_masked_loss.ipynb
    python -m tools.numerics.qemu_nbval EPYC book/07_assembling.ipynb ...

The kernel runs under ``qemu-x86_64 -cpu CPU`` (the same Python, torch and
MKL, shown an Intel Haswell or an AMD EPYC) in the portable numeric mode.
Emulation is 10-20 times slower than the hardware, so this runs by hand on
the chapters that train; ``make test`` checks the fingerprint of every
operation under both CPUs (``tests/test_numeric_mode.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from tools import ROOT
from tools.numerics import numeric_mode


def run(cpu: str, notebooks: list[str]) -> int:
    with tempfile.TemporaryDirectory() as home:
        name = f"qemu-{cpu.lower()}"
        spec = os.path.join(home, "kernels", name)
        os.makedirs(spec)
        argv = ["qemu-x86_64", "-cpu", cpu, sys.executable]
        argv += ["-m", "ipykernel_launcher", "-f", "{connection_file}"]
        with open(os.path.join(spec, "kernel.json"), "w") as f:
            json.dump(
                {"argv": argv, "display_name": name, "language": "python"}, f
            )
        env = numeric_mode.environment("portable")
        env["JUPYTER_PATH"] = home
        cmd = [sys.executable, "-m", "pytest", "--nbval"]
        cmd += ["--nbval-kernel-name", name, "--nbval-cell-timeout=3600"]
        cmd += ["--nbval-kernel-startup-timeout=600"]
        cmd += ["--nbval-sanitize-with", "tests/sanitize.cfg", *notebooks]
        start = time.perf_counter()
        code = subprocess.call(cmd, cwd=ROOT, env=env)
        print(f"qemu {cpu}: {time.perf_counter() - start:.0f} s, exit {code}")
        return code


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    raise SystemExit(run(sys.argv[1], sys.argv[2:]))
