"""The notebook workflow with the stragglersim Python module, top to bottom.

    PYTHONPATH=build/release/python /usr/bin/python3 plots/notebook_example.py

(or without PYTHONPATH after `cmake --install build/release`). Runs uncoded GD and ErasureHead
on the same data from dicts, plots f(x_t) - f* against simulated time (f* from theory(), which
solves for the optimum of the regularised logistic loss), then sweeps the number of workers
waited for, r, in a plain Python loop and compares the measured mean iteration time with the
theory's prediction. Writes plots/figures/notebook_example.png (or the path given as the
first argument).
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import stragglersim  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "figures", "notebook_example.png")

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
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 100},
}
uncoded = dict(base, name="uncoded", code={"kind": "uncoded"}, stopping={"rule": "all"})
erasurehead = dict(
    base, name="erasurehead", code={"kind": "frc", "d": 2}, stopping={"rule": "first_r", "r": 15}
)

# f* of the regularised training loss: theory() solves for it (the same data for both runs).
f_star = stragglersim.theory(uncoded)["f_star"]
runs = {config["name"]: stragglersim.run(config) for config in (uncoded, erasurehead)}
for name, run in runs.items():
    s = run.summary
    print(
        f"{name}: {s['iterations']} iterations in {s['total_time']:.1f} simulated s, "
        f"final f - f* = {s['final_loss'] - f_star:.3g}"
    )

# Sweep r in a loop: ErasureHead waiting for r of 30 workers, measured against theory.
r_values = list(range(2, 31, 2))
measured, predicted, final_gap = [], [], []
for r in r_values:
    config = dict(erasurehead, name=f"erasurehead-r{r}", stopping={"rule": "first_r", "r": r})
    run = stragglersim.run(config)
    measured.append(run.summary["mean_iteration_time"])
    predicted.append(run.summary["theory"]["expected_iteration_time"])
    final_gap.append(run.summary["final_loss"] - f_star)
print("r:", r_values)
print("mean iteration time:", np.round(measured, 3).tolist())
print("theory:             ", np.round(predicted, 3).tolist())

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
for name, run in runs.items():
    left.semilogy(run.trace["time"], run.trace["loss"] - f_star, label=name)
left.set_xlabel("simulated time (s)")
left.set_ylabel("f(x_t) - f*")
left.set_title("n = 30: uncoded vs ErasureHead (FRC d = 2, r = 15)")
left.legend()

right.plot(r_values, measured, "o", label="measured mean iteration time")
right.plot(r_values, predicted, "-", label="theory")
right.set_xlabel("r (workers waited for, of 30)")
right.set_ylabel("iteration time (s)")
gap_axis = right.twinx()
gap_axis.semilogy(r_values, final_gap, "s--", color="tab:red", label="f - f* after 100 iterations")
gap_axis.set_ylabel("f - f* after 100 iterations", color="tab:red")
right.set_title("ErasureHead: sweep over r")
handles = right.get_legend_handles_labels()
gap_handles = gap_axis.get_legend_handles_labels()
right.legend(handles[0] + gap_handles[0], handles[1] + gap_handles[1], loc="upper center")
fig.tight_layout()
os.makedirs(os.path.dirname(OUT), exist_ok=True)
fig.savefig(OUT, dpi=110)
print("figure:", os.path.relpath(OUT))
