"""stragglersim against the same experiment written in numpy and scipy, whole processes, on the
same data file and the same measured delays.

    bash tools/build.sh release stragglersim
    /usr/bin/python3 benchmarks/end_to_end.py [--repetitions 5] [--job default|covtype|all]
                                              [--table benchmarks/end_to_end.md]
    /usr/bin/python3 benchmarks/end_to_end.py --job covtype-sweep [--rows R --features P]
                                              [--jobs N] [--sweep-flags="--no-batch"]
    /usr/bin/python3 benchmarks/end_to_end.py --check-only --rows 600 --features 200
                                              # equality only, small (tests/python)

The peer runs at its best: numpy on an optimised BLAS, as a pip-installed numpy (OpenBLAS) runs.
Before anything is timed a fresh numpy-side interpreter reports the BLAS and LAPACK libraries
its process mapped (/proc/self/maps; numpy.show_config reports the build, not what the loader
resolved libblas.so.3 to), and every numpy-side process records its own; the table names
them. The reference BLAS is refused (exit 2) unless --allow-reference-blas (--check-only, which
times nothing, runs on any BLAS). OPENBLAS_NUM_THREADS (and OMP_NUM_THREADS) are set to
os.cpu_count(): the cores a `stragglersim run` computes on by default (`threads`: every core,
std::thread::hardware_concurrency()) and the cores a `stragglersim sweep` divides among its jobs.

Three jobs, each written once to files both sides read:

- `default`: the default experiment's three configs, one seed each (uncoded `all`; exact FRC
  d = 2, `decodable`; ErasureHead FRC d = 2, `first_r` r = 15, no rescale), logistic regression with
  l2 = 1e-4, n = 30 workers, step 1/beta, 1000 iterations with a budget of 400 simulated s. The
  data is a 2-class Gaussian mixture of 6000 x 200 (separation 1.5, unit covariance, drawn here
  with numpy, seed 7) written as train.csv (the first 80 % of rows) and test.csv (the rest), so
  the split is the same file on both sides. The delays are a measured-times trace
  (`iteration,worker,seconds`, docs/model.md "Trace delays") of 1000 iterations of
  0.1 + Exp(1) s per unit load (the default experiment's Model A, seed 7), replayed in `cycle`
  mode with `tail: "load"`: iteration k uses row k - 1 and worker i's time is its load times the
  measured time.
- `covtype`: the four runs of experiments/paper/regime_injected_covtype_like.json (uncoded and
  FRC d = 2, each with `decodable` and `first_r` r = 15; Model B delays: shift 0.0018591 s and
  rate 2/s at the paper's 396 112 rows, `tail: "none"`, budget 60 simulated s, at most 400
  iterations) at make_figures.sh --quick's size, 8000 rows x 2000 features (shift scaled by
  8000/396 112 as --quick does). stragglersim cannot write its covtype_like generator's rows to a
  file, so a covtype-like CSR matrix of that shape is drawn here with numpy (10 N(0, 1) numeric
  columns, then 78 one-hot groups of equal width; labels from a planted logistic model) and
  written as LIBSVM train/test files; the delays are a trace of shift + Exp(rate) times replayed
  with `tail: "none"` (load l: the measured time plus (l - 1) times the worker's smallest time).
- `covtype-sweep` (run on its own, not by `all`): the sweep make_figures.sh runs for the injected
  covtype-like regime, experiments/paper/regime_injected_covtype_like.json's 7 schemes (uncoded,
  exact FRC, ErasureHead, ignore stragglers, K-sync with empirical rescaling, K-async, Anytime)
  x its 10 repetitions (seeds 7 and derive_seed(7, k), docs/sweeps.md), on the covtype job's
  data and delays with a trace of 4000 rows replayed from a random row per seed (`"start":
  "random"`). stragglersim runs it as one `stragglersim sweep --jobs N` process (N = the cores
  unless --jobs; --sweep-flags adds flags, recorded in the table) into a fresh folder, so f* is
  solved once; the numpy side is one process that reads the data and computes f* and beta once,
  then loops over the 70 runs in the sweep's index order. Each seed's start row and the Anytime
  rule's row samples are drawn as stragglersim draws them (mt19937_64 and Boost's
  uniform_int_distribution, replayed in Python; the samples' time is reported apart), and
  K-async is an event loop over the workers' pushes (docs/model.md section 4).

The numpy side (benchmarks/end_to_end_numpy.py, a fresh /usr/bin/python3 process per scheme) is
the experiment as a researcher writes it from docs/model.md: np.loadtxt (CSV) or
sklearn.datasets.load_svmlight_file (LIBSVM) into numpy / scipy.sparse, f* by
scipy.optimize.minimize (L-BFGS-B, gtol 1e-13), beta = lambda_max(A^T A / m) / 4 + l2
(np.linalg.eigvalsh of the dense Gram matrix, scipy.sparse.linalg.eigsh for sparse data), then
gradient descent x <- x - (1/beta) (g + l2 x) with g the decoded gradient: the sum of the
partition gradients grad F_j = (1/m) A_j^T s_j of the partitions covered by the heard workers
(all of them for uncoded and exact FRC), each row recording f(x_t), ||grad f(x_t)||, the test
loss, accuracy and AUC as stragglersim's trace does. Partition j is rows floor(j m / k) ...
floor((j + 1) m / k) - 1; FRC group g is workers d g ... d g + d - 1, holding partitions
d g ... d g + d - 1, load d.

Checks (every run of the script, also under --check-only): per scheme (the sweep: per run, after
its seed), the iteration times of
the two traces equal to 1e-9 relative (the same rows, counts and stops), f(x_t), the gradient
norm and the test loss to `LOSS_RTOL` relative, the test accuracy exactly, the test AUC to
1e-12, f* to 1e-10 relative, and every numpy-side process mapped the probe's BLAS. The script
fails (exit 1) on any difference.

Timing: per repetition, load average printed first, then stragglersim (`stragglersim run
CFG --out DIR` once per scheme, one process each) and numpy (one fresh /usr/bin/python3
process per scheme), alternating; the same work on both sides: every process reads the data and
the trace, computes f* and beta, runs one scheme and writes its trace (the sweep: one process a
side, each reading the data and computing f* once). Min and median of
`--repetitions` are printed and the ratio uses the medians. stragglersim's own breakdown comes
from summary.json's `phase_seconds` (docs/model.md section 7); what is left of the process's wall
time is process start, exit and the summary's own write. Writes the table to
benchmarks/end_to_end.md (or --table).
"""

