#!/usr/bin/env python3
"""The paper's figures (ErasureHead, arXiv 1901.09671) from the sweeps of experiments/paper/.

usage: plot_paper.py --sweeps DIR --out FIGDIR
DIR holds one folder per sweep (DIR/<sweep>/index.csv and DIR/<sweep>/runs/...), as written by
`stragglersim sweep`; every figure is read from those CSV files and written as PNG to FIGDIR (the regime figures,
f - f* against time, are plot_regimes.py's):

  paper_iteration_time.png    mean iteration time per scheme (bars, +- standard error over reps)
  paper_speedup_vs_n.png      speedup over uncoded against n (log axis), delay-only
  paper_wait_fraction.png     time to a target loss and final loss against the wait fraction r/n
(the stationary noise floor, paper_noise_floor.png, is plot_noise_floor.py's: it needs the theory)
"""
import argparse
import csv
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SCHEMES = ["uncoded", "exact FRC", "exact CRC", "ErasureHead"]
COLORS = {"uncoded": "tab:gray", "exact FRC": "tab:blue", "exact CRC": "tab:green",
          "ErasureHead": "tab:red", "ignore stragglers": "tab:orange"}


def read_index(path):
    """Rows of a sweep's index.csv as dicts of strings."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"error: {path}: empty index")
    return rows


def read_trace(path):
    """Columns of a trace.csv as lists of floats."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    # Empty cells (gradient_error of row 0 and of Nesterov runs) read as NaN.
    return {key: [float(r[key]) if r[key] != "" else math.nan for r in rows] for key in rows[0]}


def number(text):
    """A CSV cell as float (nan when empty)."""
    return float(text) if text not in ("", None) else math.nan


def scheme_of(row):
    """(scheme name, d) of a row with /code and /stopping grid columns; None if not plotted.

    uncoded + decodable = uncoded; frc + decodable = exact FRC (d); crc s + decodable = exact CRC
    (d = s + 1); frc + first_r = ErasureHead (d); uncoded + first_r = ignore stragglers.
    """
    code = json.loads(row["/code"])
    rule = json.loads(row["/stopping"])["rule"]
    kind = code["kind"]
    if rule in ("decodable", "all"):
        if kind == "uncoded":
            return "uncoded", 1
        if kind == "frc":
            return "exact FRC", code["d"]
        if kind == "crc":
            return "exact CRC", code["s"] + 1
    elif rule == "first_r":
        if kind == "frc":
            return "ErasureHead", code["d"]
        if kind == "uncoded":
            return "ignore stragglers", 1
    return None


def mean_se(values):
    """Mean and standard error of a list (s.e. 0 for one value)."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan, math.nan
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    return m, math.sqrt(var / len(values))


def plot_iteration_time(rows):
    """Grouped bars: for each d, the mean iteration time of each scheme (± s.e. over reps)."""
    groups = {}
    for row in rows:
        scheme = scheme_of(row)
        if scheme is None or scheme[0] not in SCHEMES:
            continue
        groups.setdefault(scheme, []).append(number(row["mean_iteration_time"]))
    ds = sorted({d for (name, d) in groups if name != "uncoded"})
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.2
    for k, name in enumerate(SCHEMES):
        xs, heights, errors = [], [], []
        for g, d in enumerate(ds):
            key = (name, 1 if name == "uncoded" else d)
            if key not in groups:
                continue
            m, se = mean_se(groups[key])
            xs.append(g + (k - 1.5) * width)
            heights.append(m)
            errors.append(se)
        ax.bar(xs, heights, width, yerr=errors, capsize=3, label=name, color=COLORS[name])
    ax.set_xticks(range(len(ds)))
    ax.set_xticklabels([f"d = {d} (CRC s = {d - 1})" for d in ds])
    ax.set_ylabel("mean iteration time (simulated s)")
    ax.set_title("Iteration time per scheme, n = 30, ErasureHead waits for r = 15 "
                 "(shifted exponential, Model A)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def speedups(rows):
    """{scheme: (ns, speedups)}: mean uncoded iteration time / mean scheme time, for each n."""
    times = {}
    for row in rows:
        scheme = scheme_of(row)
        if scheme is None:
            continue
        times.setdefault((scheme[0], int(row["/workers"])), []).append(
            number(row["mean_iteration_time"]))
    out = {}
    for name in ("ErasureHead", "exact FRC", "ignore stragglers"):
        ns = sorted(n for (s, n) in times if s == name and ("uncoded", n) in times)
        out[name] = (ns, [mean_se(times[("uncoded", n)])[0] / mean_se(times[(name, n)])[0]
                          for n in ns])
    return out


def plot_speedup(rows):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, (ns, ys) in speedups(rows).items():
        label = {"ErasureHead": "ErasureHead (FRC d=2, r = n/2)",
                 "exact FRC": "exact FRC d=2",
                 "ignore stragglers": "ignore stragglers (r = n/2)"}[name]
        ax.plot(ns, ys, marker="o", label=label, color=COLORS[name])
    ax.set_xscale("log", base=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("workers n (log scale)")
    ax.set_ylabel("speedup over uncoded (x, mean iteration time)")
    ax.set_title("Speedup against n (delay-only, shifted exponential a = 1, λ = 1, Model A)",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_wait_fraction(rows):
    fig, (ax_t, ax_l) = plt.subplots(1, 2, figsize=(12, 4.5))
    target = None
    for d in sorted({int(r["/code/d"]) for r in rows}):
        by_r = {}
        for row in rows:
            if int(row["/code/d"]) != d:
                continue
            target = row.get("/target_loss", target)
            by_r.setdefault(int(row["/stopping/r"]), []).append(row)
        rs = sorted(by_r)
        n = 30
        fx = [r / n for r in rs]
        # A mean only where every repetition reached the target (no survivor bias).
        tt = [mean_se([number(x["time_to_target"]) for x in by_r[r]])[0]
              if all(x["time_to_target"] for x in by_r[r]) else math.nan for r in rs]
        fl = [mean_se([number(x["final_loss"]) for x in by_r[r]])[0] for r in rs]
        ax_t.plot(fx, tt, marker="o", label=f"ErasureHead d = {d}")
        ax_l.plot(fx, fl, marker="o", label=f"ErasureHead d = {d}")
    ax_t.set_ylabel(f"time to training loss {target} (simulated s)")
    ax_t.set_title("Time to target (no point: some repetition never reached it)", fontsize=9)
    ax_l.set_ylabel(f"training loss after {rows[0]['iterations']} iterations")
    ax_l.set_yscale("log")
    ax_l.set_title("Final training loss", fontsize=9)
    for ax in (ax_t, ax_l):
        ax.set_xlabel("wait fraction r/n (n = 30)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Effect of the wait fraction, Amazon-like logistic regression")
    fig.tight_layout()
    return fig


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    def index(name):
        path = os.path.join(args.sweeps, name, "index.csv")
        return read_index(path) if os.path.exists(path) else None

    written = []

    def save(fig, name):
        path = os.path.join(args.out, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    if index("iteration_time"):
        save(plot_iteration_time(index("iteration_time")), "paper_iteration_time.png")
    if index("speedup"):
        save(plot_speedup(index("speedup")), "paper_speedup_vs_n.png")
    if index("wait_fraction"):
        save(plot_wait_fraction(index("wait_fraction")), "paper_wait_fraction.png")
    for path in written:
        print(f"figure: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
