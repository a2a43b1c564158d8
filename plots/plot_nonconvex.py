#!/usr/bin/env python3
"""A non-convex workload (the mlp on Fashion-MNIST's ten classes) under every scheme, with seed
bands: training loss and test accuracy against simulated time in one delay regime, and the
noise-floor view, training loss and gradient norm against iterations for exact gradient descent
and ErasureHead.

usage: plot_nonconvex.py --regime DIR --noise-floor DIR --out FIG.png --csv TABLE.csv
DIR: finished sweeps (docs/sweeps.md) with `schemes` and repetitions (their index.csv and each
run's trace.csv and summary.json). There is no f* for a non-convex model, so the curves are the loss itself.
Each curve is the mean over the repetitions (the last trace row at or before each time, a step
function) with the band of the 95 % t interval; the time axis ends at the common budget (the
smallest last time of the runs). TABLE.csv: one row per scheme and sweep, the repetitions, the
mean and 95 % interval of the training loss and test accuracy at the budget (regime) or at the
last common iteration (noise floor), the mean iteration time, and the real seconds per trace
row (wall_clock_seconds over the rows of each run's trace, averaged over its runs).
"""
import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import t as student_t  # noqa: E402

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def read_sweep(folder):
    """Every run's trace.csv of a finished sweep in one DataFrame (columns scheme, rep and the
    trace's own, grad_norm included), and its index.csv."""
    if not os.path.isfile(os.path.join(folder, "index.csv")):
        raise SystemExit(f"error: {folder}: no index.csv; expected a finished sweep "
                         "(stragglersim sweep ... --out DIR)")
    index = pd.read_csv(os.path.join(folder, "index.csv"))
    if "scheme" not in index.columns:
        raise SystemExit(f"error: {folder}/index.csv has no scheme column; expected a sweep "
                         "with `schemes`")
    frames = []
    for row in index.itertuples():
        trace = pd.read_csv(os.path.join(folder, row.folder, "trace.csv"))
        trace.insert(0, "rep", row.repetition)
        trace.insert(0, "scheme", row.scheme)
        frames.append(trace)
    return pd.concat(frames, ignore_index=True), index


def band(values):
    """Mean and 95 % t half-width of a sample (half-width 0 for one value)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(values.mean())
    if n < 2:
        return mean, 0.0
    return mean, float(student_t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))


def on_grid(run, key, grid, axis):
    """The run's `key` at each grid point of `axis` (time or iteration): the last row at or
    before it."""
    positions = np.searchsorted(run[axis].to_numpy(), grid, side="right") - 1
    return run[key].to_numpy()[np.maximum(positions, 0)]


def curves(traces, key, axis, points=300):
    """{scheme: (grid, mean, low, high, runs)} of `key` against `axis` up to the common end."""
    runs = {name: [g for _, g in group.groupby("rep")] for name, group in
            traces.groupby("scheme", sort=False)}
    end = min(float(r[axis].iloc[-1]) for members in runs.values() for r in members)
    grid = np.linspace(0.0, end, points)
    out = {}
    for name, members in runs.items():
        matrix = np.array([on_grid(r, key, grid, axis) for r in members])
        mean = matrix.mean(axis=0)
        if len(members) > 1:
            half = (student_t.ppf(0.975, len(members) - 1) * matrix.std(axis=0, ddof=1)
                    / math.sqrt(len(members)))
        else:
            half = np.zeros_like(mean)
        out[name] = (grid, mean, mean - half, mean + half, len(members))
    return out, end


def draw(ax, bands, ylabel, xlabel, log=False):
    for k, (name, (grid, mean, low, high, n)) in enumerate(bands.items()):
        color = COLORS[k % len(COLORS)]
        ax.plot(grid, mean, color=color, label=f"{name} ({n} seeds)")
        ax.fill_between(grid, low, high, color=color, alpha=0.2, linewidth=0)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def describe(folder):
    """The workload of a sweep, from its first run's resolved config (summary.json)."""
    index = pd.read_csv(os.path.join(folder, "index.csv"))
    with open(os.path.join(folder, index["folder"].iloc[0], "summary.json")) as f:
        config = json.load(f)["config"]
    data, loss, opt, d = config["data"], config["loss"], config["optimizer"], config["delay"]
    batch = f"batch {opt['batch']} rows per partition" if "batch" in opt else "full batch"
    return (f"{data['rows']} training / {data.get('test_rows') or 'all'} test images, hidden "
            f"{loss['hidden']} {loss['activation']}, gd step {opt['step']} momentum "
            f"{opt.get('momentum', 0)}, {batch}, n = {config['workers']}, delay "
            f"{d['kind']} a = {d['shift']:g} s, rate {d['rate']:g}/s")


