"""The stragglersim Python module against the command line it wraps.

Every comparison runs the CLI binary of the same build on the same input: traces byte for
byte on disk and value for value in memory, errors word for word.
"""

import csv
import json
import math
import os
import re
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

from conftest import CLI, ROOT
import stragglersim

COUNT_COLUMNS = {"iteration", "workers_heard", "partitions_covered"}


def delay_only(workers=8, iterations=40, **extra):
    config = {
        "name": "delay-only",
        "seed": 5,
        "workers": workers,
        "data": None,
        "code": {"kind": "frc", "d": 2},
        "stopping": {"rule": "first_r", "r": workers // 2},
        "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
        "optimizer": {"iterations": iterations},
    }
    config.update(extra)
    return config


def training(**extra):
    config = {
        "name": "training",
        "seed": 3,
        "workers": 6,
        "data": {
            "source": "synthetic",
            "generator": "gaussian_mixture",
            "rows": 600,
            "features": 20,
            "test_fraction": 0.2,
        },
        "loss": {"kind": "logistic", "l2": 0.0001},
        "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0, "tail": "load"},
        "code": {"kind": "frc", "d": 2},
        "stopping": {"rule": "first_r", "r": 3},
        "optimizer": {"kind": "gd", "step": "auto", "iterations": 30},
    }
    config.update(extra)
    return config


def diverging():
    """Least squares with a step far above 2/beta: the loss overflows within 200 iterations."""
    return training(
        name="diverging",
        data={"source": "synthetic", "generator": "linear_regression", "rows": 200, "features": 10},
        loss={"kind": "least_squares"},
        code={"kind": "uncoded"},
        stopping={"rule": "all"},
        optimizer={"kind": "gd", "step": 1.0e6, "iterations": 200},
    )


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f)
    return str(path)


def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)


