#!/usr/bin/env python3
"""The time-optimal SGD methods beside the gradient codes and the baselines, as one figure and
one table.

usage: plot_time_optimal.py --sweep LABEL=DIR [--sweep LABEL=DIR ...] --out FIG.png --csv TABLE.csv
Each DIR is a finished sweep of experiments/paper/time_optimal_*.json (schemes: uncoded, exact
FRC, ErasureHead, K-sync, K-async, Rennala, Malenia, Ringmaster, MindFlayer, Rescaled ASGD; a
target_loss; baseline uncoded). The figure has one panel per sweep: each scheme's mean time to
the target loss with its 95 % t interval over the seeds (a hollow marker at the right edge for a
scheme that missed the target in some run). The table has one row per sweep and scheme, as
plot_baselines.table_rows. Both outputs are written complete or not at all.
"""
import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_baselines import table_rows  # noqa: E402
from plot_nonconvex import write_figure_and_table  # noqa: E402

# The families the "do we need asynchronous SGD?" comparison is about.
FAMILY = {"uncoded": "synchronous", "exact FRC": "code", "ErasureHead": "code",
          "K-sync": "synchronous", "K-async": "asynchronous", "Rennala": "time-optimal",
          "Malenia": "time-optimal", "Ringmaster": "asynchronous", "MindFlayer": "time-optimal",
          "Rescaled ASGD": "asynchronous"}
COLOURS = {"synchronous": "tab:blue", "code": "tab:green", "asynchronous": "tab:red",
           "time-optimal": "tab:purple"}


def family(scheme):
    for prefix, name in FAMILY.items():
        if scheme.startswith(prefix):
            return name
    return "other"


def draw_panel(ax, rows, title, family_of=family, colours=None):
    """One panel: a row per scheme, coloured by `colours[family_of(scheme)]` (this module's
    families when not given)."""
    colours = COLOURS if colours is None else colours
    finite = [r["time_to_target"] for r in rows if math.isfinite(r["time_to_target"])]
    edge = 1.15 * max(r["time_ci_high"] for r in rows
                      if math.isfinite(r["time_ci_high"])) if finite else 1.0
    for y, r in enumerate(rows):
        colour = colours.get(family_of(r["scheme"]), "black")
        if math.isfinite(r["time_to_target"]):
            low = r["time_to_target"] - r["time_ci_low"]
            high = r["time_ci_high"] - r["time_to_target"]
            ax.errorbar(r["time_to_target"], y, xerr=[[low], [high]], fmt="o", color=colour,
                        capsize=3)
        else:
            ax.plot(edge, y, "o", mfc="none", color=colour)
            ax.annotate(f"{r['reached']}/{r['runs']} reached", (edge, y), fontsize=7,
                        xytext=(-4, 6), textcoords="offset points", ha="right")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["scheme"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    low = min((r["time_ci_low"] for r in rows if math.isfinite(r["time_ci_low"])
               and r["time_ci_low"] > 0), default=edge)
    if edge / low > 20:  # one scheme far behind the rest: a log axis keeps the rest readable
        ax.set_xscale("log")
        ax.set_xlim(low / 1.5, edge * 1.5)
    else:
        ax.set_xlim(0, edge * 1.05)
    ax.set_xlabel("simulated time to the target loss (mean, bar: 95 % t interval)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title, fontsize=9)


def main(argv, description=__doc__.splitlines()[0], family_of=family, colours=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sweep", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--out", required=True)
    parser.add_argument("--csv", required=True)
    args = parser.parse_args(argv)
    panels = []
    for item in args.sweep:
        label, sep, folder = item.rpartition("=")
        if not sep or not folder:
            parser.error(f"--sweep {item!r}: expected LABEL=DIR")
        panels.append((label, folder))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 5.2), squeeze=False)
    table = []
    for ax, (label, folder) in zip(axes[0], panels):
        rows = table_rows(folder)
        for row in rows:
            row["sweep"] = label.split(":", 1)[0]  # "(a)": every folder is an `evaluation`
        draw_panel(ax, rows, label, family_of, colours)
        table.extend(rows)
    fig.tight_layout()
    write_figure_and_table(fig, args.out, table, args.csv)


if __name__ == "__main__":
    main(sys.argv[1:])
