#!/usr/bin/env python3
"""A metric of any sweep against one grid key, one line per value of another.

usage: plot_sweep.py DIR --x KEY --y METRIC [--hue KEY] [--out FILE] [--logx] [--logy]

DIR is a sweep's output folder (`stragglersim sweep ... --out DIR`); its index.csv has one row
per run. KEY is a grid column by its plain name ("stopping.r", as in summary.csv; "/stopping/r",
the pointer, works too) or "scheme", METRIC any numeric column (total_time, mean_iteration_time, final_loss, best_loss,
time_to_target, final_test_metric, ...). Runs that share x and hue (the repetitions, and any grid
key not named) are averaged: the point is their mean and the error bar one standard error
(sd / sqrt(count)). Failed runs and empty cells are left out and counted on stderr. x is numeric
when every value is a number, otherwise categorical in index order. Writes DIR/<METRIC>_vs_<x>.png
unless --out. Exit status 2 for a missing index.csv, an unknown column or nothing to plot.
"""
import argparse
import csv
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


class UsageError(Exception):
    """A user mistake: printed as `error: ...`, exit status 2."""


def read_sweep_csv(folder, name):
    """(columns, rows as dicts) of DIR/<name> (index.csv, summary.csv, traces.csv)."""
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file; expected the --out folder of a finished "
                         "`stragglersim sweep` (or `sweep --merge` after shards)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def read_index(folder):
    return read_sweep_csv(folder, "index.csv")


def plain(name):
    """A grid column's plain name: "/stopping/r" -> "stopping.r" (summary.csv's column)."""
    return name[1:].replace("/", ".") if name.startswith("/") else name


# Axis names for the columns users plot most (index.csv, summary.csv); any other column is
# shown by its plain name with spaces for underscores.
READABLE = {
    "total_time": "total simulated time (s)",
    "mean_iteration_time": "mean iteration time (simulated s)",
    "iteration_time_sd": "iteration time s.d. (simulated s)",
    "final_loss": "final training loss f(x_T)",
    "best_loss": "best training loss",
    "final_suboptimality": "final suboptimality f(x_T) - f*",
    "final_test_metric": "final test metric",
    "final_test_loss": "final test loss",
    "time_to_target": "time to target (simulated s)",
    "time_to_relative_suboptimality": "time to the relative suboptimality (simulated s)",
    "iterations_to_relative_suboptimality": "iterations to the relative suboptimality",
    "mean_workers_heard": "mean workers heard per iteration",
    "mean_gradient_error": "mean gradient error",
    "mean_decoding_error": "mean decoding error",
    "wall_clock_seconds": "wall-clock time (s)",
    "workers": "workers n",
    "partitions": "partitions k",
    "seed": "seed",
    "scheme": "scheme",
    "code.d": "replication d",
    "code.s": "stragglers tolerated s",
    "stopping.r": "workers waited for r",
    "stopping.after": "deadline (simulated s)",
    "stopping.deadline": "deadline (simulated s)",
    "delay.rate": "delay rate (1/s)",
    "delay.shift": "delay shift (s)",
    "optimizer.step": "step size",
}


def readable(name):
    """The axis name of a column: READABLE's, else its plain name with spaces for underscores."""
    key = plain(name)
    return READABLE.get(key, key.replace("_", " "))


def readable_ticks(ax):
    """No offset or scientific factor on linear axes ("1e-3 + 2.5e-4" above the ticks), and at
    least two labelled ticks on every axis: a log axis spanning less than a decade gets ticks at
    1, 2 and 5 times the powers of ten, labelled in plain numbers, and fixed ticks at its ends
    when even those give fewer than two."""
    from matplotlib.ticker import LogLocator, MaxNLocator, ScalarFormatter  # noqa: E402
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "linear":
            formatter = ScalarFormatter(useOffset=False)
            formatter.set_scientific(False)
            axis.set_major_formatter(formatter)
            axis.set_major_locator(MaxNLocator(nbins="auto", min_n_ticks=2))
            continue
        if scale != "log":
            continue
        low, high = sorted(axis.get_view_interval())
        visible = [t for t in axis.get_majorticklocs() if low <= t <= high]
        if len(visible) >= 2:
            continue
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        formatter = ScalarFormatter(useOffset=False)
        formatter.set_scientific(False)
        axis.set_major_formatter(formatter)
        axis.set_minor_formatter(plt.NullFormatter())
        visible = [t for t in axis.get_majorticklocs() if low <= t <= high]
        if len(visible) < 2 and low > 0:
            axis.set_ticks([low, high])
            axis.set_ticklabels([f"{low:.3g}", f"{high:.3g}"])


