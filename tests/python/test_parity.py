"""load_run, load_sweep, fit, advise, validate, trace_import, __version__ and the config schema
against the command line.

Every comparison runs the CLI binary of the same build on the same input.
"""

import contextlib
import glob
import io
import json
import math
import os
import pydoc
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import CLI, ROOT
import stragglersim
import test_docs

from test_stragglersim import delay_only, read_csv_columns, training, write_json



def write_times(path, iterations, seed, rate_step):
    """A times file of 4 workers: 1 s plus an exponential of rate 1 + rate_step * w per worker w
    and iteration (a fixed seed)."""
    import random

    draw = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        f.write("iteration,worker,seconds\n")
        for i in range(1, iterations + 1):
            for w in range(4):
                f.write("{},{},{:.6f}\n".format(i, w, 1.0 + draw.expovariate(1.0 + rate_step * w)))
    return str(path)


@pytest.fixture
def times(tmp_path):
    """4 workers, 30 iterations, rates 1 + 0.3 w: every family fits it within a second."""
    return write_times(tmp_path / "times.csv", 30, 3, 0.3)


def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)


def column(table, name):
    """A column as a list, from a DataFrame or a structured array."""
    values = table[name]
    return values.tolist()


def same(a, b):
    return all((x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(a, b)) and len(a) == len(b)


def test_load_run_is_trace_csv_with_its_column_types(tmp_path):
    out = tmp_path / "run"
    stragglersim.run(delay_only(), out=out)
    table = stragglersim.load_run(out)
    expected = read_csv_columns(out / "trace.csv")
    names = list(table.columns) if hasattr(table, "columns") else list(table.dtype.names)
    assert names == list(expected)
    for name, values in expected.items():
        assert same(column(table, name), values), name


def test_load_run_without_pandas_is_a_structured_array(tmp_path, monkeypatch):
    out = tmp_path / "run"
    stragglersim.run(training(), out=out)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    table = stragglersim.load_run(out)
    assert isinstance(table, np.ndarray) and table.dtype.names is not None
    assert table.dtype["iteration"] == np.int64 and table.dtype["loss"] == np.float64
    expected = read_csv_columns(out / "trace.csv")
    assert list(table.dtype.names) == list(expected)
    for name, values in expected.items():
        assert same(table[name].tolist(), values), name


def test_load_sweep_gives_the_index_and_the_tidy_traces(tmp_path):
    spec = {"name": "two", "base": delay_only(iterations=7), "grid": {"/stopping/r": [2, 4]},
            "repetitions": 2}
    out = tmp_path / "sweep"
    rows = stragglersim.sweep(spec, out)
    index = stragglersim.load_sweep(out)
    assert column(index, "stopping.r") == [2, 2, 4, 4]
    assert column(index, "mean_iteration_time") == [r["mean_iteration_time"] for r in rows]
    assert column(index, "folder") == [r["folder"] for r in rows]
    long = stragglersim.load_sweep(out, traces=True)
    names = list(long.columns) if hasattr(long, "columns") else list(long.dtype.names)
    assert names[:4] == ["index", "repetition", "seed", "stopping.r"]
    # One row per trace row of every run (8 = x0 and 7 iterations), values as in each trace.
    assert len(column(long, "iteration")) == 4 * 8
    for i, row in enumerate(rows):
        trace = read_csv_columns(out / row["folder"] / "trace.csv")
        part = slice(8 * i, 8 * (i + 1))
        assert column(long, "iteration_time")[part] == trace["iteration_time"]
        assert column(long, "stopping.r")[part] == [row["/stopping/r"]] * 8
        assert column(long, "seed")[part] == [row["seed"]] * 8


def test_fit_is_the_table_fit_json_prints(times):
    result = cli("fit", times, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    rows = stragglersim.fit(times)
    assert [r["family"] for r in rows] == [f["family"] for f in report["fits"]]
    for row, expected in zip(rows, report["fits"]):
        assert {k: v for k, v in row.items() if k not in ("best", "delay")} == expected
        assert row["best"] == (row["family"] == report["best"])
    best = [r for r in rows if r["best"]]
    assert len(best) == 1 and best[0]["delay"] == report["delay"]
    assert stragglersim.fit_report(times, per_worker=True) == json.loads(
        cli("fit", times, "--json", "--per-worker").stdout)


def test_fit_of_a_missing_file_raises_the_cli_message(tmp_path):
    missing = str(tmp_path / "missing.csv")
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.fit(missing)
    assert str(e.value) == cli("fit", missing).stderr[len("error: "):].rstrip("\n")
    assert str(e.value) == missing + ": cannot open file (expected a readable CSV file of measured times)"


def test_advise_is_what_advise_json_prints(tmp_path, times):
    config = training(target_loss=0.45)
    path = write_json(tmp_path / "cfg.json", config)
    result = cli("advise", path, "--json", "--repetitions", 2)
    assert result.returncode == 0, result.stderr
    assert stragglersim.advise(path, repetitions=2) == json.loads(result.stdout)
    # The command line estimates on the machine's cores by default: any count gives the same.
    assert stragglersim.advise(path, repetitions=2, threads=3) == json.loads(result.stdout)
    with pytest.raises(stragglersim.ConfigError,
                       match=r"^threads: out of range; got 0; expected an integer in \[1, \d+\]$"):
        stragglersim.advise(path, threads=0)
    assert "tuning" in json.loads(result.stdout)  # tuned by default, as the command line
    # With a fitted delay: the same advice, or the same refusal (at the config's step).
    fitted = cli("advise", path, "--json", "--repetitions", 2, "--fit", times, "--fixed-step")
    if fitted.returncode == 0:
        assert "tuning" not in json.loads(fitted.stdout)
        assert stragglersim.advise(path, repetitions=2, fit=times, fixed_step=True) == json.loads(
            fitted.stdout)
    else:
        assert fitted.returncode == 2, fitted.stderr
        with pytest.raises(stragglersim.ConfigError) as e:
            stragglersim.advise(path, repetitions=2, fit=times, fixed_step=True)
        assert "error: " + str(e.value) == fitted.stderr.splitlines()[0]
    with pytest.raises(stragglersim.ConfigError, match="advise needs data"):
        stragglersim.advise(delay_only())


def test_version_is_the_build_version():
    result = cli("--version")
    assert result.stdout.startswith("stragglersim {} (".format(stragglersim.__version__))
    assert re.fullmatch(r"\d+\.\d+\.\d+", stragglersim.__version__)


def test_the_namespace_holds_only_the_api():
    public = {n for n in dir(stragglersim) if not n.startswith("_")}
    assert public == set(stragglersim.__all__)
    for name in ("json", "os", "tempfile", "csv", "np", "numpy", "pandas"):
        assert not hasattr(stragglersim, name), name
    for name in stragglersim.__all__:
        assert hasattr(stragglersim, name), name


def test_help_shows_every_function_docstring():
    text = pydoc.render_doc(stragglersim, renderer=pydoc.plaintext)
    for name in ("load_run", "load_sweep", "fit", "advise", "run", "theory", "sweep"):
        function = getattr(stragglersim, name)
        assert len(function.__doc__) > 150, name
        assert function.__doc__.splitlines()[0].strip() in text, name
    assert "__version__" in text or stragglersim.__version__ in text


def test_the_tutorials_study_runs_in_python_as_the_docs_show(tmp_path, monkeypatch):
    """docs/python.md's study (tutorial steps 2-8 in at most 15 lines) prints what the page shows
    and what the tutorial's CLI commands print (the fitted family, the sweep's means)."""
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as f:
        section = f.read().split("## The tutorial's study", 1)[1]
    study = section.split("```python", 1)[1].split("```", 1)[0]
    shown = section.split("```text", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(study.strip().splitlines()) <= 15
    with open(os.path.join(ROOT, "docs", "tutorial.md"), encoding="utf-8") as f:
        blocks = test_docs.console_blocks(f.read())
    env = test_docs.scratch(tmp_path)
    for command, _ in blocks[0][1]:  # step 1: the data file and `init`'s config
        subprocess.run(["bash", "-e", "-o", "pipefail", "-c", command], cwd=tmp_path, env=env,
                       check=True, capture_output=True, timeout=120)
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(study, "docs/python.md", "exec"), {})  # noqa: S102 (the documented study)
    lines = printed.getvalue().strip().splitlines()
    assert lines == shown
    tutorial_fit = [line for _, steps in blocks for command, expected in steps
                    if command.startswith("grep -E '^(family") for line in expected]
    assert tutorial_fit[-1] == f"chosen: {lines[0]}: smallest AIC among the fitted families"
    tutorial_means = blocks[-1][1][0][1]  # step 8: load_sweep's means per scheme
    assert lines[-len(tutorial_means):] == tutorial_means


def shipped_configs():
    """Every run config the repository ships: experiments/examples/*.json (and collectives/), the paper's base
    configs, and the base of every sweep file that holds one inline (experiments/paper,
    time_optimal, collectives and tuned)."""
    configs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "experiments", "examples", "*.json")) +
                       glob.glob(os.path.join(ROOT, "experiments", "examples", "collectives",
                                              "*.json")) +
                       glob.glob(os.path.join(ROOT, "experiments", "paper", "*.json")) +
                       glob.glob(os.path.join(ROOT, "experiments", "time_optimal", "*.json")) +
                       glob.glob(os.path.join(ROOT, "experiments", "collectives", "*.json")) +
                       glob.glob(os.path.join(ROOT, "experiments", "tuned", "*.json"))):
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
        if "base" in value or "base_file" in value:  # a sweep file (docs/sweeps.md)
            if isinstance(value.get("base"), dict):
                configs.append((path + ":/base", value["base"]))
        else:
            configs.append((path, value))
    return configs


