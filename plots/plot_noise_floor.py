#!/usr/bin/env python3
"""ErasureHead's noise floor at stationarity against d and r, beside the theory's.

usage: plot_noise_floor.py --sweep DIR --bin STRAGGLERSIM --out FIG.png --csv TABLE.csv
DIR: the finished sweep of experiments/paper/noise_floor.json (least squares, a grid over
/code/d and /stopping, rule "all" being exact GD, repetitions over delay seeds). Each run's
stationary gap is the mean of f(x_t) - f* over the second half of its iterations (the window
t >= T/2, after the contraction has forgotten the start); a point's value is the mean of its
runs' window means with the 95 % t interval over runs (independent seeds). Beside it, from
`stragglersim theory --json` on the point's resolved config: the exact least-squares curve
E[f(x_t)] - f* averaged over the same window (what the runs estimate), its value at T, and the
PL bound's noise floor. TABLE.csv has one row per point with the window's two halves (a check of
stationarity) and z = (measured - exact) / s.e.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import t as student_t  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_nonconvex import write_figure_and_table  # noqa: E402

COLORS = {5: "#d62728", 10: "#1f77b4", 15: "#2ca02c"}
# A point is compared with the theory (its z) only with this many erased-group events expected in
# its windows; below it (e.g. d = 5, r = 15: q = 4/15 504) the window mean is mostly zero.
MIN_EVENTS = 20
# Stationary gaps below this are rounding (no erased group in the window): not on the log axis.
ROUNDING = 1e-12


def theory_groups(folder, run):
    """n/d, the FRC groups of a run (from its resolved config)."""
    with open(os.path.join(folder, run, "summary.json")) as f:
        config = json.load(f)["config"]
    return config["workers"] // config["code"].get("d", 1)


def window_means(gaps):
    """(whole window, first half, second half) means of a run's gaps over t >= T/2."""
    gaps = np.asarray(gaps, dtype=float)
    start = (len(gaps) - 1) // 2
    window = gaps[start:]
    half = len(window) // 2
    return float(window.mean()), float(window[:half].mean()), float(window[half:].mean())


def mean_se(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def theory_of(binary, folder, run):
    """`theory --json` of one run's resolved config (summary.json's config)."""
    with open(os.path.join(folder, run, "summary.json")) as f:
        config = json.load(f)["config"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        out = subprocess.run([binary, "theory", f.name, "--json"], check=True,
                             capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)


def points(folder, binary):
    """One dict per grid point: d, rule, r, the measured stationary gap and the theory's."""
    index = pd.read_csv(os.path.join(folder, "index.csv"))
    traces = pd.read_csv(os.path.join(folder, "traces.csv"))
    out = []
    for (d, stopping), runs in index.groupby(["/code/d", "/stopping"], sort=False):
        rule = json.loads(stopping)
        per_run = []
        for rep in runs["repetition"]:
            sel = traces[(traces["code.d"] == d) & (traces["stopping"] == stopping)
                         & (traces["rep"] == rep)]
            per_run.append(window_means(sel["gap"].to_numpy()))
        whole, first, second = (np.array(v) for v in zip(*per_run))
        mean, se = mean_se(whole)
        diff_mean, diff_se = mean_se(first - second)
        # Exact GD (rule all) has no floor: its theory is f - f* = 0 once converged.
        theory = (theory_of(binary, folder, runs["folder"].iloc[0]) if rule["rule"] != "all"
                  else {"exact_curve": [0.0] * (len(per_run) and 2)})
        curve = np.asarray(theory["exact_curve"], dtype=float)
        start = (len(curve) - 1) // 2
        exact_window = float(curve[start:].mean())
        n = len(whole)
        # Expected erased-group events in the windows of all runs: below MIN_EVENTS the window
        # mean is dominated by whether a rare erasure happened at all, and its s.e. means little.
        q = theory.get("group_erasure_probability") or 0.0
        groups = int(theory_groups(folder, runs["folder"].iloc[0]))
        events = q * groups * (len(curve) - start) * n
        checked = rule["rule"] != "all" and events >= MIN_EVENTS
        out.append({"d": int(d), "rule": rule["rule"], "r": rule.get("r", ""), "runs": n,
                    "measured": mean, "se": se,
                    "ci95": float(student_t.ppf(0.975, n - 1) * se),
                    "first_half": float(first.mean()), "second_half": float(second.mean()),
                    "halves_diff": diff_mean, "halves_diff_se": diff_se,
                    "exact_window": exact_window, "exact_at_T": float(curve[-1]),
                    "bound_floor": theory.get("noise_floor"),
                    "expected_erasures": events,
                    "z": (mean - exact_window) / se if checked and se > 0 else math.nan})
    return out


def draw(rows, iterations):
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    for r in sorted({row["r"] for row in rows if row["rule"] == "first_r"}):
        sel = sorted((row for row in rows if row["r"] == r and row["measured"] > ROUNDING),
                     key=lambda row: row["d"])
        if not sel:
            continue
        ds = [row["d"] for row in sel]
        color = COLORS.get(r, "k")
        ax.errorbar(ds, [row["measured"] for row in sel], yerr=[row["ci95"] for row in sel],
                    fmt="o", capsize=3, color=color, label=f"ErasureHead r = {r}: measured")
        ax.plot(ds, [row["exact_window"] for row in sel], "-", color=color,
                label=f"r = {r}: exact E[f - f*] (theory)")
        floors = [(row["d"], row["bound_floor"]) for row in sel
                  if isinstance(row["bound_floor"], (int, float))]
        if floors:
            ax.plot(*zip(*floors), "--", color=color, alpha=0.6,
                    label=f"r = {r}: PL bound's floor")
    exact = max(row["measured"] for row in rows if row["rule"] == "all")
    hidden = [f"d = {row['d']}, r = {row['r']}" for row in rows
              if row["rule"] == "first_r" and row["measured"] <= ROUNDING]
    ax.set_yscale("log")
    ax.set_xlabel("replication d (partitions per worker; FRC, n = 20)")
    ax.set_ylabel(f"stationary f - f* (mean over t = {iterations // 2} … {iterations})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Noise floor at stationarity: least squares m = 400, p = 20, l2 = 0.1, step 1/β;"
                 "\nmean over 10 seeds with 95 % t intervals; exact GD (every worker): "
                 f"{exact:.1e} (rounding);\nno erased group seen in the window: "
                 f"{', '.join(hidden) or 'none'}", fontsize=8)
    fig.tight_layout()
    return fig


def sweep_theory_args(argv, doc):
    """--sweep DIR --bin STRAGGLERSIM --out FIG.png --csv TABLE.csv of a figure that holds a
    sweep against `stragglersim theory`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name in ("--sweep", "--bin", "--out", "--csv"):
        parser.add_argument(name, required=True)
    return parser.parse_args(argv)


def main(argv):
    args = sweep_theory_args(argv, __doc__)
    rows = points(args.sweep, args.bin)
    iterations = int(pd.read_csv(os.path.join(args.sweep, "index.csv"))["iterations"].iloc[0])
    fig = draw(rows, iterations)
    write_figure_and_table(fig, args.out, rows, args.csv)


if __name__ == "__main__":
    main(sys.argv[1:])
