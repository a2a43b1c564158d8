"""The baselines comparison (plots/plot_baselines.py) on a small sweep of uncoded, K-sync,
K-async and Anytime minibatch: the table re-derived from the runs' own summary.json, a scheme
that misses the target in some run left without a time, both outputs written, and the sweep's
bytes the same for one job and two."""

import csv
import json
import math
import os
import subprocess
import sys

from scipy.stats import t as student_t

from conftest import ROOT, run_sweep_file, small_logistic_sweep_base

sys.path.insert(0, os.path.join(ROOT, "plots"))
import plot_baselines  # noqa: E402

REPETITIONS = 4
SWEEP = {
    "name": "baselines",
    "base": small_logistic_sweep_base(40),
    "schemes": [{"name": "uncoded", "/stopping": {"rule": "all"}},
                {"name": "K-sync K=3", "/stopping": {"rule": "first_r", "r": 3},
                 "/rescale": "empirical"},
                {"name": "K-async K=3", "/stopping": {"rule": "k_async", "k": 3}},
                {"name": "Anytime T=0.7", "/stopping": {"rule": "anytime", "window": 0.7}},
                # Almost no rows per window: never at the target within 40 iterations.
                {"name": "Anytime T=1e-4", "/stopping": {"rule": "anytime", "window": 1e-4}}],
    "baseline": "uncoded", "repetitions": REPETITIONS}


def run_sweep(tmp_path, name, jobs):
    return run_sweep_file(tmp_path, SWEEP, name, jobs)


def test_baselines_table_equals_the_run_files(tmp_path):
    out = run_sweep(tmp_path, "b", 2)
    times = {}
    with open(out / "index.csv", newline="") as f:
        for cells in sorted(csv.DictReader(f), key=lambda c: int(c["repetition"])):
            with open(out / cells["folder"] / "summary.json") as g:
                times.setdefault(cells["scheme"], []).append(json.load(g)["time_to_target"])
    rows = {row["scheme"]: row for row in plot_baselines.table_rows(str(out))}
    assert set(rows) == set(times)
    t = float(student_t.ppf(0.975, REPETITIONS - 1))
    for scheme, values in times.items():
        row = rows[scheme]
        assert row["runs"] == REPETITIONS
        assert row["reached"] == sum(v is not None for v in values)
        if row["reached"] < REPETITIONS:
            assert math.isnan(row["time_to_target"]) and math.isnan(row["speedup_vs_uncoded"])
            continue
        mean = sum(values) / REPETITIONS
        se = math.sqrt(sum((v - mean) ** 2 for v in values) / (REPETITIONS - 1) / REPETITIONS)
        assert abs(row["time_to_target"] - mean) <= 1e-12 * mean
        assert abs(row["time_ci_low"] - (mean - t * se)) <= 1e-9 * mean
        assert abs(row["time_ci_high"] - (mean + t * se)) <= 1e-9 * mean
        base = times["uncoded"]
        ratio = (sum(base) / REPETITIONS) / mean
        assert abs(row["speedup_vs_uncoded"] - ratio) <= 1e-12 * ratio
    assert rows["Anytime T=1e-4"]["reached"] == 0
    assert rows["K-async K=3"]["reached"] == REPETITIONS


def test_baselines_figure_and_table_are_written(tmp_path):
    out = run_sweep(tmp_path, "b", 2)
    figure, table = tmp_path / "f.png", tmp_path / "t.csv"
    result = subprocess.run([sys.executable, os.path.join(ROOT, "plots", "plot_baselines.py"),
                             "--injected", str(out), "--trace", str(out), "--out", str(figure),
                             "--csv", str(table)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(table, newline="") as f:
        assert len(list(csv.DictReader(f))) == 2 * len(SWEEP["schemes"])


def test_baselines_sweep_same_bytes_for_any_jobs(tmp_path):
    one = run_sweep(tmp_path, "one", 1)
    two = run_sweep(tmp_path, "two", 2)
    for name in ("traces.csv", "index.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
