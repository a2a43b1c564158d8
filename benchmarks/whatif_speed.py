#!/usr/bin/env python3
"""Wall time of `stragglersim whatif` on the shipped ByteDance timelines (docs/benchmarks.md).

    python3 benchmarks/whatif_speed.py [BINARY] [--repetitions N]

Runs `whatif TIMELINE --meta META --json` N times per trace (default 5) and prints, per trace, the
ops, the median and the fastest wall time, and the load average when it started. The target is
the 128-rank trace (SE) in under 10 s on 2 cores.
"""
import argparse
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build/release/experiments/stragglersim"))
    parser.add_argument("--repetitions", type=int, default=5)
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    print("| trace | ranks | median (s) | fastest (s) |")
    print("|---|---:|---:|---:|")
    for trace, ranks in (("AR", 64), ("SE", 128), ("ST", 8)):
        folder = os.path.join(ROOT, "data/traces/bytedance")
        command = [args.binary, "whatif", os.path.join(folder, f"timeline-{trace}.json.gz"),
                   "--meta", os.path.join(folder, f"meta-{trace}.yaml"), "--json"]
        times = []
        for _ in range(args.repetitions):
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        print(f"| {trace} | {ranks} | {statistics.median(times):.2f} | {min(times):.2f} |")


if __name__ == "__main__":
    main()
