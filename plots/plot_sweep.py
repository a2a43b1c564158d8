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
                    label=f"{plain(hue)} = {label}" if hue else None)
    # Scales first: setting one resets the tick locator.
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    if not numeric:
        ax.set_xticks(range(len(x_texts)))
        ax.set_xticklabels(x_texts, rotation=30, ha="right", fontsize=7)
    ax.set_xlabel(plain(x))
    ax.set_ylabel(f"{y} (mean ± s.e.)")
    if hue:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
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
