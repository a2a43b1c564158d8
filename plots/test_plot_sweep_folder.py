#!/usr/bin/env python3
"""plot_traces.py --sweep and summary.csv on a real sweep (3 schemes x 5 seeds, run here with
the stragglersim binary): the plotted mean gaps and 95 % bands, and summary.csv's means and
intervals, against the run folders' trace.csv and summary.json, recomputed with numpy and scipy.
Run by test_plots.py. The binary: $STRAGGLERSIM_BINARY, else build/release of this checkout."""
import contextlib
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_sweep  # noqa: E402
import plot_traces  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SWEEP = {
    "name": "three",
    "base": {
        "seed": 3, "workers": 6,
        "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 300,
                 "features": 5, "test_fraction": 0.25},
        "loss": {"kind": "logistic", "l2": 0.001},
        "code": {"kind": "uncoded"},
        "stopping": {"rule": "all"},
        "delay": {"kind": "shifted_exponential"},
        "optimizer": {"kind": "gd", "step": "auto", "iterations": 25},
    },
    "schemes": [
        {"name": "uncoded", "/code": {"kind": "uncoded"}, "/stopping": {"rule": "all"}},
        {"name": "frc", "/code": {"kind": "frc", "d": 2}, "/stopping": {"rule": "first_r", "r": 3}},
        {"name": "ignore", "/code": {"kind": "uncoded"},
         "/stopping": {"rule": "first_r", "r": 4}, "/rescale": "none"},
    ],
    "baseline": "uncoded",
    "repetitions": 5,
}


def binary():
    path = os.environ.get("STRAGGLERSIM_BINARY",
                          os.path.join(ROOT, "build", "release", "experiments", "stragglersim"))
    if not os.access(path, os.X_OK):
        raise SystemExit(f"error: {path}: no stragglersim binary; build it "
                         "(tools/build.sh release stragglersim) or set STRAGGLERSIM_BINARY")
    return path


def run_sweep(tmp):
    path = os.path.join(tmp, "three.json")
    with open(path, "w") as f:
        json.dump(SWEEP, f)
    out = os.path.join(tmp, "out")
    subprocess.run([binary(), "sweep", path, "--out", out, "--jobs", "2"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def runs_by_scheme(out):
    """{scheme: [(times, losses, f*)]} from the run folders named by index.csv."""
    with open(os.path.join(out, "index.csv"), newline="") as f:
        index = list(csv.DictReader(f))
    groups = {}
    for row in index:
        folder = os.path.join(out, row["folder"])
        trace = np.genfromtxt(os.path.join(folder, "trace.csv"), delimiter=",", names=True)
        with open(os.path.join(folder, "summary.json")) as f:
            summary = json.load(f)
        groups.setdefault(row["scheme"], []).append(
            (trace["time"], trace["loss"], summary["f_star"], summary))
    return groups


def check_bands(out, groups):
    bands = plot_traces.sweep_bands(out, "scheme")
    assert list(bands) == ["uncoded", "frc", "ignore"], list(bands)
    budget = min(times[-1] for runs in groups.values() for times, *_ in runs)
    grid = np.linspace(0.0, budget, 400)
    for scheme, runs in groups.items():
        # The loss in force at t: the last row at or before t.
        gaps = np.array([loss[np.searchsorted(times, grid, side="right") - 1] - f_star
                         for times, loss, f_star, _ in runs])
        mean = gaps.mean(axis=0)
        half = stats.t.ppf(0.975, len(runs) - 1) * gaps.std(axis=0, ddof=1) / np.sqrt(len(runs))
        times, got_mean, low, high, n = bands[scheme]
        assert n == 5
        assert np.allclose(times, grid, rtol=1e-12, atol=0)
        assert np.allclose(got_mean, mean, rtol=1e-12, atol=1e-15), scheme
        assert np.allclose(low, mean - half, rtol=1e-9, atol=1e-14), scheme
        assert np.allclose(high, mean + half, rtol=1e-9, atol=1e-14), scheme
        # Every run of the sweep has the same data set: one f* to the bit.
        assert len({f_star for _, _, f_star, _ in runs}) == 1
    figure = os.path.join(out, "gap.png")
    assert plot_traces.main(["--out", figure, "--sweep", out, "--group-by", "scheme"]) == 0
    assert os.path.getsize(figure) > 1000
    fig = plot_traces.plot_sweep_gap(bands, "scheme")
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == [
        "scheme = uncoded (5 runs)", "scheme = frc (5 runs)", "scheme = ignore (5 runs)"]
    assert np.array_equal(lines[1].get_ydata(), np.array(bands["frc"][1]))


def check_summary(out, groups):
    with open(os.path.join(out, "summary.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["scheme"] for r in rows] == ["uncoded", "frc", "ignore"]
    base = np.array([s["total_time"] for *_, s in groups["uncoded"]])
    for row in rows:
        runs = groups[row["scheme"]]
        for metric in ("final_loss", "total_time"):
            x = np.array([s[metric] for *_, s in runs])
            se = x.std(ddof=1) / np.sqrt(len(x))
            half = stats.t.ppf(0.975, len(x) - 1) * se
            assert int(row[f"{metric}_n"]) == 5
            assert np.isclose(float(row[f"{metric}_mean"]), x.mean(), rtol=1e-13, atol=0)
            assert np.isclose(float(row[f"{metric}_se"]), se, rtol=1e-9, atol=1e-15)
            assert np.isclose(float(row[f"{metric}_ci_low"]), x.mean() - half, rtol=1e-12)
            assert np.isclose(float(row[f"{metric}_ci_high"]), x.mean() + half, rtol=1e-12)
        # The ratio of mean total times against uncoded and its delta-method interval, paired
        # by repetition.
        y = np.array([s["total_time"] for *_, s in runs])
        ratio = base.mean() / y.mean()
        se = np.std(base - ratio * y, ddof=1) / np.sqrt(len(y)) / y.mean()
        half = stats.t.ppf(0.975, len(y) - 1) * se
        assert np.isclose(float(row["speedup_total_time"]), ratio, rtol=1e-13)
        assert np.isclose(float(row["speedup_total_time_ci_low"]), ratio - half, rtol=1e-9,
                          atol=1e-12)
        assert np.isclose(float(row["speedup_total_time_ci_high"]), ratio + half, rtol=1e-9,
                          atol=1e-12)


def check_sweep_plot_of_folder(out):
    with contextlib.redirect_stdout(io.StringIO()):
        assert plot_sweep.main([out, "--x", "scheme", "--y", "total_time",
                                "--out", os.path.join(out, "t.png")]) == 0
    _, rows = plot_sweep.read_index(out)
    fig = plot_sweep.plot(rows, "scheme", "total_time")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "scheme"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["uncoded", "frc", "ignore"]


def check_sweep_folder():
    with tempfile.TemporaryDirectory() as tmp:
        out = run_sweep(tmp)
        groups = runs_by_scheme(out)
        check_bands(out, groups)
        check_summary(out, groups)
        check_sweep_plot_of_folder(out)
        # LABEL=path with '=' in the sweep's folder names; f* of each run from its summary.json.
        folder = os.path.join(out, "runs", "scheme=frc_rep0")
        figure = os.path.join(tmp, "one.png")
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            assert plot_traces.main(["--out", figure,
                                     f"frc={os.path.join(folder, 'trace.csv')}"]) == 0
        assert "frc: time to relative suboptimality" in printed.getvalue()


if __name__ == "__main__":
    check_sweep_folder()
    print("plot_traces --sweep: ok")
