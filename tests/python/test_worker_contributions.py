"""workers.csv, each worker's part in the updates (docs/model.md §7), through the command line:
exact counts where the rule fixes them (uncoded `all`; a worker 20 times slower than the rest is
never used by `first_r` r = n − 1), and every column's sum over workers against the trace's
per-iteration columns (FRC's one message per covered group, Anytime's rows, K-async's K
gradients and their staleness)."""

import csv
import json
import math
import subprocess

import pytest

from conftest import CLI, small_logistic_sweep_base

ITERATIONS = 40


def run(tmp_path, **changes):
    config = small_logistic_sweep_base(ITERATIONS)
    config.update({"name": "contributions", **changes})
    (tmp_path / "c.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    result = subprocess.run([CLI, "run", str(tmp_path / "c.json"), "--out", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with open(out / "trace.csv", newline="") as f:
        trace = list(csv.DictReader(f))[1:]  # rows t >= 1
    with open(out / "workers.csv", newline="") as f:
        workers = list(csv.DictReader(f))
    summary = json.loads((out / "summary.json").read_text())
    assert [int(w["worker"]) for w in workers] == list(range(6))
    assert len(trace) == ITERATIONS
    return trace, workers, summary


def column(rows, name, kind=int):
    return [kind(r[name]) for r in rows]


def check_shares(workers, summary):
    used = column(workers, "used")
    shares = column(workers, "share", float)
    assert shares == [u / sum(used) for u in used]
    assert summary["contribution_share_min"] == min(shares)
    assert summary["contribution_share_max"] == max(shares)


def test_uncoded_all_uses_every_worker_in_every_iteration(tmp_path):
    trace, workers, summary = run(tmp_path)
    with open(tmp_path / "out" / "workers.csv") as f:
        assert f.readline() == "worker,heard,used,share\n"  # no rule columns
    assert column(workers, "heard") == [ITERATIONS] * 6
    assert column(workers, "used") == [ITERATIONS] * 6
    assert summary["contribution_share_min"] == summary["contribution_share_max"] == 1 / 6
    check_shares(workers, summary)


def test_first_r_never_uses_a_worker_twenty_times_slower(tmp_path):
    # Worker 5's time is at least 20 x the shift (1 s); the others' exceed 20 s with probability
    # e^-38 per draw: the 5th arrival is always before it.
    delay = {"kind": "heterogeneous", "shift": 1.0, "rate": 2.0, "tail": "none",
             "factors": [1, 1, 1, 1, 1, 20]}
    trace, workers, summary = run(tmp_path, delay=delay, stopping={"rule": "first_r", "r": 5})
    assert column(workers, "heard") == [ITERATIONS] * 5 + [0]
    assert column(workers, "used") == [ITERATIONS] * 5 + [0]
    assert summary["contribution_share_min"] == 0.0
    assert summary["contribution_share_max"] == 0.2
    check_shares(workers, summary)


@pytest.mark.parametrize("r", [2, 3, 5])
def test_frc_first_r_uses_one_message_per_covered_group(tmp_path, r):
    trace, workers, summary = run(tmp_path, code={"kind": "frc", "d": 2},
                                  stopping={"rule": "first_r", "r": r})
    heard, used = column(workers, "heard"), column(workers, "used")
    assert sum(heard) == sum(column(trace, "workers_heard")) == r * ITERATIONS
    # The decoder keeps the first heard copy of each covered group of d = 2 partitions.
    assert sum(used) == sum(column(trace, "partitions_covered")) // 2
    assert all(0 <= u <= h <= ITERATIONS for u, h in zip(used, heard))
    if r > 3:  # a second copy of some group was heard in every iteration: it is not used
        assert sum(used) < sum(heard)
    check_shares(workers, summary)


def test_anytime_rows_add_up_to_the_trace(tmp_path):
    trace, workers, summary = run(tmp_path, stopping={"rule": "anytime", "window": 1.2})
    with open(tmp_path / "out" / "workers.csv") as f:
        assert f.readline() == "worker,heard,used,share,rows\n"
    rows = column(workers, "rows")
    assert sum(rows) == sum(column(trace, "rows_used"))
    # 300 rows (no test set) in 6 partitions of 50.
    assert all(0 <= c <= 50 * ITERATIONS for c in rows)
    assert 0 < sum(rows) < 300 * ITERATIONS  # the window cut some workers short
    # A worker is used in an iteration exactly when it finished a row (c_i > 0).
    assert all(u <= ITERATIONS for u in column(workers, "used"))
    assert all((u == 0) == (c == 0) for u, c in zip(column(workers, "used"), rows))
    check_shares(workers, summary)


@pytest.mark.parametrize("rule,k", [("k_async", 2), ("k_async", 1), ("k_batch_async", 3),
                                    ("k_batch_sync", 4)])
def test_asynchronous_gradients_and_staleness_add_up_to_the_trace(tmp_path, rule, k):
    trace, workers, summary = run(tmp_path, stopping={"rule": rule, "k": k})
    with open(tmp_path / "out" / "workers.csv") as f:
        assert f.readline() == "worker,heard,used,share,staleness_mean,staleness_max\n"
    used = column(workers, "used")
    assert column(workers, "heard") == used
    assert sum(used) == k * ITERATIONS == sum(column(trace, "workers_heard"))
    staleness = sum(u * float(w["staleness_mean"]) for u, w in zip(used, workers) if u > 0)
    expected = k * sum(column(trace, "staleness_mean", float))
    assert math.isclose(staleness, expected, rel_tol=1e-12, abs_tol=1e-12)
    largest = max(int(w["staleness_max"]) for w in workers if w["staleness_max"] != "")
    assert largest == summary["max_staleness"] == max(column(trace, "staleness_max", float))
    assert all((w["staleness_mean"] == "") == (u == 0) for u, w in zip(used, workers))
    check_shares(workers, summary)


def test_a_delay_only_run_writes_no_workers_file(tmp_path):
    config = {"name": "delays", "seed": 1, "workers": 6, "data": None,
              "code": {"kind": "uncoded"}, "stopping": {"rule": "first_r", "r": 4},
              "delay": {"kind": "shifted_exponential"}, "optimizer": {"iterations": 10}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    result = subprocess.run([CLI, "run", str(tmp_path / "c.json"), "--out", str(tmp_path / "o")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "o" / "workers.csv").exists()
    assert "contribution_share_min" not in json.loads((tmp_path / "o" / "summary.json").read_text())


def test_the_python_module_reads_the_same_file(tmp_path):
    import numpy
    import stragglersim

    config = small_logistic_sweep_base(ITERATIONS)
    config.update({"name": "contributions", "stopping": {"rule": "k_async", "k": 2}})
    result = stragglersim.run(config, out=str(tmp_path / "py"))
    with open(tmp_path / "py" / "workers.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(result.workers) == ["worker", "heard", "used", "share", "staleness_mean",
                                    "staleness_max"]
    assert result.workers["used"].dtype == numpy.int64
    assert result.workers["used"].tolist() == column(rows, "used")
    assert numpy.array_equal(result.workers["staleness_mean"],
                             [float(r["staleness_mean"]) if r["staleness_mean"] else numpy.nan
                              for r in rows], equal_nan=True)
    delay_only = stragglersim.run({"workers": 4, "data": None, "code": {"kind": "uncoded"},
                                   "stopping": {"rule": "all"},
                                   "delay": {"kind": "shifted_exponential"},
                                   "optimizer": {"iterations": 3}})
    assert delay_only.workers is None
