#!/usr/bin/env python3
"""Traces against simulated time: training loss, suboptimality f - f*, or iteration times.

usage: plot_traces.py --out FIG.png [--title T] [--caption C] [--f-star F] [--time-budget B]
                      [--expected-iteration-time E] LABEL=trace.csv[,trace.csv ...] ...
Reads stragglersim trace.csv files (docs/model.md §7) and writes one PNG:
  - without --f-star: training loss against simulated time and against iterations;
  - with --f-star: f - f* (log) against simulated time up to the common time budget (the
    smallest last time of the traces, or --time-budget), beside bars of the time each scheme
    takes to reach the relative suboptimality levels (f - f*)/(f(x0) - f*) <= 1e-1, 1e-2, 1e-3
    ("not reached" when it does not within the budget). Several traces for one label (comma
    separated) are repetitions: the line is their mean, the band mean +- one standard error,
    the bars the mean time over the repetitions that reached the level (none if one did not);
  - for delay-only traces (no loss column): a histogram of the iteration times and their
    running mean, against --expected-iteration-time (the theory's closed form) when given.
"""
import argparse
import bisect
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LEVELS = (1e-1, 1e-2, 1e-3)


def read_trace(path):
    """Columns of a trace.csv as lists of floats, keyed by header name."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"error: {path}: empty trace")
    # Empty cells (gradient_error of row 0 and of Nesterov runs) read as NaN.
    return {key: [float(r[key]) if r[key] != "" else math.nan for r in rows] for key in rows[0]}


def time_to_level(trace, f_star, level):
    """Simulated time of the first row with (f - f*)/(f(x0) - f*) <= level; None if none."""
    gap0 = trace["loss"][0] - f_star
    for t, f in zip(trace["time"], trace["loss"]):
        if f - f_star <= level * gap0:
            return t
    return None


def value_at(trace, key, t):
    """The trace's `key` at simulated time t: the last row at or before t (a step function)."""
    k = bisect.bisect_right(trace["time"], t) - 1
    return trace[key][max(k, 0)]


def mean_se(values):
    """Mean and standard error (0 for a single value)."""
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))


def common_budget(series, budget=None):
    """The time budget shared by every trace: --time-budget, else the smallest last time."""
    last = min(trace["time"][-1] for _, traces in series for trace in traces)
    return last if budget is None else min(budget, last)


def suboptimality_curve(traces, f_star, budget, points=400):
    """(times, mean, se) of f - f* over the repetitions on a grid of [0, budget]."""
    grid = [budget * i / (points - 1) for i in range(points)]
    mean, se = [], []
    for t in grid:
        m, s = mean_se([value_at(tr, "loss", t) - f_star for tr in traces])
        mean.append(m)
        se.append(s)
    return grid, mean, se


def level_times(traces, f_star, budget, levels=LEVELS):
    """{level: mean time to it over the repetitions, or None when one did not reach it}."""
    out = {}
    for level in levels:
        times = [time_to_level(tr, f_star, level) for tr in traces]
        ok = [t for t in times if t is not None and t <= budget]
        out[level] = mean_se(ok) if len(ok) == len(times) else None
    return out


def draw_suboptimality(ax_curve, ax_bars, series, f_star, budget, colors=None, levels=LEVELS):
    """The f - f* panel and the time-to-level bars for `series` = [(label, [trace, ...])];
    a hatched bar up to the budget is a level not reached. Returns {label: level_times(...)}."""
    colors = colors or {}
    width = 0.8 / max(len(series), 1)
    result = {}
    floor = math.inf
    for k, (label, traces) in enumerate(series):
        grid, mean, se = suboptimality_curve(traces, f_star, budget)
        positive = [m for m in mean if m > 0]
        floor = min([floor] + positive)
        line, = ax_curve.plot(grid, mean, label=label, linewidth=1.6, color=colors.get(label))
        if len(traces) > 1:
            ax_curve.fill_between(grid, [m - s for m, s in zip(mean, se)],
                                  [m + s for m, s in zip(mean, se)],
                                  color=line.get_color(), alpha=0.25, linewidth=0)
        times = level_times(traces, f_star, budget, levels)
        result[label] = times
        for i, level in enumerate(levels):
            x = i + (k - (len(series) - 1) / 2) * width
            if times[level] is None:
                ax_bars.bar(x, budget, width, color="none", edgecolor=line.get_color(),
                            hatch="//", linewidth=0.8)
            else:
                m, s = times[level]
                ax_bars.bar(x, m, width, yerr=s if len(traces) > 1 else None, capsize=2,
                            color=line.get_color(), label=label if i == 0 else None)
    ax_curve.set_yscale("log")
    if math.isfinite(floor):
        ax_curve.set_ylim(bottom=floor / 3)
    ax_curve.set_xlim(0, budget)
    ax_curve.set_xlabel("simulated time (s)")
    ax_curve.set_ylabel("suboptimality f(x_t) - f*")
    ax_curve.grid(True, which="both", alpha=0.3)
    ax_curve.legend(fontsize=8)
    ax_bars.set_xticks(range(len(levels)))
    ax_bars.set_xticklabels([f"{level:g}" for level in levels])
    ax_bars.set_xlabel("relative suboptimality (f - f*)/(f(x0) - f*); hatched: not reached",
                       fontsize=8)
    ax_bars.set_ylabel("simulated time to reach it (s)")
    ax_bars.grid(True, axis="y", alpha=0.3)
    return result


