#!/usr/bin/env python3
"""The paper's workloads in three delay regimes: f - f* against simulated time up to a common
time budget, beside the time each scheme takes to reach relative suboptimality 1e-1, 1e-2, 1e-3.

usage: plot_regimes.py --sweeps DIR --f-star F_STAR.json --out FIGDIR
DIR holds the sweeps regime_<regime>_<workload>/ (experiments/paper/regime_*.json, run by
experiments/make_figures.sh); F_STAR.json maps each workload to its f* (the f_star of its
runs' summary.json; null when not computed, and the workload's row is left out). One PNG per
regime, paper_regime_<regime>.png, one row per
workload; the caption under each row is the delay model and network of that row's runs, read
from their summary.json (so it cannot disagree with what ran).
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_paper import COLORS, read_index, scheme_of  # noqa: E402
from plot_traces import common_budget, draw_suboptimality, read_trace  # noqa: E402

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
ORDER = ["uncoded", "exact FRC", "ErasureHead", "ignore stragglers"]
# Logistic regression with l2 = 1e-4 at step 1/beta is slow: within the budgets (about 30
# uncoded iterations) the runs reach half to a fifth of the initial gap, so those are the levels.
LEVELS = (0.5, 0.3, 0.2)


def label_of(scheme):
    name, d = scheme
    return {"uncoded": "uncoded (wait for all)",
            "exact FRC": f"exact FRC d={d}",
            "ErasureHead": f"ErasureHead d={d} r=15",
            "ignore stragglers": "ignore stragglers (uncoded, first 15)"}[name]


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


def regime_series(folder):
    """[(label, [traces])] of one sweep in ORDER, and the config of its first run."""
    rows = read_index(os.path.join(folder, "index.csv"))
    groups = {}
    config = None
    for row in rows:
        scheme = scheme_of(row)
        if scheme is None:
            continue
        run = os.path.join(folder, row["folder"])
        if config is None:
            with open(os.path.join(run, "summary.json")) as f:
                config = json.load(f)["config"]
        groups.setdefault(scheme, []).append(read_trace(os.path.join(run, "trace.csv")))
    keys = sorted(groups, key=lambda s: (ORDER.index(s[0]), s[1]))
    return [(label_of(k), groups[k]) for k in keys], config


def plot_regime(sweeps, regime, title, f_star):
    """One figure for `regime`; returns (figure, {workload: {label: level times}}), or (None, {})
    when no workload has both its sweep and an f*."""
    found = [(w, t) for w, t in WORKLOADS
             if os.path.exists(os.path.join(sweeps, f"regime_{regime}_{w}", "index.csv"))
             and f_star.get(w) is not None]
    if not found:
        return None, {}
    fig, axes = plt.subplots(len(found), 2, figsize=(13, 4.4 * len(found)), squeeze=False,
                             gridspec_kw={"width_ratios": [1.6, 1]})
    results = {}
    for i, (workload, name) in enumerate(found):
        series, config = regime_series(os.path.join(sweeps, f"regime_{regime}_{workload}"))
        colors = {label: COLORS[key] for label, key in
                  ((label_of((k, 2)), k) for k in ORDER)}
        budget = common_budget(series)
        results[workload] = draw_suboptimality(axes[i][0], axes[i][1], series,
                                               f_star[workload], budget, colors, LEVELS)
        data = config["data"]
        size = (f", {data['rows']} x {data['features']} before the test split"
                if "rows" in data and "features" in data else "")
        axes[i][0].set_title(f"{name}{size}, n = 30: f* = {f_star[workload]:.6g}\n"
                             + describe(config), fontsize=7)
        axes[i][1].set_title("time to relative suboptimality", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96), h_pad=3.0)
    return fig, results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", required=True)
    parser.add_argument("--f-star", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    with open(args.f_star) as f:
        f_star = json.load(f)
    for workload, value in f_star.items():
        if value is None:
            print(f"no regime figure row for {workload}: f* not computed", file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    for regime, title in REGIMES:
        if not any(os.path.exists(os.path.join(args.sweeps, f"regime_{regime}_{w}", "index.csv"))
                   for w, _ in WORKLOADS):
            continue
        fig, results = plot_regime(args.sweeps, regime, title, f_star)
        if fig is None:
            continue
        path = os.path.join(args.out, f"paper_regime_{regime}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        print(f"figure: {path}")
        for workload, by_label in results.items():
            for label, times in by_label.items():
                cells = [f"{lv:g}: " + ("not reached" if v is None else f"{v[0]:.4g} s")
                         for lv, v in times.items()]
                print(f"  {regime} {workload} {label}: " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
