#!/usr/bin/python3
"""Writes a Lambda-like measured-looking trace: W workers (default 256), T rounds (default 30).

Serverless workers (AWS Lambda) in the sequential-gradient-coding studies: most invocations take
a lognormal time around 1.2 s, a heavy right tail (5 % of invocations Pareto-distributed with
shape 1.5 from 2 s), a cold start on a worker's first round (+1.5 to 4 s, uniform) and on 2 % of
the later ones (a fresh container), and a per-worker speed factor (lognormal, sigma 0.1: the
memory/CPU placement a function lands on). Seeded (numpy PCG64): the same bytes every run.

    /usr/bin/python3 benchmarks/make_lambda_trace.py OUT.csv [--workers W] [--rounds T] [--seed S]
"""
import argparse

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--workers", type=int, default=256)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--seed", type=int, default=2026)
    a = p.parse_args()
    rng = np.random.Generator(np.random.PCG64(a.seed))
    speed = np.exp(rng.normal(0.0, 0.1, a.workers))
    lines = ["iteration,worker,seconds"]
    for t in range(1, a.rounds + 1):
        base = np.exp(rng.normal(np.log(1.2), 0.15, a.workers))
        tail = rng.random(a.workers) < 0.05
        base[tail] = 2.0 * (1.0 + rng.pareto(1.5, int(tail.sum())))
        cold = np.ones(a.workers, bool) if t == 1 else rng.random(a.workers) < 0.02
        base[cold] += rng.uniform(1.5, 4.0, int(cold.sum()))
        for w, s in enumerate(base * speed):
            lines.append(f"{t},{w},{s:.4f}")
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
