#!/usr/bin/env python3
"""Traces against simulated time: training loss, suboptimality f - f*, or iteration times.

usage: plot_traces.py --out FIG.png [--title T] [--caption C] [--f-star F] [--time-budget B]
                      [--expected-iteration-time E] LABEL=trace.csv[,trace.csv ...] ...
       plot_traces.py --out FIG.png --sweep DIR [--group-by COLUMN] [--time-budget B] [--title T]
Reads stragglersim trace.csv files (docs/model.md §7) and writes one PNG:
  - with --sweep DIR: DIR/traces.csv of a finished sweep (docs/sweeps.md): the mean over the
    runs of each group (--group-by, default scheme; any leading column of traces.csv such as
    stopping.r) of the gap f - f*, each run with its own f*, against simulated time up to the
    common budget, with the band of the 95 % t interval over the runs;
  - LABEL=paths splits at the first '=' after which every path exists (sweep folders hold '=');
  - without f*: training loss against simulated time and against iterations;
  - with f*: --f-star for every trace, or each trace's own from the summary.json beside it
    when every trace has one: f - f* (log) against simulated time up to the common time budget (the
    smallest last time of the traces, or --time-budget), beside bars of the time each scheme
    takes to reach the relative suboptimality levels (f - f*)/(f(x0) - f*) <= 1e-1, 1e-2, 1e-3
    ("not reached" when it does not within the budget). Several traces for one label (comma
    separated) are repetitions: the line is their mean, the band its 95 % t interval over the
    repetitions, the bars the mean time over the repetitions that reached the level with its
    95 % interval as the error bar (no bar if one did not);
  - for delay-only traces (no loss column): a histogram of the iteration times and their
    running mean, against --expected-iteration-time (the theory's closed form) when given.
"""
import argparse
import bisect
import csv
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_sweep  # noqa: E402

LEVELS = (1e-1, 1e-2, 1e-3)


def read_trace(path):
    """Columns of a trace.csv as lists of floats, keyed by header name; "f_star" (a number) the
    f* of the summary.json beside it, when it has one."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"error: {path}: empty trace")
    # Empty cells (gradient_error of row 0 and of Nesterov runs) read as NaN.
    trace = {key: [float(r[key]) if r[key] != "" else math.nan for r in rows] for key in rows[0]}
    summary = os.path.join(os.path.dirname(os.path.abspath(path)), "summary.json")
    if os.path.isfile(summary):
        with open(summary) as f:
            f_star = json.load(f).get("f_star")
        if isinstance(f_star, (int, float)):
            trace["f_star"] = float(f_star)
    return trace


def split_item(item):
    """LABEL=path[,path ...]: split at the first '=' after which every path exists (sweep
    folder names hold '='), else at the last one."""
    for k, c in enumerate(item):
        if c == "=" and all(os.path.exists(p) for p in item[k + 1:].split(",")):
            return item[:k], item[k + 1:].split(",")
    label, sep, paths = item.rpartition("=")
    if not sep:
        raise SystemExit(f"error: expected LABEL=trace.csv; got {item!r}")
    return label, paths.split(",")


def t_quantile(n):
    """The 97.5 % quantile of Student's t with n - 1 degrees of freedom (n >= 2)."""
    from scipy.stats import t
    return float(t.ppf(0.975, n - 1))


def read_sweep_traces(folder):
    """DIR/traces.csv as ({group key columns}, [run dict]) where a run dict has the run's
    leading cells ("scheme", grid columns, "rep"), "time", "loss" lists and its "f_star"."""
    try:
        columns, rows = plot_sweep.read_sweep_csv(folder, "traces.csv")
    except plot_sweep.UsageError as e:
        raise SystemExit(f"error: {e}")
    lead = columns[:columns.index("rep") + 1]
    runs = {}
    for row in rows:
        key = tuple(row[c] for c in lead)
        run = runs.setdefault(key, {**{c: row[c] for c in lead}, "time": [], "loss": [],
                                    "f_star": row["f_star"]})
        run["time"].append(float(row["time"]))
        run["loss"].append(float(row["loss"]) if row["loss"] != "" else math.nan)
    return lead[:-1], list(runs.values())


