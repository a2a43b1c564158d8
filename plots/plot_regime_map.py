#!/usr/bin/env python3
"""Regime map: ErasureHead's speedup in time to a suboptimality level, over uncoded and over
exact FRC, across the tail-to-compute ratio and the communication share (docs/model.md §3).

usage: plot_regime_map.py --times DIR [DIR ...] --training DIR --f-star F [--level 1e-2]
                          --out FIG.png [--csv MAP.csv]
--times:    delay-only sweeps (experiments/paper/regime_map_<n>.json, one per n) over
            /delay/rate, /network/message_bytes, /code and /stopping: the mean iteration time E[T]
            of each scheme at each point (compute shift a = 1 s per unit load, Model A tail mean
            1/rate, a serial link with bandwidth 1 byte/s, so message_bytes is the seconds t one
            message takes on the link).
--training: a training sweep (experiments/paper/regime_map_training.json) over /workers and the
            same schemes: the iterations K each scheme needs to reach the relative suboptimality
            `level`, averaged over repetitions.
The time to the level is K * E[T] (Wald's identity): under i.i.d. delays which workers are heard
does not depend on how long they took, nor on the link, which keeps the order of compute ends,
so K does not depend on the delay parameters and the training runs need not be repeated at every
point of the map. Exact FRC computes the exact gradient: its K is uncoded's (checked).
Axes: tail-to-compute ratio (1/rate) / a; communication share n t / (n t + a): the link's time
for all n messages against one unit of compute.
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
from matplotlib.colors import LogNorm  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_paper import read_index, scheme_of  # noqa: E402
from plot_traces import mean_se, read_trace, t_quantile, time_to_level  # noqa: E402
from protocol_table import paired_ratio  # noqa: E402

SCHEMES = ("uncoded", "exact FRC", "ErasureHead")


def folder_workers(folder):
    """n of a sweep's runs (the base config's, from its first run's summary.json)."""
    row = read_index(os.path.join(folder, "index.csv"))[0]
    with open(os.path.join(folder, row["folder"], "summary.json")) as f:
        return int(json.load(f)["config"]["workers"])


def seed_times(rows, workers):
    """{(n, rate, message_bytes, scheme): {repetition: mean iteration time}}."""
    acc = {}
    for row in rows:
        row = dict(row, workers=workers)
        scheme = scheme_of(row)
        if scheme is None or scheme[0] not in SCHEMES:
            continue
        key = (int(row["workers"]), float(row["/delay/rate"]),
               float(row["/network/message_bytes"]), scheme[0])
        acc.setdefault(key, {})[int(row["repetition"])] = float(row["mean_iteration_time"])
    return acc


def seed_iterations(training_dir, f_star, level):
    """{(n, scheme): {repetition: iterations to the level, or None if it never got there}}."""
    acc = {}
    for row in read_index(os.path.join(training_dir, "index.csv")):
        scheme = scheme_of(row)
        if scheme is None or scheme[0] not in SCHEMES:
            continue
        trace = read_trace(os.path.join(training_dir, row["folder"], "trace.csv"))
        t = time_to_level(trace, f_star, level)
        k = None if t is None else trace["iteration"][trace["time"].index(t)]
        acc.setdefault((int(row["/workers"]), scheme[0]), {})[int(row["repetition"])] = k
    return acc


def ratio_and_se(base, mine):
    """(R, s.e., seeds) of mean(base)/mean(mine) over the repetitions both have: the
    delta-method standard error of protocol_table.paired_ratio (nan for one seed)."""
    reps = sorted(set(base) & set(mine))
    r, low, high, n = paired_ratio([float(base[k]) for k in reps], [float(mine[k]) for k in reps])
    return r, ((high - r) / t_quantile(n) if n > 1 else math.nan), n