def plot(series, title=None):
    """series: list of (label, trace dict). Loss against time and iterations (no f*)."""
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


def plot_suboptimality(series, f_star, budget=None, title=None, caption=None):
    """series: list of (label, [trace, ...]). Returns (figure, {label: level times})."""
    budget = common_budget(series, budget)
    fig, (ax_curve, ax_bars) = plt.subplots(1, 2, figsize=(12, 4.6),
                                            gridspec_kw={"width_ratios": [1.6, 1]})
    times = draw_suboptimality(ax_curve, ax_bars, series, f_star, budget)
    ax_curve.set_title(f"f* = {f_star:.6g}, common time budget {budget:.4g} s", fontsize=9)
    ax_bars.set_title("time to a relative suboptimality level", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    if caption:
        fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=8, wrap=True)
    fig.tight_layout(rect=(0, 0.06 if caption else 0, 1, 1))
    return fig, times


def plot_iteration_times(series, expected=None, title=None):
    """Delay-only traces: histogram of the iteration times and the running mean, against the
    expected iteration time when given. series: list of (label, trace dict)."""
    fig, (ax_hist, ax_mean) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, trace in series:
        times = trace["iteration_time"][1:]  # row 0 is the start, not an iteration
        ax_hist.hist(times, bins=40, alpha=0.5, density=True, label=label)
        running, total = [], 0.0
        for i, t in enumerate(times, start=1):
            total += t
            running.append(total / i)
        ax_mean.plot(range(1, len(times) + 1), running, label=f"{label}: running mean")
    if expected is not None:
        ax_hist.axvline(expected, color="black", linestyle="--", label=f"theory {expected:.4g} s")
        ax_mean.axhline(expected, color="black", linestyle="--", label=f"theory {expected:.4g} s")
    ax_hist.set_xlabel("iteration time (simulated s)")
    ax_hist.set_ylabel("density")
    ax_mean.set_xlabel("iterations")
    ax_mean.set_ylabel("mean iteration time so far (simulated s)")
    for ax in (ax_hist, ax_mean):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--title")
    parser.add_argument("--caption")
    parser.add_argument("--f-star", type=float)
    parser.add_argument("--time-budget", type=float)
    parser.add_argument("--expected-iteration-time", type=float)
    parser.add_argument("traces", nargs="+", help="LABEL=trace.csv[,trace.csv ...]")
    args = parser.parse_args(argv)
    series = []
    for item in args.traces:
        label, sep, paths = item.rpartition("=")
        if not sep:
            raise SystemExit(f"error: expected LABEL=trace.csv; got {item!r}")
        series.append((label, [read_trace(p) for p in paths.split(",")]))
    if any("loss" not in tr for _, traces in series for tr in traces):
        fig = plot_iteration_times([(label, traces[0]) for label, traces in series],
                                   args.expected_iteration_time, args.title)
    elif args.f_star is not None:
        fig, times = plot_suboptimality(series, args.f_star, args.time_budget, args.title,
                                        args.caption)
        for label, by_level in times.items():
            cells = [f"{lv:g}: " + ("not reached" if v is None else f"{v[0]:.4g} s")
                     for lv, v in by_level.items()]
            print(f"{label}: time to relative suboptimality " + ", ".join(cells))
    else:
        fig = plot([(label, traces[0]) for label, traces in series], args.title)
    fig.savefig(args.out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