def read_csv_columns(path):
    """trace.csv parsed independently of the module: column -> list of int or float."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    def cell(name, text):
        if name in COUNT_COLUMNS:
            return int(text)
        return float(text) if text else math.nan  # empty: a value the run does not have

    return {name: [cell(name, row[c]) for row in body] for c, name in enumerate(header)}


def assert_trace_equals_csv(trace, path):
    expected = read_csv_columns(path)
    assert list(trace) == list(expected)
    for name, values in expected.items():
        column = trace[name]
        assert column.dtype == (np.int64 if name in COUNT_COLUMNS else np.float64), name
        # NaN marks an empty cell on both sides; every other value must be equal exactly.
        assert np.array_equal(column, np.array(values, dtype=column.dtype), equal_nan=column.dtype == np.float64), name


MEASURED = ("wall_clock_seconds", "plan_seconds", "predictions_seconds", "iterations_seconds",
            "writing_seconds", "f_star_seconds", "f_star_source", "data_bytes_read")


def mask_wall_clock(text):
    """summary.json text with its measured values (wall_clock_seconds, the phases' *_seconds,
    f_star_source, data_bytes_read) set to 0."""
    return re.sub(r'"(' + "|".join(MEASURED) + r')": [^,}\n]+', r'"\1": 0', text)


def cli_error(result, status=2):
    assert result.returncode == status, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: ")
    return first[len("error: "):]


@pytest.mark.parametrize("make", [delay_only, training], ids=["delay_only", "training"])
def test_run_writes_the_cli_bytes_and_reads_back_the_same_values(tmp_path, make):
    config = write_json(tmp_path / "config.json", make())
    assert cli("run", config, "--out", tmp_path / "cli").returncode == 0
    result = stragglersim.run(config, out=tmp_path / "module")
    assert (tmp_path / "module" / "trace.csv").read_bytes() == (tmp_path / "cli" / "trace.csv").read_bytes()
    # Every byte of summary.json but the measured wall_clock_seconds.
    masked = [mask_wall_clock((tmp_path / where / "summary.json").read_text()) for where in ("module", "cli")]
    assert masked[0] == masked[1]
    assert_trace_equals_csv(result.trace, tmp_path / "cli" / "trace.csv")
    with open(tmp_path / "cli" / "summary.json", encoding="utf-8") as f:
        cli_summary = json.load(f)
    assert result.summary["wall_clock_seconds"] >= 0.0
    measured = set(MEASURED)
    # The run command times its plan; the module's plan is made by the module.
    assert cli_summary["plan_seconds"] >= 0.0 and result.summary["plan_seconds"] is None
    assert {k: v for k, v in result.summary.items() if k not in measured} == {
        k: v for k, v in cli_summary.items() if k not in measured}
    assert result.out == str(tmp_path / "module")


def test_summary_exposes_suboptimality_coverage_and_warnings():
    result = stragglersim.run(training())
    s = result.summary
    loss = result.trace["loss"]
    f_star = s["f_star"]
    assert s["f_star_method"] == "newton"
    assert s["final_suboptimality"] == loss[-1] - f_star
    # The first row with (f - f*) <= level * (f(x0) - f*), recomputed from the trace.
    for key, level in (("1e-1", 0.1), ("1e-2", 0.01), ("1e-3", 0.001)):
        reached = np.nonzero(loss - f_star <= level * (loss[0] - f_star))[0]
        expected = int(reached[0]) if reached.size else None
        assert s["iterations_to_relative_suboptimality"][key] == expected, key
        if expected is not None:
            assert s["time_to_relative_suboptimality"][key] == result.trace["time"][expected]
    assert s["mean_gradient_error"] == pytest.approx(np.mean(result.trace["gradient_error"][1:]), rel=1e-12)
    # FRC d = 2 over 6 workers: 3 groups; covered groups = covered partitions / 2 in every row.
    assert len(s["group_coverage"]) == 3
    covered = result.trace["partitions_covered"][1:].sum() / 2
    assert sum(s["group_coverage"]) * 30 == pytest.approx(covered, rel=1e-12)
    # A deadline no worker can meet (shift 1 × load 2 = 2 s > 1 s).
    late = stragglersim.run(training(stopping={"rule": "deadline", "after": 1.0}))
    codes = [w["code"] for w in late.summary["warnings"]]
    assert codes[:2] == ["deadline_below_minimum_delay", "no_worker_heard"]
    assert late.summary["warnings"][0]["message"] == (
        "the deadline 1 s is below the smallest possible delay of every worker (2 s): "
        "no worker can ever be heard")
    assert late.summary["group_coverage"] == [0.0, 0.0, 0.0]
    assert late.summary["group_longest_outage"] == [30, 30, 30]


def test_run_of_a_dict_in_memory_equals_the_cli_trace(tmp_path):
    config = training()
    assert cli("run", write_json(tmp_path / "c.json", config), "--out", tmp_path / "cli").returncode == 0
    result = stragglersim.run(config)
    assert result.out is None
    assert_trace_equals_csv(result.trace, tmp_path / "cli" / "trace.csv")
    assert result.summary["final_loss"] == result.trace["loss"][-1]
    assert "test_auc" in result.trace  # logistic with a test set: all ten columns, in order


def test_to_pandas_is_a_dataframe_or_says_pandas_is_missing():
    result = stragglersim.run(delay_only())
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            result.to_pandas()
        return
    frame = result.to_pandas()
    assert list(frame.columns) == list(result.trace)
    assert frame["iteration_time"].tolist() == result.trace["iteration_time"].tolist()


def test_relative_paths_of_a_dict_resolve_against_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "d.csv").write_text("a,b,y\n" + "".join(f"{i % 7},{i % 3},{i % 2}\n" for i in range(40)))
    config = training(
        data={"source": "csv", "path": "d.csv", "label_column": "y"}, code={"kind": "uncoded"},
        stopping={"rule": "all"}, workers=2, optimizer={"step": "auto", "iterations": 3})
    monkeypatch.chdir(tmp_path)
    assert len(stragglersim.run(config).trace["loss"]) == 4
    monkeypatch.chdir(ROOT)
    with pytest.raises(stragglersim.ConfigError, match=r"^<dict>:/data/path: "):
        stragglersim.run(config)


BAD_CONFIGS = {
    "unknown_key": dict(delay_only(), bogus=1),
    "bad_value": delay_only(workers=-1),
    "bad_code": dict(delay_only(), code={"kind": "nope"}),
    "loss_without_data": dict(delay_only(), loss={"kind": "logistic"}),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_config_errors_carry_the_cli_message(tmp_path, name):
    path = write_json(tmp_path / "bad.json", BAD_CONFIGS[name])
    expected = cli_error(cli("run", path, "--out", tmp_path / "out"))
    assert expected.startswith(path + ":/")
    calls = [lambda c: stragglersim.run(c, out=tmp_path / "m"), stragglersim.theory]
    if name != "loss_without_data":  # iteration_times drops the loss (it reads the cluster only)
        calls.append(lambda c: stragglersim.iteration_times(c, 5))
    for call in calls:
        with pytest.raises(stragglersim.ConfigError) as from_path:
            call(path)
        assert str(from_path.value) == expected
        with pytest.raises(stragglersim.ConfigError) as from_dict:
            call(BAD_CONFIGS[name])
        assert str(from_dict.value) == expected.replace(path, "<dict>", 1)
    assert not (tmp_path / "m").exists()
    assert issubclass(stragglersim.ConfigError, ValueError)


def test_file_errors_carry_the_cli_message(tmp_path):
    missing = str(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{\"workers\": ")
    for path in (missing, str(broken)):
        expected = cli_error(cli("run", path, "--out", tmp_path / "out"))
        with pytest.raises(stragglersim.ConfigError) as e:
            stragglersim.run(path)
        assert str(e.value) == expected
    with pytest.raises(stragglersim.ConfigError, match="^<dict>: the config is not JSON"):
        stragglersim.run(dict(delay_only(), seed=float("nan")))


def test_numerical_failure_raises_with_the_partial_run(tmp_path):
    path = write_json(tmp_path / "div.json", diverging())
    result = cli("run", path, "--out", tmp_path / "cli")
    expected = cli_error(result, status=3)
    with pytest.raises(stragglersim.NumericalError) as e:
        stragglersim.run(path, out=tmp_path / "module")
    assert str(e.value) == expected
    partial = e.value.run
    assert partial.summary["status"] == "failed"
    assert (tmp_path / "module" / "trace.csv").read_bytes() == (tmp_path / "cli" / "trace.csv").read_bytes()
    assert_trace_equals_csv(partial.trace, tmp_path / "cli" / "trace.csv")
    assert 1 < len(partial.trace["loss"]) < 201
    assert np.all(np.isfinite(partial.trace["loss"]))
    with pytest.raises(stragglersim.NumericalError) as in_memory:
        stragglersim.run(diverging())
    assert str(in_memory.value) == expected.replace(path, "<dict>", 1)
    assert in_memory.value.run.trace["loss"].tolist() == partial.trace["loss"].tolist()


def test_theory_is_what_theory_json_prints(tmp_path):
    for config in (delay_only(workers=64), training()):
        path = write_json(tmp_path / "c.json", config)
        result = cli("theory", path, "--json")
        assert result.returncode == 0, result.stderr
        assert stragglersim.theory(path) == json.loads(result.stdout)
        assert stragglersim.theory(config) == json.loads(result.stdout)


def test_code_is_what_codes_json_prints():
    result = cli("codes", "--workers", 10, "--code", '{"kind": "bgc", "d": 3}', "--wait-for", 6, "--json")
    assert result.returncode == 0, result.stderr
    assert stragglersim.code(10, {"kind": "bgc", "d": 3}, wait_for=6) == json.loads(result.stdout)
    bad = cli("codes", "--workers", 10, "--code", '{"kind": "frc", "d": 3}')
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.code(10, {"kind": "frc", "d": 3})
    assert str(e.value) == cli_error(bad).replace("<command line>", "<dict>", 1)
    bad = cli("codes", "--workers", 10, "--code", '{"kind": "frc", "d": 2}', "--wait-for", 11)
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.code(10, {"kind": "frc", "d": 2}, wait_for=11)
    assert str(e.value) == cli_error(bad).replace("<command line>", "<dict>", 1)


def test_sweep_batches_by_default_and_writes_the_bytes_of_one_run_at_a_time(tmp_path):
    spec = {
        "name": "batched",
        "base": training(),
        "grid": {"/stopping/r": [2, 4, 6]},
        "repetitions": 3,
    }
    path = write_json(tmp_path / "sweep.json", spec)
    batched = cli("sweep", path, "--out", tmp_path / "cli")
    assert batched.returncode == 0
    # Nine runs over one data set: one group, whose passes serve all nine.
    assert "lock-step group 1 of 1: 9 runs (0 ... 8)" in batched.stderr
    assert "lock-step group 1: 9 runs in 31 passes over the training set" in batched.stderr
    stragglersim.sweep(path, tmp_path / "module")
    stragglersim.sweep(path, tmp_path / "alone", batch=1)
    alone = cli("sweep", path, "--out", tmp_path / "cli_alone", "--no-batch")
    assert "lock-step group" not in alone.stderr
    assert "alone: 9 runs (0 ... 8): --no-batch" in alone.stderr
    runs = sorted(os.listdir(tmp_path / "alone" / "runs"))
    assert len(runs) == 9
    for folder in ("cli", "module", "cli_alone"):
        for run in runs:
            for name in ("trace.csv", "workers.csv", "config.json"):
                a = tmp_path / "alone" / "runs" / run / name
                assert (tmp_path / folder / "runs" / run / name).read_bytes() == a.read_bytes()
    with pytest.raises(stragglersim.ConfigError, match="batch must be at least 1"):
        stragglersim.sweep(path, tmp_path / "bad", batch=0)


def test_sweep_writes_the_cli_folder_and_returns_index_rows(tmp_path):
    spec = {"name": "s", "base": delay_only(), "grid": {"/stopping/r": [2, 4, 6]}, "repetitions": 2}
    path = write_json(tmp_path / "sweep.json", spec)
    assert cli("sweep", path, "--out", tmp_path / "cli", "--jobs", 2).returncode == 0
    rows = stragglersim.sweep(path, tmp_path / "module", jobs=2)
    cli_index = (tmp_path / "cli" / "index.csv").read_bytes()
    assert (tmp_path / "module" / "index.csv").read_bytes() == cli_index
    with open(tmp_path / "cli" / "index.csv", newline="", encoding="utf-8") as f:
        expected = list(csv.DictReader(f))
    assert len(rows) == 6 and [list(r) for r in rows] == [list(r) for r in expected]
    for row, text in zip(rows, expected):
        for key, value in text.items():
            assert str(row[key]) == value or float(row[key]) == float(value), key
    for run in sorted(os.listdir(tmp_path / "cli" / "runs")):
        for name in ("trace.csv", "config.json"):
            a = tmp_path / "cli" / "runs" / run / name
            assert (tmp_path / "module" / "runs" / run / name).read_bytes() == a.read_bytes()
    bad = dict(spec, grid={"/nope/deeper": [1]})
    bad_path = write_json(tmp_path / "bad.json", bad)
    expected_error = cli_error(cli("sweep", bad_path, "--out", tmp_path / "x"))
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.sweep(bad_path, tmp_path / "y")
    assert str(e.value) == expected_error
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.sweep(bad, tmp_path / "y")
    assert str(e.value) == expected_error.replace(bad_path, "<dict>", 1)


def test_iteration_times_are_the_run_iteration_times():
    # A config with data draws every worker, so its iteration times are the worker sampler's.
    config = delay_only(workers=64, iterations=300, sampler="workers")
    times = stragglersim.iteration_times(training(workers=64, stopping={"rule": "first_r", "r": 32},
                                                  seed=5, delay=config["delay"]), 300)
    assert times.dtype == np.float64 and times.shape == (300,)
    assert times.tolist() == stragglersim.run(config).trace["iteration_time"][1:].tolist()


def harmonic(n):
    return math.fsum(1.0 / i for i in range(1, n + 1))


@pytest.mark.parametrize(
    "code,stopping,expected",
    [
        # Uncoded, wait for all 64: 1 + E[max of 64 Exp(1)] = 1 + H_64.
        ({"kind": "uncoded"}, {"rule": "all"}, 1.0 + harmonic(64)),
        # ErasureHead, FRC d = 2 under Model A (load 2): 2 + 2 E[X_(32:64)] = 2 + 2 (H_64 - H_32).
        ({"kind": "frc", "d": 2}, {"rule": "first_r", "r": 32}, 2.0 + 2.0 * (harmonic(64) - harmonic(32))),
    ],
    ids=["uncoded_all", "erasurehead_first_r"],
)
def test_iteration_times_agree_with_the_closed_form(code, stopping, expected):
    times = stragglersim.iteration_times(delay_only(workers=64, code=code, stopping=stopping), 20000)
    standard_error = times.std(ddof=1) / math.sqrt(len(times))
    assert abs(times.mean() - expected) < 4.0 * standard_error


LONG = delay_only(workers=65536, iterations=50000, sampler="workers")  # tens of seconds


def test_the_gil_is_released_while_a_run_executes():
    """A Python thread counts while run() executes; holding the GIL would freeze it throughout."""
    stamps = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            stamps.append(time.monotonic())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.monotonic()
    stragglersim.iteration_times(delay_only(workers=65536, sampler="workers"), 600)
    end = time.monotonic()
    stop.set()
    counter.join()
    duration = end - start
    middle = [t for t in stamps if start + 0.25 * duration < t < end - 0.25 * duration]
    assert duration > 0.1  # long enough for the middle half to be well above a switch interval
    assert middle, "no Python thread ran during the middle half of the call"


def test_two_threads_calling_at_once_get_the_sequential_results():
    """Concurrent calls share nothing: each thread gets the bytes it gets alone. (That they
    run in parallel follows from the GIL test above; the speed-up on two cores is measured by
    benchmarks/python_vs_numpy.py, not asserted in a timed test.)"""
    configs = [delay_only(workers=4096, seed=s) for s in (1, 2)]
    sequential = [stragglersim.run(c).trace for c in configs]
    barrier = threading.Barrier(2)
    results = [None, None]

    def work(i):
        barrier.wait()
        results[i] = stragglersim.run(configs[i]).trace

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sequential[0]["time"].tolist() != sequential[1]["time"].tolist()
    for got, want in zip(results, sequential):
        assert list(got) == list(want)
        for name in want:
            assert got[name].tolist() == want[name].tolist()


@pytest.fixture
def python_sigint_handler():
    """Python's own Ctrl-C handler, whatever the launcher did: a shell that starts a job in the
    background ignores SIGINT for it, and Python then leaves SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("call", ["run", "iteration_times", "sweep"])
