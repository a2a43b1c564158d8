#!/usr/bin/python3
"""Master overhead per iteration of the MPI backend, and ErasureHead's real speedup over uncoded.

usage: benchmarks/mpi_overhead.py [--binary build/release/experiments/stragglersim]
                                              [--np 9] [--iterations 300]

1. Overhead: W = np - 1 workers, FRC d = 2, first W/2, `inject: false` on a tiny problem
   (50 features, 2 rows per partition: microseconds of compute), so an iteration's real time,
   broadcast to the master's return, is the framework alone: the broadcast, the workers'
   polling and send, the master's receive, stopping rule, decode and combine. Reported: median
   and mean over the iterations, first 10 excluded (warm-up).
2. Agreement: W = 8 (-np 9) and W = 4 (-np 5), FRC d = 2, first W/2, 100 iterations, 0.01 s
   per unit: heard sets equal to the simulated ones (all iterations, and those whose simulated
   arrivals around the stop are more than 5 ms apart), real stop / (simulated stop x 0.01).
3. Speedup: experiments/examples/mpi_{erasurehead,uncoded}.json (inject, 0.01 s per unit):
   simulated speedup total_time(uncoded) / total_time(erasurehead) against the real one,
   total_real_wall_time (first broadcast to last return, everything included) and
   total_real_stop_time.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every job bounded in time (coreutils timeout kills mpirun, which takes its ranks down).
MPIRUN = ["timeout", "600", "mpirun", "--oversubscribe", "--allow-run-as-root", "--mca", "btl",
          "self,vader"]


def run(binary, np, config_path, out):
    command = MPIRUN + ["-np", str(np), binary, "run", config_path, "--out", out]
    print("$", " ".join(command))
    subprocess.run(command, check=True, capture_output=True, timeout=600)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def overhead(binary, np, iterations, scratch):
    w = np - 1
    config = {
        "name": "mpi-overhead", "seed": 3, "workers": w, "partitions": w,
        "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 2 * w,
                 "features": 50, "test_fraction": 0.0},
        "loss": {"kind": "logistic", "l2": 0.001},
        "code": {"kind": "frc", "d": 2},
        "stopping": {"rule": "first_r", "r": w // 2},
        "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
        "optimizer": {"kind": "gd", "step": 0.1, "iterations": iterations},
        "backend": {"kind": "mpi", "inject": False, "timeout": 5.0},
    }
    path = os.path.join(scratch, "overhead.json")
    with open(path, "w") as f:
        json.dump(config, f)
    out = os.path.join(scratch, "overhead")
    run(binary, np, path, out)
    with open(os.path.join(out, "trace.csv")) as f:
        rows = list(csv.DictReader(f))
    real = [float(r["real_time"]) for r in rows]
    per = [b - a for a, b in zip(real, real[1:])][10:]
    print(f"master overhead per iteration, W = {w}, {len(per)} iterations: "
          f"median {statistics.median(per) * 1e3:.3f} ms, mean {statistics.mean(per) * 1e3:.3f} ms")


def agreement(binary, scratch):
    with open(os.path.join(ROOT, "experiments", "examples", "mpi_erasurehead.json")) as f:
        base = json.load(f)
    for w in (8, 4):
        config = dict(base, workers=w, partitions=w, stopping={"rule": "first_r", "r": w // 2})
        path = os.path.join(scratch, f"agreement{w}.json")
        with open(path, "w") as f:
            json.dump(config, f)
        out = os.path.join(scratch, f"agreement{w}")
        s = run(binary, w + 1, path, out)
        with open(os.path.join(out, "heard.csv")) as f:
            heard = list(csv.DictReader(f))
        twin = dict(config, backend={"kind": "simulated"})
        twin_path = os.path.join(scratch, f"agreement{w}-sim.json")
        with open(twin_path, "w") as f:
            json.dump(twin, f)
        subprocess.run([binary, "run", twin_path, "--out", out + "-sim"], check=True,
                       capture_output=True, timeout=600)
        with open(os.path.join(out, "trace.csv")) as f:
            trace = list(csv.DictReader(f))
        with open(os.path.join(out + "-sim", "trace.csv")) as f:
            sim_trace = list(csv.DictReader(f))
        agreed = 0
        while agreed < len(heard) and heard[agreed]["same_set"] == "1":
            agreed += 1
        same_loss = sum(trace[t]["loss"] == sim_trace[t]["loss"] for t in range(agreed + 1))
        print(f"-np {w + 1}: rows 0..{agreed} follow the simulated heard sets; loss identical "
              f"(same decimal string) in {same_loss}/{agreed + 1} of them")
        clear = [r for r in heard if float(r["near_tie_gap"]) * 0.01 > 5e-3]
        print(f"-np {w + 1}: heard as simulated {sum(r['same_set'] == '1' for r in heard)}/"
              f"{len(heard)}, clear iterations {sum(r['same_set'] == '1' for r in clear)}/"
              f"{len(clear)}, real stop / simulated stop = "
              f"{s['total_real_stop_time'] / (s['total_time'] * 0.01):.4f}")


def speedup(binary, scratch):
    s = {}
    for scheme in ("erasurehead", "uncoded"):
        path = os.path.join(ROOT, "experiments", "examples", f"mpi_{scheme}.json")
        s[scheme] = run(binary, 9, path, os.path.join(scratch, scheme))
    e, u = s["erasurehead"], s["uncoded"]
    simulated = u["total_time"] / e["total_time"]
    for key in ("total_real_wall_time", "total_real_stop_time"):
        real = u[key] / e[key]
        print(f"{key}: erasurehead {e[key]:.4f} s, uncoded {u[key]:.4f} s, real speedup "
              f"{real:.4f} vs simulated {simulated:.4f} ({100 * (real / simulated - 1):+.2f}%)")
    for name, x in s.items():
        print(f"{name}: simulated {x['total_time']:.2f} units x 0.01 = "
              f"{x['total_time'] * 0.01:.4f} s, heard as simulated {x['heard_same_as_simulated']}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, "build/release/experiments/stragglersim"))
    parser.add_argument("--np", type=int, default=9)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stragglersim-mpi-bench-") as scratch:
        overhead(args.binary, args.np, args.iterations, scratch)
        agreement(args.binary, scratch)
        speedup(args.binary, scratch)
    print("load average:", os.getloadavg())


if __name__ == "__main__":
    main()
