"""Whole-process time of `stragglersim fit` on large traces (benchmarks/fit.md, "Time to fit").

Writes three traces of ROWS times each with numpy (PCG64, fixed seeds; the shapes of
fit_benchmark.cpp): `markov` (100 workers, two-state chains), `pareto` (20 workers, i.i.d.
heavy tail) and `heterogeneous` (10 workers, chains, a third of them 1.6 times slower), as
`iteration,worker,seconds`, then runs `stragglersim fit` on each and prints its wall and CPU
seconds (the process and its threads, from os.wait4) and the family it chose.

    bash tools/build.sh release stragglersim
    /usr/bin/python3 benchmarks/fit_rows.py --rows 1000000
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chains(rng, iterations, workers, to_slow, to_normal, normal, slow, factors):
    out = np.empty((iterations, workers))
    state = rng.random(workers) < to_slow / (to_slow + to_normal)
    for t in range(iterations):
        if t > 0:
            u = rng.random(workers)
            state = np.where(state, u >= to_normal, u < to_slow)
        e = rng.exponential(1.0, workers)
        out[t] = factors * np.where(state, slow[0] + e / slow[1], normal[0] + e / normal[1])
    return out


def draw(shape, rows):
    rng = np.random.default_rng({"markov": 1, "pareto": 2, "heterogeneous": 3}[shape])
    if shape == "markov":
        w = 100
        return chains(rng, rows // w, w, 0.05, 0.2, (0.7, 1.9), (3.0, 0.5), np.ones(w))
    if shape == "pareto":
        return 0.5 + rng.pareto(2.5, (rows // 20, 20)) + 1.0
    w = 10
    factors = np.where(np.arange(w) < w // 3, 1.6, 1.0)
    return chains(rng, rows // w, w, 0.03, 0.15, (0.5, 1.5), (2.0, 0.7), factors)


def write(path, times):
    iterations, workers = times.shape
    table = np.column_stack([np.repeat(np.arange(iterations), workers),
                             np.tile(np.arange(workers), iterations), times.ravel()])
    with open(path, "w") as f:
        f.write("iteration,worker,seconds\n")
        np.savetxt(f, table, fmt=["%d", "%d", "%.6f"], delimiter=",")


def timed(command):
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = child.stdout.read()
    child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed")
    return wall, usage.ru_utime + usage.ru_stime, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--binary", default=os.path.join(ROOT, "build/release/experiments/stragglersim"))
    args = parser.parse_args()
    print(f"| shape | rows | wall s | CPU s | chosen |\n|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for shape in ("markov", "pareto", "heterogeneous"):
            path = os.path.join(folder, f"{shape}.csv")
            write(path, draw(shape, args.rows))
            wall, cpu, out = timed([args.binary, "fit", path])
            chosen = next(line for line in out.splitlines() if line.startswith("best by AIC: "))
            print(f"| {shape} | {args.rows} | {wall:.2f} | {cpu:.2f} | {chosen[13:]} |")


if __name__ == "__main__":
    main()
