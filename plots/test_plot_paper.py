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


def write_regime_sweep(folder, runs, config):
    """A finished regime sweep as `stragglersim sweep` writes it: traces.csv (one row per trace
    row, schemes and repetitions), index.csv and the first run's summary.json."""
    os.makedirs(os.path.join(folder, "runs", "first"))
    with open(os.path.join(folder, "runs", "first", "summary.json"), "w") as f:
        f.write(json.dumps({"config": config}))
    write_index(os.path.join(folder, "index.csv"), ["index", "repetition", "scheme", "folder"],
                [[0, 0, "uncoded", "runs/first"]])
    rows = [[scheme, rep, 1, i, t, f, 0.1]
            for (scheme, rep), points in runs.items() for i, (t, f) in enumerate(points)]
    write_index(os.path.join(folder, "traces.csv"),
                ["scheme", "rep", "seed", "iteration", "time", "loss", "f_star"], rows)


def check_regime_figure(tmp):
    """plot_regimes: the level from uncoded's mean gap at half the budget, each scheme's time to
    it with its t interval, the paired speedups, the seed bands and the caption."""
    import plot_regimes
    from scipy.stats import t as student_t
    sweeps = os.path.join(tmp, "sweeps")
    folder = os.path.join(sweeps, "regime_injected_fashion_mnist")
    # f* = 0.1 and f(x0) = 1.1 everywhere: the relative gap is loss - 0.1.
    runs = {("uncoded", 0): [(0, 1.1), (2, 0.9), (4, 0.7), (6, 0.5), (8, 0.45)],
            ("uncoded", 1): [(0, 1.1), (3, 0.8), (6, 0.55), (9, 0.5)],
            ("exact FRC d=2", 0): [(0, 1.1), (5, 0.7), (8, 0.6)],
            ("exact FRC d=2", 1): [(0, 1.1), (5, 1.0), (8.5, 0.2)],
            ("ErasureHead d=2 r=15", 0): [(0, 1.1), (1, 0.8), (2, 0.7), (8, 0.6)],
            ("ErasureHead d=2 r=15", 1): [(0, 1.1), (1.5, 0.9), (3.5, 0.6), (8, 0.6)]}
    config = {"workers": 30, "delay": {"kind": "shifted_exponential", "shift": 0.000627,
                                       "rate": 2.0, "tail": "none"},
              "optimizer": {"time_budget": 8.0}, "data": {"rows": 3000, "features": 784}}
    write_regime_sweep(folder, runs, config)
    fig, results = plot_regimes.plot_regime(sweeps, "injected", "title")
    rows = {r["scheme"]: r for r in results["fashion_mnist"]}
    # Budget: the smallest last time, 8. At 4 s uncoded's gaps are 0.6 and 0.7: level 0.65.
    assert all(math.isclose(r["level"], 0.65) and r["budget"] == 8 for r in rows.values())
    # Uncoded reaches gap 0.65 at 4 and 6 s: mean 5, s.e. 1, the t quantile of 1 d.o.f.
    t1 = float(student_t.ppf(0.975, 1))
    u = rows["uncoded"]
    assert (u["reached"], u["runs"], u["time"]) == (2, 2, 5.0)
    assert math.isclose(u["time_high"] - u["time"], t1 * 1.0)
    # Exact FRC: 0.6 at 5 s, then 0.9 until 8.5 s, past the budget: 1 of 2, no time or speedup.
    e = rows["exact FRC d=2"]
    assert (e["reached"], math.isnan(e["time"]), math.isnan(e["vs_uncoded"])) == (1, True, True)
    # ErasureHead at 2 and 3.5 s: mean 2.75; the speedup over uncoded is R = 5/2.75 with the
    # delta-method half-width t * sqrt(sum (b - R y)^2 / (n - 1) / n) / mean(y).
    h = rows["ErasureHead d=2 r=15"]
    ratio = 5.0 / 2.75
    spread = math.sqrt(((4 - ratio * 2) ** 2 + (6 - ratio * 3.5) ** 2) / 1 / 2) / 2.75
    assert h["time"] == 2.75 and math.isclose(h["vs_uncoded"], ratio)
    assert math.isclose(h["vs_uncoded_high"] - ratio, t1 * spread)
    assert math.isnan(h["vs_exact_frc"])  # exact FRC missed the level in one seed
    ax_curve, ax_bars = fig.axes[0], fig.axes[1]
    lines = {ln.get_label(): ln for ln in ax_curve.get_lines()}
    uncoded = lines["uncoded (2 seeds)"]
    # At the budget, 8 s: gaps 0.35 and 0.45 (the row at 6 s), mean 0.4.
    assert uncoded.get_xdata()[-1] == 8.0
    assert abs(uncoded.get_ydata()[-1] - 0.4) < 1e-12
    heights = [p.get_height() for p in ax_bars.patches]
    assert heights == [5.0, 8.0, 2.75], heights  # exact FRC: a hatched bar up to the budget
    title = ax_curve.get_title()
    assert "rate λ = 2/s" in title and "tail none" in title and "time budget 8 s" in title, title
    assert "3000 x 784" in title and "n = 30" in title, title
    table = plot_regimes.markdown({("injected", "fashion_mnist"): results["fashion_mnist"]})
    assert "| injected | fashion_mnist | 0.65 | 5 [" in table and "1/2 reached" in table, table
    # Nothing under the folder: no figure.
    assert plot_regimes.plot_regime(os.path.join(tmp, "none"), "injected", "title") == (None, {})


def check_paper_figures():
    with tempfile.TemporaryDirectory() as tmp:
        check_iteration_time_bars(tmp)
        check_speedup_lines(tmp)
        check_regime_figure(tmp)


if __name__ == "__main__":
    check_paper_figures()
    print("plots: paper figures match their CSV (ok)")
