"""Delay-only iteration times for n = 65 536 workers: the stragglersim module against the numpy
Monte Carlo a researcher would write in a notebook.

    PYTHONPATH=build/release/python /usr/bin/python3 benchmarks/python_vs_numpy.py

Both draw T_i = l*shift + l*X_i/rate, X_i ~ Exp(1), for every worker and iteration (Model A,
load l) and take the stopping statistic: the maximum for uncoded `all`, the r-th smallest for
ErasureHead (FRC d = 2, l = 2, `first_r` with r = n/2). The numpy version is vectorised over a
block of iterations (np.random.Generator.exponential + np.max / np.partition along rows), the
fastest plain-numpy form. The means must agree within 4 standard errors (the streams differ, the
distribution does not). Also measures two Python threads calling the module at once against the
same two calls in sequence (the GIL is released while the simulator runs).

Prints wall times, throughput and the ratios; the load average is printed too (timings on a
loaded machine are noisy: quote ratios from one run).
"""

import math
import os
import threading
import time

import numpy as np

import stragglersim

N = 65536
ITERATIONS = int(os.environ.get("ITERATIONS", "2000"))
BLOCK = 32  # iterations per numpy block: 32 x 65 536 doubles = 16 MB


def config(code, stopping, seed=1):
    return {
        "seed": seed,
        "workers": N,
        "data": None,
        "code": code,
        "stopping": stopping,
        "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
        "optimizer": {"iterations": ITERATIONS},
    }


SCHEMES = {
    "uncoded all": (config({"kind": "uncoded"}, {"rule": "all"}), 1.0, None),
    "erasurehead first_r r=n/2": (
        config({"kind": "frc", "d": 2}, {"rule": "first_r", "r": N // 2}),
        2.0,
        N // 2,
    ),
}


def numpy_times(load, r, iterations, seed=1):
    """What a researcher writes: a block of iterations at a time, one row per iteration."""
    rng = np.random.default_rng(seed)
    out = np.empty(iterations)
    for start in range(0, iterations, BLOCK):
        rows = min(BLOCK, iterations - start)
        delays = load * 1.0 + load * rng.exponential(1.0, size=(rows, N))
        if r is None:
            out[start : start + rows] = delays.max(axis=1)
        else:
            out[start : start + rows] = np.partition(delays, r - 1, axis=1)[:, r - 1]
    return out


def timed(f):
    """(wall seconds, result); CPU seconds of the whole process (all threads) go to CPU[-1]."""
    start, cpu = time.perf_counter(), time.process_time()
    result = f()
    CPU.append(time.process_time() - cpu)
    return time.perf_counter() - start, result


CPU = []


def main():
    print(f"n = {N}, {ITERATIONS} iterations per scheme; load average {os.getloadavg()}")
    print("wall and CPU seconds (CPU: all threads of the process; the fairer figure under load)")
    print(f"{'scheme':<28} {'module s':>9} {'numpy s':>9} {'wall ratio':>10} "
          f"{'module CPU':>10} {'numpy CPU':>10} {'CPU ratio':>9} "
          f"{'module mean':>12} {'numpy mean':>11} {'|diff|/s.e.':>11}")
    for name, (cfg, load, r) in SCHEMES.items():
        stragglersim.iteration_times(cfg, 10)  # warm-up: page in the library
        module_s, ours = timed(lambda: stragglersim.iteration_times(cfg, ITERATIONS))
        module_cpu = CPU[-1]
        numpy_s, theirs = timed(lambda: numpy_times(load, r, ITERATIONS))
        numpy_cpu = CPU[-1]
        se = math.sqrt(ours.var(ddof=1) / len(ours) + theirs.var(ddof=1) / len(theirs))
        z = abs(ours.mean() - theirs.mean()) / se
        print(f"{name:<28} {module_s:>9.3f} {numpy_s:>9.3f} {numpy_s / module_s:>10.2f} "
              f"{module_cpu:>10.3f} {numpy_cpu:>10.3f} {numpy_cpu / module_cpu:>9.2f} "
              f"{ours.mean():>12.5f} {theirs.mean():>11.5f} {z:>11.2f}")
        assert z < 4.0, f"{name}: module and numpy disagree by {z:.1f} standard errors"

    # Two threads at once against the same two calls in sequence.
    cfgs = [config({"kind": "frc", "d": 2}, {"rule": "first_r", "r": N // 2}, seed=s) for s in (1, 2)]
    sequential_s, _ = timed(lambda: [stragglersim.iteration_times(c, ITERATIONS) for c in cfgs])
    threads = [threading.Thread(target=stragglersim.iteration_times, args=(c, ITERATIONS)) for c in cfgs]

    def both():
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    parallel_s, _ = timed(both)
    print(f"two calls in sequence {sequential_s:.3f} s, in two threads {parallel_s:.3f} s: "
          f"speed-up {sequential_s / parallel_s:.2f} on {os.cpu_count()} cores "
          f"(load average {os.getloadavg()})")


if __name__ == "__main__":
    main()
