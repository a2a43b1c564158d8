#!/usr/bin/python3
"""The MPI backend under mpirun (CTest label `mpi`; README "MPI backend").

usage: mpi_backend_test.py CASE --binary STRAGGLERSIM -- MPIRUN [MPIRUN OPTIONS...]

Each case starts one or two short `mpirun ... -np K stragglersim run` jobs (a few seconds each,
every one bounded by a timeout) and checks the outputs against the simulated clock with the same
seed. Only what holds whatever the load is asserted exactly; timing-sensitive agreement is
asserted on iterations whose simulated arrivals around the stop are further apart than
JITTER (real seconds), and the raw agreement is printed.
"""

import argparse
import copy
import csv
import gzip
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

# A worker that oversleeps, or a master that wakes late, by less than this cannot change the
# heard set of an iteration whose simulated arrivals around the stop are JITTER apart. 5 ms is
# 20x the idle wake-up latency and covers a scheduler slice on a loaded 2-core machine.
JITTER = 5e-3
JOB_TIMEOUT = 60  # seconds per mpirun job: a hung rank fails the test instead of blocking CI
# Open MPI 4.1's mpirun sometimes never ends after MPI_Abort when a rank is SIGSTOPped; a job
# allowed that teardown is killed TEARDOWN seconds after the master's abort line.
ABORT_LINE = "aborting the MPI job"
TEARDOWN = 20

BASE = {
    "name": "mpi-test",
    "seed": 7,
    "workers": 8,
    "partitions": 8,
    "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 2000,
             "features": 50, "test_fraction": 0.0},
    "loss": {"kind": "logistic", "l2": 0.0001},
    "code": {"kind": "frc", "d": 2},
    "stopping": {"rule": "first_r", "r": 4},
    "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
    "stragglers": "cancel",
    "optimizer": {"kind": "gd", "step": "auto", "iterations": 100},
    "backend": {"kind": "mpi", "inject": True, "seconds_per_unit": 0.01, "timeout": 5.0},
}


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)
    print(f"  ok: {what}")


class Runner:
    def __init__(self, binary, mpirun, scratch):
        self.binary = binary
        self.mpirun = mpirun
        self.scratch = scratch

    def run(self, name, config, np=None, simulated=False, wrapper=(), timeout=JOB_TIMEOUT,
            hung_teardown=False):
        """Runs `config` (each rank's command prefixed by `wrapper`); returns (exit status,
        stderr, output folder). A job still running after `timeout` seconds is killed with its
        whole process group and fails the test; with `hung_teardown`, a job still running
        TEARDOWN seconds after the master's abort line is killed the same way and its status
        returned as None (with what it printed)."""
        path = os.path.join(self.scratch, f"{name}.json")
        with open(path, "w") as f:
            json.dump(config, f)
        out = os.path.join(self.scratch, name)
        command = list(wrapper) + [self.binary, "run", path, "--out", out]
        if not simulated:
            np = np if np is not None else config["workers"] + 1
            command = self.mpirun + ["-np", str(np)] + command
        job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(job.stderr), daemon=True)
        reader.start()
        start = time.monotonic()
        aborted = None  # when the master's abort line arrived
        while job.poll() is None:
            now = time.monotonic()
            if aborted is None and hung_teardown and any(ABORT_LINE in x for x in lines):
                aborted = now
            if now - start > timeout or (aborted is not None and now - aborted > TEARDOWN):
                os.killpg(job.pid, signal.SIGKILL)  # mpirun and every rank it started
                job.wait()
                reader.join()
                err = "".join(lines)
                print(f"  $ {' '.join(command)}  -> killed after {now - start:.0f} s")
                if aborted is None:
                    raise Failure(f"the job did not end within {timeout} s: {err[-600:]}")
                return None, err, out
            time.sleep(0.1)
        reader.join()
        err = "".join(lines)
        print(f"  $ {' '.join(command)}  -> exit {job.returncode}")
        return job.returncode, err, out


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def read_summary(out):
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def config_with(**changes):
    """BASE with `changes`: optimizer and backend keys are merged, other keys replaced."""
    c = copy.deepcopy(BASE)
    for key, value in changes.items():
        if key in ("optimizer", "backend"):
            c[key].update(value)
        else:
            c[key] = value
    return c


