"""The notebook workflow with the stragglersim Python module, top to bottom.

    PYTHONPATH=build/release/python /usr/bin/python3 plots/notebook_example.py

(or without PYTHONPATH after `cmake --install build/release`). Runs uncoded GD and ErasureHead
on the same data over 10 delay seeds (a sweep with two named schemes), plots the mean of
f(x_t) - f* against simulated time with its 95 % t band (f* from theory(), which solves for the
optimum of the regularised logistic loss), then sweeps the number of workers waited for, r, over
the same 10 seeds and compares the measured mean iteration time with the theory's prediction.
Writes plots/figures/notebook_example.png (or the path given as the first argument).
"""

import json
import os
import shutil
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

import stragglersim  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "figures", "notebook_example.png")
SEEDS = 10

base = {
    "seed": 7,
    "workers": 30,
    "data": {
        "source": "synthetic",
        "generator": "gaussian_mixture",
        "rows": 6000,
        "features": 200,
        "test_fraction": 0.2,
    },
    "loss": {"kind": "logistic", "l2": 0.0001},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 15},
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 100},
}


def interval(values):
    """Mean and half-width of the 95 % t interval over the seeds (the first axis)."""
    values = np.asarray(values, dtype=float)
    seeds = values.shape[0]
    half = stats.t.ppf(0.975, seeds - 1) * values.std(axis=0, ddof=1) / np.sqrt(seeds)
    return values.mean(axis=0), half


# f* of the regularised training loss: theory() solves for it. A sweep's repetitions change the
# delays only, so every run below has this data set and this f*.
f_star = stragglersim.theory(base)["f_star"]
work = tempfile.mkdtemp(prefix="notebook-")
schemes = {
    "name": "notebook_schemes",
    "base": base,
    "schemes": [
        {"name": "uncoded", "/code": {"kind": "uncoded"}, "/stopping": {"rule": "all"}},
        {"name": "erasurehead", "/code": {"kind": "frc", "d": 2},
         "/stopping": {"rule": "first_r", "r": 15}},
    ],
    "repetitions": SEEDS,
}
stragglersim.sweep(schemes, os.path.join(work, "schemes"), jobs=2)
runs = stragglersim.load_sweep(os.path.join(work, "schemes"))
traces = stragglersim.load_sweep(os.path.join(work, "schemes"), traces=True)
for name, group in runs.groupby("scheme", sort=False):
    time, time_half = interval(group["total_time"])
    gap, gap_half = interval(group["final_loss"] - f_star)
    print(f"{name}: 100 iterations in {time:.1f} ± {time_half:.1f} simulated s, "
          f"final f - f* = {gap:.3g} ± {gap_half:.2g} (mean ± 95 % t, {len(group)} seeds)")

# Sweep r over the same seeds: ErasureHead waiting for r of 30 workers, measured against theory.
r_values = list(range(2, 31, 2))
by_r = {"name": "notebook_r", "base": base, "grid": {"/stopping/r": r_values},
        "repetitions": SEEDS}
stragglersim.sweep(by_r, os.path.join(work, "r"), jobs=2)
table = stragglersim.load_sweep(os.path.join(work, "r"))
measured, predicted, final_gap = [], [], []
for r in r_values:
    rows = table[table["stopping.r"] == r]
    measured.append(interval(rows["mean_iteration_time"]))
    final_gap.append(interval(rows["final_loss"] - f_star))
    with open(os.path.join(work, "r", rows["folder"].iloc[0], "summary.json")) as f:
        predicted.append(json.load(f)["theory"]["expected_iteration_time"])
print("r:", r_values)
print("mean iteration time:", [round(m, 3) for m, _ in measured])
print("95 % t half-width:  ", [round(h, 3) for _, h in measured])
print("theory:             ", np.round(predicted, 3).tolist())

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
budget = min(traces.groupby(["scheme", "repetition"])["time"].max())
grid = np.linspace(0.0, budget, 300)
for name, group in traces.groupby("scheme", sort=False):
    # Each seed's f - f* as a step function of time, read on a common grid.
    curves = []
    for _, run in group.groupby("repetition"):
        at = np.searchsorted(run["time"].to_numpy(), grid, side="right") - 1
        curves.append(run["loss"].to_numpy()[at] - f_star)
    mean, half = interval(curves)
    (line,) = left.semilogy(grid, mean, label=name)
    left.fill_between(grid, mean - half, mean + half, color=line.get_color(), alpha=0.25)
left.set_xlabel("simulated time (s)")
left.set_ylabel("f(x_t) - f*")
left.set_title(f"n = 30: uncoded vs ErasureHead (FRC d = 2, r = 15)\n"
               f"mean over {SEEDS} delay seeds, band: 95 % t interval", fontsize=9)
left.legend()

right.errorbar(r_values, [m for m, _ in measured], yerr=[h for _, h in measured], fmt="o",
               capsize=3, label="measured mean iteration time")
right.plot(r_values, predicted, "-", label="theory")
right.set_xlabel("r (workers waited for, of 30)")
right.set_ylabel("iteration time (s)")
gap_axis = right.twinx()
gap_axis.errorbar(r_values, [m for m, _ in final_gap], yerr=[h for _, h in final_gap], fmt="s--",
                  capsize=3, color="tab:red", label="f - f* after 100 iterations")
gap_axis.set_yscale("log")
gap_axis.set_ylabel("f - f* after 100 iterations", color="tab:red")
right.set_title(f"ErasureHead: sweep over r, {SEEDS} seeds each (95 % t intervals)", fontsize=9)
handles = right.get_legend_handles_labels()
gap_handles = gap_axis.get_legend_handles_labels()
right.legend(handles[0] + gap_handles[0], handles[1] + gap_handles[1], loc="upper center")
fig.tight_layout()
os.makedirs(os.path.dirname(OUT), exist_ok=True)
fig.savefig(OUT, dpi=110)
shutil.rmtree(work)
print("figure:", os.path.relpath(OUT))
