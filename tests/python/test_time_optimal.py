"""The time-optimal methods in a sweep and their comparison (plots/plot_time_optimal.py): every
method runs beside the baselines, the figure plots each row of the table it writes (the mean time
to target and its interval, a hollow marker for a scheme that missed), and the sweep's bytes are
the same for one job and two."""

import csv
import math
import os
import subprocess
import sys

from conftest import ROOT, run_sweep_file, small_logistic_sweep_base

sys.path.insert(0, os.path.join(ROOT, "plots"))
import plot_time_optimal  # noqa: E402

REPETITIONS = 3
SWEEP = {
    "name": "time_optimal",
    "base": small_logistic_sweep_base(60),
    "schemes": [{"name": "uncoded", "/stopping": {"rule": "all"}},
                {"name": "K-async K=3", "/stopping": {"rule": "k_async", "k": 3}},
                {"name": "Rennala B=6", "/stopping": {"rule": "rennala", "batch": 6,
                                                      "sampling": "shared"}},
                {"name": "Malenia S=6", "/stopping": {"rule": "malenia", "batch": 6}},
                {"name": "Ringmaster R=6", "/stopping": {"rule": "ringmaster", "max_delay": 6,
                                                         "stop_stale": True}},
                {"name": "MindFlayer B=6", "/stopping": {"rule": "mindflayer", "batch": 6,
                                                         "cutoffs": 2.0}},
                {"name": "Rescaled ASGD", "/stopping": {"rule": "rescaled_async"}},
                # A step a million times too small: never at the target.
                {"name": "Rennala B=6 tiny step", "/stopping": {"rule": "rennala", "batch": 6},
                 "/optimizer/step": 1e-6}],
    "baseline": "uncoded", "repetitions": REPETITIONS}


def run_sweep(tmp_path, name, jobs):
    return run_sweep_file(tmp_path, SWEEP, name, jobs)


def test_time_optimal_figure_plots_its_table(tmp_path):
    out = run_sweep(tmp_path, "s", 2)
    figure, table = tmp_path / "f.png", tmp_path / "t.csv"
    result = subprocess.run([sys.executable, os.path.join(ROOT, "plots", "plot_time_optimal.py"),
                             "--sweep", f"a={out}", "--sweep", f"b={out}", "--out", str(figure),
                             "--csv", str(table)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(SWEEP["schemes"])
    by_scheme = {r["scheme"]: r for r in rows}
    for scheme in ("uncoded", "Rennala B=6", "Malenia S=6", "Ringmaster R=6", "Rescaled ASGD"):
        assert int(by_scheme[scheme]["reached"]) == REPETITIONS, scheme
    assert int(by_scheme["Rennala B=6 tiny step"]["reached"]) == 0
    # The panel: one marker per scheme at its mean time (or a hollow one at the edge).
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    panel_rows = plot_time_optimal.table_rows(str(out))
    plot_time_optimal.draw_panel(ax, panel_rows, "t")
    drawn = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(drawn) == len(panel_rows)
    for line, row in zip(drawn, panel_rows):
        x = float(line.get_xdata()[0])
        if math.isfinite(row["time_to_target"]):
            assert x == row["time_to_target"]
        else:
            assert line.get_markerfacecolor() == "none"
    plt.close(fig)


def test_time_optimal_sweep_same_bytes_for_any_jobs(tmp_path):
    one = run_sweep(tmp_path, "one", 1)
    two = run_sweep(tmp_path, "two", 2)
    for name in ("traces.csv", "index.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
