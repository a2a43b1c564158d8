"""The numpy / scipy side of benchmarks/end_to_end.py: the experiment as a researcher writes it
from docs/model.md, run as a fresh /usr/bin/python3 process per scheme (--numpy-side) or per
sweep (--numpy-sweep), and the probe of which BLAS its process mapped. end_to_end.py's docstring
describes what it computes and how the race checks it against stragglersim.

    /usr/bin/python3 benchmarks/end_to_end_numpy.py --numpy-side JOB.json SCHEME OUT.csv
    /usr/bin/python3 benchmarks/end_to_end_numpy.py --numpy-sweep JOB.json OUT_FOLDER
"""

import json
import os
import sys
import time
from pathlib import Path

# ----------------------------------------------------------------------------------------------
# Which BLAS the numpy side runs on: what its process mapped, not what numpy was built against.
# ----------------------------------------------------------------------------------------------

def loaded_blas():
    """The BLAS and LAPACK libraries this process has mapped (/proc/self/maps), as
    {"kind": "openblas" | "reference" | "mkl" | "blis" | "atlas" | "unknown", "paths": [...],
    "config": OpenBLAS's own description, "threads": OpenBLAS's thread count}. Call it after
    importing numpy and scipy.linalg: numpy maps libblas.so.3 and scipy liblapack.so.3, each
    resolved by the dynamic loader (on Debian through update-alternatives), so only the mapped
    paths say which implementation runs (numpy.show_config reports the build's)."""
    paths = set()
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[5].startswith("/"):
                name = os.path.basename(fields[5])
                if any(k in name for k in ("blas", "lapack", "mkl", "blis", "atlas")) and \
                        ".cpython-" not in name:
                    paths.add(fields[5])
    except OSError:
        return {"kind": "unknown", "paths": [], "config": None, "threads": None}
    text = " ".join(sorted(paths))
    kind = "unknown"
    for key in ("openblas", "mkl", "blis", "atlas"):
        if key in text:
            kind = key
            break
    else:
        # Debian's reference implementations, blas/libblas.so.3 and lapack/liblapack.so.3 (the
        # alternatives' targets of priority 10; mapped under their real names, such as
        # blas/libblas.so.3.11.0).
        if any(("/blas/libblas.so" in q or "/lapack/liblapack.so" in q) for q in paths):
            kind = "reference"
    config, threads = None, None
    if kind == "openblas":
        import ctypes
        for q in sorted(paths):
            try:
                lib = ctypes.CDLL(q)
                lib.openblas_get_config.restype = ctypes.c_char_p
                config = lib.openblas_get_config().decode()
                threads = int(lib.openblas_get_num_threads())
                break
            except (OSError, AttributeError):
                continue
    return {"kind": kind, "paths": sorted(paths), "config": config, "threads": threads}


# ----------------------------------------------------------------------------------------------
# The numpy / scipy side: everything it needs is in this function, run in a fresh process.
# ----------------------------------------------------------------------------------------------

