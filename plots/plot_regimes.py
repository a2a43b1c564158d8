#!/usr/bin/env python3
"""The paper's workloads in three delay regimes, every scheme over its seeds: the mean gap f - f*
(each run's own f*) against simulated time with the band of the 95 % t interval, beside the time
each scheme takes to reach the panel's level (mean and 95 % t interval); and one table of those
times with the speedups, ratios of means over paired seeds with delta-method intervals.

usage: plot_regimes.py --sweeps DIR --out FIGDIR [--csv TABLE.csv] [--markdown TABLE.md]
                       [--tuned [--sustained]] [--levels TABLE.csv] [--fixed TABLE.csv]
                       [--auto-steps JSON]
DIR holds the finished sweeps regime_<regime>_<workload>/ (experiments/paper/regime_*.json: a
`schemes` list, repetitions over delay seeds on the same data; run by experiments/make_figures.sh).
One PNG per regime, paper_regime_<regime>.png, one row per workload; the caption of a row is
the delay model and network of its runs, read from their summary.json (so it cannot disagree
with what ran).

The level of a panel: uncoded's relative suboptimality (f - f*)/(f(x0) - f*) at half the common
budget, averaged over its seeds and rounded up to two significant digits, so that uncoded reaches
it about halfway (some 15 iterations in) and no scheme is judged on its first few iterations.
A scheme has a time when every one of its seeds reached the level within the budget (else the
table says k/n reached); a speedup needs both schemes' times: R = mean(baseline)/mean(scheme)
with the interval R -+ t * sqrt(sum_k (b_k - R y_k)^2 / (n - 1) / n) / mean(y) over the seeds k
(protocol_table.paired_ratio), "(not significant)" when it contains 1.

At tuned steps (experiments/tuned/regimes.py): --tuned names the figures
paper_regime_tuned_<regime>.png (default table FIGDIR/regimes_tuned.csv) over sweeps tuned by
`stragglersim sweep`'s "tune" key; --levels takes each panel's level from the fixed-step table
(so both tables time the same level); --fixed adds the fixed-step table's ErasureHead speedups
beside the tuned ones; --auto-steps (a JSON {sweep folder name: 1/beta}) states each scheme's
chosen step as a multiple of 1/beta, "edge" when it is the least or greatest of its grid (the
sweep's summary.csv `edge` column). --sustained (sweeps tuned with the objective's "sustained":
true, regimes.py --sustained) times each run from the start of its last stretch at or below the
level up to the budget, a run above it at the budget not reaching it, and names the outputs
paper_regime_tuned_sustained_<regime>.png and regimes_tuned_sustained.csv.
"""
import argparse
import csv
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_traces  # noqa: E402
from plot_nonconvex import write_figure_and_table  # noqa: E402
from protocol_table import interval, paired_ratio  # noqa: E402

REGIMES = [
    ("injected", "(a) the authors' injected delays: Model B, load-independent exponential "
                 "sleep of mean 0.5 s after a compute time from the partition's size"),
    ("cluster", "(b) a cluster: compute time proportional to the partition's non-zeros, "
                "natural tail as large as the compute (Model A), serial 1 Gbit/s link at "
                "the master receiving p float64 values per worker"),
    ("model_a", "(c) Model A as elsewhere in this project: a = 1 s, λ = 1/s, shift and tail "
                "both scale with the load"),
]
WORKLOADS = [
    ("fashion_mnist", "Fashion-MNIST 0 vs 6 (logistic, p = 784)"),
    ("amazon_like", "Amazon-like (logistic, sparse one-hot, 45 non-zeros per row)"),
    ("covtype_like", "covtype-like (logistic, sparse, 88 non-zeros per row)"),
    ("kc_housing_like", "KC-housing-like (least squares, sparse, 28 non-zeros per row)"),
]
# Scheme families by the start of the scheme's name in the sweep files, with their colours.
FAMILIES = [("uncoded", "tab:gray"), ("exact FRC", "tab:blue"), ("ErasureHead", "tab:red"),
            ("ignore stragglers", "tab:orange"), ("K-sync", "tab:green"),
            ("K-async", "tab:purple"), ("Anytime", "tab:brown")]


