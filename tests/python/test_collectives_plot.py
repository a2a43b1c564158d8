"""The collectives comparison (plots/plot_collectives.py) on a small sweep: parameter-server and
all-reduce schemes side by side, each row of the table the figure plots (its mean time to target
and interval, coloured by family), and the sweep's bytes the same for one job and two."""

import csv
import math
import os
import subprocess
import sys

from conftest import ROOT, run_sweep_file, small_logistic_sweep_base

sys.path.insert(0, os.path.join(ROOT, "plots"))
import plot_collectives  # noqa: E402

REPETITIONS = 3
RING = {"kind": "ring", "latency": 0.01, "bandwidth": 1.0e5}
SWEEP = {
    "name": "collectives",
    "base": small_logistic_sweep_base(60),
    "schemes": [
        {"name": "PS uncoded", "/network": {"latency": 0.01, "bandwidth": 1.0e5, "serial": True}},
        {"name": "ring uncoded", "/aggregation": RING},
        {"name": "ring ErasureHead d=2 r=3", "/aggregation": RING,
         "/code": {"kind": "frc", "d": 2}, "/stopping": {"rule": "first_r", "r": 3}},
        {"name": "ring backup workers r=5", "/aggregation": RING,
         "/stopping": {"rule": "first_r", "r": 5}, "/rescale": "empirical"},
        {"name": "ring bounded-time 0.6 s", "/aggregation": RING,
         "/stopping": {"rule": "deadline", "after": 0.6}, "/rescale": "empirical"},
        {"name": "StragglAR straggler 3",
         "/aggregation": {"kind": "stragglar", "latency": 0.01, "bandwidth": 1.0e5,
                          "straggler": 3}, "/workers": 8},
        # A step a million times too small: never at the target.
        {"name": "ring uncoded tiny step", "/aggregation": RING, "/optimizer/step": 1e-6}],
    "baseline": "ring uncoded", "repetitions": REPETITIONS}


def run_collectives_sweep(tmp_path, name, jobs):
    return run_sweep_file(tmp_path, SWEEP, name, jobs)


def test_collectives_figure_plots_its_table(tmp_path):
    out = run_collectives_sweep(tmp_path, "s", 2)
    figure, table = tmp_path / "f.png", tmp_path / "t.csv"
    result = subprocess.run([sys.executable, os.path.join(ROOT, "plots", "plot_collectives.py"),
                             "--sweep", f"a={out}", "--out", str(figure), "--csv", str(table)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["scheme"] for r in rows] == [s["name"] for s in SWEEP["schemes"]]
    by_scheme = {r["scheme"]: r for r in rows}
    for scheme in ("PS uncoded", "ring uncoded", "ring backup workers r=5"):
        assert int(by_scheme[scheme]["reached"]) == REPETITIONS, scheme
    assert int(by_scheme["ring uncoded tiny step"]["reached"]) == 0
    # Families by prefix, the longest prefix winning.
    assert plot_collectives.family("ring uncoded tiny step") == "all-reduce"
    assert plot_collectives.family("ring ErasureHead d=2 r=3") == "code over all-reduce"
    assert plot_collectives.family("PS uncoded") == "parameter server"
    assert plot_collectives.family("StragglAR straggler 3") == "changed collective"
    import matplotlib.pyplot as plt
    import plot_time_optimal
    fig, ax = plt.subplots()
    panel_rows = plot_time_optimal.table_rows(str(out))
    plot_time_optimal.draw_panel(ax, panel_rows, "t", plot_collectives.family,
                                 plot_collectives.COLOURS)
    drawn = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(drawn) == len(panel_rows)
    for line, row in zip(drawn, panel_rows):
        x = float(line.get_xdata()[0])
        if math.isfinite(row["time_to_target"]):
            assert x == row["time_to_target"]
        else:
            assert line.get_markerfacecolor() == "none"
        expected = plot_collectives.COLOURS[plot_collectives.family(row["scheme"])]
        assert line.get_color() == expected
    plt.close(fig)


def test_collectives_sweep_same_bytes_for_any_jobs(tmp_path):
    one = run_collectives_sweep(tmp_path, "one", 1)
    two = run_collectives_sweep(tmp_path, "two", 2)
    for name in ("traces.csv", "index.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