import argparse
import csv
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NUMPY_SIDE = Path(__file__).resolve().parent / "end_to_end_numpy.py"

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "release" / "experiments" / "stragglersim"
PYTHON = "/usr/bin/python3"

# f(x_t) of the two sides after up to 1000 GD steps from the same data: both sum the same
# terms in different orders (BLAS against stragglersim's fixed chunks) and beta comes from
# eigvalsh on one side and power iteration to 1e-10 on the other; measured differences are
# printed by every run (docs in benchmarks/end_to_end.md).
LOSS_RTOL = 1e-9
TIME_RTOL = 1e-9
FSTAR_RTOL = 1e-10



def blas_probe():
    """loaded_blas() of a fresh numpy-side interpreter, under the environment the race gives it."""
    code = ("import json, sys, numpy, scipy.linalg; sys.path.insert(0, sys.argv[1]); "
            "from end_to_end_numpy import loaded_blas; print(json.dumps(loaded_blas()))")
    out = subprocess.run([PYTHON, "-c", code, str(Path(__file__).resolve().parent)],
                         check=True, capture_output=True, text=True, env=numpy_env()).stdout
    return json.loads(out)


def blas_text(blas):
    """One line for the tables: the implementation numpy's process loaded, and its threads."""
    if blas["kind"] == "openblas":
        return (f"OpenBLAS, {blas['threads']} threads (OPENBLAS_NUM_THREADS={BLAS_THREADS}; "
                f"{blas['config'] or 'version unknown'}; mapped: {', '.join(blas['paths'])})")
    names = ", ".join(blas["paths"]) or "none mapped"
    label = {"reference": "the reference BLAS and LAPACK (netlib)"}.get(blas["kind"], blas["kind"])
    return f"{label}: {names}"


# The numpy side's BLAS threads: the cores a `stragglersim run` computes on by default (its
# `threads` key defaults to every core, std::thread::hardware_concurrency(), which is
# os.cpu_count() here), and the cores a `stragglersim sweep` process divides among its jobs.
BLAS_THREADS = os.cpu_count() or 1
# The covtype-sweep job's `stragglersim sweep --jobs` and extra flags (main sets them).
SWEEP_JOBS = os.cpu_count() or 1
SWEEP_FLAGS = []
# What the probe found (main); every numpy-side process must have loaded the same libraries.
EXPECTED_BLAS = None


def numpy_env():
    """The environment of every numpy-side process: OpenBLAS (and any OpenMP BLAS) on the same
    cores as stragglersim's process."""
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(BLAS_THREADS)
    env["OMP_NUM_THREADS"] = str(BLAS_THREADS)
    return env




# ----------------------------------------------------------------------------------------------
# The shared inputs, written once.
# ----------------------------------------------------------------------------------------------

def write_default_job(folder, rows):
    import numpy as np

    rng = np.random.default_rng(7)
    m, p = rows, 200
    labels = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    mu = rng.standard_normal(p)
    mu *= 1.5 / np.linalg.norm(mu)
    features = labels[:, None] * mu[None, :] + rng.standard_normal((m, p))
    train = int(round(0.8 * m))
    header = ",".join([f"x{j}" for j in range(p)] + ["label"])
    for name, sl in (("train.csv", slice(0, train)), ("test.csv", slice(train, m))):
        np.savetxt(folder / name, np.column_stack([features[sl], labels[sl]]), delimiter=",",
                   fmt="%.17g", header=header, comments="")
    write_times(folder / "times.csv", rng, 1000, 30, 0.1, 1.0)
    job = {
        "name": "default", "format": "csv", "train": "train.csv", "test": "test.csv",
        "rows": m, "features": p, "l2": 1e-4, "workers": 30, "times": "times.csv", "tail": "load",
        "iterations": 1000, "time_budget": 400.0,
        "schemes": {
            "uncoded": {"code": {"kind": "uncoded"}, "rule": "all"},
            "frc_exact": {"code": {"kind": "frc", "d": 2}, "d": 2, "rule": "decodable"},
            "erasurehead": {"code": {"kind": "frc", "d": 2}, "d": 2, "rule": "first_r", "r": 15},
        },
    }
    (folder / "job.json").write_text(json.dumps(job, indent=1))
    return job


def write_times(path, rng, iterations, workers, shift, rate):
    seconds = shift + rng.exponential(1.0 / rate, size=(iterations, workers))
    with open(path, "w") as f:
        f.write("iteration,worker,seconds\n")
        for t in range(iterations):
            f.writelines(f"{t},{i},{seconds[t, i]!r}\n" for i in range(workers))


def write_libsvm(path, a, labels):
    indptr, indices, data = a.indptr, a.indices, a.data
    with open(path, "w") as f:
        for r in range(a.shape[0]):
            lo, hi = indptr[r], indptr[r + 1]
            cells = " ".join(f"{c + 1}:{v!r}" for c, v in zip(indices[lo:hi], data[lo:hi]))
            f.write(f"{int(labels[r]):+d} {cells}\n")