def family(scheme):
    for name, _ in FAMILIES:
        if scheme.startswith(name):
            return name
    raise SystemExit(f"error: scheme {scheme!r} is none of {', '.join(n for n, _ in FAMILIES)}")


def describe(config):
    """The delay model and network of a resolved config, every rate stated."""
    d = config["delay"]
    text = (f"delay {d['kind']}: shift a = {d['shift']:.3g} s per unit load, rate λ = "
            f"{d['rate']:.4g}/s (tail mean {1 / d['rate']:.3g} s), tail {d['tail']}\n")
    net = config.get("network")
    if net:
        bandwidth = net.get("bandwidth")
        text += (f"network: latency {net['latency']:.3g} s, bandwidth "
                 f"{bandwidth:.3g} B/s, {net.get('value_bytes', 8)} bytes per value, "
                 f"{'serial' if net['serial'] else 'parallel'} link; ")
    budget = config["optimizer"].get("time_budget")
    if budget:
        text += f"time budget {budget:g} s"
    return text


def first_config(folder):
    """The resolved config of the sweep's first run (its summary.json)."""
    rows = plot_traces.plot_sweep.read_index(folder)[1]
    with open(os.path.join(folder, rows[0]["folder"], "summary.json")) as f:
        return json.load(f)["config"]


def relative_gap(run, t):
    f_star = float(run["f_star"])
    return (plot_traces.value_at(run, "loss", t) - f_star) / (run["loss"][0] - f_star)


def round_up(value, digits=2):
    """`value` > 0 rounded up to `digits` significant digits."""
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return math.ceil(value / scale - 1e-9) * scale


def level_of(runs, budget):
    """The panel's level: uncoded's mean relative gap at budget/2, rounded up."""
    uncoded = [r for r in runs if family(r["scheme"]) == "uncoded"]
    if not uncoded:
        raise SystemExit("error: a regime sweep without an uncoded scheme; expected one named "
                         "'uncoded' (the level and the speedups are taken against it)")
    return round_up(sum(relative_gap(r, budget / 2) for r in uncoded) / len(uncoded))


def time_to(run, level, budget, sustained=False):
    """Simulated time of the run's first row at relative gap <= level within budget, or None;
    sustained: the time from which it stays there up to the budget (plot_traces.time_to_stay)."""
    if sustained:
        return plot_traces.time_to_stay(run, float(run["f_star"]), level, budget)
    t = plot_traces.time_to_level(run, float(run["f_star"]), level)
    return t if t is not None and t <= budget else None


def scheme_rows(runs, level, budget, sustained=False):
    """One dict per scheme (first-appearance order): runs, reached, mean time and its 95 % t
    interval (all reached), speedups over uncoded and over exact FRC (paired by repetition)."""
    by_scheme = {}
    for r in runs:
        by_scheme.setdefault(r["scheme"], {})[int(r["rep"])] = time_to(r, level, budget,
                                                                         sustained)
    complete = {s: t for s, t in by_scheme.items() if all(v is not None for v in t.values())}
    reference = {fam: next((s for s in complete if family(s) == fam), None)
                 for fam in ("uncoded", "exact FRC")}
    out = []
    for scheme, times in by_scheme.items():
        reps = sorted(times)
        row = {"scheme": scheme, "runs": len(reps),
               "reached": sum(times[k] is not None for k in reps),
               "time": math.nan, "time_low": math.nan, "time_high": math.nan}
        if scheme in complete:
            values = [times[k] for k in reps]
            mean, se = plot_traces.mean_se(values)
            half = plot_traces.t_quantile(len(values)) * se if len(values) > 1 else math.nan
            row.update(time=mean, time_low=mean - half, time_high=mean + half)
        for fam, key in (("uncoded", "vs_uncoded"), ("exact FRC", "vs_exact_frc")):
            base = reference[fam]
            ratio = None
            if scheme in complete and base is not None and family(scheme) != fam:
                ratio = paired_ratio([by_scheme[base][k] for k in reps],
                                     [times[k] for k in reps])
            row[key], row[key + "_low"], row[key + "_high"] = (ratio[:3] if ratio
                                                               else (math.nan,) * 3)
        out.append(row)
    return out