def simulated_twin(config):
    c = copy.deepcopy(config)
    c["backend"] = {"kind": "simulated"}
    return c


def case_agreement(runner):
    """W = 8, FRC d = 2, first 4, 100 iterations, 0.01 s per unit, -np 9."""
    config = config_with()
    status, err, out = runner.run("agreement", config)
    check(status == 0, f"mpi run exits 0 ({err.strip()[-300:]})")
    status, err, sim_out = runner.run("agreement-sim", simulated_twin(config), simulated=True)
    check(status == 0, "simulated run exits 0")
    heard = read_csv(os.path.join(out, "heard.csv"))
    trace = read_csv(os.path.join(out, "trace.csv"))
    sim_trace = read_csv(os.path.join(sim_out, "trace.csv"))
    check(len(heard) == 100 and len(trace) == 101, "100 iterations recorded")
    # The delays come from the same stream: the simulated clock columns are the same numbers.
    check(all(a["time"] == b["time"] for a, b in zip(trace, sim_trace)),
          "simulated times identical to the simulated backend's")
    spu = config["backend"]["seconds_per_unit"]
    same = [r["same_set"] == "1" for r in heard]
    late = [float(r["real_iteration_time"]) - float(r["iteration_time"]) * spu for r in heard]
    gap = [float(r["near_tie_gap"]) * spu for r in heard]
    # Load-proof: no worker delivers before its injected delay and first_r is monotone, so the
    # real stop is never early, and a heard set can only differ when some worker of the
    # simulated set was late by at least the gap to the next arrival: then the real stop is late
    # by at least that gap (a stale or misattributed message would break this).
    check(min(late) >= -1e-4, f"real stop >= simulated stop x seconds_per_unit "
                              f"(min slack {min(late):.2e} s)")
    check(all(late[t] >= gap[t] - 1e-4 for t in range(len(heard)) if not same[t]),
          "every disagreement is a worker late by more than the gap around the stop")
    clear = [t for t in range(len(heard)) if gap[t] > JITTER]
    clear_same = sum(same[t] for t in clear)
    stalled = sum(x > JITTER for x in late)
    print(f"  raw agreement {sum(same)}/{len(same)}; clear iterations (gap > {JITTER * 1e3:g} "
          f"ms) {clear_same}/{len(clear)}; stop late by > {JITTER * 1e3:g} ms in {stalled}")
    check(len(clear) >= 30, f"at least 30 of 100 iterations are clear of near-ties ({len(clear)})")
    if stalled <= 5:
        check(clear_same >= math.ceil(0.95 * len(clear)),
              "heard sets equal the simulated ones in >= 95% of the clear iterations")
    else:
        # The scheduler held our processes back by more than JITTER in over 5% of the
        # iterations (a CPU-saturated machine): the timing assertion would measure the load.
        print(f"  SKIPPED the >= 95% assertion: {stalled} stalled iterations (run the mpi "
              f"label alone, as tests/run_tests.sh does)")
    # Losses: the same bytes while every heard set so far agreed (the master combines in worker
    # order, and each worker computed its message from its own partitions' rows only).
    agreed = 0
    while agreed < len(same) and same[agreed]:
        agreed += 1
    print(f"  rows 0..{agreed} follow identical heard sets")
    check(all(trace[t]["loss"] == sim_trace[t]["loss"] for t in range(agreed + 1)),
          "losses are the simulated backend's, digit for digit, while the heard sets agree")
    summary = read_summary(out)
    ratio = summary["total_real_stop_time"] / (summary["total_time"] * spu)
    print(f"  real stop / (simulated x spu) = {ratio:.4f}; "
          f"real wall {summary['total_real_wall_time']:.4f} s")
    check(summary["total_real_wall_time"] >= summary["total_real_stop_time"],
          "the wall clock (broadcast to next broadcast) includes every stop time")