def speedup_interval(seed_k, seed_t, n, rate, size, baseline):
    """(low, high) of the speedup (K_base/K_EH)(E[T_base]/E[T_EH]) at one point of the map.

    The two factors come from independent runs (training and delay-only), each a ratio of means
    over paired seeds; by the delta method the product's relative s.e. is the root sum of squares
    of theirs, and the 95 % interval uses Student's t with the fewer seeds' degrees of freedom.
    """
    rk, se_k, nk = ratio_and_se(seed_k[(n, baseline)], seed_k[(n, "ErasureHead")])
    rt, se_t, nt = ratio_and_se(seed_t[(n, rate, size, baseline)],
                                seed_t[(n, rate, size, "ErasureHead")])
    if min(nk, nt) < 2:
        return math.nan, math.nan
    speedup = rk * rt
    half = t_quantile(min(nk, nt)) * speedup * math.hypot(se_k / rk, se_t / rt)
    return speedup - half, speedup + half


def ratio_text(values):
    """"low, high; N seeds" of the 95 % t interval of a {repetition: value} dict."""
    xs = list(values.values())
    if len(xs) < 2:
        return f"{len(xs)} seed"
    m, se = mean_se(xs)
    half = t_quantile(len(xs)) * se
    return f"{m - half:.1f}, {m + half:.1f}; {len(xs)} seeds"


def speedup_grid(times, iters, n, baseline):
    """(ratios, shares, grid[share][ratio]) of K_base E[T_base] / (K_EH E[T_EH])."""
    rates = sorted({k[1] for k in times if k[0] == n}, reverse=True)
    sizes = sorted({k[2] for k in times if k[0] == n})
    k_base, k_eh = iters[(n, baseline)], iters[(n, "ErasureHead")]
    grid = []
    for m in sizes:
        grid.append([(k_base * times[(n, r, m, baseline)]) / (k_eh * times[(n, r, m, "ErasureHead")])
                     for r in rates])
    ratios = [1.0 / r for r in rates]  # a = 1: tail-to-compute ratio = 1/rate
    shares = [n * m / (n * m + 1.0) for m in sizes]
    return ratios, shares, grid


def interval_grid(seed_k, seed_t, n, baseline):
    """grid[share][ratio] of speedup_interval, in speedup_grid's order."""
    rates = sorted({k[1] for k in seed_t if k[0] == n}, reverse=True)
    sizes = sorted({k[2] for k in seed_t if k[0] == n})
    return [[speedup_interval(seed_k, seed_t, n, r, m, baseline) for r in rates] for m in sizes]


def boundary(ratios, shares, grid):
    """For each communication share: the smallest tail ratio from which the speedup is >= 1 at
    every larger ratio (None: never; ratios[0]: always)."""
    out = []
    for share, row in zip(shares, grid):
        edge = None
        for j in range(len(ratios) - 1, -1, -1):
            if row[j] >= 1.0:
                edge = ratios[j]
            else:
                break
        out.append((share, edge))
    return out


