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
    # Error bars: the 95 % t interval of two values a, b is mean -+ t(0.975, 1) |a − b| / 2, with
    # scipy's t(0.975, 1) = 12.706204736174698.
    se = [c for c in ax.containers if not hasattr(c, "patches")]
    assert len(se) == 4
    segs = se[0].lines[2][0].get_segments()
    (seg,) = segs
    assert math.isclose(seg[1][1] - seg[0][1], 2 * 12.706204736174698 * 0.1, rel_tol=1e-9)
    assert "mean over 2 seeds" in ax.get_title() and "95 % t interval" in ax.get_title()
    table = plot_paper.iteration_time_table(plot_paper.read_index(path))
    (crc_row,) = [r for r in table if r["scheme"] == "exact CRC"]
    assert crc_row["runs"] == 2 and math.isclose(crc_row["low"], 7.95 - 12.706204736174698 * 0.05)


def check_speedup_lines(tmp):
    header = ["index", "repetition", "seed", "/code", "/stopping", "/workers", "status",
              "iterations", "total_time", "mean_iteration_time", "final_loss", "best_loss",
              "folder"]
    rows = []
    # Two seeds per n: (uncoded, ErasureHead) times of seed 0 and of seed 1; at n = 512 the
    # seeds disagree so much that the interval holds 1.
    cases = {8: ((4.0, 3.5), (4.2, 3.6)), 64: ((5.5, 3.2), (5.7, 3.1)),
             512: ((7.5, 3.0), (2.0, 5.0))}
    for n, seeds in cases.items():
        for rep, (t_unc, t_eh) in enumerate(seeds):
            for code, stop, t in ((UNCODED, DECODABLE, t_unc), (frc(2), FIRST_R, t_eh)):
                rows.append([len(rows), rep, 1, code, stop, n, "ok", 10, 10 * t, t, "", "", "r"])
    path = os.path.join(tmp, "speedup.csv")
    write_index(path, header, rows)
    fig = plot_paper.plot_speedup(plot_paper.read_index(path))
    (ax,) = fig.axes
    (line,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("ErasureHead")]
    assert list(line.get_xdata()) == [8, 64, 512]
    ratios = [(4.0 + 4.2) / (3.5 + 3.6), (5.5 + 5.7) / (3.2 + 3.1), (7.5 + 2.0) / (3.0 + 5.0)]
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(line.get_ydata(), ratios))
    assert ax.get_xscale() == "log"
    assert "workers n" in ax.get_xlabel()
    assert "10 paired seeds" not in ax.get_title() and "2 paired seeds" in ax.get_title()
    # The interval by hand at n = 8: R -+ t(0.975, 1) sqrt(sum (b - R y)^2 / 1 / 2) / mean(y).
    table = plot_paper.speedup_table(plot_paper.read_index(path))
    first = table[0]
    spread = math.sqrt(((4.0 - ratios[0] * 3.5) ** 2 + (4.2 - ratios[0] * 3.6) ** 2) / 2) / 3.55
    assert math.isclose(first["high"] - first["speedup"], 12.706204736174698 * spread,
                        rel_tol=1e-9)
    assert [r["significant"] for r in table] == [True, True, False]
    # The one point whose interval holds 1 is drawn hollow.
    hollow = [ln for ln in ax.get_lines() if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_xdata()) == [512]


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


def check_wait_fraction(tmp):
    """Time to target and final loss per (d, r): means with their t intervals, no time where a
    seed missed the target, the interval drawn as a band."""
    header = ["index", "repetition", "seed", "/code/d", "/stopping/r", "/target_loss", "status",
              "iterations", "total_time", "mean_iteration_time", "final_loss", "best_loss",
              "time_to_target", "folder"]
    runs = {(2, 6): ((10.0, 0.3), (12.0, 0.5)), (2, 15): ((8.0, 0.1), (9.0, 0.2)),
            (3, 6): ((None, 0.4), (11.0, 0.6)), (3, 15): ((7.0, 0.1), (7.5, 0.1))}
    rows = []
    for (d, r), seeds in runs.items():
        for rep, (t, loss) in enumerate(seeds):
            rows.append([len(rows), rep, 1, d, r, 0.2, "ok", 100, 50.0, 0.5, loss, loss,
                         "" if t is None else t, "r"])
    path = os.path.join(tmp, "wait_fraction.csv")
    write_index(path, header, rows)
    table = plot_paper.wait_fraction_table(plot_paper.read_index(path))
    assert [(e["d"], e["r"]) for e in table] == [(2, 6), (2, 15), (3, 6), (3, 15)]
    half = plot_paper.t_quantile(2) * 1.0  # t(0.975, 1) * s.e. of (10, 12)
    got = (table[0]["time"], table[0]["time_low"], table[0]["time_high"])
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(got, (11.0, 11.0 - half,
                                                                        11.0 + half))), got
    assert math.isnan(table[2]["time"]) and table[2]["reached"] == 1
    assert math.isclose(table[2]["final_loss"], 0.5)
    assert table[3]["final_low"] == table[3]["final_high"] == 0.1
    fig = plot_paper.plot_wait_fraction(plot_paper.read_index(path))
    ax_t, ax_l = fig.axes
    d2 = ax_t.get_lines()[0]
    assert list(d2.get_xdata()) == [0.2, 0.5] and list(d2.get_ydata()) == [11.0, 8.5]
    assert len(ax_t.collections) == 2 and len(ax_l.collections) == 2  # one band per d
    assert "mean over 2 seeds" in fig._suptitle.get_text()


def check_paper_figures():
    with tempfile.TemporaryDirectory() as tmp:
        check_iteration_time_bars(tmp)
        check_speedup_lines(tmp)
        check_wait_fraction(tmp)
        check_regime_figure(tmp)


if __name__ == "__main__":
    check_paper_figures()
    print("plots: paper figures match their CSV (ok)")