def hang_config(policy, timeout):
    return config_with(
        stragglers=policy,
        optimizer={"iterations": 8},
        backend={"seconds_per_unit": 0.005, "timeout": timeout,
                 "faults": [{"worker": 3, "kind": "hang", "from_iteration": 3}]})


def check_hung_worker_unheard(out):
    heard = read_csv(os.path.join(out, "heard.csv"))
    check(all("3" not in r["heard"].split() for r in heard[2:]),
          "the hung worker is never heard from its first faulty iteration on")
    return heard


def case_hang(runner, policy):
    timeout = 0.4
    config = hang_config(policy, timeout)
    status, err, out = runner.run(f"hang-{policy}", config)
    check(status == 0, f"{policy}: an approximate scheme keeps going past a hung worker "
                       f"({err.strip()[-300:]})")
    check(read_summary(out)["status"] == "ok", "status ok")
    check_hung_worker_unheard(out)
    trace = read_csv(os.path.join(out, "trace.csv"))
    per_iteration = [float(trace[t]["real_time"]) - float(trace[t - 1]["real_time"])
                     for t in range(1, len(trace))]
    if policy == "drain":
        check(all(s >= timeout for s in per_iteration[2:]),
              "drain waits for the hung worker up to the timeout in every faulty iteration")
    else:
        # Nothing waits for the hung worker: all 8 iterations together take less than one
        # drained timeout would.
        check(sum(per_iteration) < 6 * timeout,
              f"{policy} never waits for the hung worker ({sum(per_iteration):.3f} s in all)")


def case_slow(runner):
    """A slow worker (factor 3, drain): its delays are 3 T_i in the real run and the lock-step
    simulation alike; drain waits for it, so every real iteration lasts at least the simulated
    wall time (the slowed last arrival) x seconds_per_unit."""
    spu = 0.005
    config = config_with(
        stragglers="drain", optimizer={"iterations": 10},
        backend={"seconds_per_unit": spu,
                 "faults": [{"worker": 3, "kind": "slow", "factor": 3.0}]})
    status, err, out = runner.run("slow", config)
    check(status == 0, f"a run with a slow worker exits 0 ({err.strip()[-300:]})")
    free = copy.deepcopy(config)
    free["backend"] = {"kind": "simulated"}
    status, err, free_out = runner.run("slow-free", free, simulated=True)
    check(status == 0, "the fault-free simulated run exits 0")
    trace = read_csv(os.path.join(out, "trace.csv"))
    free_trace = read_csv(os.path.join(free_out, "trace.csv"))

    def increments(rows, column):  # the trace's wall_time and real_time are cumulative
        return [float(b[column]) - float(a[column]) for a, b in zip(rows, rows[1:])]

    slow_wall = increments(trace, "wall_time")
    free_wall = increments(free_trace, "wall_time")
    # The same delay stream: only worker 3's delay is multiplied, so the last arrival can only
    # move later, and does where worker 3 was (or becomes) the last.
    check(all(s >= f for s, f in zip(slow_wall, free_wall)),
          "simulated drain times >= the fault-free ones in every iteration")
    check(any(s > f for s, f in zip(slow_wall, free_wall)),
          "and later in some iteration (worker 3 slowed to the last arrival)")
    real = increments(trace, "real_time")
    check(len(real) == 10 and all(r >= w * spu - 1e-4 for r, w in zip(real, slow_wall)),
          "every real drained iteration lasts at least the slowed wall time x seconds_per_unit")
    heard = read_csv(os.path.join(out, "heard.csv"))
    print(f"  heard sets as simulated in {sum(r['same_set'] == '1' for r in heard)}/{len(heard)}")


