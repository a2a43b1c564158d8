#!/usr/bin/env python3
"""The paper's figures (ErasureHead, arXiv 1901.09671) from the sweeps of experiments/paper/.

usage: plot_paper.py --sweeps DIR --out FIGDIR
DIR holds one folder per sweep (DIR/<sweep>/index.csv and DIR/<sweep>/runs/...), as written by
`stragglersim sweep`; every figure is read from those CSV files and written as PNG to FIGDIR (the regime figures,
f - f* against time, are plot_regimes.py's):

  paper_iteration_time.png    mean iteration time per scheme over the seeds (bars, 95 % t interval)
  paper_speedup_vs_n.png      speedup over uncoded against n (log axis), delay-only: ratio of means
                              over paired seeds with its delta-method 95 % interval
                              (protocol_table.paired_ratio; hollow marker: the interval holds 1)
  paper_wait_fraction.png     time to a target loss and final loss against the wait fraction r/n
                              (mean over the seeds, band: 95 % t interval)
Each figure's numbers are also written beside it as <figure>.csv.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_traces import t_quantile  # noqa: E402
from protocol_table import paired_ratio  # noqa: E402

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


def t_interval(values):
    """(mean, low, high, n) of the 95 % t interval over the values that are numbers (low and
    high nan for fewer than two)."""
    values = [v for v in values if not math.isnan(v)]
    m, se = mean_se(values)
    if len(values) < 2:
        return m, math.nan, math.nan, len(values)
    half = t_quantile(len(values)) * se
    return m, m - half, m + half, len(values)


def seeds_of(rows):
    """The number of repetitions of a sweep's rows (as a caption states it)."""
    return len({row["repetition"] for row in rows})


def iteration_time_table(rows):
    """One dict per (scheme, d): runs, mean iteration time and its 95 % t interval."""
    groups = {}
    for row in rows:
        scheme = scheme_of(row)
        if scheme is None or scheme[0] not in SCHEMES:
            continue
        groups.setdefault(scheme, []).append(number(row["mean_iteration_time"]))
    out = []
    for (name, d), values in sorted(groups.items(), key=lambda kv: (SCHEMES.index(kv[0][0]),
                                                                     kv[0][1])):
        m, low, high, n = t_interval(values)
        out.append({"scheme": name, "d": d, "runs": n, "mean": m, "low": low, "high": high})
    return out


