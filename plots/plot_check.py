#!/usr/bin/env python3
"""Figures of `stragglersim check --out DIR`: measured against predicted speedup of ErasureHead
over uncoded as n grows (speedup.csv), and measured suboptimality against the PL bound
(bound.csv).

usage: plot_check.py DIR [--out FOLDER]   (writes speedup_vs_n.png and bound.png)
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_speedup(rows):
    n = [float(r["workers"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(n, [float(r["predicted_speedup"]) for r in rows], "-", label="predicted (docs/model.md §6)")
    ax.errorbar(n, [float(r["measured_speedup"]) for r in rows],
                yerr=[4 * float(r["measured_se"]) for r in rows], fmt="o", markersize=4,
                capsize=3, label="simulated (±4 s.e.)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers n (log scale)")
    ax.set_ylabel("uncoded / ErasureHead iteration time")
    ax.set_title("ErasureHead speedup, d = 2, r = n/2, Model A (shift 1, rate 1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def plot_bound(rows):
    problems = []
    for r in rows:
        if r["problem"] not in problems:
            problems.append(r["problem"])
    fig, axes = plt.subplots(1, len(problems), figsize=(5.6 * len(problems), 4.2))
    if len(problems) == 1:
        axes = [axes]
    for ax, problem in zip(axes, problems):
        sub = [r for r in rows if r["problem"] == problem]
        t = [int(r["iteration"]) for r in sub]
        ax.plot(t, [float(r["bound"]) for r in sub], "--", label="PL bound")
        ax.plot(t, [max(float(r["mean_gap"]), 1e-16) for r in sub], "-",
                label="mean f(x_t) - f* (30 runs)")
        ax.set_yscale("log")
        ax.set_xlabel("iteration t")
        ax.set_ylabel("suboptimality f(x_t) - f*")
        ax.set_title(problem + ", ErasureHead d=2 r=n/2", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    return fig


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dir")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    out = args.out or args.dir
    os.makedirs(out, exist_ok=True)
    plot_speedup(read_rows(os.path.join(args.dir, "speedup.csv"))).savefig(
        os.path.join(out, "speedup_vs_n.png"), dpi=120)
    plot_bound(read_rows(os.path.join(args.dir, "bound.csv"))).savefig(
        os.path.join(out, "bound.png"), dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
