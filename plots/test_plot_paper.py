#!/usr/bin/env python3
"""Checks that the paper figures (plot_paper.py) plot exactly the data of the sweep CSVs they
read: bar heights and error bars against index.csv, speedups against the ratio of its columns,
loss curves against each run's trace.csv. Run by test_plots.py (and so by tests/run_tests.sh)."""
import csv
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_paper  # noqa: E402

UNCODED = '{"kind":"uncoded"}'
DECODABLE = '{"rule":"decodable"}'
FIRST_R = '{"r":15,"rule":"first_r"}'


def frc(d):
    return '{"d":%d,"kind":"frc"}' % d


def crc(s):
    return '{"kind":"crc","s":%d}' % s


def write_index(path, header, rows):
    """An index.csv as `stragglersim sweep` writes it (JSON grid values quoted)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def check_iteration_time_bars(tmp):
    header = ["index", "repetition", "seed", "/code", "/stopping", "status", "iterations",
              "total_time", "mean_iteration_time", "final_loss", "best_loss", "folder"]
    times = {(UNCODED, DECODABLE): [4.9, 5.1], (frc(2), DECODABLE): [5.2, 5.4],
             (crc(1), DECODABLE): [7.9, 8.0], (frc(2), FIRST_R): [3.3, 3.5],
             (UNCODED, FIRST_R): [2.0, 2.1]}  # ignore-stragglers: not a bar
    rows = []
    for (code, stop), values in times.items():
        for rep, t in enumerate(values):
            rows.append([len(rows), rep, 1, code, stop, "ok", 10, 10 * t, t, "", "",
                         f"runs/{len(rows)}"])
    path = os.path.join(tmp, "index.csv")
    write_index(path, header, rows)
    fig = plot_paper.plot_iteration_time(plot_paper.read_index(path))
    (ax,) = fig.axes
    heights = {}
    for container in ax.containers:
        if hasattr(container, "patches"):
            label = container.get_label()
            heights[label] = [p.get_height() for p in container.patches]
    expected = {"uncoded": 5.0, "exact FRC": 5.3, "exact CRC": 7.95, "ErasureHead": 3.4}
    assert set(heights) == set(expected), heights
    for label, value in expected.items():
        (h,) = heights[label]
        assert math.isclose(h, value, rel_tol=1e-12), (label, h, value)
    assert "simulated s" in ax.get_ylabel()
    # Error bars: the standard error of two values a, b is |a − b| / 2.
    se = [c for c in ax.containers if not hasattr(c, "patches")]
    assert len(se) == 4
    segs = se[0].lines[2][0].get_segments()
    (seg,) = segs
    assert math.isclose(seg[1][1] - seg[0][1], 2 * 0.1, rel_tol=1e-9)


def check_speedup_lines(tmp):
    header = ["index", "repetition", "seed", "/code", "/stopping", "/workers", "status",
              "iterations", "total_time", "mean_iteration_time", "final_loss", "best_loss",
              "folder"]
    rows = []
    for n, t_unc, t_eh in ((8, 4.0, 3.5), (64, 5.5, 3.2), (512, 7.5, 3.0)):
        for code, stop, t in ((UNCODED, DECODABLE, t_unc), (frc(2), FIRST_R, t_eh)):
            rows.append([len(rows), 0, 1, code, stop, n, "ok", 10, 10 * t, t, "", "", "r"])
    path = os.path.join(tmp, "speedup.csv")
    write_index(path, header, rows)
    fig = plot_paper.plot_speedup(plot_paper.read_index(path))
    (ax,) = fig.axes
    (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("ErasureHead")]
    assert list(line.get_xdata()) == [8, 64, 512]
    assert list(line.get_ydata()) == [4.0 / 3.5, 5.5 / 3.2, 7.5 / 3.0]
    assert ax.get_xscale() == "log"
    assert "workers n" in ax.get_xlabel()


def check_regime_figure(tmp):
    """plot_regimes: f - f* curves from each run's trace.csv, the caption from its summary.json."""
    import plot_regimes
    sweeps = os.path.join(tmp, "sweeps")
    folder = os.path.join(sweeps, "regime_injected_fashion_mnist")
    header = ["index", "repetition", "seed", "/code", "/stopping", "status", "iterations",
              "total_time", "mean_iteration_time", "final_loss", "best_loss", "folder"]
    traces = {"runs/0": "iteration,time,loss\n0,0,0.69\n1,2.5,0.5\n2,5,0.4\n",
              "runs/1": "iteration,time,loss\n0,0,0.69\n1,1.25,0.3\n2,2.5,0.2\n3,4,0.19\n"}
    config = {"delay": {"kind": "shifted_exponential", "shift": 0.000627, "rate": 2.0,
                        "tail": "none"},
              "optimizer": {"time_budget": 4.0}, "data": {"rows": 3000, "features": 784}}
    rows = [[0, 0, 1, UNCODED, DECODABLE, "ok", 2, 5, 2.5, 0.4, 0.4, "runs/0"],
            [1, 0, 1, frc(2), FIRST_R, "ok", 3, 4, 1.33, 0.19, 0.19, "runs/1"]]
    for run, text in traces.items():
        os.makedirs(os.path.join(folder, run))
        with open(os.path.join(folder, run, "trace.csv"), "w") as f:
            f.write(text)
        with open(os.path.join(folder, run, "summary.json"), "w") as f:
            f.write(json.dumps({"config": config}))
    write_index(os.path.join(folder, "index.csv"), header, rows)
    fig, results = plot_regimes.plot_regime(sweeps, "injected", "title", {"fashion_mnist": 0.18})
    ax_curve, ax_bars = fig.axes[0], fig.axes[1]
    lines = {ln.get_label(): ln for ln in ax_curve.get_lines()}
    uncoded = lines["uncoded (wait for all)"]
    # Common budget: the smallest last time (4 s); at 4 s uncoded is at row 1 (0.5 - 0.18).
    assert uncoded.get_xdata()[-1] == 4.0
    assert abs(uncoded.get_ydata()[-1] - 0.32) < 1e-12
    eh = results["fashion_mnist"]["ErasureHead d=2 r=15"]
    # gap0 = 0.51; levels 0.5, 0.3, 0.2 of it: f - f* <= 0.255, 0.153, 0.102. ErasureHead is at
    # 0.12 from 1.25 s and at 0.02 from 2.5 s; uncoded at 0.32 until 5 s, past the budget.
    assert eh[0.5] == (1.25, 0.0) and eh[0.3] == (1.25, 0.0) and eh[0.2] == (2.5, 0.0)
    assert results["fashion_mnist"]["uncoded (wait for all)"][0.5] is None
    title = ax_curve.get_title()
    assert "rate λ = 2/s" in title and "tail none" in title and "time budget 4 s" in title, title
    assert "3000 x 784" in title, title
    # A workload whose f* was not computed (null) gets no row.
    assert plot_regimes.plot_regime(sweeps, "injected", "title", {"fashion_mnist": None}) == (None, {})


def check_paper_figures():
    with tempfile.TemporaryDirectory() as tmp:
        check_iteration_time_bars(tmp)
        check_speedup_lines(tmp)
        check_regime_figure(tmp)


if __name__ == "__main__":
    check_paper_figures()
    print("plots: paper figures match their CSV (ok)")
