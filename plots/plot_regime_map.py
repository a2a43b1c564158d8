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
from plot_traces import read_trace, time_to_level  # noqa: E402

SCHEMES = ("uncoded", "exact FRC", "ErasureHead")


def folder_workers(folder):
    """n of a sweep's runs (the base config's, from its first run's summary.json)."""
    row = read_index(os.path.join(folder, "index.csv"))[0]
    with open(os.path.join(folder, row["folder"], "summary.json")) as f:
        return int(json.load(f)["config"]["workers"])


def mean_times(rows, workers):
    """{(n, rate, message_bytes, scheme): mean iteration time}, averaged over repetitions."""
    acc = {}
    for row in rows:
        row = dict(row, workers=workers)
        scheme = scheme_of(row)
        if scheme is None or scheme[0] not in SCHEMES:
            continue
        key = (int(row["workers"]), float(row["/delay/rate"]),
               float(row["/network/message_bytes"]), scheme[0])
        acc.setdefault(key, []).append(float(row["mean_iteration_time"]))
    return {k: sum(v) / len(v) for k, v in acc.items()}


def iterations_to_level(training_dir, f_star, level):
    """{(n, scheme): mean iterations to the level over repetitions} (None if one never did)."""
    acc = {}
    for row in read_index(os.path.join(training_dir, "index.csv")):
        scheme = scheme_of(row)
        if scheme is None or scheme[0] not in SCHEMES:
            continue
        trace = read_trace(os.path.join(training_dir, row["folder"], "trace.csv"))
        t = time_to_level(trace, f_star, level)
        k = None if t is None else trace["iteration"][trace["time"].index(t)]
        acc.setdefault((int(row["/workers"]), scheme[0]), []).append(k)
    return {key: (None if None in ks else sum(ks) / len(ks)) for key, ks in acc.items()}


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


def plot(times, iters, ns, level):
    fig, axes = plt.subplots(len(ns), 2, figsize=(12, 4.6 * len(ns)), squeeze=False)
    norm = LogNorm(vmin=0.25, vmax=4.0)
    summary = {}
    for i, n in enumerate(ns):
        for j, baseline in enumerate(("uncoded", "exact FRC")):
            ax = axes[i][j]
            ratios, shares, grid = speedup_grid(times, iters, n, baseline)
            image = ax.imshow(grid, origin="lower", cmap="RdBu", norm=norm, aspect="auto")
            x = list(range(len(ratios)))
            y = list(range(len(shares)))
            ax.contour(x, y, grid, levels=[1.0], colors="black", linewidths=2.0)
            for yi, row in enumerate(grid):
                for xi, v in enumerate(row):
                    ax.text(xi, yi, f"{v:.2f}", ha="center", va="center", fontsize=7)
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
                 "iteration time (delay-only runs)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
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
    times = {}
    for folder in args.times:
        times.update(mean_times(read_index(os.path.join(folder, "index.csv")),
                                folder_workers(folder)))
    iters = iterations_to_level(args.training, args.f_star, args.level)
    ns = sorted({k[0] for k in times})
    missing = [k for k in iters if iters[k] is None]
    if missing:
        raise SystemExit(f"error: {args.training}: never reached level {args.level}: {missing}")
    fig, summary = plot(times, iters, ns, args.level)
    fig.savefig(args.out, dpi=110)
    print(f"figure: {args.out}")
    for n in ns:
        print(f"n = {n}: iterations to {args.level:g}: " +
              ", ".join(f"{s} {iters[(n, s)]:.1f}" for s in SCHEMES))
    for (n, baseline), edges in summary.items():
        cells = [f"share {s:.2f}: " + ("never" if e is None else f"ratio >= {e:g}")
                 for s, e in edges]
        print(f"n = {n}, vs {baseline}: ErasureHead faster for " + "; ".join(cells))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["workers", "baseline", "tail_to_compute", "communication_share", "speedup"])
            for n in ns:
                for baseline in ("uncoded", "exact FRC"):
                    ratios, shares, grid = speedup_grid(times, iters, n, baseline)
                    for s, row in zip(shares, grid):
                        for r, v in zip(ratios, row):
                            w.writerow([n, baseline, r, s, f"{v:.6g}"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