def case_timeout(runner):
    config = config_with(code={"kind": "uncoded"}, stopping={"rule": "all"},
                         optimizer={"iterations": 8},
                         backend={"seconds_per_unit": 0.005, "timeout": 0.5,
                                  "faults": [{"worker": 3, "kind": "hang",
                                              "from_iteration": 3}]})
    status, err, out = runner.run("timeout", config)
    check(status == 3, "uncoded with a hung worker stops with exit 3")
    expected = ("iteration 3: timeout: the all rule was not satisfied 0.5 s after the broadcast; "
                "heard 7 of 8 workers; not heard: 3")
    summary = read_summary(out)
    check(summary["status"] == "failed" and summary["error"] == expected,
          "summary: failed, with the timeout message")
    trace = read_csv(os.path.join(out, "trace.csv"))
    check([r["iteration"] for r in trace] == ["0", "1", "2"],
          "the trace is complete up to the last good row")


# Runs the command in argv[3:]; on MPI rank argv[2], once the master's trace (argv[1]) holds a
# few rows, stops it with SIGSTOP (a rank that no longer answers). Writes the stopped pid to
# <argv[1]>.stopped; SIGTERM (mpirun ending the job) kills the command, stopped or not, and
# waits for it, so that no rank outlives its wrapper.
STOP_RANK = ("import os, signal, subprocess, sys, time\n"
             "trace, target = sys.argv[1], sys.argv[2]\n"
             "child = subprocess.Popen(sys.argv[3:])\n"
             "def end(*_):\n"
             "    child.kill()\n"
             "    child.wait()\n"
             "    sys.exit(143)\n"
             "signal.signal(signal.SIGTERM, end)\n"
             "if os.environ.get('OMPI_COMM_WORLD_RANK') == target:\n"
             "    while child.poll() is None:\n"
             "        try:\n"
             "            with open(trace) as f:\n"
             "                if sum(1 for _ in f) >= 3:\n"
             "                    break\n"
             "        except FileNotFoundError:\n"
             "            pass\n"
             "        time.sleep(0.05)\n"
             "    if child.poll() is None:\n"
             "        os.kill(child.pid, signal.SIGSTOP)\n"
             "        with open(trace + '.stopped', 'w') as f:\n"
             "            f.write(str(child.pid))\n"
             "sys.exit(child.wait())\n")


def case_stopped_rank(runner):
    """A worker rank SIGSTOPped mid-run under first_r: the run needs none of its messages and
    finishes every iteration, then the stop handshake gives up on it after max(timeout, 10 s)
    and the master aborts the job (exit 3) — after writing summary.json and heard.csv."""
    iterations = 120
    config = config_with(optimizer={"iterations": iterations}, backend={"timeout": 2.0})
    out = os.path.join(runner.scratch, "stopped")
    trace = os.path.join(out, "trace.csv")
    try:
        status, err, out = runner.run("stopped", config,
                                      wrapper=[sys.executable, "-c", STOP_RANK, trace, "5"],
                                      timeout=90, hung_teardown=True)
    finally:
        if os.path.exists(trace + ".stopped"):  # never leave a stopped process behind
            with open(trace + ".stopped") as f:
                try:
                    os.kill(int(f.read()), 9)
                except ProcessLookupError:
                    pass
    check(os.path.exists(trace + ".stopped"), "worker 4 (rank 5) was stopped during the run")
    # mpirun's own exit after MPI_Abort: the abort's status 3, except that Open MPI 4.1's mpirun
    # sometimes crashes in its PMIx server teardown after an abort (SIGSEGV in
    # PMIx_server_finalize, a known upstream bug: open-mpi/ompi#13650) when a rank was stopped.
    # That crash is accepted only with its own backtrace; any other status fails.
    # Its other failure mode is a teardown that never ends (status None: the job was killed
    # TEARDOWN seconds after the master's abort line, once everything stragglersim does has
    # been done).
    upstream_crash = status == -signal.SIGSEGV and "PMIx_server_finalize" in err
    upstream_hang = status is None and ABORT_LINE in err
    check(status == 3 or upstream_crash or upstream_hang,
          f"the job ends with exit 3, or mpirun's known teardown crash (got {status}: "
          f"{err.strip()[-600:]})")
    check("error: 1 of 8 MPI workers did not stop; aborting the MPI job" in err,
          "the master names the workers that did not stop")
    check(os.path.exists(os.path.join(out, "summary.json")), "summary.json exists")
    summary = read_summary(out)
    check(summary["status"] == "ok" and summary["iterations"] == iterations,
          "summary.json was written before the abort: every iteration ran")
    check(len(read_csv(os.path.join(out, "heard.csv"))) == iterations,
          "heard.csv was written before the abort, one row per iteration")


