"""tools/sweep_ch01.py and the seeds it stored for chapter 1
(book/data/ch01_data_vs_prior.json).

The chapter reads the spread over seeds from that file instead of training
eight times; these tests prove the file was made by the script's recipe and
that a seed re-run today gives back its stored row.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tools import ROOT, numeric_mode, sweep_ch01

STORED = json.loads(sweep_ch01.OUT.read_text())


def test_the_file_holds_the_recipe_and_one_row_per_seed():
    assert STORED["config"] == json.loads(json.dumps(sweep_ch01.CONFIG))
    assert STORED["seeds"] == sweep_ch01.SEEDS and len(STORED["seeds"]) >= 5
    assert STORED["motif_sizes"] == sweep_ch01.MOTIF_SIZES
    assert STORED["ends_sizes"] == sweep_ch01.ENDS_SIZES
    assert STORED["window_sizes"] == sweep_ch01.WINDOW_SIZES
    assert len(STORED["motif"]) == len(STORED["ends"]) == len(STORED["seeds"])
    for row in STORED["motif"]:
        assert (
            len(row["CNN"])
            == len(row["Transformer"])
            == len(sweep_ch01.MOTIF_SIZES)
        )
        assert len(row["window"]) == len(sweep_ch01.WINDOW_SIZES)
    for row in STORED["ends"]:
        assert (
            len(row["CNN"])
            == len(row["Transformer"])
            == len(sweep_ch01.ENDS_SIZES)
        )
    # every accuracy is a count out of the 1000 test examples
    for task in ("motif", "ends"):
        for row in STORED[task]:
            for value in (
                v
                for vs in row.values()
                for v in (vs if isinstance(vs, list) else [vs])
            ):
                assert (
                    0 <= value <= 1
                    and abs(
                        value * sweep_ch01.TEST
                        - round(value * sweep_ch01.TEST)
                    )
                    < 1e-6
                )


def test_data_seeds_differ_between_runs_and_from_the_test_sets():
    drawn = [
        s for seed in sweep_ch01.SEEDS for s in sweep_ch01.data_seeds(seed)
    ]
    assert len(set(drawn)) == len(drawn)
    assert sweep_ch01.data_seeds(0) == (
        1,
        2,
    )  # the chapter's default pool and test set


@pytest.mark.exact
@pytest.mark.parametrize("seed", [0])
def test_the_chapters_live_seed_rerun_gives_back_its_stored_row(seed):
    """Part of the chapter's live seed (0), re-run in a fresh process in the
    portable numeric mode: the same code and numeric mode give the same
    accuracies, to the last of the 1000 test examples."""
    motif, ends = [32, 512], [512]
    cmd = [
        sys.executable,
        "-m",
        "tools.sweep_ch01",
        "--seed",
        str(seed),
        "--motif",
        *map(str, motif),
        "--ends",
        *map(str, ends),
    ]
    done = subprocess.run(
        cmd,
        cwd=ROOT,
        env=numeric_mode.environment("portable"),
        capture_output=True,
        text=True,
        check=True,
    )
    row = json.loads(done.stdout.strip().splitlines()[-1])
    i = STORED["seeds"].index(seed)
    for task, sizes, key in (
        ("motif", motif, "motif_sizes"),
        ("ends", ends, "ends_sizes"),
    ):
        for name in ("CNN", "Transformer"):
            stored = [
                STORED[task][i][name][STORED[key].index(n)] for n in sizes
            ]
            assert row[task][name] == stored, (task, name)