def sweep_bands(folder, group_by="scheme", budget=None, points=400):
    """{group value: (times, mean gap, 95 % low, 95 % high, runs)} of a sweep's traces.csv, the
    groups in order of first appearance; the gap of a run is its loss minus its own f*."""
    lead, runs = read_sweep_traces(folder)
    if group_by not in lead:
        raise SystemExit(f"error: no column {group_by!r} in traces.csv to group by; expected "
                         f"one of {', '.join(lead)}")
    if any(r["f_star"] == "" for r in runs):
        raise SystemExit("error: some run of the sweep has no f* (f_star) in traces.csv; "
                         "expected runs with data and an optimum")
    last, shortest = min((r["time"][-1], r[group_by]) for r in runs)
    budget = clipped_budget(budget, last, f"{group_by} {shortest}")
    grid = [budget * i / (points - 1) for i in range(points)]
    groups = {}
    for r in runs:
        groups.setdefault(r[group_by], []).append(r)
    bands = {}
    for label, members in groups.items():
        n = len(members)
        half_factor = t_quantile(n) if n > 1 else 0.0
        mean, low, high = [], [], []
        for t in grid:
            m, se = mean_se([value_at(r, "loss", t) - float(r["f_star"]) for r in members])
            mean.append(m)
            low.append(m - half_factor * se)
            high.append(m + half_factor * se)
        bands[label] = (grid, mean, low, high, n)
    return bands


