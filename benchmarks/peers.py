"""stragglersim beside its peers (numpy, scipy.sparse) on the same shapes, in one run.

    bash tools/build.sh release stragglersim stragglersim_benchmarks
    /usr/bin/python3 benchmarks/peers.py [--repetitions 5] [--table peers.md]

Three jobs, each timed `--repetitions` times; min and median are printed and the ratios use the
medians (the machine is shared: the load average is printed before every job).

1. Delay-only uncoded `all`, n = 65 536 workers, T = 2 000 iterations, whole process: the
   `stragglersim run` executable against a fresh python3 process that imports numpy and draws the
   same shifted exponentials block by block and takes each iteration's maximum.
2. Dense logistic gradient replay, m = 50 000, p = 200, n = 32 (FRC d = 2, first 16), per
   iteration: the Google Benchmark `bm_dense_iteration/<threads>` (one trace row: delays, decode,
   f(x) and all 32 partition gradients in one pass, the update) at 1 and 2 threads, one
   streaming read of the 80 MB matrix at 1 and 2 threads (`bm_dense_stream_read/<threads>`,
   the memory floor), and numpy (z = Ax, the logistic loss, g = Aᵀs: the full gradient only).
3. Sparse covtype-like logistic replay, 396 112 × 15 509, 88 non-zeros per row (10 numeric
   columns, 78 one-hot), n = 30 (FRC d = 2, first 15): `bm_sparse_iteration/<threads>`, one
   streaming read of the CSR arrays (`bm_sparse_stream_read/<threads>`), the margins z = Ax
   alone (`bm_sparse_margins`: the stream plus one gather per non-zero, the floor of the access
   pattern), and scipy.sparse on a CSR matrix of the same shape and sparsity pattern
   (z = Az, g = Aᵀs).

Writes the table to benchmarks/peers.md (or --table) with the machine described.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse
import scipy.special

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "release"
EXE = BUILD / "experiments" / "stragglersim"
BENCH = BUILD / "benchmarks" / "stragglersim_benchmarks"

N_WORKERS = 65536
T_ITERATIONS = 2000

NUMPY_DELAY_ONLY = textwrap.dedent(
    """
    import numpy as np
    rng = np.random.default_rng(1)
    n, t, block = {n}, {t}, 32
    out = np.empty(t)
    for start in range(0, t, block):
        rows = min(block, t - start)
        out[start:start + rows] = (1.0 + rng.exponential(1.0, size=(rows, n))).max(axis=1)
    print(out.mean())
    """
)


def load():
    return os.getloadavg()[0]


def summary(samples):
    return min(samples), statistics.median(samples)


def wall(command, **kwargs):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kwargs)
    return time.perf_counter() - start


def delay_only(repetitions):
    config = {
        "seed": 1,
        "workers": N_WORKERS,
        "data": None,
        "code": {"kind": "uncoded"},
        "stopping": {"rule": "all"},
        "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
        "optimizer": {"iterations": T_ITERATIONS},
    }
    ours, numpy_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "delay_only.json"
        cfg.write_text(json.dumps(config))
        script = NUMPY_DELAY_ONLY.format(n=N_WORKERS, t=T_ITERATIONS)
        for r in range(repetitions):
            ours.append(wall([str(EXE), "run", str(cfg), "--out", str(Path(tmp) / "out"), "--force"]))
            numpy_s.append(wall([sys.executable, "-c", script]))
    return ours, numpy_s


def google_benchmark(pattern, repetitions):
    """({name: [wall ms per unit]}, {name: [main-thread CPU ms per unit]}), one per repetition.

    The CPU figure is the calling thread's: at 2 threads it shows the share of the pass left to
    it (half when the partitions split evenly), and on a throttled or crowded machine it is the
    figure that still measures the code rather than the scheduler.
    """
    result = subprocess.run(
        [
            str(BENCH),
            f"--benchmark_filter={pattern}",
            f"--benchmark_repetitions={repetitions}",
            "--benchmark_min_time=0.3",
            "--benchmark_format=json",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    wall_ms, cpu_ms = {}, {}
    for b in json.loads(result.stdout)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        name = b["run_name"]
        # Replay benchmarks time 11 trace rows per benchmark iteration (ms_per_row counter).
        rows = round(b["real_time"] / (b["ms_per_row"] * 1e3)) if "ms_per_row" in b else 1
        wall_ms.setdefault(name, []).append(b["real_time"] / rows)
        cpu_ms.setdefault(name, []).append(b["cpu_time"] / rows)
    return wall_ms, cpu_ms


def logistic_step(a, b, x):
    z = a @ x
    loss = np.logaddexp(0.0, -b * z).sum()
    s = -b * scipy.special.expit(-b * z)
    return loss, a.T @ s


def time_peer(a, b, repetitions, inner=5):
    x = np.full(a.shape[1], 1e-3)
    logistic_step(a, b, x)  # warm-up
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(inner):
            logistic_step(a, b, x)
        samples.append((time.perf_counter() - start) / inner * 1e3)
    return samples


def dense_peer(repetitions):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((50000, 200))
    b = np.where(rng.random(50000) < 0.5, 1.0, -1.0)
    return time_peer(a, b, repetitions)


def covtype_like_csr():
    """396 112 × 15 509, 10 numeric columns then 78 one-hot groups (one 1 per group per row)."""
    rng = np.random.default_rng(1)
    m, p, numeric, groups = 396112, 15509, 10, 78
    edges = np.linspace(numeric, p, groups + 1).astype(np.int64)
    cols = np.empty((m, numeric + groups), dtype=np.int32)
    cols[:, :numeric] = np.arange(numeric)
    for g in range(groups):
        cols[:, numeric + g] = rng.integers(edges[g], edges[g + 1], size=m)
    values = np.ones((m, numeric + groups))
    values[:, :numeric] = rng.standard_normal((m, numeric))
    indptr = np.arange(0, m * (numeric + groups) + 1, numeric + groups, dtype=np.int32)
    a = scipy.sparse.csr_matrix((values.ravel(), cols.ravel(), indptr), shape=(m, p))
    b = np.where(rng.random(m) < 0.572, 1.0, -1.0)
    return a, b


def sparse_peer(repetitions):
    a, b = covtype_like_csr()
    return time_peer(a, b, repetitions, inner=3)


def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    flags = Path("/proc/cpuinfo").read_text()
    isa = ", ".join(f for f in ("avx2", "fma", "avx512f") if f" {f}" in flags)
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        blas = ", ".join(np.__config__.blas_opt_info.get("libraries", [])) or "unknown"
    except AttributeError:
        blas = "unknown"
    return (
        f"{cpu}, {os.cpu_count()} cores ({isa}), {mem:.0f} GiB, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, numpy {np.__version__} "
        f"(BLAS library: {blas}), scipy {scipy.__version__}"
    )


def replay_job(row, shape, floor_name, peer_name, peer, reps, loads):
    """One replay shape: the streaming-read floor at 1 and 2 threads, the replay at 1 and 2
    threads (wall and CPU) and the peer. Returns a dict of medians in ms; the sparse shape adds
    "margins", the product z = Ax alone."""
    loads.append(load())
    print(f"load average {loads[-1]:.2f}")
    wall_ms, cpu_ms = google_benchmark(f"bm_{shape}_", reps)
    job = f"{shape} replay"
    out = {}
    measures = [
        ("floor", f"bm_{shape}_stream_read/1/real_time", f"{floor_name} (floor)"),
        ("floor2", f"bm_{shape}_stream_read/2/real_time", f"{floor_name} on 2 threads (floor)"),
        ("one", f"bm_{shape}_iteration/1/real_time", "stragglersim, 1 thread"),
        ("two", f"bm_{shape}_iteration/2/real_time", "stragglersim, 2 threads"),
    ]
    if f"bm_{shape}_margins" in wall_ms:
        measures.append(("margins", f"bm_{shape}_margins", "margins alone, z = Ax (1 thread)"))
    for key, name, label in measures:
        out[key] = row(job, label, wall_ms[name], "ms")
    cpu_measures = [
        ("cpu_floor", f"bm_{shape}_stream_read/1/real_time", f"{floor_name} (floor), CPU"),
        ("cpu_one", f"bm_{shape}_iteration/1/real_time", "stragglersim, 1 thread, CPU"),
        ("cpu_two", f"bm_{shape}_iteration/2/real_time",
         "stragglersim, 2 threads, CPU of the main thread"),
    ]
    for key, name, label in cpu_measures:
        out[key] = row(job, label, cpu_ms[name], "ms")
    out["peer"] = row(job, peer_name, peer(reps), "ms")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--table", type=Path, default=Path(__file__).with_name("peers.md"))
    args = parser.parse_args()
    for path in (EXE, BENCH):
        if not path.exists():
            sys.exit(f"error: {path} is missing; build it with "
                     "bash tools/build.sh release stragglersim stragglersim_benchmarks")
    reps = args.repetitions
    rows = []  # (job, measure, min, median, note)
    loads = []

    def row(job, what, samples, unit, note=""):
        lo, med = summary(samples)
        rows.append((job, what, lo, med, unit, note))
        print(f"{job:<22} {what:<40} min {lo:9.3f} {unit}  median {med:9.3f} {unit}  {note}")
        return med

    loads.append(load())
    print(f"load average {loads[-1]:.2f}")
    ours, theirs = delay_only(reps)
    ours_med = row("delay-only", "stragglersim run (whole process)", ours, "s")
    numpy_med = row("delay-only", "numpy (whole process)", theirs, "s")
    delay_ratio = numpy_med / ours_med
    print(f"  delay-only: stragglersim {delay_ratio:.2f}x numpy")

    d = replay_job(row, "dense", "one streaming read", "numpy (full gradient)", dense_peer,
                   reps, loads)
    s = replay_job(row, "sparse", "one streaming read of CSR", "scipy.sparse (full gradient)",
                   sparse_peer, reps, loads)
    for name, r, peer in (("dense", d, "numpy"), ("sparse", s, "scipy")):
        print(f"  {name}: {r['one'] / r['floor']:.2f}x the floor at 1 thread; 2 threads "
              f"{r['one'] / r['two']:.2f}x faster than 1 (memory bandwidth "
              f"{r['floor'] / r['floor2']:.2f}x); {peer} / stragglersim {r['peer'] / r['one']:.2f}x "
              f"(1 thread), {r['peer'] / r['two']:.2f}x (2 threads)")

    ratios = [
        ("delay-only uncoded n = 65 536, T = 2 000: numpy / stragglersim", delay_ratio, "≥ 5"),
        ("dense replay: 1 thread / streaming read", d["one"] / d["floor"], "≤ 1.3"),
        ("dense replay: 1 thread / 2 threads", d["one"] / d["two"], "≥ 1.7"),
        ("dense streaming read: 1 thread / 2 threads (memory bandwidth, the bound on the line "
         "above for a pass at its floor)", d["floor"] / d["floor2"], ""),
        ("dense replay: 2 threads / streaming read on 2 threads", d["two"] / d["floor2"], ""),
        ("dense replay: numpy / stragglersim 2 threads", d["peer"] / d["two"], ""),
        ("sparse replay: 1 thread / streaming read of CSR", s["one"] / s["floor"], "≤ 1.3"),
        ("sparse margins alone (z = Ax) / streaming read of CSR (the gathers' floor)",
         s["margins"] / s["floor"], ""),
        ("sparse replay: 1 thread / margins alone", s["one"] / s["margins"], ""),
        ("sparse replay: 1 thread / 2 threads", s["one"] / s["two"], "≥ 1.7"),
        ("sparse streaming read: 1 thread / 2 threads (memory bandwidth)",
         s["floor"] / s["floor2"], ""),
        ("sparse replay: scipy / stragglersim 2 threads", s["peer"] / s["two"], "≥ 2"),
        ("CPU time: dense 1 thread / streaming read", d["cpu_one"] / d["cpu_floor"], "≤ 1.3"),
        ("CPU time: dense main thread, 1 thread / 2 threads (work split)",
         d["cpu_one"] / d["cpu_two"], "≈ 2"),
        ("CPU time: sparse 1 thread / streaming read of CSR", s["cpu_one"] / s["cpu_floor"],
         "≤ 1.3"),
        ("CPU time: sparse main thread, 1 thread / 2 threads (work split)",
         s["cpu_one"] / s["cpu_two"], "≈ 2"),
    ]
    lines = [
        "# stragglersim beside numpy and scipy.sparse",
        "",
        "Written by `benchmarks/peers.py` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {reps} repetitions each).",
        "",
        f"Machine: {machine()}.",
        f"Load average (1 min) before each job: {', '.join(f'{l:.2f}' for l in loads)} "
        "(the machine is shared; medians decide the ratios). Wall time over CPU time of the "
        "one-thread streaming read, a measure of how much of a core the process got: "
        f"dense {d['floor'] / d['cpu_floor']:.1f}, sparse {s['floor'] / s['cpu_floor']:.1f} "
        "(1.0 on an idle machine).",
        "",
        "| job | measure | min | median |",
        "|---|---|---:|---:|",
    ]
    for job, what, lo, med, unit, note in rows:
        lines.append(f"| {job} | {what} | {lo:.3f} {unit} | {med:.3f} {unit} |")
    lines += ["", "| ratio (medians) | value | goal |", "|---|---:|---|"]
    for what, value, goal in ratios:
        lines.append(f"| {what} | {value:.2f} | {goal} |")
    args.table.write_text("\n".join(lines) + "\n")
    print("\n".join(f"{w}: {v:.2f} (goal {g})" for w, v, g in ratios))
    print(f"wrote {args.table}")


if __name__ == "__main__":
    main()
