"""The adaptive r through the command line (docs/model.md §4 "Adaptive r"): each iteration's r
(the trace's workers_heard) and stop re-derived from a replayed table of arrival times, the same
bytes for a second run, and bad options refused with exit 2 and no output."""

import csv
import json
import random
import subprocess

import pytest

from conftest import CLI, small_logistic_sweep_base

STOPPING = {"rule": "adaptive_r", "window": 3, "r_min": 2, "slack": 0.3}


def config(stopping):
    c = small_logistic_sweep_base(60)
    c.update({"name": "adaptive-r", "code": {"kind": "frc", "d": 2}, "stopping": stopping})
    return c


def run(tmp_path, name, c):
    (tmp_path / f"{name}.json").write_text(json.dumps(c))
    out = tmp_path / name
    result = subprocess.run([CLI, "run", str(tmp_path / f"{name}.json"), "--out", str(out)],
                            capture_output=True, text=True)
    return result, out


def rows_of(out):
    with open(out / "trace.csv", newline="") as f:
        return list(csv.DictReader(f))


def next_r(window, r_min, r_max, slack):
    """The rule written out (docs/model.md): window = sorted heard times of the last w iterations."""
    h = min(len(row) for row in window)
    top = min(h, r_max)
    m = [sum(row[j - 1] for row in window) for j in range(1, top + 1)]
    largest = r_min
    for j in range(r_min, top + 1):
        if m[j - 1] <= (1 + slack) * m[r_min - 1]:
            largest = j
    return min(top + 1, r_max) if largest == top else largest


def test_r_follows_the_rule_and_reproduces(tmp_path):
    # Uncoded (load 1) on a replayed table of known times: the arrivals are the table's rows.
    rng = random.Random(3)
    times = {t: [round(0.5 + rng.expovariate(1.5) * (3.0 if w == 5 else 1.0), 6)
                 for w in range(6)] for t in range(1, 61)}
    with open(tmp_path / "times.csv", "w") as f:
        f.write("iteration,worker,seconds\n")
        for t, row in times.items():
            f.writelines(f"{t},{w},{x}\n" for w, x in enumerate(row))
    c = config(STOPPING)
    c["code"] = {"kind": "uncoded"}
    c["delay"] = {"kind": "trace", "path": str(tmp_path / "times.csv"), "mode": "cycle"}
    result, out = run(tmp_path, "a", c)
    assert result.returncode == 0, result.stderr
    rows = rows_of(out)
    assert len(rows) == 61
    history = []
    r = 6
    counts = set()
    for t in range(1, 61):
        assert int(rows[t]["workers_heard"]) == r, f"iteration {t}"
        arrivals = sorted(times[t])
        assert float(rows[t]["iteration_time"]) == arrivals[r - 1]
        history = (history + [arrivals[:r]])[-3:]
        counts.add(r)
        r = next_r(history, 2, 6, 0.3)
    assert len(counts) >= 3, counts
    result, again = run(tmp_path, "b", c)
    assert result.returncode == 0
    assert (again / "trace.csv").read_bytes() == (out / "trace.csv").read_bytes()


@pytest.mark.parametrize("key,value,pointer", [
    ("window", 0, "/stopping/window"), ("r_min", 0, "/stopping/r_min"),
    ("r_max", 1, "/stopping/r_max"), ("slack", -1, "/stopping/slack")])
def test_bad_options_exit_2_without_output(tmp_path, key, value, pointer):
    stopping = dict(STOPPING)
    stopping[key] = value
    result, out = run(tmp_path, "bad", config(stopping))
    assert result.returncode == 2
    assert pointer in result.stderr and "expected" in result.stderr
    assert not out.exists()
