#!/usr/bin/env python3
"""Measured mean suboptimality against the exact least-squares curve and the coded bound
(docs/convergence.md), from `stragglersim theory CONFIG --measure N --csv FILE`.

usage: plot_theory_vs_measured.py FILE.csv [LABEL=FILE.csv ...] --out FIG.png [--title T]
A bare FILE.csv is labelled by its name. Each file gives one panel; log vertical axis. Where the
CSV's bound_pl_routes column differs from bound, the PL routes' bound (the bound without the
convex route) is drawn too; where FILE.json (the `theory --json` output of the same command)
sits beside FILE.csv, so are the fitted floor and rate of the measured mean.
"""
import argparse
import csv
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(text):
    """A CSV cell as float (nan when empty: no exact curve or no bound)."""
    return float(text) if text not in ("", None) else math.nan


def read_curves(path):
    """The CSV's columns; with the fit of FILE.json under "fit" when that file exists."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"error: {path}: no rows")
    curves = {key: [number(r[key]) for r in rows] for key in rows[0]}
    fit_path = os.path.splitext(path)[0] + ".json"
    if os.path.exists(fit_path):
        with open(fit_path) as f:
            theory = json.load(f)
        curves["fit"] = {key: theory.get(key) for key in
                         ("measured_floor", "measured_rate", "measured_rate_window")}
    return curves


def fitted_line(mean, fit):
    """floor + exp(a + t·log rate) on the decay window [1, t_end]: the measured fit of
    docs/convergence.md, its intercept a recovered as the least-squares one for that slope over
    the same points (those with mean > floor). None when there is no rate."""
    floor, rate, window = fit["measured_floor"], fit["measured_rate"], fit["measured_rate_window"]
    if rate is None or floor is None or not window or window[1] < 1:
        return None
    points = [(t, math.log(mean[t] - floor)) for t in range(1, window[1] + 1) if mean[t] > floor]
    if len(points) < 3:
        return None
    slope = math.log(rate)
    a = sum(y for _, y in points) / len(points) - slope * sum(t for t, _ in points) / len(points)
    ts = list(range(1, window[1] + 1))
    return ts, [floor + math.exp(a + slope * t) for t in ts]


def plot(series, title=None):
    """series: list of (label, curves). Returns the figure (tests read its lines back)."""
    fig, axes = plt.subplots(1, len(series), figsize=(5.6 * len(series), 4.2), squeeze=False)
    for ax, (label, c) in zip(axes[0], series):
        t = c["iteration"]
        lo = [max(m - 4 * s, 1e-300) for m, s in zip(c["measured_mean"], c["measured_se"])]
        hi = [m + 4 * s for m, s in zip(c["measured_mean"], c["measured_se"])]
        ax.fill_between(t, lo, hi, color="C0", alpha=0.25, linewidth=0)
        ax.plot(t, c["measured_mean"], "-", color="C0", label="measured mean (±4 s.e.)")
        if not all(math.isnan(v) for v in c["exact"]):
            ax.plot(t, c["exact"], "--", color="C1", label="exact E[f - f*] (least squares)")
        if not all(math.isnan(v) for v in c["bound"]):
            ax.plot(t, c["bound"], ":", color="C3", linewidth=2, label="coded bound")
        # Older CSVs have no sd columns; the exact sd may stop early (its cost budget).
        # x_0 is deterministic: its sd of 0 has no place on a log axis.
        exact_sd = [v if v > 0 else math.nan for v in c.get("exact_sd", [])]
        if exact_sd and not all(math.isnan(v) for v in exact_sd):
            measured_sd = [v if v > 0 else math.nan for v in c["measured_sd"]]
            ax.plot(t, measured_sd, "-", color="C2", linewidth=0.8, alpha=0.6,
                    label="measured sd of f - f* across runs")
            ax.plot(t, exact_sd, "--", color="C2", linewidth=1, label="exact sd of f - f*")
        pl = c.get("bound_pl_routes")
        if pl and any(p != b for p, b in zip(pl, c["bound"]) if not math.isnan(p)):
            ax.plot(t, pl, "-.", color="0.45", linewidth=1,
                    label="PL routes only (the bound without the convex route)")
        if c.get("fit"):
            line = fitted_line(c["measured_mean"], c["fit"])
            if line:
                ax.plot(line[0], line[1], "-", color="k", linewidth=0.8,
                        label=f"fitted: rate {c['fit']['measured_rate']:.4g}/step")
            ax.axhline(c["fit"]["measured_floor"], color="k", linestyle=(0, (1, 3)),
                       linewidth=0.8, label=f"fitted floor {c['fit']['measured_floor']:.3g}")
        ax.set_yscale("log")
        ax.set_xlabel("iteration t")
        ax.set_ylabel("f(x_t) - f*")
        ax.set_title(label)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curves", nargs="+", help="[LABEL=]file.csv")
    parser.add_argument("--out", required=True)
    parser.add_argument("--title")
    args = parser.parse_args()
    series = []
    for item in args.curves:
        label, _, path = item.rpartition("=")
        series.append((label or os.path.basename(path), read_curves(path)))
    plot(series, args.title).savefig(args.out, dpi=130)


if __name__ == "__main__":
    main()
