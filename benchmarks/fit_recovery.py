#!/usr/bin/python3
"""Parameters recovered by `stragglersim fit` from 20 000 seeded draws of each delay family.

Draws 20 workers x 1 000 iterations from each model with numpy (PCG64, fixed seeds: an
independent generator, not the simulator's), writes iteration,worker,seconds files to a
temporary folder, runs `stragglersim fit --json` on each and prints a Markdown table (the one in
benchmarks/fit.md):

    /usr/bin/python3 benchmarks/fit_recovery.py [--binary build/release/experiments/stragglersim]
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

import numpy as np

WORKERS, ITERATIONS = 20, 1000


def shifted_exponential(rng):
    return 0.7 + rng.exponential(1.0, (ITERATIONS, WORKERS)) / 1.9


def pareto(rng):
    # T = c + x_m * exp(E / alpha): Pareto(x_m, alpha) shifted by c.
    return 0.7 + 1.0 * np.exp(rng.exponential(1.0, (ITERATIONS, WORKERS)) / 2.5)


def bimodal(rng):
    slow = rng.random((ITERATIONS, WORKERS)) < 0.1
    base = 0.7 + rng.exponential(1.0, (ITERATIONS, WORKERS)) / 1.9
    return np.where(slow, 5.0, 1.0) * base


def markov(rng):
    p, q = 0.05, 0.2
    state = rng.random(WORKERS) < p / (p + q)
    out = np.empty((ITERATIONS, WORKERS))
    for t in range(ITERATIONS):
        if t > 0:
            u = rng.random(WORKERS)
            state = np.where(state, u >= q, u < p)
        e = rng.exponential(1.0, WORKERS)
        out[t] = np.where(state, 3.0 + e / 0.5, 0.7 + e / 1.9)
    return out


CASES = [
    ("shifted_exponential", shifted_exponential, {"shift": 0.7, "rate": 1.9}, 101),
    ("pareto", pareto, {"shift": 0.7, "scale": 1.0, "shape": 2.5}, 102),
    ("bimodal", bimodal, {"shift": 0.7, "rate": 1.9, "slow_probability": 0.1, "slowdown": 5.0}, 103),
    ("markov", markov, {"shift": 0.7, "rate": 1.9, "slow_shift": 3.0, "slow_rate": 0.5,
                        "to_slow": 0.05, "to_normal": 0.2}, 104),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default="build/release/experiments/stragglersim")
    args = parser.parse_args()
    print("| true family | parameter | true | recovered ± s.e. | |error| / s.e. | best by AIC | KS p of the true family |")
    print("|---|---|---:|---:|---:|---|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for family, draw, truth, seed in CASES:
            times = draw(np.random.Generator(np.random.PCG64(seed)))
            path = pathlib.Path(tmp) / f"{family}.csv"
            lines = ["iteration,worker,seconds"]
            for t in range(ITERATIONS):
                lines += [f"{t + 1},{w},{times[t, w]!r}" for w in range(WORKERS)]
            path.write_text("\n".join(lines) + "\n")
            out = subprocess.run([args.binary, "fit", str(path), "--json"], check=True,
                                 capture_output=True, text=True).stdout
            report = json.loads(out)
            fit = next(f for f in report["fits"] if f["family"] == family)
            for name, value in truth.items():
                got = fit["parameters"][name]
                se = fit["standard_errors"][name]
                err = f"{abs(got - value) / se:.2f}" if se else "(boundary)"
                shown = f"{got:.4f} ± {se:.4f}" if se else f"{got:.4f}"
                print(f"| {family} | {name} | {value} | {shown} | {err} | {report['best']} | "
                      f"{fit['ks_p_value']:.3f} |")


if __name__ == "__main__":
    main()