def seconds_per_row(folder, index, scheme):
    """Mean over a scheme's runs of wall_clock_seconds / trace rows."""
    values = []
    for sub in index.loc[index["scheme"] == scheme, "folder"]:
        with open(os.path.join(folder, sub, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(folder, sub, "trace.csv")) as f:
            rows = sum(1 for _ in f) - 1
        values.append(summary["wall_clock_seconds"] / rows)
    return sum(values) / len(values)


def table_rows(sweep, folder, traces, index, axis, end):
    """One table row per scheme: loss and accuracy at `end` of `axis`, with 95 % intervals."""
    rows = []
    for name, group in traces.groupby("scheme", sort=False):
        members = [g for _, g in group.groupby("rep")]
        loss = band([on_grid(r, "loss", np.array([end]), axis)[0] for r in members])
        accuracy = band([on_grid(r, "test_metric", np.array([end]), axis)[0] for r in members])
        iteration_time = band([float(r["time"].iloc[-1]) / float(r["iteration"].iloc[-1])
                               for r in members])
        rows.append({"sweep": sweep, "scheme": name, "runs": len(members), "at": axis,
                     "at_value": end, "loss_mean": loss[0], "loss_ci95": loss[1],
                     "test_accuracy_mean": accuracy[0], "test_accuracy_ci95": accuracy[1],
                     "mean_iteration_time": iteration_time[0],
                     "mean_iteration_time_ci95": iteration_time[1],
                     "seconds_per_row": seconds_per_row(folder, index, name)})
    return rows


def write_figure_and_table(fig, out, rows, table):
    """The PNG and the CSV of `rows`, both complete or neither (temporaries, then renames);
    prints the table."""
    fig.savefig(out + ".tmp.png", dpi=110)
    plt.close(fig)
    frame = pd.DataFrame(rows)
    frame.to_csv(table + ".tmp", index=False, float_format="%.6g")
    os.replace(out + ".tmp.png", out)
    os.replace(table + ".tmp", table)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regime", required=True)
    parser.add_argument("--noise-floor", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--csv", required=True)
    args = parser.parse_args(argv)
    regime, regime_index = read_sweep(args.regime)
    floor, floor_index = read_sweep(args.noise_floor)

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    loss_bands, budget = curves(regime, "loss", "time")
    draw(axes[0, 0], loss_bands, "training loss (cross-entropy + l2)", "simulated time (s)",
         log=True)
    axes[0, 0].set_title("(a) training loss against time, injected delays")
    accuracy_bands, _ = curves(regime, "test_metric", "time")
    draw(axes[0, 1], accuracy_bands, "test accuracy", "simulated time (s)")
    axes[0, 1].set_title("(b) test accuracy against time, injected delays")
    floor_bands, last = curves(floor, "loss", "iteration")
    draw(axes[1, 0], floor_bands, "training loss", "iteration", log=True)
    axes[1, 0].set_title("(c) noise floor: training loss per iteration, full batch")
    norm_bands, _ = curves(floor, "grad_norm", "iteration")
    draw(axes[1, 1], norm_bands, "gradient norm |grad f(x_t)|", "iteration", log=True)
    axes[1, 1].set_title("(d) noise floor: gradient norm per iteration")
    for ax in axes.flat:
        ax.legend(fontsize=8)
    fig.suptitle(f"mlp on Fashion-MNIST (10 classes): {describe(args.regime)}\n"
                 f"{describe(args.noise_floor)}; mean over seeds, 95 % t bands", fontsize=9)
    fig.tight_layout()
    rows = (table_rows("regime", args.regime, regime, regime_index, "time", budget)
            + table_rows("noise_floor", args.noise_floor, floor, floor_index, "iteration",
                         last))
    write_figure_and_table(fig, args.out, rows, args.csv)


if __name__ == "__main__":
    main(sys.argv[1:])