def case_wrong_np(runner):
    config = config_with(optimizer={"iterations": 5})
    status, err, out = runner.run("wrong-np", config, np=3)
    check(status == 2, "a wrong -np exits 2")
    expected = ("wrong-np.json:/backend/kind: the mpi backend needs one process per worker and "
                "one master; got mpirun -np 3; expected mpirun -np 9 (8 workers + 1)")
    check(expected in err, f"the message names the expected count ({expected})")
    check(not os.path.exists(out), "nothing written")


def case_no_inject(runner):
    config = config_with(optimizer={"iterations": 10}, backend={"inject": False})
    status, err, out = runner.run("no-inject", config)
    check(status == 0, f"inject false runs ({err.strip()[-300:]})")
    with open(os.path.join(out, "worker_times.csv")) as f:
        check(f.readline() == "iteration,worker,seconds\n",
              "worker_times.csv header: iteration,worker,seconds (the trace delay model's input)")
    rows = read_csv(os.path.join(out, "worker_times.csv"))
    check([(int(r["iteration"]), int(r["worker"])) for r in rows] ==
          [(t, w) for t in range(1, 11) for w in range(8)],
          "worker_times.csv: one row per iteration and worker")
    heard = read_csv(os.path.join(out, "heard.csv"))
    times = {(int(r["iteration"]), int(r["worker"])): r["seconds"] for r in rows}
    measured = [times[(int(h["iteration"]), int(w))] for h in heard for w in h["heard"].split()]
    check(all(s != "" and 0.0 < float(s) < 5.0 for s in measured),
          "every heard worker's compute time is measured")


def case_adaptive(runner):
    """The adaptive r, the adaptive deadline and dynamic_frc's regrouping (40 iterations each):
    their state follows the injected delays, so the simulated clock, r (workers heard) and the
    deadlines are the simulated backend's in every row, and the losses are too while the heard
    sets agree."""
    for name, changes in (
            ("adaptive_r", {"stopping": {"rule": "adaptive_r", "window": 3, "r_min": 2,
                                         "slack": 0.3}}),
            ("adaptive_deadline", {"stopping": {"rule": "adaptive_deadline", "window": 3,
                                                "mads": 1.0}}),
            ("dynamic_frc", {"code": {"kind": "dynamic_frc", "d": 2, "every": 3},
                             "delay": {"kind": "heterogeneous",
                                       "factors": [2.5, 2.5, 1, 1, 1, 1, 1, 1]}})):
        config = config_with(optimizer={"iterations": 40}, **changes)
        status, err, out = runner.run(name, config)
        check(status == 0, f"{name}: mpi run exits 0 ({err.strip()[-300:]})")
        status, err, sim_out = runner.run(f"{name}-sim", simulated_twin(config), simulated=True)
        check(status == 0, f"{name}: simulated run exits 0")
        trace = read_csv(os.path.join(out, "trace.csv"))
        sim_trace = read_csv(os.path.join(sim_out, "trace.csv"))
        check(len(trace) == 41 and len(sim_trace) == 41, f"{name}: 40 iterations recorded")
        for column in ("time", "iteration_time") + (
                ("deadline",) if name == "adaptive_deadline" else ("workers_heard",)):
            check(all(a[column] == b[column] for a, b in zip(trace, sim_trace)),
                  f"{name}: column {column} identical to the simulated backend's")
        if name == "adaptive_r":
            counts = {int(r["workers_heard"]) for r in trace[1:]}
            check(len(counts) >= 2 and min(counts) >= 2, f"{name}: r moves ({sorted(counts)})")
        same = [r["same_set"] == "1" for r in read_csv(os.path.join(out, "heard.csv"))]
        agreed = 0
        while agreed < len(same) and same[agreed]:
            agreed += 1
        check(all(trace[t]["loss"] == sim_trace[t]["loss"] for t in range(agreed + 1)),
              f"{name}: losses digit for digit while the heard sets agree (rows 0..{agreed})")