def test_keyboard_interrupt_stops_a_long_call_cleanly(tmp_path, call, python_sigint_handler):
    out = tmp_path / "out"
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        if call == "run":
            stragglersim.run(LONG, out=out)
        elif call == "iteration_times":
            stragglersim.iteration_times(LONG, 50000)
        else:
            # Like the CLI's first Ctrl-C, a sweep starts no new run and lets running ones end.
            # The worker sampler: order statistics would finish all 1000 runs within the 0.3 s.
            short = delay_only(workers=65536, iterations=100, sampler="workers")
            stragglersim.sweep({"base": short, "grid": {"/seed": list(range(1, 1001))}}, out)
    elapsed = time.monotonic() - start
    timer.join()
    # The full call takes tens of seconds; an honoured interrupt returns within 50 ms polling
    # plus one iteration (a few ms) or, for the sweep, one run (about 0.2 s).
    assert elapsed < 5.0
    if call == "run":
        # As with the CLI's SIGINT: the run ends after the current row, keeps every finished row
        # and says so in its summary.
        summary = json.loads((out / "summary.json").read_text())
        assert summary["status"] == "interrupted"
        rows = (out / "trace.csv").read_text().splitlines()
        assert len(rows) == summary["iterations"] + 2  # header and row 0
    else:
        assert not (out / "index.csv").exists()
    assert stragglersim.run(delay_only()).summary["status"] == "ok"  # usable afterwards


