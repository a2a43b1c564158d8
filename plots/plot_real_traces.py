#!/usr/bin/python3
"""Per real trace, each scheme's predicted time to target beside its replayed one.

    /usr/bin/python3 plots/plot_real_traces.py SUMMARY.json --out FIGURE.png

SUMMARY.json is what experiments/real_traces.py writes. One panel per trace: for the three
schemes the chosen model ranks first, the predicted time to target (the model chosen by held-out
error, built from the whole trace) and the replayed one (mean over seeded replays from random
start rows, with its 95 % t interval); the recommended scheme is marked. Units are the trace's
(seconds for ByteDance, normalised units for PAI).
"""
import argparse
import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from scipy import stats  # noqa: E402


def interval(row):
    """Half-width of the replayed mean's 95 % t interval."""
    return stats.t.ppf(0.975, max(1, row["runs"] - 1)) * row["replayed_se"]


def draw(results):
    columns = min(4, len(results))
    lines = math.ceil(len(results) / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(3.6 * columns, 3.4 * lines), squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.axis("off")
    for ax, r in zip(axes.flat, results):
        rows = r["time_to_target"]
        x = range(len(rows))
        predicted = [row["predicted"] for row in rows]
        replayed = [row["replayed"] for row in rows]
        half = [interval(row) for row in rows]
        ax.bar([i - 0.2 for i in x], predicted, width=0.4, label="predicted (chosen model)",
               color="#4c72b0")
        ax.bar([i + 0.2 for i in x], replayed, width=0.4, yerr=half, capsize=3,
               label="replayed (mean, 95 % CI)", color="#dd8452")
        labels = [row["scheme"].replace("erasurehead", "EH").replace("ignore-stragglers", "ignore")
                  + (" *" if row["scheme"] == r["recommended"] else "") for row in rows]
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=7)
        ax.set_title(f"{r['trace']} (n = {r['workers']})\nmodel: {r['chosen_model']}", fontsize=9)
        ax.set_ylabel("time to target", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower right")
    fig.suptitle("Real traces: predicted vs replayed time to relative suboptimality 0.05 "
                 "(* recommended)", fontsize=10)
    fig.tight_layout()
    return fig


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("summary")
    parser.add_argument("--out", required=True)
    a = parser.parse_args()
    with open(a.summary) as f:
        draw(json.load(f)).savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