def column(columns, key):
    """The index.csv column a user's KEY names: exact, by its plain name ("stopping.r"), with a
    leading '/', or with '.' as '/'."""
    for candidate in (key, "/" + key, "/" + key.replace(".", "/")):
        if candidate in columns:
            return candidate
    for candidate in columns:
        if plain(candidate) == key or plain(candidate) == plain(key):
            return candidate
    raise UsageError(f"no column {key!r} in index.csv; expected one of "
                     f"{', '.join(plain(c) for c in columns)}")


def as_number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def aggregate(rows, x, y, hue):
    """{hue value: {x value: [metric values]}} in index order, and how many rows were left out."""
    groups = {}
    skipped = 0
    for row in rows:
        value = as_number(row.get(y))
        if row.get("status", "ok") != "ok" or value is None:
            skipped += 1
            continue
        key = row[hue] if hue else ""
        groups.setdefault(key, {}).setdefault(row[x], []).append(value)
    return groups, skipped


def mean_and_error(values):
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var / len(values))


def plot(rows, x, y, hue=None, logx=False, logy=False):
    """The figure: one errorbar line per hue value; raises UsageError when nothing is plotted."""
    groups, skipped = aggregate(rows, x, y, hue)
    if not groups:
        raise UsageError(f"nothing to plot: no run with status ok has a number in column {y!r}")
    if skipped:
        print(f"plot_sweep: left out {skipped} runs (failed, or no {y})", file=sys.stderr)
    x_texts = list(dict.fromkeys(row[x] for row in rows))  # index order
    numeric = all(as_number(t) is not None for t in x_texts)
    position = {t: (as_number(t) if numeric else i) for i, t in enumerate(x_texts)}
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, points in groups.items():
        xs = sorted(points, key=lambda t: position[t])
        stats = [mean_and_error(points[t]) for t in xs]
        ax.errorbar([position[t] for t in xs], [m for m, _ in stats],
                    yerr=[e for _, e in stats], marker="o", capsize=3,
                    label=f"{readable(hue)} = {label}" if hue else None)
    # Scales first: setting one resets the tick locator.
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    if not numeric:
        ax.set_xticks(range(len(x_texts)))
        ax.set_xticklabels(x_texts, rotation=30, ha="right", fontsize=7)
    ax.set_xlabel(readable(x))
    ax.set_ylabel(f"{readable(y)}, mean ± s.e.")
    if hue:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if not numeric:
        # categorical x keeps its labels; the y axis gets readable ticks
        xticks = (ax.get_xticks(), [t.get_text() for t in ax.get_xticklabels()])
        readable_ticks(ax)
        ax.set_xticks(xticks[0])
        ax.set_xticklabels(xticks[1], rotation=30, ha="right", fontsize=7)
    else:
        readable_ticks(ax)
    fig.tight_layout()
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", help="a sweep's --out folder (holds index.csv)")
    parser.add_argument("--x", required=True, help="grid key on the x axis, e.g. /code/d")
    parser.add_argument("--y", required=True, help="numeric column, e.g. total_time")
    parser.add_argument("--hue", help="grid key: one line per value")
    parser.add_argument("--out", help="PNG file (default DIR/<y>_vs_<x>.png)")
    parser.add_argument("--logx", action="store_true")
    parser.add_argument("--logy", action="store_true")
    args = parser.parse_args(argv)
    try:
        columns, rows = read_index(args.dir)
        x = column(columns, args.x)
        y = column(columns, args.y)
        hue = column(columns, args.hue) if args.hue else None
        fig = plot(rows, x, y, hue, args.logx, args.logy)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = args.out or os.path.join(
        args.dir, f"{y}_vs_{re.sub(r'[^A-Za-z0-9.=+-]+', '_', plain(x)).strip('_')}.png")
    fig.savefig(out, dpi=120)
    plt.close(fig)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