def write_idx(path, sizes, values, compress):
    """An IDX file of unsigned bytes (magic 0x0000 08 <dimensions>, big-endian sizes)."""
    data = bytes([0, 0, 8, len(sizes)]) + b"".join(s.to_bytes(4, "big") for s in sizes) + values
    with (gzip.open(path, "wb") if compress else open(path, "wb")) as f:
        f.write(data)


def write_fashion(folder, train, test, side, compress, seed, pair):
    """Fashion-MNIST-shaped IDX files of random side x side images and random labels 0 ... 9;
    returns how many training and test images are of the classes `pair`."""
    os.makedirs(folder)
    rng = random.Random(seed)
    suffix = ".gz" if compress else ""
    counts = []
    for prefix, n in (("train", train), ("t10k", test)):
        labels = bytes(rng.randrange(10) for _ in range(n))
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte{suffix}"), [n, side, side],
                  rng.randbytes(n * side * side), compress)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte{suffix}"), [n], labels,
                  compress)
        counts.append(sum(label in pair for label in labels))
    return counts


# Runs the command in argv[2:] and writes its peak resident set (KiB) to <argv[1]>.<MPI rank>.
PEAK_RSS = ("import os, resource, subprocess, sys\n"
            "status = subprocess.call(sys.argv[2:])\n"
            "rank = os.environ.get('OMPI_COMM_WORLD_RANK', 'none')\n"
            "with open(sys.argv[1] + '.' + rank, 'w') as f:\n"
            "    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "sys.exit(status)\n")


def case_fashion_idx(runner):
    """Fashion-MNIST IDX files (gzip, then plain) under the rule `all`: every heard set is the
    simulated one, so the trace is the simulated backend's byte for byte (but the three real_*
    columns), and each worker, holding only its partitions' images, peaks well below rank 0."""
    workers = 8
    side = 8  # 64 pixels: rank 0's f* (Newton) stays cheap on many rows
    for compress in (True, False):
        kind = "gzip" if compress else "plain"
        folder = os.path.join(runner.scratch, f"fashion-{kind}")
        # 300 000 images of random classes: about 60 000 rows of the pair [0, 6], 31 MB as
        # doubles; uncoded, so a worker holds 1/8 of them.
        pair_rows = write_fashion(folder, 300000, 10000, side, compress, 5, (0, 6))
        config = config_with(
            workers=workers, partitions=workers,
            data={"source": "fashion_mnist", "dir": folder, "classes": [0, 6]},
            code={"kind": "uncoded"}, stopping={"rule": "all"}, stragglers="drain",
            optimizer={"iterations": 12},
            backend={"seconds_per_unit": 0.001, "timeout": 20.0})
        rss = os.path.join(runner.scratch, f"rss-{kind}")
        status, err, out = runner.run(f"fashion-{kind}", config,
                                      wrapper=[sys.executable, "-c", PEAK_RSS, rss])
        check(status == 0, f"{kind}: mpi run on IDX files exits 0 ({err.strip()[-300:]})")
        status, err, sim_out = runner.run(f"fashion-{kind}-sim", simulated_twin(config),
                                          simulated=True)
        check(status == 0, f"{kind}: simulated run exits 0 ({err.strip()[-300:]})")
        heard = read_csv(os.path.join(out, "heard.csv"))
        check(len(heard) == 12 and all(r["same_set"] == "1" for r in heard),
              f"{kind}: every heard set is the simulated one (rule all)")
        with open(os.path.join(out, "trace.csv")) as f:
            lines = f.read().splitlines()
        real = ",real_time,real_iteration_time,real_wall_time"
        check(lines[0].endswith(real), f"{kind}: the mpi trace ends with the real_* columns")
        measured = len(real.split(",")) - 1
        stripped = "".join(",".join(line.split(",")[:-measured]) + "\n" for line in lines)
        with open(os.path.join(sim_out, "trace.csv")) as f:
            check(stripped == f.read(),
                  f"{kind}: trace.csv but the real_* columns is the simulated one, byte for byte")
        summary = read_summary(sim_out)
        check(summary["status"] == "ok", f"{kind}: the simulated run is ok")
        peaks = {}
        for rank in range(workers + 1):
            with open(f"{rss}.{rank}") as f:
                peaks[rank] = int(f.read()) * 1024
        # Rank 0 holds the whole training and test sets as doubles (and read the image bytes);
        # a worker holds 1/8 of the training rows. Half of rank 0's data as the margin.
        data_bytes = 8 * (side * side + 1) * sum(pair_rows)
        worst = max(peaks[r] for r in range(1, workers + 1))
        print(f"  {kind}: peak RSS rank 0 {peaks[0] / 2**20:.1f} MiB, workers at most "
              f"{worst / 2**20:.1f} MiB (rank 0's data about {data_bytes / 2**20:.1f} MiB)")
        check(peaks[0] - worst > data_bytes / 2,
              f"{kind}: every worker's peak RSS is below rank 0's by more than half its data")


def collective_config(workers, kind, rule, iterations, **backend):
    """A collective over the workers (docs/backends.md "Collectives"): all with uncoded, first_r
    with ErasureHead (FRC d = 2, the first half); 50 ms delay units."""
    c = config_with(
        workers=workers, partitions=workers,
        code={"kind": "uncoded"} if rule == "all" else {"kind": "frc", "d": 2},
        stopping={"rule": "all"} if rule == "all" else {"rule": "first_r", "r": workers // 2},
        optimizer={"iterations": iterations},
        backend=dict({"seconds_per_unit": 0.05}, **backend))
    c["aggregation"] = {"kind": kind}
    return c


def check_collective_log(out, workers, iterations, what):
    log = read_csv(os.path.join(out, "collective.csv"))
    check(len(log) == workers * iterations
          and [(int(r["iteration"]), int(r["rank"])) for r in log]
          == [(t, w) for t in range(1, iterations + 1) for w in range(workers)],
          f"{what}: collective.csv has one row per iteration and rank")
    check(all(float(r["collective_seconds"]) >= 0 for r in log),
          f"{what}: every rank measured its all-reduce time")
    return log


def case_collective(runner, workers):
    """Ring and tree, all and first_r, on -np workers+1: heard sets, times, bytes."""
    iterations = 15
    for kind in ("ring", "tree"):
        for rule in ("all", "first_r"):
            what = f"{kind} {rule} np {workers + 1}"
            config = collective_config(workers, kind, rule, iterations)
            status, err, out = runner.run(f"{kind}-{rule}", config)
            check(status == 0, f"{what}: mpi run exits 0 ({err.strip()[-300:]})")
            status, err, sim_out = runner.run(f"{kind}-{rule}-sim", simulated_twin(config),
                                              simulated=True)
            check(status == 0, f"{what}: simulated run exits 0 ({err.strip()[-300:]})")
            heard = read_csv(os.path.join(out, "heard.csv"))
            trace = read_csv(os.path.join(out, "trace.csv"))
            sim_trace = read_csv(os.path.join(sim_out, "trace.csv"))
            check(len(heard) == iterations, f"{what}: {iterations} iterations recorded")
            check(all(a["time"] == b["time"] for a, b in zip(trace, sim_trace)),
                  f"{what}: simulated times identical to the simulated backend's")
            spu = config["backend"]["seconds_per_unit"]
            same = [r["same_set"] == "1" for r in heard]
            # real_iteration_time runs to the last completion, after the rule's stop: a heard
            # set can only differ when that came later than the simulated gap allows.
            late = [float(r["real_iteration_time"]) - float(r["iteration_time"]) * spu
                    for r in heard]
            gap = [float(r["near_tie_gap"]) * spu for r in heard]
            check(min(late) >= -1e-4, f"{what}: real end >= simulated stop x seconds_per_unit")
            check(all(late[t] >= gap[t] - 1e-4 for t in range(len(heard)) if not same[t]),
                  f"{what}: every disagreement is a stop late by more than the gap")
            if rule == "all":
                check(all(same), f"{what}: every heard set is the simulated one (rule all)")
            agreed = 0
            while agreed < len(same) and same[agreed]:
                agreed += 1
            check(all(trace[t]["loss"] == sim_trace[t]["loss"] for t in range(agreed + 1)),
                  f"{what}: losses are the simulated backend's, digit for digit, while the heard "
                  f"sets agree ({agreed}/{len(same)})")
            log = check_collective_log(out, workers, iterations, what)
            times = sorted(float(r["collective_seconds"]) for r in log)
            print(f"  {what}: heard as simulated {sum(same)}/{len(same)}, all-reduce (join to "
                  f"completion) mean {sum(times) / len(times) * 1e3:.2f} ms, smallest "
                  f"{times[0] * 1e3:.3f} ms")


def case_collective_allreduce(runner):
    """allreduce mpi: MPI_Allreduce among the worker ranks, measured; not byte-identical."""
    iterations = 15
    for workers in (4, 8):
        what = f"MPI_Allreduce np {workers + 1}"
        config = collective_config(workers, "ring", "all", iterations, allreduce="mpi")
        status, err, out = runner.run(f"allreduce-{workers}", config)
        check(status == 0, f"{what}: mpi run exits 0 ({err.strip()[-300:]})")
        status, err, sim_out = runner.run(f"allreduce-{workers}-sim", simulated_twin(config),
                                          simulated=True)
        check(status == 0, f"{what}: simulated run exits 0")
        heard = read_csv(os.path.join(out, "heard.csv"))
        check(all(r["same_set"] == "1" for r in heard), f"{what}: every heard set is simulated")
        log = check_collective_log(out, workers, iterations, what)
        trace = read_csv(os.path.join(out, "trace.csv"))
        sim_trace = read_csv(os.path.join(sim_out, "trace.csv"))
        # MPI's own summation order: the losses agree to rounding, not digit for digit.
        worst = max(abs(float(a["loss"]) - float(b["loss"])) / abs(float(b["loss"]))
                    for a, b in zip(trace, sim_trace))
        check(worst < 1e-9, f"{what}: losses equal the simulated backend's to rounding "
                            f"({worst:.1e})")
        times = sorted(float(r["collective_seconds"]) for r in log)
        print(f"  {what}: all-reduce (join to completion) median {times[len(times) // 2] * 1e3:.3f}"
              f" ms, smallest {times[0] * 1e3:.3f} ms")


CASES = {
    "collective_np5": lambda r: case_collective(r, 4),
    "collective_np9": lambda r: case_collective(r, 8),
    "collective_allreduce": case_collective_allreduce,
    "agreement": case_agreement,
    "hang_cancel": lambda r: case_hang(r, "cancel"),
    "hang_finish": lambda r: case_hang(r, "finish"),
    "hang_drain": lambda r: case_hang(r, "drain"),
    "slow": case_slow,
    "timeout": case_timeout,
    "stopped_rank": case_stopped_rank,
    "wrong_np": case_wrong_np,
    "no_inject": case_no_inject,
    "fashion_idx": case_fashion_idx,
    "adaptive": case_adaptive,
}


def main():
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--binary", required=True)
    args = parser.parse_args(argv[:split])
    mpirun = argv[split + 1:]
    if not mpirun:
        parser.error("the mpirun command follows --")
    with tempfile.TemporaryDirectory(prefix="stragglersim-mpi-") as scratch:
        try:
            CASES[args.case](Runner(args.binary, mpirun, scratch))
        except (Failure, subprocess.TimeoutExpired) as e:
            print(f"FAILED: {e}")
            return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
