"""The adaptive deadline through the command line (docs/model.md §4 "Adaptive deadline"): the
trace's deadline column against the rule's definition row by row, the summary's fields re-derived
from that column, and a bad option refused with exit 2 and no output."""

import csv
import json
import math
import subprocess

import pytest

from conftest import CLI, small_logistic_sweep_base


def config(stopping):
    c = small_logistic_sweep_base(60)
    c.update({"name": "adaptive", "code": {"kind": "frc", "d": 2}, "stopping": stopping})
    return c


@pytest.mark.parametrize("stopping", [
    {"rule": "adaptive_deadline", "window": 4, "mads": 1.0},
    {"rule": "adaptive_deadline", "window": 2, "quantile": 0.6}])
def test_trace_and_summary_follow_the_rule(tmp_path, stopping):
    (tmp_path / "c.json").write_text(json.dumps(config(stopping)))
    out = tmp_path / "out"
    result = subprocess.run([CLI, "run", str(tmp_path / "c.json"), "--out", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with open(out / "trace.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    summary = json.loads((out / "summary.json").read_text())
    assert len(rows) == 61
    assert rows[0]["deadline"] == "" and rows[1]["deadline"] == ""  # no history yet
    deadlines = []
    for row in rows[1:]:
        heard = int(row["workers_heard"])
        time = float(row["iteration_time"])
        if row["deadline"] == "":
            assert heard == 6  # waited for every worker
            continue
        deadline = float(row["deadline"])
        deadlines.append(deadline)
        assert deadline >= 1.0  # every delay is at least the shift
        if heard < 6:
            assert time == deadline  # the master stopped at the deadline
        else:
            assert time <= deadline
    assert deadlines and any(int(r["workers_heard"]) < 6 for r in rows[1:])
    assert summary["iterations_without_deadline"] == 60 - len(deadlines)
    assert summary["mean_deadline"] == pytest.approx(sum(deadlines) / len(deadlines), rel=1e-12)
    assert math.isfinite(summary["final_loss"])


@pytest.mark.parametrize("key,value,pointer", [
    ("window", 0, "/stopping/window"), ("quantile", 1.5, "/stopping/quantile")])
def test_bad_options_exit_2_without_output(tmp_path, key, value, pointer):
    stopping = {"rule": "adaptive_deadline", "window": 3, "quantile": 0.8}
    stopping[key] = value
    (tmp_path / "c.json").write_text(json.dumps(config(stopping)))
    out = tmp_path / "out"
    result = subprocess.run([CLI, "run", str(tmp_path / "c.json"), "--out", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert pointer in result.stderr and "expected" in result.stderr
    assert not out.exists()