def draw_panel(ax_curve, ax_bars, folder, level, sustained=False):
    """The gap bands and the level bars of one sweep; returns (budget, scheme rows)."""
    lead, runs = plot_traces.read_sweep_traces(folder)
    if "scheme" not in lead:
        raise SystemExit(f"error: {folder}: no scheme column; expected a sweep with `schemes`")
    budget = min(r["time"][-1] for r in runs)
    level = level_of(runs, budget) if level is None else level
    bands = plot_traces.sweep_bands(folder, budget=budget)
    colors = dict(FAMILIES)
    floor = math.inf
    for label, (grid, mean, low, high, n) in bands.items():
        color = colors[family(label)]
        floor = min([floor] + [m for m in mean if m > 0])
        ax_curve.plot(grid, mean, label=f"{label} ({n} seeds)", linewidth=1.4, color=color)
        if n > 1:
            ax_curve.fill_between(grid, [max(v, 0.0) for v in low], high, color=color,
                                  alpha=0.2, linewidth=0)
    ax_curve.set_yscale("log")
    if math.isfinite(floor):
        ax_curve.set_ylim(bottom=floor / 3)
    ax_curve.set_xlim(0, budget)
    ax_curve.set_xlabel("simulated time (s)")
    ax_curve.set_ylabel("f(x_t) - f*  (mean, band: 95 % t interval)", fontsize=8)
    ax_curve.grid(True, which="both", alpha=0.3)
    ax_curve.legend(fontsize=6)
    rows = scheme_rows(runs, level, budget, sustained)
    for k, row in enumerate(rows):
        color = colors[family(row["scheme"])]
        if math.isnan(row["time"]):
            ax_bars.bar(k, budget, 0.8, color="none", edgecolor=color, hatch="//",
                        linewidth=0.8)
            ax_bars.text(k, budget, f"{row['reached']}/{row['runs']}", ha="center",
                         va="bottom", fontsize=7)
        else:
            half = row["time_high"] - row["time"]
            ax_bars.bar(k, row["time"], 0.8, yerr=None if math.isnan(half) else half,
                        capsize=3, color=color)
    ax_bars.set_xticks(range(len(rows)))
    ax_bars.set_xticklabels([r["scheme"] for r in rows], rotation=35, ha="right", fontsize=7)
    ax_bars.set_ylabel("simulated time to the level (s)", fontsize=8)
    reach = "from which it stays at or below" if sustained else "to"
    ax_bars.set_title(f"time {reach} relative suboptimality {level:g}"
                      + ("\n" if sustained else " ")
                      + "(95 % t; hatched: not every seed within the budget)", fontsize=8)
    ax_bars.grid(True, axis="y", alpha=0.3)
    for row in rows:
        row["level"] = level
        row["budget"] = budget
    return budget, rows


