"""experiments/tuned_comparison.py on a small sweep: every scheme's step is the grid point whose
tuning runs reached the target soonest (re-derived here from the tuning sweep's own index.csv), a
choice at the grid's edge is flagged, the evaluation runs on fresh seeds of the same data, and
bad input exits 2 with the key named."""

import csv
import json
import math
import os
import subprocess
import sys

import pytest

from conftest import CLI, ROOT, small_logistic_sweep_base

SCRIPT = os.path.join(ROOT, "experiments", "tuned_comparison.py")
MULTIPLIERS = [0.5, 1.0, 4.0]
SWEEP = {
    "name": "tuned",
    # A target the smallest step misses within 60 iterations, so the steps do not tie.
    "base": small_logistic_sweep_base(60, target_loss=0.147),
    "schemes": [{"name": "uncoded", "/stopping": {"rule": "all"}},
                {"name": "Rennala B=6", "/stopping": {"rule": "rennala", "batch": 6}}],
    "baseline": "uncoded", "repetitions": 2}


def tune(tmp_path, sweep):
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    return subprocess.run([sys.executable, SCRIPT, str(tmp_path / "s.json"), "--out",
                           str(tmp_path / "out"), "--multipliers",
                           ",".join(str(m) for m in MULTIPLIERS), "--tuning-repetitions", "2",
                           "--jobs", "2", "--binary", CLI], capture_output=True, text=True)


def test_each_scheme_gets_the_step_that_reached_the_target_soonest(tmp_path):
    result = tune(tmp_path, SWEEP)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    with open(out / "tuning" / "index.csv", newline="") as f:
        index = list(csv.DictReader(f))
    with open(out / "tuning.csv", newline="") as f:
        table = list(csv.DictReader(f))
    tuned = json.loads((out / "tuned.json").read_text())
    for scheme, entry in zip(SWEEP["schemes"], tuned["schemes"]):
        means = {}
        for m in MULTIPLIERS:
            runs = [r for r in index if r["scheme"] == f"{scheme['name']} @ {m:g}"]
            assert len(runs) == 2
            times = [float(r["time_to_target"]) for r in runs if r["time_to_target"]]
            means[m] = sum(times) / len(times) if len(times) == 2 else math.inf
        best = min(MULTIPLIERS, key=lambda m: means[m])
        rows = [r for r in table if r["scheme"] == scheme["name"]]
        chosen = [r for r in rows if r["chosen"] == "True"]
        assert len(chosen) == 1 and float(chosen[0]["multiplier"]) == best
        step = float(chosen[0]["step"])
        assert entry["/optimizer/step"] == step
        assert float(rows[0]["step"]) * (best / MULTIPLIERS[0]) == pytest.approx(step, rel=1e-12)
        assert (chosen[0]["at_grid_edge"] == "True") == (best in (MULTIPLIERS[0], MULTIPLIERS[-1]))
    # Fresh seeds, the same data: the evaluation's seeds are none of the tuning's.
    assert tuned["base"]["seed"] == SWEEP["base"]["seed"] + 1000
    assert tuned["base"]["data_seed"] == SWEEP["base"]["seed"]
    with open(out / "evaluation" / "index.csv", newline="") as f:
        evaluation = list(csv.DictReader(f))
    assert {r["seed"] for r in evaluation}.isdisjoint({r["seed"] for r in index})
    assert len(evaluation) == 2 * len(SWEEP["schemes"])


def test_bad_input_exits_2_naming_the_key(tmp_path):
    fixed = json.loads(json.dumps(SWEEP))
    fixed["base"]["optimizer"]["step"] = 0.5
    result = tune(tmp_path, fixed)
    assert result.returncode == 2
    assert "/base/optimizer/step" in result.stderr and "auto" in result.stderr
    untargeted = json.loads(json.dumps(SWEEP))
    del untargeted["base"]["target_loss"]
    result = tune(tmp_path, untargeted)
    assert result.returncode == 2 and "/base/target_loss" in result.stderr
    assert not (tmp_path / "out" / "tuning").exists()


def test_a_scheme_can_have_its_own_grid(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SWEEP))
    base = [sys.executable, SCRIPT, str(tmp_path / "s.json"), "--out", str(tmp_path / "out"),
            "--multipliers", "1,4", "--tuning-repetitions", "1", "--binary", CLI]
    result = subprocess.run(base + ["--multipliers-for", "Rennala B=6=0.25,0.5"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "out" / "tuning.csv", newline="") as f:
        grids = {}
        for row in csv.DictReader(f):
            grids.setdefault(row["scheme"], []).append(float(row["multiplier"]))
    assert grids == {"uncoded": [1.0, 4.0], "Rennala B=6": [0.25, 0.5]}
    result = subprocess.run(base + ["--multipliers-for", "Renala B=6=0.5"], capture_output=True,
                            text=True)
    assert result.returncode == 2 and "no such scheme" in result.stderr