def write_covtype_job(folder, rows, features=2000, trace_rows=400):
    import numpy as np
    import scipy.sparse

    rng = np.random.default_rng(7)
    m, p, numeric, groups = rows, features, 10, 78
    edges = np.linspace(numeric, p, groups + 1).astype(np.int64)
    cols = np.empty((m, numeric + groups), dtype=np.int64)
    cols[:, :numeric] = np.arange(numeric)
    for g in range(groups):
        cols[:, numeric + g] = rng.integers(edges[g], edges[g + 1], size=m)
    values = np.ones((m, numeric + groups))
    values[:, :numeric] = rng.standard_normal((m, numeric))
    indptr = np.arange(0, m * (numeric + groups) + 1, numeric + groups)
    a = scipy.sparse.csr_matrix((values.ravel(), cols.ravel(), indptr), shape=(m, p))
    w = np.where(rng.random(p) < 0.1, rng.standard_normal(p), 0.0)
    w[:numeric] = 0.5 * rng.standard_normal(numeric)
    prob = 1.0 / (1.0 + np.exp(-(a @ w - np.median(a @ w) + 0.29)))
    labels = np.where(rng.random(m) < prob, 1.0, -1.0)
    train = int(round(0.8 * m))
    write_libsvm(folder / "train.svm", a[:train], labels[:train])
    write_libsvm(folder / "test.svm", a[train:], labels[train:])
    # The paper's Model B shift at 396 112 rows, scaled to these rows as make_figures.sh --quick.
    write_times(folder / "times.csv", rng, trace_rows, 30, 0.0018591 * rows / 396112, 2.0)
    job = {
        "name": "covtype", "format": "libsvm", "train": "train.svm", "test": "test.svm",
        "rows": m, "features": p, "l2": 1e-4, "workers": 30, "times": "times.csv", "tail": "none",
        "iterations": 400, "time_budget": 60.0,
        "schemes": {
            "uncoded_decodable": {"code": {"kind": "uncoded"}, "rule": "decodable"},
            "uncoded_first_r": {"code": {"kind": "uncoded"}, "rule": "first_r", "r": 15},
            "frc_decodable": {"code": {"kind": "frc", "d": 2}, "d": 2, "rule": "decodable"},
            "frc_first_r": {"code": {"kind": "frc", "d": 2}, "d": 2, "rule": "first_r", "r": 15},
        },
    }
    (folder / "job.json").write_text(json.dumps(job, indent=1))
    return job


REGIME = ROOT / "experiments" / "paper" / "regime_injected_covtype_like.json"


def write_sweep_job(folder, rows, features):
    """The covtype job's data and Model B delays, with the schemes and repetitions of
    experiments/paper/regime_injected_covtype_like.json (the sweep make_figures.sh runs for the
    injected covtype-like regime). Each repetition's seed replays the measured times from its own
    random row (`"start": "random"`), so the trace has 4000 rows, ten runs' worth."""
    regime = json.loads(REGIME.read_text())
    base = regime["base"]
    job = write_covtype_job(folder, rows, features, trace_rows=4000)
    job["name"] = "covtype-sweep"
    assert (base["workers"], base["loss"]["l2"], base["delay"]["tail"]) == (
        job["workers"], job["l2"], job["tail"]), "the regime's base changed: update this job"
    assert (base["optimizer"]["iterations"], base["optimizer"]["time_budget"]) == (
        job["iterations"], job["time_budget"]), "the regime's optimizer changed"
    schemes = {}
    for entry in regime["schemes"]:
        code = entry.get("/code", base["code"])
        stopping = entry.get("/stopping", base["stopping"])
        scheme = {"code": code, "rule": stopping["rule"],
                  "rescale": entry.get("/rescale", base["rescale"])}
        if code["kind"] == "frc":
            scheme["d"] = code["d"]
        for key in ("r", "k", "window"):
            if key in stopping:
                scheme[key] = stopping[key]
        schemes[entry["name"]] = scheme
    job["schemes"] = schemes
    job["sweep"] = {"seed": base["seed"], "repetitions": regime["repetitions"],
                    "baseline": regime["baseline"], "entries": regime["schemes"],
                    "regime": str(REGIME.relative_to(ROOT))}
    (folder / "job.json").write_text(json.dumps(job, indent=1))
    return job


def sweep_config(job):
    """The sweep file: the regime's schemes and repetitions over our_config's base (the data and
    measured times as files, each seed starting the replay at its own random row)."""
    base = our_config(job, next(iter(job["schemes"])))
    base["name"] = "covtype_sweep"
    base["code"], base["stopping"] = {"kind": "frc", "d": 2}, {"rule": "first_r", "r": 15}
    base["delay"]["start"] = "random"
    return {"name": "covtype_sweep", "base": base, "schemes": job["sweep"]["entries"],
            "baseline": job["sweep"]["baseline"], "repetitions": job["sweep"]["repetitions"]}


def our_config(job, name):
    scheme = job["schemes"][name]
    if job["format"] == "csv":
        data = {"source": "csv", "path": job["train"], "test_path": job["test"],
                "label_column": "label"}
    else:
        data = {"source": "libsvm", "path": job["train"], "test_path": job["test"],
                "features": job["features"], "storage": "sparse"}
    stopping = {"rule": scheme["rule"]}
    for key in ("r", "k", "window"):
        if key in scheme:
            stopping[key] = scheme[key]
    return {
        "name": f"{job['name']}-{name}", "seed": 7, "workers": job["workers"],
        "partitions": job["workers"], "data": data,
        "loss": {"kind": "logistic", "l2": job["l2"]},
        "code": scheme["code"], "stopping": stopping, "rescale": scheme.get("rescale", "none"),
        "delay": {"kind": "trace", "path": job["times"], "mode": "cycle", "tail": job["tail"]},
        "stragglers": "cancel",
        "optimizer": {"kind": "gd", "step": "auto", "iterations": job["iterations"],
                      "time_budget": job["time_budget"]},
        "backend": {"kind": "simulated"},
    }