def test_the_schema_accepts_every_shipped_config_and_rejects_typos():
    jsonschema = pytest.importorskip("jsonschema")  # Debian python3-jsonschema
    result = cli("list", "--schema")
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)
    configs = shipped_configs()
    assert len(configs) >= 15
    for name, config in configs:
        errors = [e.message for e in validator.iter_errors(config)]
        assert errors == [], name
    good = delay_only()
    assert list(validator.iter_errors(good)) == []
    for bad in (dict(good, worker=8),
                dict(good, code={"kind": "frcc", "d": 2}),
                dict(good, code={"kind": "frc", "d": 2, "s": 1}),
                dict(good, stragglers="kill"),
                {k: v for k, v in good.items() if k != "workers"}):
        assert list(validator.iter_errors(bad)) != [], bad


def test_validate_is_what_validate_json_prints(tmp_path):
    # 4 i.i.d. workers, 40 iterations: fitted on the first half, replayed on the second.
    times = write_times(tmp_path / "times.csv", 40, 8, 0.0)
    path = write_json(tmp_path / "cfg.json", training(workers=4, target_loss=0.45))
    result = cli("validate", path, "--trace", times, "--holdout", 0.5, "--json")
    assert result.returncode == 0, result.stderr
    assert stragglersim.validate(path, times, holdout=0.5) == json.loads(result.stdout)
    assert stragglersim.validate(path, times, holdout=0.5, threads=2) == json.loads(result.stdout)
    with pytest.raises(stragglersim.ConfigError, match=r"^threads: out of range; got -1; "):
        stragglersim.validate(path, times, threads=-1)
    bad = cli("validate", path, "--trace", times, "--holdout", 1.5)
    assert bad.returncode == 2
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.validate(path, times, holdout=1.5)
    assert "error: " + str(e.value) == bad.stderr.splitlines()[0]