# Calls without a stop hook of their own, each taking 10-45 s here when not interrupted: the
# theory of a 2500 x 2000 logistic config (data generation, f* by Newton), the code report of
# CRC at n = 200 over 1 000 sampled patterns, and the fits of 20 000 measured times.
SLOW_THEORY = {"workers": 8, "code": {"kind": "frc", "d": 2},
               "data": {"source": "synthetic", "generator": "amazon_like", "rows": 2500,
                        "features": 2000},
               "loss": {"kind": "logistic", "l2": 1e-4},
               "stopping": {"rule": "first_r", "r": 4}, "delay": {"kind": "shifted_exponential"},
               "optimizer": {"iterations": 20, "step": "auto"}}


@pytest.mark.parametrize("call", ["theory", "code", "fit"])
def test_keyboard_interrupt_abandons_theory_code_and_fit_within_a_step(tmp_path, call,
                                                                         python_sigint_handler):
    times = tmp_path / "times.csv"
    if call == "fit":
        rng = np.random.default_rng(1)
        rows = [f"{i + 1},{w},{1 + rng.exponential():.6f}" for i in range(2500) for w in range(8)]
        times.write_text("iteration,worker,seconds\n" + "\n".join(rows) + "\n")
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        if call == "theory":
            stragglersim.theory(SLOW_THEORY)
        elif call == "code":
            stragglersim.code(200, {"kind": "crc", "s": 2}, samples=1000)
        else:
            stragglersim.fit(times)
    elapsed = time.monotonic() - start
    timer.join()
    # Uninterrupted, each call takes 10-45 s; honoured, 50 ms polling plus one step of the
    # computation (a Newton block, a pattern, an EM pass).
    assert elapsed < 5.0
    # The interrupt is cleared once the call ends: the next call runs to the end.
    assert stragglersim.code(8, {"kind": "frc", "d": 2})["workers"] == 8