def tuned_choices(folder):
    """{scheme: (chosen step, edge)} from a tuned sweep's summary.csv (`optimizer.step` and
    `edge` columns), or {} when the sweep tuned no step."""
    path = os.path.join(folder, "summary.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "optimizer.step" not in rows[0]:
        return {}
    choices = {}
    for row in rows:
        choice = (float(row["optimizer.step"]), "/optimizer/step" in row.get("edge", "").split())
        if choices.setdefault(row["scheme"], choice) != choice:
            raise SystemExit(f"error: {path}: scheme {row['scheme']!r} has two chosen steps")
    return choices


def add_choices(rows, folder, auto_step):
    """Each scheme row's chosen step, as a multiple of 1/beta when `auto_step` is known."""
    choices = tuned_choices(folder)
    for row in rows:
        step, edge = choices.get(row["scheme"], (math.nan, False))
        row["step"] = step
        row["step_multiple"] = step / auto_step if auto_step else math.nan
        row["step_at_edge"] = edge


def plot_regime(sweeps, regime, title, levels=None, auto_steps=None, sustained=False):
    """One figure for `regime`; returns (figure, {workload: scheme rows}), or (None, {}) when
    none of its sweeps is there. `levels` maps a workload to a fixed level; `auto_steps` maps a
    sweep folder's name to 1/beta (tuned sweeps: the chosen steps are stated as its multiples)."""
    found = [(w, t) for w, t in WORKLOADS
             if os.path.exists(os.path.join(sweeps, f"regime_{regime}_{w}", "traces.csv"))]
    if not found:
        return None, {}
    fig, axes = plt.subplots(len(found), 2, figsize=(14, 4.8 * len(found)), squeeze=False,
                             gridspec_kw={"width_ratios": [1.5, 1]})
    results = {}
    for i, (workload, name) in enumerate(found):
        folder = os.path.join(sweeps, f"regime_{regime}_{workload}")
        _, rows = draw_panel(axes[i][0], axes[i][1], folder, (levels or {}).get(workload),
                             sustained)
        if auto_steps is not None:
            add_choices(rows, folder, auto_steps.get(f"regime_{regime}_{workload}"))
            axes[i][1].set_xticklabels(
                [r["scheme"] + ("" if math.isnan(r["step_multiple"]) else
                                f" at {r['step_multiple']:.3g}/β") for r in rows],
                rotation=35, ha="right", fontsize=7)
        results[workload] = rows
        config = first_config(folder)
        data = config["data"]
        size = (f", {data['rows']} x {data['features']} before the test split"
                if "rows" in data and "features" in data else "")
        axes[i][0].set_title(f"{name}{size}, n = {config['workers']}\n" + describe(config),
                             fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97), h_pad=3.0)
    return fig, results


def cell(row):
    text = (f"{row['reached']}/{row['runs']} reached" if math.isnan(row["time"]) else
            f"{row['time']:.3g} [{row['time_low']:.3g}, {row['time_high']:.3g}]")
    if not math.isnan(row.get("step_multiple", math.nan)):
        text += f" at {row['step_multiple']:.3g}/β" + (" (edge)" if row["step_at_edge"] else "")
    return text


def speedup_cell(row, key):
    return ("—" if row is None or math.isnan(row[key])
            else interval(row[key], row[key + "_low"], row[key + "_high"]))