def plot_iteration_time(rows):
    """Grouped bars: for each d, the mean iteration time of each scheme (95 % t interval)."""
    table = {(r["scheme"], r["d"]): r for r in iteration_time_table(rows)}
    ds = sorted({d for (name, d) in table if name != "uncoded"})
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.2
    for k, name in enumerate(SCHEMES):
        xs, heights, errors = [], [], []
        for g, d in enumerate(ds):
            key = (name, 1 if name == "uncoded" else d)
            if key not in table:
                continue
            row = table[key]
            xs.append(g + (k - 1.5) * width)
            heights.append(row["mean"])
            errors.append(row["high"] - row["mean"] if row["runs"] > 1 else 0.0)
        ax.bar(xs, heights, width, yerr=errors, capsize=3, label=name, color=COLORS[name])
    ax.set_xticks(range(len(ds)))
    ax.set_xticklabels([f"d = {d} (CRC s = {d - 1})" for d in ds])
    ax.set_ylabel("mean iteration time (simulated s)")
    ax.set_title("Iteration time per scheme, n = 30, ErasureHead waits for r = 15 "
                 "(shifted exponential, Model A)\n"
                 f"mean over {seeds_of(rows)} seeds, error bar: 95 % t interval", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def speedup_table(rows):
    """One dict per (scheme, n): mean uncoded iteration time / mean scheme time over the seeds
    both ran (paired by repetition) and its delta-method 95 % interval."""
    times = {}
    for row in rows:
        scheme = scheme_of(row)
        if scheme is None:
            continue
        times.setdefault((scheme[0], int(row["/workers"])), {})[int(row["repetition"])] = \
            number(row["mean_iteration_time"])
    out = []
    for name in ("ErasureHead", "exact FRC", "ignore stragglers"):
        for n in sorted(n for (s, n) in times if s == name and ("uncoded", n) in times):
            base, mine = times[("uncoded", n)], times[(name, n)]
            reps = sorted(set(base) & set(mine))
            paired = paired_ratio([base[k] for k in reps], [mine[k] for k in reps])
            if paired is None:
                continue
            ratio, low, high, seeds = paired
            out.append({"scheme": name, "workers": n, "seeds": seeds, "speedup": ratio,
                        "low": low, "high": high,
                        "significant": not (low <= 1.0 <= high) if seeds > 1 else False})
    return out


def speedups(rows):
    """{scheme: (ns, speedups)}: the ratio of means of speedup_table, for each n."""
    out = {}
    for row in speedup_table(rows):
        ns, ys = out.setdefault(row["scheme"], ([], []))
        ns.append(row["workers"])
        ys.append(row["speedup"])
    return out


def plot_speedup(rows):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    table = speedup_table(rows)
    for name, (ns, ys) in speedups(rows).items():
        label = {"ErasureHead": "ErasureHead (FRC d=2, r = n/2)",
                 "exact FRC": "exact FRC d=2",
                 "ignore stragglers": "ignore stragglers (r = n/2)"}[name]
        mine = [r for r in table if r["scheme"] == name]
        ax.plot(ns, ys, marker="o", label=label, color=COLORS[name])
        lows = [r["speedup"] - r["low"] for r in mine]
        highs = [r["high"] - r["speedup"] for r in mine]
        if not any(math.isnan(v) for v in lows + highs):
            ax.errorbar(ns, ys, yerr=[lows, highs], fmt="none", capsize=3, color=COLORS[name])
        # Hollow: the interval holds 1 (not significantly different from no speedup).
        flat = [(r["workers"], r["speedup"]) for r in mine if not r["significant"]]
        if flat:
            ax.plot([x for x, _ in flat], [y for _, y in flat], linestyle="none", marker="o",
                    markerfacecolor="white", color=COLORS[name])
    ax.set_xscale("log", base=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("workers n (log scale)")
    ax.set_ylabel("speedup over uncoded (x, mean iteration time)")
    ax.set_title("Speedup against n (delay-only, shifted exponential a = 1, λ = 1, Model A)\n"
                 f"ratio of means over {seeds_of(rows)} paired seeds, 95 % delta-method "
                 "interval; hollow: the interval holds 1", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def wait_fraction_table(rows, n=30):
    """One dict per (d, r): time to the target (a mean only where every seed reached it: no
    survivor bias) and final loss, each with its 95 % t interval."""
    groups = {}
    for row in rows:
        groups.setdefault((int(row["/code/d"]), int(row["/stopping/r"])), []).append(row)
    out = []
    for (d, r), members in sorted(groups.items()):
        reached = [x for x in members if x["time_to_target"]]
        entry = {"d": d, "r": r, "fraction": r / n, "runs": len(members),
                 "reached": len(reached), "target": members[0].get("/target_loss")}
        t = t_interval([number(x["time_to_target"]) for x in members])
        if len(reached) < len(members):
            t = (math.nan,) * 3 + (len(reached),)
        entry.update(time=t[0], time_low=t[1], time_high=t[2])
        f = t_interval([number(x["final_loss"]) for x in members])
        entry.update(final_loss=f[0], final_low=f[1], final_high=f[2])
        out.append(entry)
    return out


def plot_wait_fraction(rows):
    fig, (ax_t, ax_l) = plt.subplots(1, 2, figsize=(12, 4.5))
    table = wait_fraction_table(rows)
    target = table[0]["target"]
    for d in sorted({e["d"] for e in table}):
        mine = [e for e in table if e["d"] == d]
        fx = [e["fraction"] for e in mine]
        for ax, key, low, high in ((ax_t, "time", "time_low", "time_high"),
                                   (ax_l, "final_loss", "final_low", "final_high")):
            (line,) = ax.plot(fx, [e[key] for e in mine], marker="o", label=f"ErasureHead d = {d}")
            ax.fill_between(fx, [e[low] for e in mine], [e[high] for e in mine],
                            color=line.get_color(), alpha=0.2, linewidth=0)
    ax_t.set_ylabel(f"time to training loss {target} (simulated s)")
    ax_t.set_title("Time to target (no point: some seed never reached it)", fontsize=9)
    ax_l.set_ylabel(f"training loss after {rows[0]['iterations']} iterations")
    ax_l.set_yscale("log")
    ax_l.set_title("Final training loss", fontsize=9)
    for ax in (ax_t, ax_l):
        ax.set_xlabel("wait fraction r/n (n = 30)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Effect of the wait fraction, Amazon-like logistic regression: mean over "
                 f"{seeds_of(rows)} seeds, band: 95 % t interval")
    fig.tight_layout()
    return fig


def write_table(path, table):
    """A list of dicts as CSV (floats to 6 significant digits, nan as an empty cell)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]), lineterminator="\n")
        w.writeheader()
        for row in table:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v)
                            else f"{v:.6g}" if isinstance(v, float) else v)
                        for k, v in row.items()})


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

    def save(fig, table, name):
        path = os.path.join(args.out, name)
        fig.savefig(path + ".png", dpi=110)
        plt.close(fig)
        write_table(path + ".csv", table)
        written.extend([path + ".png", path + ".csv"])

    for sweep, draw, tabulate, name in (
            ("iteration_time", plot_iteration_time, iteration_time_table, "paper_iteration_time"),
            ("speedup", plot_speedup, speedup_table, "paper_speedup_vs_n"),
            ("wait_fraction", plot_wait_fraction, wait_fraction_table, "paper_wait_fraction")):
        rows = index(sweep)
        if rows:
            save(draw(rows), tabulate(rows), name)
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
