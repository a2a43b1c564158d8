#!/usr/bin/env python3
"""K-sync's error-runtime trade-off (Dutta et al., AISTATS 2018): the simulator's mean f - f*
against simulated time beside the theory's, for several K.

usage: plot_error_runtime.py --sweep DIR --bin STRAGGLERSIM --out FIG.png --csv TABLE.csv
DIR: the finished sweep of experiments/paper/error_runtime.json (least squares, `schemes` of
K-sync: the uncoded code, `first_r` r = K, `rescale: empirical`; shifted exponential delays,
repetitions over delay seeds on the same data).

Theory: the error after J iterations is the exact least-squares curve e(J) = E[f(x_J)] - f*
(`stragglersim theory --json`, exact_curve), and an iteration of K-sync takes X_{K:n}, the K-th
smallest of n i.i.d. delays Delta + Exp(mu), which by Renyi's representation is
Delta + sum_{i=n-K+1}^{n} E_i/(i mu) with E_i i.i.d. Exp(1). With i.i.d. continuous delays
the set of the K first workers is a uniform K-subset independent of the order statistics'
values, so the iterates are independent of the clock and the error at time t is
E[e(N(t))], N(t) the number of iterations done by t (a renewal count). It is computed from
DRAWS independent draws of the iteration times (numpy, seed fixed), with its Monte Carlo
standard error. The measured error at t is the mean over the runs of loss - f* at the last row
at or before t. TABLE.csv: one row per (K, t) with both, their standard errors and
z = (measured - theory) / sqrt(model_se^2 + se_theory^2), where model_se = (the theory's sd of one
run's f - f* at t) / sqrt(runs), or the runs' own s.e. at times some draw is past the
iterations the theory's sd covers (no z there with fewer than 10 runs).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_traces  # noqa: E402
from plot_noise_floor import sweep_theory_args  # noqa: E402
from plot_nonconvex import write_figure_and_table  # noqa: E402

DRAWS = 20000
POINTS = 60
MIN_RUNS = 10  # fewer runs give no usable sample s.e.


def scheme_configs(folder):
    """{scheme: resolved config of its first run} from index.csv and summary.json."""
    configs = {}
    for row in plot_traces.plot_sweep.read_index(folder)[1]:
        if row["scheme"] not in configs:
            with open(os.path.join(folder, row["folder"], "summary.json")) as f:
                configs[row["scheme"]] = json.load(f)["config"]
    return configs


def k_of(config):
    """K of a K-sync config; refuses anything else (the theory below is K-sync's)."""
    stop = config["stopping"]
    delay = config["delay"]
    if (config["code"]["kind"] != "uncoded" or stop["rule"] != "first_r"
            or config["rescale"] != "empirical" or delay["kind"] != "shifted_exponential"
            or config["partitions"] != config["workers"]):
        raise SystemExit("error: expected K-sync runs (uncoded, first_r, rescale empirical, one "
                         "partition per worker) with shifted exponential delays; got "
                         f"{json.dumps({k: config[k] for k in ('code', 'stopping', 'rescale')})}")
    return int(stop["r"])


def exact_curve(binary, config):
    """(e(J), sd(J)), J = 0 ... T: the exact mean of f(x_J) - f* over runs and its sd across
    runs (`stragglersim theory --json`: exact_curve, exact_curve_sd)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        out = subprocess.run([binary, "theory", f.name, "--json", "-q"], check=True,
                             capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    theory = json.loads(out)
    if theory["exact_curve"] is None:
        raise SystemExit("error: theory has no exact curve for this config")
    return (np.asarray(theory["exact_curve"], dtype=float),
            np.asarray(theory["exact_curve_sd"], dtype=float))


def renewal_error(curve, n, k, shift, rate, grid, draws=DRAWS, seed=1):
    """On the grid, N(t) the iterations of K-sync done by t: the mean of e(N(t)), its Monte
    Carlo s.e., and the sd of one run's f - f* at t (law of total variance: the mean over N of
    sd(N)^2 plus the variance of e(N))."""
    curve, curve_sd = curve
    rng = np.random.default_rng(seed)
    iterations = len(curve) - 1
    rates = rate * np.arange(n - k + 1, n + 1, dtype=float)
    clock = np.zeros(draws)
    done = np.zeros((draws, len(grid)), dtype=np.int64)
    for _ in range(iterations):
        clock += shift + (rng.exponential(1.0, size=(draws, k)) / rates).sum(axis=1)
        done += clock[:, None] <= grid[None, :]
    if np.mean(done[:, -1] >= iterations) > 1e-3:
        raise SystemExit("error: the grid reaches past the runs' iterations; expected more "
                         "iterations or a shorter grid")
    errors = curve[done]
    # The sd is computed up to a cost budget (docs/convergence.md): NaN where some draw is past it.
    sd = np.append(curve_sd, np.full(len(curve) - len(curve_sd), np.nan))
    run_sd = np.sqrt(np.mean(sd[done] ** 2, axis=0) + errors.var(axis=0))
    return errors.mean(axis=0), errors.std(axis=0, ddof=1) / math.sqrt(draws), run_sd


def measured_error(runs, grid):
    """(mean, se, runs) of loss - f* at each grid time over the runs."""
    gaps = np.array([[plot_traces.value_at(r, "loss", t) - float(r["f_star"]) for t in grid]
                     for r in runs])
    return gaps.mean(axis=0), gaps.std(axis=0, ddof=1) / math.sqrt(len(runs)), len(runs)


def compare(folder, binary):
    """One dict per (K, t): the measured and theoretical error with their s.e. and z."""
    _, runs = plot_traces.read_sweep_traces(folder)
    configs = scheme_configs(folder)
    by_scheme = {}
    for r in runs:
        by_scheme.setdefault(r["scheme"], []).append(r)
    ks = {scheme: k_of(config) for scheme, config in configs.items()}
    # A common grid every K covers with its runs' iterations: 80 % of the fastest scheme's
    # expected time to its last iteration.
    fastest = min(configs, key=lambda s: ks[s])
    config = configs[fastest]
    n, delay = config["workers"], config["delay"]
    expected = delay["shift"] + sum(1.0 / (i * delay["rate"])
                                    for i in range(n - ks[fastest] + 1, n + 1))
    grid = np.linspace(0.0, 0.8 * config["optimizer"]["iterations"] * expected, POINTS)
    rows = []
    for scheme, members in by_scheme.items():
        cfg = configs[scheme]
        theory, theory_se, run_sd = renewal_error(
            exact_curve(binary, cfg), n, ks[scheme], cfg["delay"]["shift"],
            cfg["delay"]["rate"], grid)
        mean, se, count = measured_error(members, grid)
        for i, t in enumerate(grid):
            # z under the theory: the runs' mean has the s.e. run_sd/sqrt(runs) (the sample's
            # own s.e. is 0 when, early on, no run has finished an iteration yet); where the
            # theory is a constant (t = 0) the difference is rounding, as the theory's f and the
            # run's are evaluated apart (agreeing to about 1e-11 relative).
            model_se = run_sd[i] / math.sqrt(count)
            if math.isnan(model_se):  # past the sd's budget: the runs' own s.e. (from 10 runs)
                model_se = se[i] if count >= MIN_RUNS else math.nan
            spread = math.hypot(model_se, theory_se[i], 1e-9 * abs(theory[i]))
            rows.append({"scheme": scheme, "k": ks[scheme], "runs": count, "time": t,
                         "measured": mean[i], "measured_se": se[i], "theory": theory[i],
                         "theory_se": theory_se[i], "model_se": model_se,
                         "z": (math.nan if math.isnan(spread)  # no s.e. known
                               else (mean[i] - theory[i]) / spread if spread > 0 else 0.0)})
    return rows


def draw(rows, config):
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        part = [r for r in rows if r["scheme"] == scheme]
        t = [r["time"] for r in part]
        line, = ax.plot(t, [r["theory"] for r in part], linewidth=1.4,
                        label=f"{scheme}: theory E[e(N(t))]")
        half = plot_traces.t_quantile(part[0]["runs"])
        ax.errorbar(t[1::3], [r["measured"] for r in part][1::3],
                    yerr=[half * r["measured_se"] for r in part][1::3], fmt="o", markersize=3,
                    color=line.get_color(), capsize=2,
                    label=f"{scheme}: simulated ({part[0]['runs']} runs, 95 % t)")
    ax.set_yscale("log")
    ax.set_xlabel("simulated time t (s)")
    ax.set_ylabel("mean f(x) - f* at time t")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    data, delay = config["data"], config["delay"]
    ax.set_title(f"K-sync's error-runtime trade-off: {config['loss']['kind']} "
                 f"{data.get('rows', '?')} x {data.get('features', '?')}, n = "
                 f"{config['workers']}, delays {delay['shift']:g} + Exp(rate {delay['rate']:g})",
                 fontsize=9)
    fig.tight_layout()
    return fig


def main(argv):
    args = sweep_theory_args(argv, __doc__)
    rows = compare(args.sweep, args.bin)
    config = next(iter(scheme_configs(args.sweep).values()))
    for scheme in dict.fromkeys(r["scheme"] for r in rows):
        part = [r for r in rows if r["scheme"] == scheme and not math.isnan(r["z"])]
        worst = max(part, key=lambda r: abs(r["z"]))
        print(f"{scheme}: max |z| = {abs(worst['z']):.2f} at t = {worst['time']:.3g} s over "
              f"{len(part)} times" + (f" (none at the other {POINTS - len(part)}: fewer than "
                                      f"{MIN_RUNS} runs past the sd's iterations)"
                                      if len(part) < POINTS else ""))
    write_figure_and_table(draw(rows, config), args.out, rows, args.csv)


if __name__ == "__main__":
    main(sys.argv[1:])
