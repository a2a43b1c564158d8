#!/usr/bin/python3
"""Writes persistent_stragglers.csv, the measured-looking trace of the worked example in docs/advise.md.

A known model, so that `stragglersim fit` and `advise` can be judged against the truth:
24 workers, 500 iterations; each worker is an independent two-state chain (normal -> slow with
probability 0.03 per iteration, slow -> normal with 0.15, started from its stationary law) with
shifted exponential times per state (normal: shift 0.5 s, rate 2 /s; slow: shift 2 s, rate
0.5 /s), and workers 0..5 are always 1.6 times slower (heterogeneous, persistent).
Seeded (numpy PCG64, seed 2026): the same bytes every run.

    /usr/bin/python3 experiments/examples/make_persistent_trace.py [OUT.csv]
"""
import sys

import numpy as np

WORKERS, ITERATIONS, SEED = 24, 500, 2026
SHIFT, RATE, SLOW_SHIFT, SLOW_RATE = 0.5, 2.0, 2.0, 0.5
TO_SLOW, TO_NORMAL = 0.03, 0.15
FACTORS = [1.6 if w < 6 else 1.0 for w in range(WORKERS)]


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "experiments/examples/persistent_stragglers.csv"
    rng = np.random.Generator(np.random.PCG64(SEED))
    slow = rng.random(WORKERS) < TO_SLOW / (TO_SLOW + TO_NORMAL)
    lines = ["iteration,worker,seconds"]
    for t in range(1, ITERATIONS + 1):
        if t > 1:
            u = rng.random(WORKERS)
            slow = np.where(slow, u >= TO_NORMAL, u < TO_SLOW)
        e = rng.exponential(1.0, WORKERS)
        base = np.where(slow, SLOW_SHIFT + e / SLOW_RATE, SHIFT + e / RATE)
        for w in range(WORKERS):
            lines.append(f"{t},{w},{FACTORS[w] * base[w]:.6f}")
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