def numpy_setup(job_path, clock):
    """What a researcher's script does once per process: the imports, the data, f*, beta and the
    measured times. `clock` receives the phases; returns everything the runs need."""
    import types

    import numpy as np
    import scipy.optimize
    import scipy.sparse
    import scipy.sparse.linalg
    import scipy.special
    import scipy.stats

    clock.append(("imports", time.perf_counter()))
    job = json.loads(Path(job_path).read_text())
    folder = Path(job_path).parent

    def read(path):
        if job["format"] == "csv":
            table = np.loadtxt(folder / path, delimiter=",", skiprows=1)
            return np.ascontiguousarray(table[:, :-1]), table[:, -1]
        from sklearn.datasets import load_svmlight_file
        a, labels = load_svmlight_file(str(folder / path), n_features=job["features"])
        return a.tocsr(), labels

    a, labels = read(job["train"])
    a_test, labels_test = read(job["test"])
    # Logistic labels: the smaller value is -1, the larger +1.
    lo = min(labels.min(), labels_test.min())
    b = np.where(labels == lo, -1.0, 1.0)
    b_test = np.where(labels_test == lo, -1.0, 1.0)
    m, p = a.shape
    l2 = job["l2"]
    clock.append(("data", time.perf_counter()))

    def objective(x):
        z = a @ x
        value = np.logaddexp(0.0, -b * z).mean() + 0.5 * l2 * (x @ x)
        s = -b * scipy.special.expit(-b * z)
        return value, a.T @ s / m + l2 * x

    # f*: L-BFGS from 0 with a tight tolerance.
    res = scipy.optimize.minimize(objective, np.zeros(p), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 20000, "maxcor": 20, "gtol": 1e-13,
                                           "ftol": 1e-17})
    clock.append(("f_star", time.perf_counter()))

    # beta = lambda_max(A^T A / m) / 4 + l2 (the logistic loss's curvature is at most 1/4).
    if scipy.sparse.issparse(a):
        gram = scipy.sparse.linalg.LinearOperator((p, p), matvec=lambda v: a.T @ (a @ v) / m,
                                                  dtype=float)
        lam = float(scipy.sparse.linalg.eigsh(gram, k=1, which="LA", tol=0,
                                              return_eigenvectors=False)[0])
    else:
        lam = float(np.linalg.eigvalsh(a.T @ a / m)[-1])
    beta = lam / 4.0 + l2
    clock.append(("beta", time.perf_counter()))

    # The measured times: T iterations x n workers, in iteration order.
    raw = np.loadtxt(folder / job["times"], delimiter=",", skiprows=1)
    order = np.lexsort((raw[:, 1], raw[:, 0]))
    times = raw[order, 2].reshape(-1, job["workers"])
    clock.append(("trace", time.perf_counter()))
    return types.SimpleNamespace(np=np, sp=scipy, job=job, a=a, b=b, a_test=a_test,
                                 b_test=b_test, m=m, p=p, l2=l2, res=res, f_star=float(res.fun),
                                 beta=beta, step=1.0 / beta, times=times, parts=None)