def test_the_notebook_example_runs_top_to_bottom(tmp_path):
    figure = tmp_path / "example.png"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(stragglersim.__file__)))
    result = subprocess.run(
        ["/usr/bin/python3", os.path.join(ROOT, "plots", "notebook_example.py"), str(figure)],
        capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert figure.read_bytes().startswith(b"\x89PNG")
    # "<scheme>: ... final f - f* = <mean> ± <half-width> (mean ± 95 % t, 10 seeds)"
    gaps = [re.search(r"f - f\* = (\S+) ± (\S+) \(mean ± 95 % t, 10 seeds\)", line).groups()
            for line in result.stdout.splitlines() if "f - f*" in line]
    assert len(gaps) == 2 and all(float(g) > 0 for g, _ in gaps)  # f* from theory() is below
    assert float(gaps[0][1]) == 0.0  # uncoded waits for all: every seed has the same iterates
    assert float(gaps[1][1]) > 0.0   # ErasureHead's iterates depend on who straggled
    # The measured mean iteration time over r against theory: within 4 s.e. (the 95 % half-width
    # over 10 seeds is t(0.975, 9) = 2.2622 s.e.).
    lines = {line.split(":", 1)[0].strip(): json.loads(line.split(":", 1)[1])
             for line in result.stdout.splitlines()
             if line.startswith(("mean iteration time", "95 % t half-width", "theory"))}
    for m, h, p in zip(lines["mean iteration time"], lines["95 % t half-width"], lines["theory"]):
        assert abs(m - p) <= 4 * h / 2.2621571627409915, (m, h, p)


def test_help_documents_the_api():
    for function in (stragglersim.run, stragglersim.theory, stragglersim.sweep,
                     stragglersim.code, stragglersim.iteration_times):
        assert len(function.__doc__) > 200
    assert "KeyboardInterrupt" in stragglersim.run.__doc__
