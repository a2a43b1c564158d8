#!/usr/bin/env python3
"""Training loss against simulated time (and against iterations) for one or more traces.

usage: plot_traces.py --out FIG.png [--title T] LABEL=trace.csv [LABEL=trace.csv ...]
Reads stragglersim trace.csv files (docs/model.md §7); writes one PNG with two panels.
"""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_trace(path):
    """Columns of a trace.csv as lists of floats, keyed by header name."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"error: {path}: empty trace")
    # Empty cells (gradient_error of row 0 and of Nesterov runs) read as NaN.
    return {key: [float(r[key]) if r[key] != "" else math.nan for r in rows] for key in rows[0]}


def plot(series, title=None):
    """series: list of (label, trace dict). Returns the figure (tests read its lines back)."""
    fig, (ax_time, ax_iter) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, trace in series:
        ax_time.plot(trace["time"], trace["loss"], label=label, linewidth=1.6)
        ax_iter.plot(trace["iteration"], trace["loss"], label=label, linewidth=1.6)
    ax_time.set_xlabel("simulated time (s)")
    ax_iter.set_xlabel("iteration")
    for ax in (ax_time, ax_iter):
        ax.set_ylabel("training loss f(x_t)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--title")
    parser.add_argument("traces", nargs="+", help="LABEL=path/to/trace.csv")
    args = parser.parse_args(argv)
    series = []
    for item in args.traces:
        label, sep, path = item.rpartition("=")
        if not sep:
            raise SystemExit(f"error: expected LABEL=trace.csv; got {item!r}")
        series.append((label, read_trace(path)))
    fig = plot(series, args.title)
    fig.savefig(args.out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