def prepare(folder, job_name, rows, features):
    folder.mkdir(parents=True, exist_ok=True)
    if job_name == "default":
        job = write_default_job(folder, rows)
    elif job_name == "covtype-sweep":
        job = write_sweep_job(folder, rows, features)
        (folder / "sweep.json").write_text(json.dumps(sweep_config(job), indent=1))
        return job
    else:
        job = write_covtype_job(folder, rows, features)
    for name in job["schemes"]:
        (folder / f"{name}.json").write_text(json.dumps(our_config(job, name), indent=1))
    return job


# ----------------------------------------------------------------------------------------------
# Running both sides, checking, timing.
# ----------------------------------------------------------------------------------------------

def run_ours(folder, job):
    """Runs every scheme, one process each; returns each process's wall time (s)."""
    if "sweep" in job:
        return {"sweep": timed(lambda: run_ours_sweep(folder, job))}
    seconds = {}
    for name in job["schemes"]:
        seconds[name] = timed(lambda: subprocess.run(
            [str(EXE), "run", str(folder / f"{name}.json"), "--out", str(folder / "ours" / name),
             "--force", "--quiet"], check=True, stdout=subprocess.DEVNULL))
    return seconds


def run_ours_sweep(folder, job):
    """The whole sweep, one `stragglersim sweep` process, into a fresh folder (so that its f*
    cache starts empty and f* is solved once, as the numpy side solves it once)."""
    shutil.rmtree(folder / "ours", ignore_errors=True)
    done = subprocess.run([str(EXE), "sweep", str(folder / "sweep.json"), "--out",
                           str(folder / "ours"), "--jobs", str(SWEEP_JOBS), *SWEEP_FLAGS],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:  # its progress and warnings only when it fails
        sys.exit(f"error: stragglersim sweep exited {done.returncode}:\n{done.stderr}")


def run_numpy(folder, job):
    if "sweep" in job:
        shutil.rmtree(folder / "numpy", ignore_errors=True)
        subprocess.run([PYTHON, str(NUMPY_SIDE), "--numpy-sweep", str(folder / "job.json"),
                        str(folder / "numpy")], check=True, env=numpy_env())
        return
    (folder / "numpy").mkdir(exist_ok=True)
    for name in job["schemes"]:
        subprocess.run([PYTHON, str(NUMPY_SIDE), "--numpy-side", str(folder / "job.json"), name,
                        str(folder / "numpy" / f"{name}.csv")], check=True, env=numpy_env())


def read_trace(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def relative(x, y):
    return abs(x - y) / max(abs(x), abs(y), 1e-300)


LIMITS = {"iteration_time": TIME_RTOL, "time": TIME_RTOL, "loss": LOSS_RTOL,
          "grad_norm": LOSS_RTOL, "test_loss": LOSS_RTOL, "test_metric": 0.0, "test_auc": 1e-12,
          "f_star": FSTAR_RTOL, "smoothness": 1e-9}


def compare(name, ours_trace, numpy_trace, summary, extra, failures, worst=None):
    """The largest relative differences of one run's two traces (and f*, beta), into `worst`;
    differences above LIMITS and a different row count go to `failures`. Returns the rows."""
    ours, theirs = read_trace(ours_trace), read_trace(numpy_trace)
    worst = {} if worst is None else worst
    if len(ours) != len(theirs):
        failures.append(f"{name}: {len(ours)} rows in stragglersim's trace, "
                        f"{len(theirs)} in numpy's")
    for o, t in zip(ours, theirs):
        for col in ("iteration_time", "time", "loss", "grad_norm", "test_loss", "test_metric",
                    "test_auc"):
            worst[col] = max(worst.get(col, 0.0), relative(float(o[col]), float(t[col])))
    if EXPECTED_BLAS is not None and extra["blas"]["paths"] != EXPECTED_BLAS["paths"]:
        failures.append(f"{name}: the numpy process loaded {extra['blas']['paths']}, the "
                        f"probe {EXPECTED_BLAS['paths']}")
    for key in ("f_star", "smoothness"):
        worst[key] = max(worst.get(key, 0.0), relative(summary[key], extra[key]))
    for col, value in worst.items():
        if value > LIMITS[col]:
            failures.append(f"{name}: {col} differs by {value:.3g} relative "
                            f"(limit {LIMITS[col]:.0e})")
    return len(ours)


def f_star_text(summary, extra):
    return (f"f* by {summary['f_star_method']} ({summary['f_star_iterations']} iterations, "
            f"||grad f|| {summary['f_star_gradient_norm']:.1e}) and by L-BFGS-B "
            f"({extra['f_star_iterations']} iterations, ||grad f|| "
            f"{extra['f_star_grad_norm']:.1e})")


def finish_check(report, failures):
    for line in report:
        print("  " + line)
    if failures:
        sys.exit("error: the two sides differ:\n  " + "\n  ".join(sorted(set(failures))))
    return report


def check(folder, job):
    """Compares the two sides' outputs; returns lines describing the largest differences."""
    if "sweep" in job:
        return check_sweep(folder, job)
    report, failures = [], []
    for name in job["schemes"]:
        summary = json.loads((folder / "ours" / name / "summary.json").read_text())
        extra = json.loads((folder / "numpy" / f"{name}.json").read_text())
        worst = {}
        rows = compare(name, folder / "ours" / name / "trace.csv",
                       folder / "numpy" / f"{name}.csv", summary, extra, failures, worst)
        report.append(f"{name}: {rows - 1} iterations on both sides; largest relative "
                      "differences " + ", ".join(f"{c} {v:.2g}" for c, v in worst.items())
                      + "; " + f_star_text(summary, extra))
    return finish_check(report, failures)


def sweep_runs(folder):
    """stragglersim's index.csv rows, each with the numpy side's run of the same index."""
    with open(folder / "ours" / "index.csv") as f:
        ours = list(csv.DictReader(f))
    extra = json.loads((folder / "numpy" / "numpy.json").read_text())
    return ours, extra


def check_sweep(folder, job):
    """Run by run, as check(): the same seeds and replay starts, then the traces; one line per
    scheme with its largest differences over the repetitions."""
    ours, extra = sweep_runs(folder)
    report, failures = [], []
    if len(ours) != len(extra["runs"]):
        failures.append(f"{len(ours)} runs in stragglersim's sweep, "
                        f"{len(extra['runs'])} in numpy's")
    by_scheme = {}
    for o, t in zip(ours, extra["runs"]):
        name = f"{t['scheme']} (seed {t['seed']})"
        if (o["scheme"], int(o["seed"]), o["status"]) != (t["scheme"], t["seed"], "ok"):
            failures.append(f"run {o['index']}: stragglersim's {o['scheme']} seed {o['seed']} "
                            f"({o['status']}), numpy's {t['scheme']} seed {t['seed']}")
            continue
        summary = json.loads((folder / "ours" / o["folder"] / "summary.json").read_text())
        worst, counts, _ = by_scheme.setdefault(t["scheme"], ({}, [], summary))
        counts.append(compare(name, folder / "ours" / o["folder"] / "trace.csv",
                              folder / "numpy" / f"{t['index']}.csv", summary, extra, failures,
                              worst) - 1)
    for scheme, (worst, counts, summary) in by_scheme.items():
        report.append(f"{scheme}: {len(counts)} seeds, {min(counts)}-{max(counts)} iterations on "
                      "both sides; largest relative differences "
                      + ", ".join(f"{c} {v:.2g}" for c, v in worst.items()))
    if by_scheme:
        summary = next(iter(by_scheme.values()))[2]
        report.append(f"f* once per process on both sides: {f_star_text(summary, extra)}")
    return finish_check(report, failures)


def f_star_methods(folder, job):
    """How each side solved f* in its runs, e.g. 'newton (8 iterations) against L-BFGS-B (25)'."""
    ours, theirs = set(), set()
    for name in job["schemes"]:
        s = json.loads((folder / "ours" / name / "summary.json").read_text())
        e = json.loads((folder / "numpy" / f"{name}.json").read_text())
        ours.add(f"{s['f_star_method']}, {s['f_star_iterations']} iterations")
        theirs.add(f"{e['f_star_iterations']} iterations")
    return (f"stragglersim's {'; '.join(sorted(ours))} per run, scipy's L-BFGS-B "
            f"{'; '.join(sorted(theirs))} per run")


def timed(action):
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


OUR_PHASES = {"plan": "plan_seconds", "f_star": "f_star_seconds",
              "predictions": "predictions_seconds", "iterations": "iterations_seconds",
              "writing": "writing_seconds"}


def phases(folder, job):
    """The measured phases of both sides, each summed over the job's runs (seconds)."""
    ours, theirs = {}, {}
    if "sweep" in job:
        index, extra = sweep_runs(folder)
        for row in index:
            summary = json.loads((folder / "ours" / row["folder"] / "summary.json").read_text())
            for key, field in OUR_PHASES.items():
                ours[key] = ours.get(key, 0.0) + (summary.get(field) or 0.0)
        return ours, dict(extra["phase_seconds"])
    for name in job["schemes"]:
        summary = json.loads((folder / "ours" / name / "summary.json").read_text())
        for key, field in OUR_PHASES.items():
            ours[key] = ours.get(key, 0.0) + (summary.get(field) or 0.0)
        extra = json.loads((folder / "numpy" / f"{name}.json").read_text())
        for key, value in extra["phase_seconds"].items():
            theirs[key] = theirs.get(key, 0.0) + value
    return ours, theirs


def race(folder, job, repetitions, loads, runs):
    """Alternates the two sides; `runs` receives each of our processes' wall times by scheme."""
    ours, theirs, ours_phases, numpy_phases = [], [], [], []
    for rep in range(repetitions):
        loads.append(os.getloadavg()[0])
        print(f"  [{job['name']} {rep + 1}/{repetitions}] load average {loads[-1]:.2f}: "
              "stragglersim", end="", flush=True)
        per_run = run_ours(folder, job)
        for name, seconds in per_run.items():
            runs.setdefault(name, []).append(seconds)
        ours.append(sum(per_run.values()))
        loads.append(os.getloadavg()[0])
        print(f" {ours[-1]:.3f} s; load average {loads[-1]:.2f}: numpy", end="", flush=True)
        theirs.append(timed(lambda: run_numpy(folder, job)))
        print(f" {theirs[-1]:.3f} s")
        o, t = phases(folder, job)
        ours_phases.append(o | {"process": ours[-1]})
        numpy_phases.append(t | {"process": theirs[-1]})

    def medians(samples):
        return {key: statistics.median(s[key] for s in samples) for key in samples[0]}

    return ours, theirs, medians(ours_phases), medians(numpy_phases)


def process_start_seconds(repetitions=7):
    """Median wall time of `stragglersim --version`: starting and ending the process."""
    return statistics.median(
        timed(lambda: subprocess.run([str(EXE), "--version"], check=True,
                                     stdout=subprocess.DEVNULL)) for _ in range(repetitions))


def training_bytes(folder, job):
    """Bytes of the training set as stragglersim holds it (models::Dataset::stored_bytes):
    dense, m (p + 1) doubles with the labels; CSR, 16 bytes per non-zero (value and 64-bit
    column index), m + 1 row offsets and m labels of 8 bytes."""
    m, nnz = 0, 0
    with open(folder / job["train"]) as f:
        for line in f:
            if job["format"] == "csv":
                m += 1
            elif line.strip():
                m += 1
                nnz += line.count(":")
    if job["format"] == "csv":
        return (m - 1) * (job["features"] + 1) * 8  # less the header line
    return nnz * 16 + (m + 1) * 8 + m * 8


def stream_rate(nbytes, repetitions=7):
    """The machine's streaming-read rate (bytes/s) at this size: the best of `repetitions` sums
    of a float64 array of `nbytes` (at least 1 MiB) by numpy, one thread."""
    import numpy as np

    a = np.ones(max(nbytes, 1 << 20) // 8)
    a.sum()  # touch every page first
    best = min(timed(a.sum) for _ in range(repetitions))
    return a.nbytes / best


def floors(folder, job, runs, start):
    """Each run's floor: process start plus the bytes its passes and file reads read
    (summary.json's data_bytes_read) at the streaming-read rate of the training set's size."""
    size = training_bytes(folder, job)
    rate = stream_rate(size)
    files = sum((folder / job[k]).stat().st_size for k in ("train", "test"))
    out = []
    for name in job["schemes"]:
        summary = json.loads((folder / "ours" / name / "summary.json").read_text())
        read = summary["data_bytes_read"]
        floor = start + read / rate
        process = statistics.median(runs[name])
        out.append({"run": name, "process": process, "read": read, "files": files,
                    "passes": (read - files) / size, "floor": floor, "ratio": process / floor,
                    "plan": summary["plan_seconds"], "f_star": summary["f_star_seconds"],
                    "iterations": summary["iterations_seconds"]})
    return {"rate": rate, "size": size, "start": start, "runs": out}


def machine():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from peers import machine as describe
    # peers.py names the BLAS numpy was built against; the one it loads is printed apart.
    return describe().replace("(BLAS library:", "(built against BLAS:")


def table_head(intro, columns, text_columns=1):
    """A paragraph, then a Markdown table's header: the first `text_columns` left-aligned."""
    align = ["---"] * text_columns + ["---:"] * (len(columns) - text_columns)
    return ["", intro, "", "| " + " | ".join(columns) + " |", "|" + "|".join(align) + "|"]


def write_table(path, results, reps, loads, command):
    lines = [
        "# stragglersim against numpy and scipy, whole processes",
        "",
        f"Written by `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{reps} repetitions each, alternating).",
        "",
        f"Machine: {machine()}.",
        "",
        f"numpy's BLAS, as mapped by its processes (/proc/self/maps): "
        f"{blas_text(EXPECTED_BLAS)}.",
        "",
        f"Load average (1 min) before each job: {', '.join(f'{v:.2f}' for v in loads)} "
        "(the machine is shared; ratios are of medians measured in this one run).",
        "",
        "| job | processes per side | stragglersim min | median | numpy/scipy min | median | "
        "numpy / stragglersim (medians) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {r['title']} | {r['runs']} | {min(r['ours']):.3f} s | "
            f"{statistics.median(r['ours']):.3f} s | {min(r['numpy']):.3f} s | "
            f"{statistics.median(r['numpy']):.3f} s | "
            f"{statistics.median(r['numpy']) / statistics.median(r['ours']):.2f} |")
    lines += ["", "Outputs compared (largest relative differences over every trace row; the "
              "script fails above 1e-9 for times, losses and gradient norms, 1e-10 for f*):", ""]
    for name, r in results.items():
        lines += [f"- {r['title']}:"] + [f"  - {line}" for line in r["check"]]
    sweeps = {name: r for name, r in results.items() if "sweep" in r}
    lines += sweep_lines(sweeps)
    results = {name: r for name, r in results.items() if "sweep" not in r}
    if not results:
        path.write_text("\n".join(lines) + "\n")
        return
    lines += ["", "stragglersim's time by phase (medians over the repetitions, each summed over "
              "the job's processes; summary.json's `plan_seconds`, `f_star_seconds`, "
              "`predictions_seconds`, `iterations_seconds`, `writing_seconds`; the rest is the "
              "process's start and exit, the output folder and summary.json):", "",
              "| job | process | plan (config, data, trace, beta) | f* | predictions | "
              "iterations | writing trace.csv | rest |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        b = r["breakdown"]
        known = sum(b[k] for k in OUR_PHASES)
        lines.append(f"| {name} | {b['process']:.3f} s | {b['plan']:.3f} s | "
                     f"{b['f_star']:.3f} s | {b['predictions']:.3f} s | "
                     f"{b['iterations']:.3f} s | {b['writing']:.3f} s | "
                     f"{b['process'] - known:.3f} s |")
    lines += ["", "The numpy/scipy side's time by phase (measured inside its processes the same "
              "way; the rest is the interpreter's start and exit):", "",
              "| job | process | imports | data | f* | beta | trace | iterations | writing | "
              "rest |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    numpy_keys = ("imports", "data", "f_star", "beta", "trace", "iterations", "writing")
    for name, r in results.items():
        b = r["numpy_breakdown"]
        rest = b["process"] - sum(b[k] for k in numpy_keys)
        lines.append(f"| {name} | {b['process']:.3f} s | "
                     + " | ".join(f"{b[k]:.3f} s" for k in numpy_keys) + f" | {rest:.3f} s |")
    lines += ["", "The same work side by side (medians above; share of each side's process time "
              "in brackets):", "",
              "| job | work | stragglersim | numpy/scipy | numpy / stragglersim |",
              "|---|---|---:|---:|---:|"]
    for name, r in results.items():
        o, t = r["breakdown"], r["numpy_breakdown"]
        o_rest = o["process"] - sum(o[k] for k in OUR_PHASES)
        t_rest = t["process"] - sum(t[k] for k in numpy_keys)
        pairs = [
            ("process start and exit, imports", o_rest, t_rest + t["imports"]),
            ("reading data and trace, beta", o["plan"], t["data"] + t["trace"] + t["beta"]),
            ("f*", o["f_star"], t["f_star"]),
            ("predictions (stragglersim only)", o["predictions"], 0.0),
            ("iterations and writing the trace", o["iterations"] + o["writing"],
             t["iterations"] + t["writing"]),
        ]
        for work, ours_s, theirs_s in pairs:
            ratio = f"{theirs_s / ours_s:.2f}" if ours_s > 0 and theirs_s > 0 else "-"
            lines.append(f"| {name} | {work} | {ours_s:.3f} s ({100 * ours_s / o['process']:.0f} %)"
                         f" | {theirs_s:.3f} s ({100 * theirs_s / t['process']:.0f} %) | {ratio} |")
    lines += ["", "Where stragglersim's time goes, largest phase first:", ""]
    names = {"plan": "reading the config, data and trace and computing beta", "f_star": "f*",
             "predictions": "the predictions", "iterations": "the iterations",
             "writing": "writing trace.csv"}
    for name, r in results.items():
        o = r["breakdown"]
        order = sorted(OUR_PHASES, key=lambda k: -o[k])
        lines.append(f"- {name}: " + ", ".join(
            f"{names[k]} {100 * o[k] / o['process']:.0f} %" for k in order)
            + f"; f* by {r['f_star']}.")
    lines += table_head(
        "Each run against its floor: the process start (`stragglersim --version`, median of 7) "
        "plus the bytes the run read, summary.json's `data_bytes_read` (every pass over the "
        "training and test sets, and the data files read whole), at the machine's "
        "streaming-read rate (numpy's sum of a float64 array of the training set's size, one "
        "thread, best of 7). Passes: the bytes other than the files over the training set's "
        "size. Process: the run's own median wall time.",
        ["job", "run", "process", "data read", "files", "passes", "floor", "process / floor",
         "plan", "f*", "iterations"], text_columns=2)
    for name, r in results.items():
        fl = r["floor"]
        for run in fl["runs"]:
            lines.append(
                f"| {name} | {run['run']} | {run['process']:.3f} s | "
                f"{run['read'] / 1e6:.1f} MB | {run['files'] / 1e6:.1f} MB | "
                f"{run['passes']:.1f} | {run['floor']:.3f} s | {run['ratio']:.2f} | "
                f"{run['plan']:.3f} s | {run['f_star']:.3f} s | {run['iterations']:.3f} s |")
    lines.append("")
    for name, r in results.items():
        fl = r["floor"]
        lines.append(f"- {name}: training set {fl['size'] / 1e6:.1f} MB, streaming read "
                     f"{fl['rate'] / 1e9:.1f} GB/s, process start {fl['start'] * 1e3:.1f} ms.")
    path.write_text("\n".join(lines) + "\n")


def sweep_lines(sweeps):
    """The sweep job's own tables: how each side ran, and the numpy process's phases."""
    lines = []
    for name, r in sweeps.items():
        sw, o, t = r["sweep"], r["breakdown"], r["numpy_breakdown"]
        flags = " ".join(sw["flags"]) or "none"
        lines += ["", f"{name}: stragglersim is one `stragglersim sweep sweep.json --out DIR "
                  f"--jobs {sw['jobs']}` process (extra sweep flags: {flags}), the sweep file "
                  f"being {sw['regime']}'s schemes and {sw['repetitions']} repetitions over the "
                  "data and measured times written here; numpy is one /usr/bin/python3 process "
                  "that reads the data, computes f* and beta once and loops over the same runs "
                  "in the sweep's index order. Medians over the repetitions (s):", "",
                  "| side | process | data | f* | beta | trace | iterations | anytime row samples "
                  "| writing | rest |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        keys = ("data", "f_star", "beta", "trace", "iterations", "sampling", "writing")
        rest = t["process"] - sum(t[k] for k in keys)
        lines.append(f"| numpy/scipy | {t['process']:.3f} | "
                     + " | ".join(f"{t[k]:.3f}" for k in keys) + f" | {rest:.3f} (imports "
                     f"{t['imports']:.3f}) |")
        together = ("one run at a time per job" if "--no-batch" in sw["flags"] else
                    "lock-step groups' members at once, so these sums exceed the process")
        lines.append(f"| stragglersim (each run's phases summed over the runs; {sw['jobs']} jobs, "
                     f"{together}) | "
                     f"{o['process']:.3f} | - | {o['f_star']:.3f} | - | - | "
                     f"{o['iterations']:.3f} | - | {o['writing']:.3f} | predictions "
                     f"{o['predictions']:.3f} |")
        without = (statistics.median(r["numpy"]) - t["sampling"]) / statistics.median(r["ours"])
        lines += ["", "numpy's anytime row samples replay stragglersim's generator (mt19937_64 "
                  "and Boost's uniform_int in Python) so that the traces can be compared; a "
                  "script of its own would draw them with numpy, so that column is work the "
                  "race adds to the peer, and `numpy / stragglersim` without it is "
                  f"{without:.2f}."]
    return lines


DEFAULT_ROWS = {"default": 6000, "covtype": 8000, "covtype-sweep": 8000}


def title(name, job):
    rows = job["rows"]
    if "sweep" in job:
        return (f"injected covtype-like regime sweep ({len(job['schemes'])} schemes x "
                f"{job['sweep']['repetitions']} seeds), {rows} x {job['features']} LIBSVM")
    if name == "default":
        return (f"default experiment (3 runs: uncoded, exact FRC, ErasureHead), {rows} x "
                f"{job['features']} CSV")
    size = " (--quick size)" if rows == 8000 and job["features"] == 2000 else (
        " (the paper's size)" if rows == 396112 else "")
    return f"injected covtype-like regime (4 runs), {rows} x {job['features']} LIBSVM{size}"


def main():
    global EXE
    global SWEEP_JOBS, SWEEP_FLAGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--job", choices=["default", "covtype", "covtype-sweep", "all"],
                        default="all", help="all: default and covtype (the sweep on its own)")
    parser.add_argument("--jobs", type=int, default=SWEEP_JOBS,
                        help="covtype-sweep: stragglersim sweep --jobs (default: the cores)")
    parser.add_argument("--sweep-flags", default="",
                        help="covtype-sweep: more stragglersim sweep flags, one string "
                             "(e.g. --sweep-flags=\"--no-batch\"); recorded in the table")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the data set (default: 6000 default, 8000 covtype)")
    parser.add_argument("--features", type=int, default=2000,
                        help="columns of the covtype job (default 2000; at least 88)")
    parser.add_argument("--check-only", action="store_true",
                        help="run both sides once and compare their outputs; no timing")
    parser.add_argument("--table", type=Path, default=Path(__file__).with_name("end_to_end.md"))
    parser.add_argument("--exe", type=Path, default=EXE,
                        help="the stragglersim executable (default: build/release's)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="folder for the inputs and outputs (default: a temporary one)")
    parser.add_argument("--allow-reference-blas", action="store_true",
                        help="time numpy even when it runs on the reference BLAS (an unfair "
                             "peer: a pip-installed numpy runs on OpenBLAS)")
    args = parser.parse_args()
    EXE = args.exe.resolve()
    if not EXE.exists():
        sys.exit(f"error: {EXE} is missing; build it with "
                 "bash tools/build.sh release stragglersim")
    SWEEP_JOBS, SWEEP_FLAGS = args.jobs, shlex.split(args.sweep_flags)
    global EXPECTED_BLAS
    EXPECTED_BLAS = blas_probe()
    print(f"numpy's BLAS (mapped by its process): {blas_text(EXPECTED_BLAS)}")
    if EXPECTED_BLAS["kind"] == "reference" and not args.check_only \
            and not args.allow_reference_blas:
        print("error: numpy runs on the reference BLAS, so the race would time an unoptimised "
              "peer; install an optimised one (Debian: apt-get install libopenblas0-pthread, "
              "which update-alternatives makes libblas.so.3 and liblapack.so.3), or pass "
              "--allow-reference-blas to time it anyway", file=sys.stderr)
        sys.exit(2)
    jobs = ["default", "covtype"] if args.job == "all" else [args.job]
    work = args.keep or Path(tempfile.mkdtemp(prefix="end_to_end_"))
    results, loads = {}, []
    start = None if args.check_only else process_start_seconds()
    try:
        for name in jobs:
            folder = work / name
            job = prepare(folder, name, args.rows or DEFAULT_ROWS[name], args.features)
            print(f"{name}: checking the outputs of both sides")
            run_ours(folder, job)
            run_numpy(folder, job)
            report = check(folder, job)
            if args.check_only:
                continue
            runs = {}
            ours, theirs, breakdown, numpy_breakdown = race(folder, job, args.repetitions, loads,
                                                            runs)
            results[name] = {"title": title(name, job), "runs": len(job["schemes"]),
                             "ours": ours, "numpy": theirs, "breakdown": breakdown,
                             "numpy_breakdown": numpy_breakdown, "check": report}
            if "sweep" in job:
                results[name]["runs"] = len(job["schemes"]) * job["sweep"]["repetitions"]
                results[name]["sweep"] = {"jobs": SWEEP_JOBS, "flags": SWEEP_FLAGS,
                                          "repetitions": job["sweep"]["repetitions"],
                                          "regime": job["sweep"]["regime"]}
                floor = {"runs": []}
            else:
                floor = floors(folder, job, runs, start)
                results[name]["floor"] = floor
                results[name]["f_star"] = f_star_methods(folder, job)
            for r in floor["runs"]:
                print(f"  {r['run']}: {r['process']:.3f} s, floor {r['floor']:.3f} s "
                      f"({r['read'] / 1e6:.1f} MB read at {floor['rate'] / 1e9:.1f} GB/s), "
                      f"{r['ratio']:.2f} x its floor")
            print(f"  stragglersim median {statistics.median(ours):.3f} s (min {min(ours):.3f}),"
                  f" numpy median {statistics.median(theirs):.3f} s (min {min(theirs):.3f}):"
                  f" numpy / stragglersim {statistics.median(theirs) / statistics.median(ours):.2f}")
            for side, b in (("stragglersim", breakdown), ("numpy", numpy_breakdown)):
                print(f"  {side} by phase (s): " + ", ".join(f"{k} {v:.3f}" for k, v in b.items()))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if not args.check_only:
        # The command as run, without the folders it was told to use.
        shown, skip = [], False
        for a in sys.argv[1:]:
            if skip or a.startswith(("--table=", "--keep=", "--exe=")):
                skip = False
                continue
            skip = a in ("--table", "--keep", "--exe")
            if not skip:
                shown.append(a)
        command = "/usr/bin/python3 benchmarks/end_to_end.py " + " ".join(shown)
        write_table(args.table, results, args.repetitions, loads, command.strip())
        print(f"wrote {args.table}")


if __name__ == "__main__":
    main()