def plot_sweep_gap(bands, group_by, title=None):
    """One line per group: the mean gap f - f* (log) against simulated time, its 95 % band."""
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    floor = math.inf
    for label, (grid, mean, low, high, n) in bands.items():
        floor = min([floor] + [m for m in mean if m > 0])
        line, = ax.plot(grid, mean, label=f"{plot_sweep.readable(group_by)} = {label} ({n} runs)",
                        linewidth=1.6)
        if n > 1:
            ax.fill_between(grid, [max(v, 0.0) for v in low], high, color=line.get_color(),
                            alpha=0.25, linewidth=0)
    ax.set_yscale("log")
    if math.isfinite(floor):
        ax.set_ylim(bottom=floor / 3)
    ax.set_xlim(0, max(grid for grid, *_ in bands.values())[-1])
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("mean loss gap f(x_t) - f* (band: 95 % interval)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    plot_sweep.readable_ticks(ax)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def time_to_level(trace, f_star, level):
    """Simulated time of the first row with (f - f*)/(f(x0) - f*) <= level; None if none."""
    gap0 = trace["loss"][0] - f_star
    for t, f in zip(trace["time"], trace["loss"]):
        if f - f_star <= level * gap0:
            return t
    return None


def time_to_stay(trace, f_star, level, until):
    """Simulated time from which every row up to time `until` has (f - f*)/(f(x0) - f*) <=
    level (the start of the last such stretch); None if the last row by `until` is above it."""
    gap0 = trace["loss"][0] - f_star
    start = None
    for t, f in zip(trace["time"], trace["loss"]):
        if t > until:
            break
        if f - f_star <= level * gap0:
            start = t if start is None else start
        else:
            start = None
    return start


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


def clipped_budget(budget, last, shortest):
    """min(budget, last), saying on stderr when --time-budget is past the shortest run's end
    (the curves cannot go on where a run has no rows). budget None: last."""
    if budget is None:
        return last
    if budget > last:
        print(f"plot_traces: --time-budget {budget:g} s is past the end of the shortest run "
              f"({shortest}, {last:.4g} s): the figure stops at {last:.4g} s", file=sys.stderr)
    return min(budget, last)


def common_budget(series, budget=None):
    """The time budget shared by every trace: --time-budget, else the smallest last time;
    a --time-budget past that is clipped to it, and said so."""
    last, shortest = min((trace["time"][-1], label) for label, traces in series
                         for trace in traces)
    return clipped_budget(budget, last, shortest)


def star(trace, f_star):
    """f* of a trace: the given one, else the trace's own (from its summary.json)."""
    return trace["f_star"] if f_star is None else f_star


def suboptimality_curve(traces, f_star, budget, points=400):
    """(times, mean, se) of f - f* over the repetitions on a grid of [0, budget]; f_star None:
    each trace's own."""
    grid = [budget * i / (points - 1) for i in range(points)]
    mean, se = [], []
    for t in grid:
        m, s = mean_se([value_at(tr, "loss", t) - star(tr, f_star) for tr in traces])
        mean.append(m)
        se.append(s)
    return grid, mean, se


def level_times(traces, f_star, budget, levels=LEVELS):
    """{level: mean time to it over the repetitions, or None when one did not reach it}."""
    out = {}
    for level in levels:
        times = [time_to_level(tr, star(tr, f_star), level) for tr in traces]
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
        n = len(traces)
        shown = f"{label} ({n} runs)" if n > 1 else label
        line, = ax_curve.plot(grid, mean, label=shown, linewidth=1.6, color=colors.get(label))
        half = t_quantile(n) if n > 1 else 0.0  # 95 % t interval over the repetitions
        if n > 1:
            ax_curve.fill_between(grid, [m - half * s for m, s in zip(mean, se)],
                                  [m + half * s for m, s in zip(mean, se)],
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
                ax_bars.bar(x, m, width, yerr=half * s if n > 1 else None, capsize=2,
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
    plot_sweep.readable_ticks(ax_curve)
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
    asked = budget
    budget = common_budget(series, budget)
    fig, (ax_curve, ax_bars) = plt.subplots(1, 2, figsize=(12, 4.6),
                                            gridspec_kw={"width_ratios": [1.6, 1]})
    times = draw_suboptimality(ax_curve, ax_bars, series, f_star, budget)
    shown = f"f* = {f_star:.6g}" if f_star is not None else "f* of each run's summary.json"
    bands = ", mean over runs, bands and error bars: 95 % t interval" if any(
        len(traces) > 1 for _, traces in series) else ""
    clipped = (f" (asked {asked:g} s: the shortest run ends there)"
               if asked is not None and asked > budget else "")
    ax_curve.set_title(f"{shown}, common time budget {budget:.4g} s{clipped}{bands}", fontsize=9)
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
    parser.add_argument("--sweep", help="a finished sweep's --out folder (reads traces.csv)")
    parser.add_argument("--group-by", default="scheme",
                        help="traces.csv column: one line per value (default scheme)")
    parser.add_argument("traces", nargs="*", help="LABEL=trace.csv[,trace.csv ...]")
    args = parser.parse_args(argv)
    if args.sweep:
        if args.traces:
            raise SystemExit("error: give either --sweep DIR or LABEL=trace.csv items, not both")
        group_by = args.group_by.lstrip("/").replace("/", ".")
        bands = sweep_bands(args.sweep, group_by, args.time_budget)
        plot_sweep_gap(bands, group_by, args.title).savefig(args.out, dpi=120)
        return 0
    if not args.traces:
        raise SystemExit("error: expected --sweep DIR or LABEL=trace.csv items")
    series = []
    for item in args.traces:
        label, paths = split_item(item)
        series.append((label, [read_trace(p) for p in paths]))
    own_f_star = all("f_star" in tr for _, traces in series for tr in traces)
    if any("loss" not in tr for _, traces in series for tr in traces):
        fig = plot_iteration_times([(label, traces[0]) for label, traces in series],
                                   args.expected_iteration_time, args.title)
    elif args.f_star is not None or own_f_star:
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