def test_trace_import_writes_the_bytes_trace_import_writes(tmp_path):
    source = tmp_path / "steps.csv"
    source.write_text("step,rank,ms\n0,a,1200\n0,b,900\n1,a,1100\n1,b,\n2,b,950\n2,a,1000\n",
                      encoding="utf-8")
    args = ["--iteration", "step", "--worker", "rank", "--seconds", "ms", "--scale", "0.001"]
    for missing in ("drop", "censor"):
        cli_out = tmp_path / f"cli_{missing}.csv"
        result = cli("trace", "import", source, "--format", "csv", *args, "--missing", missing,
                     "--out", cli_out)
        assert result.returncode == 0, result.stderr
        py_out = tmp_path / f"py_{missing}.csv"
        summary = stragglersim.trace_import(source, "csv", py_out, iteration="step",
                                            worker="rank", seconds="ms", scale=0.001,
                                            missing=missing)
        assert py_out.read_bytes() == cli_out.read_bytes()
        assert summary["workers"] == 2 and summary["worker_ids"] == ["a", "b"]
        assert summary["missing_cells"] == 1
        assert summary["iterations"] == (2 if missing == "drop" else 3)
        assert summary["dropped_iterations"] == (1 if missing == "drop" else 0)
        assert summary["censored_cells"] == (0 if missing == "drop" else 1)
        # The first line of the command's summary, from the same counts.
        assert result.stdout.splitlines()[0].startswith(
            f"{source}: 2 workers, {summary['iterations']} iterations written to {cli_out}; "
            "1 missing cells")
    # A chrome-only option with --format csv: the command line's refusal, nothing written.
    result = cli("trace", "import", source, "--format", "csv", "--group-by", "rank",
                 "--out", tmp_path / "x.csv")
    assert result.returncode == 2
    with pytest.raises(stragglersim.ConfigError) as e:
        stragglersim.trace_import(source, "csv", tmp_path / "y.csv", group_by="rank")
    assert "error: " + str(e.value) == result.stderr.splitlines()[0]
    assert not (tmp_path / "y.csv").exists()


def nested(depth):
    """A dict config nested `depth` objects deep ({"a": {"a": ...}})."""
    config = {}
    inner = config
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return config


def test_a_dict_nested_past_pythons_recursion_gives_the_readers_config_error():
    # 70 levels: Python encodes it and the C++ reader refuses it; 5 000: Python's encoder would
    # raise RecursionError, and the module gives the reader's message itself.
    with pytest.raises(stragglersim.ConfigError) as cpp:
        stragglersim.run(nested(70))
    with pytest.raises(stragglersim.ConfigError) as python:
        stragglersim.run(nested(5000))
    assert str(python.value) == str(cpp.value)
    assert str(cpp.value) == "<dict>:" + "/a" * 64 + ": nesting too deep; got more than 64 " \
        "levels; expected at most 64 nested arrays and objects"
    assert stragglersim.run(delay_only()).summary["status"] == "ok"


def test_iteration_times_refuses_a_result_larger_than_the_memory_limit():
    config = delay_only()
    with pytest.raises(stragglersim.ConfigError) as error:
        stragglersim.iteration_times(config, 2**40)  # 8 TiB of float64
    message = str(error.value)
    assert message.startswith("<dict>: iterations: 1099511627776 iteration times would need "
                              "about 8 TB of memory; got 1099511627776; expected at most ")
    assert len(stragglersim.iteration_times(config, 10)) == 10
