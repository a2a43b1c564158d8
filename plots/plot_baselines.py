#!/usr/bin/env python3
"""Gradient codes against the baselines that do not code, as one figure and one table.

usage: plot_baselines.py --injected DIR --trace DIR --out FIG.png --csv TABLE.csv
Each DIR is a finished sweep of experiments/paper/baselines_{injected,trace}.json (schemes:
uncoded, exact FRC, ErasureHead, K-sync, K-async, Anytime minibatch; a target_loss; baseline
uncoded). The figure has one panel per sweep: the mean gap f - f* (each run's own f*) against
simulated time up to the common budget, with the band of the 95 % t interval over the seeds
(plot_traces.sweep_bands). The table has one row per sweep and scheme: the runs that reached the
target loss, the mean time to it with its 95 % t interval, and the speedup over uncoded (ratio of
means, delta-method interval over paired seeds; protocol_table.rows); a scheme that did not reach
the target in every run has no time or speedup. Both outputs are written complete or not at all.
"""
import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_traces  # noqa: E402
import protocol_table  # noqa: E402
from plot_nonconvex import write_figure_and_table  # noqa: E402


def draw_panel(ax, bands, title, xlabel):
    floor = math.inf
    for label, (grid, mean, low, high, n) in bands.items():
        floor = min([floor] + [m for m in mean if m > 0])
        line, = ax.plot(grid, mean, label=f"{label} ({n} seeds)", linewidth=1.5)
        ax.fill_between(grid, [max(v, 0.0) for v in low], high, color=line.get_color(),
                        alpha=0.2, linewidth=0)
    ax.set_yscale("log")
    if math.isfinite(floor):
        ax.set_ylim(bottom=floor / 3)
    ax.set_xlim(0, max(grid[-1] for grid, *_ in bands.values()))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("f(x_t) - f*  (mean, band: 95 % t interval)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title, fontsize=9)


def table_rows(folder):
    """protocol_table.rows with the speedup split into columns; no time where a run missed."""
    out = []
    for e in protocol_table.rows(folder):
        complete = e["reached"] == e["runs"]
        speedup = e["vs_uncoded"] if complete else (math.nan, math.nan, math.nan)
        out.append({"sweep": e["protocol"], "scheme": e["scheme"], "runs": e["runs"],
                    "reached": e["reached"],
                    "time_to_target": e["time"] if complete else math.nan,
                    "time_ci_low": e["time_low"] if complete else math.nan,
                    "time_ci_high": e["time_high"] if complete else math.nan,
                    "speedup_vs_uncoded": speedup[0], "speedup_ci_low": speedup[1],
                    "speedup_ci_high": speedup[2]})
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--injected", required=True)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--csv", required=True)
    args = parser.parse_args(argv)
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2))
    panels = [(args.injected, "(a) injected delays: compute + Exp(mean 0.5 s), n = 30",
               "simulated time (s)"),
              (args.trace, "(b) measured: Alibaba PAI job 1, rows resampled per seed, n = 10",
               "simulated time (the trace's units: batch time normalised to 0-1000)")]
    rows = []
    for ax, (folder, title, xlabel) in zip(axes, panels):
        draw_panel(ax, plot_traces.sweep_bands(folder), title, xlabel)
        rows.extend(table_rows(folder))
    fig.tight_layout()
    write_figure_and_table(fig, args.out, rows, args.csv)


if __name__ == "__main__":
    main(sys.argv[1:])