def numpy_run(ctx, scheme, start=0, seed=None, sampling=None):
    """One run of `scheme` (code, stopping rule, rescaling) from x = 0: the trace rows
    (iteration, time, iteration_time, loss, ||grad f||, test loss, accuracy, AUC). The measured
    times replay from row `start`; `seed` is the run's (the anytime rule's row samples);
    `sampling` (a one-element list) receives the seconds spent drawing those samples."""
    np, scipy, job, a, b, m, l2 = ctx.np, ctx.sp, ctx.job, ctx.a, ctx.b, ctx.m, ctx.l2
    step = ctx.step
    n = job["workers"]
    d = scheme.get("d", 1)
    k = n  # one partition per worker (FRC: groups of d workers share d partitions)
    load = float(d)
    times = ctx.times
    if job["tail"] == "load":
        worker_times = load * times
    else:  # "none": the measured time plus (load - 1) times the worker's smallest time
        worker_times = times + (load - 1.0) * times.min(axis=0)
    groups = n // d
    bounds = [j * m // k for j in range(k + 1)]
    row_partition = np.repeat(np.arange(k), np.diff(bounds))
    rule = scheme["rule"]

    def margins_loss(z, y):
        return np.logaddexp(0.0, -y * z)

    def auc(z, y):
        ranks = scipy.stats.rankdata(z)
        pos = y > 0
        n_pos, n_neg = pos.sum(), (~pos).sum()
        return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)

    def row(t, now, dt, x, z):
        s = -b * scipy.special.expit(-b * z)
        loss = margins_loss(z, b).mean() + 0.5 * l2 * (x @ x)
        grad = a.T @ s / m + l2 * x
        zt = ctx.a_test @ x
        test_loss = margins_loss(zt, ctx.b_test).mean()
        accuracy = np.mean(np.where(zt >= 0.0, 1.0, -1.0) == ctx.b_test)
        rows.append((t, now, dt, loss, np.linalg.norm(grad), test_loss, accuracy,
                     auc(zt, ctx.b_test)))
        return s, grad

    def partition(j):  # rows bounds[j] ... bounds[j + 1] - 1 of A
        if ctx.parts is None:
            ctx.parts = [a[bounds[i]:bounds[i + 1]] for i in range(k)]
        return ctx.parts[j]

    rows = []
    x = np.zeros(ctx.p)
    s, grad = row(0, 0.0, 0.0, x, a @ x)
    if rule == "k_async":
        return k_async_rows(ctx, scheme, start, worker_times, partition, bounds, row, s, rows)
    elapsed = 0.0
    for t in range(1, job["iterations"] + 1):
        w = worker_times[(start + t - 1) % len(worker_times)]
        scale = 1.0
        if rule == "all":
            dt = w.max()
            covered = np.ones(groups, dtype=bool)
        elif rule == "decodable":  # every group heard: the latest group's first arrival
            dt = w.reshape(groups, d).min(axis=1).max()
            covered = np.ones(groups, dtype=bool)
        elif rule == "first_r":  # the r earliest workers; a group is covered if one is heard
            heard = np.argsort(w, kind="stable")[: scheme["r"]]
            dt = w[heard].max()
            covered = np.zeros(groups, dtype=bool)
            covered[heard // d] = True
        else:  # anytime: every worker sends at min(T, X_i) what it finished
            window = scheme["window"]
            dt = np.minimum(window, w).max()
            clock = time.perf_counter()
            weights = anytime_row_weights(np, w, window, bounds, m, seed, t)
            sampling[0] += time.perf_counter() - clock
            g = a.T @ (s * weights) + l2 * x
            covered = None
        if covered is not None:
            if covered.all():
                g = grad
            else:  # the sum of the covered partitions' gradients
                alpha = np.repeat(covered, d)[row_partition]
                if scheme.get("rescale", "none") == "empirical":  # times k / partitions covered
                    scale = k / float(np.repeat(covered, d).sum())
                g = scale * (a.T @ (s * alpha) / m) + l2 * x
        x = x - step * g
        elapsed += dt
        s, grad = row(t, elapsed, dt, x, a @ x)
        if elapsed >= job["time_budget"]:
            break
    return rows


def anytime_row_weights(np, w, window, bounds, m, seed, t):
    """The anytime estimate (1/sum c) sum of the finished rows' gradients as one weight per row:
    worker i finished c_i = |P_i| rows if X_i <= T, floor(|P_i| T / X_i) otherwise, a uniform
    sample of its partition drawn as stragglersim draws it (docs/model.md section 2: selection
    sampling on mt19937_64 seeded by the SplitMix64 mix of (seed, stream 6, draw t, i))."""
    n = len(w)
    done = []
    for i in range(n):
        size = bounds[i + 1] - bounds[i]
        c = size if w[i] <= window else int(np.floor(float(size) * (window / w[i])))
        done.append(min(c, size))
    total = sum(done)
    weights = np.zeros(m)
    if total == 0:
        return weights
    for i in range(n):
        size, c = bounds[i + 1] - bounds[i], done[i]
        if c == size:
            weights[bounds[i]:bounds[i + 1]] = 1.0 / total
        elif c > 0:
            seed_i = derive_seed(derive_seed(derive_seed(seed, 6), t), i)
            weights[bounds[i] + np.array(selection_sample(np, seed_i, size, c))] = 1.0 / total
    return weights


def k_async_rows(ctx, scheme, start, worker_times, partition, bounds, row, s, rows):
    """K-async (docs/model.md section 4): every worker computes at the x it last received,
    pushes and waits; each update uses the first K pushes, x_t = x_{t-1} - step (n/K sum of
    their partition gradients, each at the x its worker had, + l2 x_{t-1}), and sends x_t to
    those K workers. Worker i's c-th computation takes row start + c - 1 of the measured times."""
    import heapq

    np, a, m, l2, job = ctx.np, ctx.a, ctx.m, ctx.l2, ctx.job
    n, kk = job["workers"], scheme["k"]
    computations, version_of = [0] * n, [0] * n
    events, pushed = [], [0]
    s_of = {0: s}  # the version's s = -b sigma(-b z), for the partition gradients
    version = 0
    x = np.zeros(ctx.p)

    def begin(i, now):
        computations[i] += 1
        version_of[i] = version
        delay = worker_times[(start + computations[i] - 1) % len(worker_times)][i]
        heapq.heappush(events, (now + delay, pushed[0], i))
        pushed[0] += 1

    for i in range(n):
        begin(i, 0.0)
    last = 0.0
    for t in range(1, job["iterations"] + 1):
        used = []
        while len(used) < kk:
            now, _, i = heapq.heappop(events)
            used.append((i, computations[i], version_of[i]))
        g = np.zeros(ctx.p)
        for i, _, v in sorted(used):
            lo, hi = bounds[i], bounds[i + 1]
            g += partition(i).T @ s_of[v][lo:hi] / m
        x = x - ctx.step * ((n / kk) * g + l2 * x)
        version += 1
        for i, _, _ in used:
            begin(i, now)
        s_of[version], _ = row(t, now, now - last, x, a @ x)
        in_use = set(version_of)
        for v in [v for v in s_of if v not in in_use]:
            del s_of[v]
        last = now
        if now >= job["time_budget"]:
            break
    return rows


# mt19937_64 (Boost.Random's, the standard's) and Boost's uniform_int_distribution, so that the
# numpy side draws the rows and trace start rows stragglersim draws (outputs compared exactly).
MASK64 = (1 << 64) - 1


def derive_seed(seed, stream):
    """models/base/random_stream.h: the SplitMix64 mix of (seed, stream)."""
    z = (seed + 0x9E3779B97F4A7C15 * (stream + 1)) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def mt19937_64(np, seed, count, as_array=False):
    """The first `count` outputs (or more, whole blocks of 312) of mt19937_64 seeded with
    `seed`, as Python ints (a uint64 array with as_array)."""
    mt = [seed & MASK64]
    for i in range(1, 312):
        prev = mt[-1]
        mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
    state = np.array(mt, dtype=np.uint64)
    upper, lower = np.uint64(0xFFFFFFFF80000000), np.uint64(0x7FFFFFFF)
    matrix = np.uint64(0xB5026F5AA96619E9)
    one, out = np.uint64(1), []
    while count > 0:
        # The twist in three vectorised pieces: i < 156 reads old words only, 156 <= i < 311
        # reads the words the first piece rewrote, i = 311 wraps to word 0.
        for lo, hi in ((0, 156), (156, 311), (311, 312)):
            idx = np.arange(lo, hi)
            y = (state[idx] & upper) | (state[(idx + 1) % 312] & lower)
            state[idx] = state[(idx + 156) % 312] ^ (y >> one) ^ np.where(
                (y & one) == one, matrix, np.uint64(0))
        y = state.copy()
        y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
        y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
        y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
        y ^= y >> np.uint64(43)
        out.append(y)
        count -= 312
    return np.concatenate(out) if as_array else np.concatenate(out).tolist()


def boost_uniform_int(draws, at, top):
    """Boost's uniform_int_distribution(0, top) on mt19937_64 outputs `draws` from index `at`:
    (value, next index). top = 0 takes no draw."""
    if top == 0:
        return 0, at
    bucket = MASK64 // (top + 1)
    if MASK64 % (top + 1) == top:
        bucket += 1
    while True:
        value = draws[at] // bucket
        at += 1
        if value <= top:
            return value, at


def selection_sample(np, seed, size, c):
    """models/objective.cpp's selection sampling (Knuth's algorithm S): the c of `size` rows,
    ascending, that stragglersim's partition_minibatch_gradient sums. Row r (< size - 1) takes
    draw r when no draw is rejected (Boost rejects one with probability below size / 2^64), so
    the picks are one vectorised division; a rejection falls back to the draw-by-draw loop."""
    if size > 1:
        draws = mt19937_64(np, seed, size - 1, as_array=True)[: size - 1]
        tops = np.arange(size - 1, 0, -1, dtype=np.uint64)
        mask = np.uint64(MASK64)
        buckets = mask // (tops + np.uint64(1)) + (mask % (tops + np.uint64(1)) == tops)
        values = draws // buckets.astype(np.uint64)
        if not (values > tops).any():
            kept, needed = [], c
            for r, value in enumerate(values.tolist()):
                if needed == 0:
                    break
                if value < needed:
                    kept.append(r)
                    needed -= 1
            return kept + [size - 1] * needed  # the last row's range is 0: kept if still needed
    return selection_sample_by_draw(np, seed, size, c)


def selection_sample_by_draw(np, seed, size, c):
    """selection_sample one Boost draw at a time (rejections included)."""
    draws = mt19937_64(np, seed, size + 8)
    kept, at, needed = [], 0, c
    for r in range(size):
        if needed == 0:
            break
        if at + 2 > len(draws):
            draws = mt19937_64(np, seed, 2 * len(draws))
        value, at = boost_uniform_int(draws, at, size - r - 1)
        if value < needed:
            kept.append(r)
            needed -= 1
    return kept


def write_rows(path, rows):
    with open(path, "w") as f:
        f.write("iteration,time,iteration_time,loss,grad_norm,test_loss,test_metric,test_auc\n")
        for r in rows:
            f.write(",".join(repr(float(v)) if i else str(v) for i, v in enumerate(r)) + "\n")


def numpy_side(job_path, scheme_name, out_csv):
    """One scheme of a job, one process: everything it needs is read and computed here."""
    clock = [("start", time.perf_counter())]
    ctx = numpy_setup(job_path, clock)
    rows = numpy_run(ctx, ctx.job["schemes"][scheme_name])
    clock.append(("iterations", time.perf_counter()))
    write_rows(out_csv, rows)
    clock.append(("writing", time.perf_counter()))
    phases = {name: clock[i][1] - clock[i - 1][1] for i, (name, _) in enumerate(clock) if i}
    Path(out_csv).with_suffix(".json").write_text(json.dumps(
        {"f_star": ctx.f_star, "f_star_grad_norm": float(ctx.np.linalg.norm(ctx.res.jac)),
         "f_star_iterations": int(ctx.res.nit), "smoothness": ctx.beta, "step": ctx.step,
         "phase_seconds": phases, "blas": loaded_blas()}))


def numpy_sweep(job_path, out_folder):
    """The sweep job's numpy side, one process: the data, f*, beta and the measured times once,
    then every run in the sweep's index order (scheme, then repetition), each replaying the
    measured times from the row its seed draws (`"start": "random"`: one uniform row from the
    run's delay stream, mt19937_64 seeded derive_seed(seed, 1))."""
    clock = [("start", time.perf_counter())]
    ctx = numpy_setup(job_path, clock)
    sweep = ctx.job["sweep"]
    out_folder = Path(out_folder)
    out_folder.mkdir(parents=True, exist_ok=True)
    sampling, writing, runs = [0.0], 0.0, []
    for index, (scheme_name, rep) in enumerate(
            (s, r) for s in ctx.job["schemes"] for r in range(sweep["repetitions"])):
        seed = sweep["seed"] if rep == 0 else derive_seed(sweep["seed"], rep) & ((1 << 63) - 1)
        start, _ = boost_uniform_int(mt19937_64(ctx.np, derive_seed(seed, 1), 4), 0,
                                     len(ctx.times) - 1)
        rows = numpy_run(ctx, ctx.job["schemes"][scheme_name], start, seed, sampling)
        clock_write = time.perf_counter()
        write_rows(out_folder / f"{index}.csv", rows)
        writing += time.perf_counter() - clock_write
        runs.append({"index": index, "scheme": scheme_name, "repetition": rep, "seed": seed,
                     "start": start})
    clock.append(("runs", time.perf_counter()))
    phases = {name: clock[i][1] - clock[i - 1][1] for i, (name, _) in enumerate(clock) if i}
    phases["iterations"] = phases.pop("runs") - writing - sampling[0]
    phases["sampling"] = sampling[0]
    phases["writing"] = writing
    (out_folder / "numpy.json").write_text(json.dumps(
        {"f_star": ctx.f_star, "f_star_grad_norm": float(ctx.np.linalg.norm(ctx.res.jac)),
         "f_star_iterations": int(ctx.res.nit), "smoothness": ctx.beta, "step": ctx.step,
         "phase_seconds": phases, "blas": loaded_blas(), "runs": runs}))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--numpy-side":
        numpy_side(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "--numpy-sweep":
        numpy_sweep(sys.argv[2], sys.argv[3])
    else:
        print("usage: end_to_end_numpy.py --numpy-side JOB.json SCHEME OUT.csv | "
              "--numpy-sweep JOB.json OUT_FOLDER", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