def plot(times, iters, ns, level, intervals=None, seeds=1):
    fig, axes = plt.subplots(len(ns), 2, figsize=(12, 4.6 * len(ns)), squeeze=False)
    norm = LogNorm(vmin=0.25, vmax=4.0)
    summary = {}
    for i, n in enumerate(ns):
        for j, baseline in enumerate(("uncoded", "exact FRC")):
            ax = axes[i][j]
            ratios, shares, grid = speedup_grid(times, iters, n, baseline)
            spans = intervals[(n, baseline)] if intervals else None
            image = ax.imshow(grid, origin="lower", cmap="RdBu", norm=norm, aspect="auto")
            x = list(range(len(ratios)))
            y = list(range(len(shares)))
            ax.contour(x, y, grid, levels=[1.0], colors="black", linewidths=2.0)
            for yi, row in enumerate(grid):
                for xi, v in enumerate(row):
                    low, high = spans[yi][xi] if spans else (math.nan, math.nan)
                    # Grey italic: the 95 % interval holds 1 (not significantly faster or slower).
                    unsure = low <= 1.0 <= high
                    ax.text(xi, yi, f"{v:.2f}", ha="center", va="center", fontsize=7,
                            color="dimgray" if unsure else "black",
                            style="italic" if unsure else "normal")
            ax.set_xticks(x)
            ax.set_xticklabels([f"{r:g}" for r in ratios])
            ax.set_yticks(y)
            ax.set_yticklabels([f"{s:.2f}" for s in shares])
            ax.set_xlabel("tail-to-compute ratio (1/λ)/a")
            ax.set_ylabel("communication share n·t/(n·t + a)")
            ax.set_title(f"n = {n}: ErasureHead (FRC d=2, r=n/2) vs {baseline}; "
                         f"K = {iters[(n, 'ErasureHead')]:.1f} vs {iters[(n, baseline)]:.1f} it.",
                         fontsize=9)
            bar = fig.colorbar(image, ax=ax, label="speedup in time to the level (x)")
            bar.set_ticks([0.25, 0.5, 1.0, 2.0, 4.0])
            bar.set_ticklabels(["0.25", "0.5", "1", "2", "4"])
            summary[(n, baseline)] = boundary(ratios, shares, grid)
    fig.suptitle("Where coding pays: speedup in time to relative suboptimality "
                 f"{level:g} (black line: speedup 1)\nModel A shifted exponential: compute "
                 "a = 1 s per unit load, tail mean 1/λ per unit load; serial link at the master, "
                 "t s per message (n·t for all n)\nlogistic regression, Gaussian mixture "
                 "6000 x 200; time to the level = iterations to it (training runs) x mean "
                 "iteration time (delay-only runs)\nmeans over "
                 f"{seeds} seeds of each; grey italic: the speedup's 95 % delta-method interval "
                 "holds 1", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.91))
    return fig, summary


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--times", required=True, nargs="+")
    parser.add_argument("--training", required=True)
    parser.add_argument("--f-star", type=float, required=True)
    parser.add_argument("--level", type=float, default=1e-2)
    parser.add_argument("--out", required=True)
    parser.add_argument("--csv")
    args = parser.parse_args(argv)
    seed_t = {}
    for folder in args.times:
        seed_t.update(seed_times(read_index(os.path.join(folder, "index.csv")),
                                 folder_workers(folder)))
    times = {k: sum(v.values()) / len(v) for k, v in seed_t.items()}
    seed_k = seed_iterations(args.training, args.f_star, args.level)
    missing = [k for k, ks in seed_k.items() if None in ks.values()]
    if missing:
        raise SystemExit(f"error: {args.training}: never reached level {args.level}: {missing}")
    iters = {k: sum(ks.values()) / len(ks) for k, ks in seed_k.items()}
    ns = sorted({k[0] for k in times})
    intervals = {(n, b): interval_grid(seed_k, seed_t, n, b)
                 for n in ns for b in ("uncoded", "exact FRC")}
    seeds = min(len(v) for v in list(seed_t.values()) + list(seed_k.values()))
    fig, summary = plot(times, iters, ns, args.level, intervals, seeds)
    fig.savefig(args.out, dpi=110)
    print(f"figure: {args.out}")
    for n in ns:
        print(f"n = {n}: iterations to {args.level:g}: " +
              ", ".join(f"{s} {iters[(n, s)]:.1f} [{ratio_text(seed_k[(n, s)])}]"
                        for s in SCHEMES))
    for (n, baseline), edges in summary.items():
        cells = [f"share {s:.2f}: " + ("never" if e is None else f"ratio >= {e:g}")
                 for s, e in edges]
        print(f"n = {n}, vs {baseline}: ErasureHead faster for " + "; ".join(cells))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["workers", "baseline", "tail_to_compute", "communication_share",
                        "speedup", "speedup_low", "speedup_high", "significant"])
            for n in ns:
                for baseline in ("uncoded", "exact FRC"):
                    ratios, shares, grid = speedup_grid(times, iters, n, baseline)
                    for s, row, spans in zip(shares, grid, intervals[(n, baseline)]):
                        for r, v, (low, high) in zip(ratios, row, spans):
                            w.writerow([n, baseline, r, s, f"{v:.6g}", f"{low:.6g}",
                                        f"{high:.6g}", int(not low <= 1.0 <= high)])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