def read_fixed(path):
    """{(regime, workload, family): row} of a fixed-step table (this script's CSV)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise SystemExit(f"error: {path}: {e}")
    out = {}
    for line, row in enumerate(rows, start=2):
        try:
            converted = {k: float(row[k]) if row[k] != "" else math.nan for k in
                         ("level", "vs_uncoded", "vs_uncoded_low", "vs_uncoded_high",
                          "vs_exact_frc", "vs_exact_frc_low", "vs_exact_frc_high")}
            key = (row["regime"], row["workload"], family(row["scheme"]))
        except (KeyError, ValueError):
            raise SystemExit(f"error: {path}:{line}: expected the columns of plot_regimes.py's "
                             "table (regime, workload, scheme, level, vs_uncoded…) with numbers")
        out[key] = converted
    return out


def markdown(table, fixed=None):
    """One line per (regime, workload): the level, each family's time, ErasureHead's speedups
    (with `fixed`, each beside the fixed-step table's)."""
    names = [n for n, _ in FAMILIES]
    heads = (["ErasureHead vs uncoded", "ErasureHead vs exact FRC"] if fixed is None else
             ["ErasureHead vs uncoded, tuned", "at step 1/β", "ErasureHead vs exact FRC, tuned",
              "at step 1/β"])
    lines = ["| regime | workload | level | " + " | ".join(names + heads) + " |",
             "|" + "---|" * (len(names) + len(heads) + 3)]
    for (regime, workload), rows in table.items():
        by_family = {family(r["scheme"]): r for r in rows}
        cells = [cell(by_family[n]) if n in by_family else "—" for n in names]
        eh = by_family.get("ErasureHead")
        for key in ("vs_uncoded", "vs_exact_frc"):
            cells.append(speedup_cell(eh, key))
            if fixed is not None:
                cells.append(speedup_cell(fixed.get((regime, workload, "ErasureHead")), key))
        lines.append(f"| {regime} | {workload} | {rows[0]['level']:g} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--csv", help="the table of every scheme (default: FIGDIR/regimes.csv)")
    parser.add_argument("--markdown", help="also write the summary table here (Markdown)")
    parser.add_argument("--tuned", action="store_true",
                        help="sweeps at tuned steps: paper_regime_tuned_<regime>.png")
    parser.add_argument("--levels", help="each panel's level from this fixed-step table (CSV)")
    parser.add_argument("--fixed", help="the fixed-step table (CSV) whose speedups go beside")
    parser.add_argument("--auto-steps", help="JSON {sweep folder name: 1/beta}")
    parser.add_argument("--sustained", action="store_true",
                        help="time each run from when it stays at or below the level (sweeps "
                             "tuned with the sustained objective): paper_regime_tuned_sustained_"
                             "<regime>.png, regimes_tuned_sustained.csv")
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    fixed = read_fixed(args.fixed) if args.fixed else None
    levels = read_fixed(args.levels) if args.levels else {}
    auto_steps = None
    if args.auto_steps:
        with open(args.auto_steps) as f:
            auto_steps = json.load(f)
    if args.sustained and not args.tuned:
        print("error: --sustained: expected --tuned too (sweeps tuned with \"sustained\": "
              "true, experiments/tuned/regimes.py --sustained)", file=sys.stderr)
        return 2
    prefix = ("paper_regime_tuned_sustained_" if args.sustained else
              "paper_regime_tuned_" if args.tuned else "paper_regime_")
    table = {}
    figures = []
    for regime, title in REGIMES:
        panel_levels = {w: row["level"] for (r, w, _), row in levels.items() if r == regime}
        if args.tuned:
            title += "\nevery scheme at its own tuned step (2 tuning seeds), the level as at step 1/β"
        if args.sustained:
            title += "; tuned and timed to the level kept to the budget"
        fig, results = plot_regime(args.sweeps, regime, title, panel_levels, auto_steps,
                                   args.sustained)
        if fig is None:
            continue
        figures.append((regime, fig))
        for workload, rows in results.items():
            table[(regime, workload)] = rows
    if not figures:
        raise SystemExit(f"error: no regime_<regime>_<workload>/traces.csv under {args.sweeps}")
    for regime, fig in figures[:-1]:
        path = os.path.join(args.out, f"{prefix}{regime}.png")
        fig.savefig(path + ".tmp.png", dpi=90)
        plt.close(fig)
        os.replace(path + ".tmp.png", path)
        print(f"figure: {path}")
    flat = [{"regime": regime, "workload": workload, **row}
            for (regime, workload), rows in table.items() for row in rows]
    regime, fig = figures[-1]
    default_csv = ("regimes_tuned_sustained.csv" if args.sustained else
                   "regimes_tuned.csv" if args.tuned else "regimes.csv")
    write_figure_and_table(fig, os.path.join(args.out, f"{prefix}{regime}.png"), flat,
                           args.csv or os.path.join(args.out, default_csv))
    text = markdown(table, fixed)
    print(text)
    if args.markdown:
        with open(args.markdown + ".tmp", "w") as f:
            f.write(text + "\n")
        os.replace(args.markdown + ".tmp", args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
