#!/usr/bin/env python3
"""The Amazon-like injected-regime comparison under two protocols, as a Markdown table.

usage: protocol_table.py DIR [DIR ...]
Each DIR is a finished sweep with `schemes`, a `target_loss` and baseline uncoded
(experiments/paper/protocol_*.json), named by its sweep's name. One row per scheme: its runs, the time to the target loss
(mean and 95 % t interval over the seeds, from summary.csv), the speedup over uncoded (summary.csv:
ratio of means, delta-method interval) and, for an ErasureHead scheme, the speedup over the exact
FRC scheme of the same d, computed here the same way (docs/sweeps.md "summary.csv"): the ratio of
means R = mean(b)/mean(y) over the repetitions k where both runs reached the target, with the
interval R -+ t * sqrt(sum_k (b_k - R y_k)^2 / (n - 1) / n) / mean(y). An interval that contains
1 is marked "(not significant)".
"""
import json
import math
import os
import re
import sys

import pandas as pd
from scipy.stats import t as student_t


def paired_ratio(baseline, times):
    """(R, low, high, n) of mean(baseline)/mean(times) over pairs where both are numbers."""
    pairs = [(b, y) for b, y in zip(baseline, times)
             if isinstance(b, float) and isinstance(y, float) and not math.isnan(b)
             and not math.isnan(y) and b > 0 and y > 0]
    n = len(pairs)
    if n == 0:
        return None
    mean_b = sum(b for b, _ in pairs) / n
    mean_y = sum(y for _, y in pairs) / n
    r = mean_b / mean_y
    if n < 2:
        return r, math.nan, math.nan, n
    spread = math.sqrt(sum((b - r * y) ** 2 for b, y in pairs) / (n - 1) / n) / mean_y
    half = float(student_t.ppf(0.975, n - 1)) * spread
    return r, r - half, r + half, n


def interval(r, low, high):
    text = f"{r:.2f}× [{low:.2f}, {high:.2f}]"
    return text + (" (not significant)" if low <= 1.0 <= high else "")


def sweep_name(folder):
    """The sweep's name (its sweep_spec.json), else the folder's."""
    try:
        with open(os.path.join(folder, "sweep_spec.json")) as f:
            return json.load(f)["name"]
    except (OSError, ValueError, KeyError):
        return os.path.basename(os.path.normpath(folder))


def rows(folder):
    """Table rows (dicts) of one protocol sweep."""
    summary = pd.read_csv(os.path.join(folder, "summary.csv"))
    index = pd.read_csv(os.path.join(folder, "index.csv"))
    times = {scheme: [float(v) for v in group.sort_values("repetition")["time_to_target"]]
             for scheme, group in index.groupby("scheme")}
    out = []
    for _, row in summary.iterrows():
        scheme = row["scheme"]
        entry = {"protocol": sweep_name(folder), "scheme": scheme,
                 "runs": int(row["runs"]), "reached": int(row["time_to_target_n"]),
                 "time": row["time_to_target_mean"], "time_low": row["time_to_target_ci_low"],
                 "time_high": row["time_to_target_ci_high"],
                 "vs_uncoded": (row["speedup_time_to_target"],
                                row["speedup_time_to_target_ci_low"],
                                row["speedup_time_to_target_ci_high"]),
                 "vs_exact": None}
        match = re.match(r"ErasureHead d=(\d+)", scheme)
        if match and f"exact FRC d={match.group(1)}" in times:
            entry["vs_exact"] = paired_ratio(times[f"exact FRC d={match.group(1)}"],
                                             times[scheme])
        out.append(entry)
    return out


def markdown(all_rows):
    lines = ["| protocol | scheme | reached / runs | time to target (s, ± 95 %) | speedup over "
             "uncoded | speedup over exact FRC (same d) |",
             "|---|---|---|---|---|---|"]
    for e in all_rows:
        vs_exact = interval(*e["vs_exact"][:3]) if e["vs_exact"] else "—"
        vs_uncoded = ("1 (baseline)" if e["scheme"] == "uncoded"
                      else interval(*e["vs_uncoded"]))
        lines.append(f"| {e['protocol']} | {e['scheme']} | {e['reached']} / {e['runs']} | "
                     f"{e['time']:.2f} [{e['time_low']:.2f}, {e['time_high']:.2f}] | "
                     f"{vs_uncoded} | {vs_exact} |")
    return "\n".join(lines)


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    print(markdown([row for folder in argv for row in rows(folder)]))


if __name__ == "__main__":
    main(sys.argv[1:])
