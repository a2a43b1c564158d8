"""stragglersim: stragglers and gradient coding in synchronous distributed gradient descent.

The simulator of the `stragglersim` command line, callable from Python. Every function goes
through the command line's own C++ entry points, so results are the same bytes:

    run(config, out=None) -> Run               stragglersim run CONFIG --out DIR
    theory(config) -> dict                     stragglersim theory CONFIG --json
    sweep(spec, out, jobs=1) -> list of dict   stragglersim sweep SWEEP --out DIR --jobs N
    code(workers, code_dict, ...) -> dict      stragglersim codes --workers N --code JSON --json
    iteration_times(config, iterations)        delay-only iteration times as a numpy array
    fit(times_csv, per_worker=False)           the fits table of stragglersim fit TIMES.csv
    fit_report(times_csv, per_worker=False)    stragglersim fit TIMES.csv --json
    advise(config, ...) -> dict                stragglersim advise CONFIG --json
    load_run(folder)                           a run folder's trace.csv as a table
    load_sweep(folder, traces=False)           a sweep folder's index.csv (or every trace) as a table
    __version__                                the version of the build (stragglersim --version)

Tables are pandas DataFrames when pandas is importable (Debian python3-pandas), numpy
structured arrays otherwise; both index columns by name (table["iteration_time"]).

A config (or sweep spec) is either a dict, the JSON config as Python objects (error messages
name it "<dict>"; relative paths in it resolve against the current directory), or a path to a
JSON file, read exactly as the command line reads it (relative paths resolve against the
file's folder). The keys are those of the README's "Config" section.

Errors: bad input raises ConfigError (a ValueError) with the command line's message
"<file>:<json-pointer>: <problem>; got <value>; expected <...>"; a run that stops on numerical
trouble raises NumericalError, whose `.run` is the partial Run (trace up to the last good row).

The GIL is released while the simulator runs, so Python threads can run simulations side by
side; Ctrl-C (KeyboardInterrupt) abandons a running call within about 50 ms, writing nothing.
"""

import csv as _csv
import json as _json
import os as _os
import tempfile as _tempfile

from . import _stragglersim

__version__ = _stragglersim.version

__all__ = [
    "ConfigError",
    "NumericalError",
    "Run",
    "run",
    "theory",
    "sweep",
    "code",
    "iteration_times",
    "fit",
    "fit_report",
    "advise",
    "validate",
    "trace_import",
    "load_run",
    "load_sweep",
]
# The wrappers of `stragglersim validate` and `stragglersim trace import` go below advise(),
# each a function listed here that calls its entry point in the native module.

ConfigError = _stragglersim.ConfigError
ConfigError.__module__ = __name__
ConfigError.__doc__ = (
    "Bad input (a ValueError); the message is the command line's "
    "'<file>:<json-pointer>: <problem>; got <value>; expected <...>' text, "
    "with '<dict>' as the file of an in-memory config."
)

_DICT = "<dict>"


class Run:
    """The result of one run.

    Attributes:
        trace: dict of column name -> numpy array, in the column order of trace.csv
            (int64 for the count columns iteration, workers_heard, partitions_covered;
            float64 otherwise). Row 0 is x0 at time 0.
        summary: the summary.json dict (resolved config, totals, status, theory; f_star,
            final_suboptimality, time_to_relative_suboptimality, group_coverage, warnings,
            wall_clock_seconds: docs/model.md section 7).
        workers: dict of column name -> numpy array of workers.csv, one entry per worker
            (each worker's part in the updates: heard, used, share, and rows or staleness
            where the rule has them; docs/model.md section 7): int64 for worker, heard, used
            and rows, float64 for share and the staleness columns (nan where the file's cell
            is empty). None for a delay-only run, which writes no workers.csv.
        out: the output folder, or None when the run went to a temporary folder.
    """

    def __init__(self, trace, summary, out=None, workers=None):
        self.trace = trace
        self.summary = summary
        self.out = out
        self.workers = workers

    def to_pandas(self):
        """The trace as a pandas DataFrame (needs pandas, which stragglersim does not)."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Run.to_pandas needs pandas (apt-get install python3-pandas)") from e
        return pandas.DataFrame(self.trace)

    def __repr__(self):
        rows = len(next(iter(self.trace.values()))) if self.trace else 0
        return "Run(name={!r}, status={!r}, rows={}, columns={})".format(
            self.summary.get("name"), self.summary.get("status"), rows, list(self.trace)
        )


class NumericalError(RuntimeError):
    """A run stopped on numerical trouble (a non-finite loss or a refused exact decode).

    `run` is the partial Run: its trace ends at the last good row and its summary has
    "status": "failed" and the reason under "error" (what the command line's exit 3 leaves).
    """

    def __init__(self, message, run):
        super().__init__(message)
        self.run = run


_MAX_DEPTH = 64  # kMaxJsonDepth of experiments/config/json_reader.h


def _too_deep(value):
    """The JSON pointer of the first array or object nested deeper than _MAX_DEPTH, else None."""
    stack = [(value, "", 1)]
    while stack:
        item, pointer, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.items())
        elif isinstance(item, (list, tuple)):
            children = list(enumerate(item))
        else:
            continue
        if depth > _MAX_DEPTH:
            return pointer
        for key, child in reversed(children):
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            stack.append((child, pointer + "/" + escaped, depth + 1))
    return None


def _input(config, what="config"):
    """(json text, path) for the native module."""
    if isinstance(config, dict):
        try:
            return _json.dumps(config, allow_nan=False), None
        except RecursionError:
            # Deeper than Python's encoder recurses: the C++ reader's message for that nesting.
            raise ConfigError(
                "{}:{}: nesting too deep; got more than {} levels; expected at most {} nested "
                "arrays and objects".format(_DICT, _too_deep(config), _MAX_DEPTH, _MAX_DEPTH)
            ) from None
        except (TypeError, ValueError) as e:
            raise ConfigError("{}: the {} is not JSON: {}".format(_DICT, what, e)) from None
    if isinstance(config, (str, bytes, _os.PathLike)):
        return None, _os.fsdecode(config)
    raise TypeError("{} must be a dict or a path; got {}".format(what, type(config).__name__))


def _read_workers(path):
    """workers.csv as column -> numpy array (None when the run wrote none)."""
    if not _os.path.exists(path):
        return None
    import numpy as _numpy

    with open(path, newline="", encoding="utf-8") as f:
        reader = _csv.DictReader(f)
        rows = list(reader)
        names = reader.fieldnames
    counts = ("worker", "heard", "used", "rows")
    return {
        name: _numpy.array([int(r[name]) for r in rows], dtype=_numpy.int64)
        if name in counts
        else _numpy.array([float(r[name]) if r[name] else _numpy.nan for r in rows])
        for name in names
    }


def _read_run(folder, out):
    trace = dict(_stragglersim.read_trace(_os.path.join(folder, "trace.csv")))
    with open(_os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        summary = _json.load(f)
    return Run(trace, summary, out, _read_workers(_os.path.join(folder, "workers.csv")))


def run(config, out=None):
    """Run one experiment, exactly as `stragglersim run CONFIG --out OUT`.

    Args:
        config: the config as a dict, e.g. a delay-only run of 8 uncoded workers:
            {"workers": 8, "data": None, "code": {"kind": "uncoded"},
             "stopping": {"rule": "all"}, "delay": {"kind": "shifted_exponential"},
             "optimizer": {"iterations": 100}}
            or the path of a JSON config file.
        out: folder to write trace.csv and summary.json into (the same bytes as the command
            line, but for the measured summary["wall_clock_seconds"] and the phases'
            *_seconds; plan_seconds is None here, only the run command times its plan); None runs into a temporary folder that is removed afterwards.

    Returns:
        Run with .trace (column -> numpy array), .summary (dict) and .to_pandas().

    Raises:
        ConfigError: bad config (nothing written).
        NumericalError: non-finite loss or refused exact decode; .run holds the partial run.
        KeyboardInterrupt: Ctrl-C; as after the CLI's SIGINT the run ends after its current
            row, and out keeps the finished rows and a summary with status "interrupted"
            (out=None: the temporary folder is removed).
    """
    text, path = _input(config)
    if out is not None:
        out = _os.fsdecode(out)
        status, error = _stragglersim.run(text, path, out)
        result = _read_run(out, out)
    else:
        with _tempfile.TemporaryDirectory(prefix="stragglersim-") as tmp:
            status, error = _stragglersim.run(text, path, tmp)
            result = _read_run(tmp, None)
    if status != "ok":
        raise NumericalError("{}: {}".format(path if path is not None else _DICT, error), result)
    return result


def theory(config):
    """What theory predicts for a config: the dict `stragglersim theory CONFIG --json` prints.

    Keys include expected_iteration_time, iteration_time_sd, group_erasure_probability, q2,
    method; with data also smoothness, pl_constant, f_star, zeta_squared, contraction,
    noise_floor, bound (per iteration), and speedup_vs_n for FRC schemes.
    """
    text, path = _input(config)
    return _json.loads(_stragglersim.theory(text, path))


def code(workers, code_dict, partitions=0, seed=1, stragglers=-1, wait_for=0, samples=200):
    """Inspect a gradient code: the dict `stragglersim codes --workers N --code JSON --json` prints.

    Args:
        workers: n.
        code_dict: the code object of a config, e.g. {"kind": "frc", "d": 2}.
        partitions: k (0: the code's own).
        seed: seed (the code stream is derived as in a run).
        stragglers: stragglers per pattern (-1: the code's s).
        wait_for: workers heard per pattern (overrides stragglers when > 0).
        samples: random patterns when the patterns are too many to enumerate.
    """
    if not isinstance(code_dict, dict):
        raise TypeError("code_dict must be a dict; got {}".format(type(code_dict).__name__))
    text, _ = _input(code_dict, "code")
    return _json.loads(
        _stragglersim.code(workers, text, partitions, seed, stragglers, wait_for, samples)
    )


def _typed(value):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def sweep(spec, out, jobs=1, batch=None):
    """Run a sweep, exactly as `stragglersim sweep SWEEP --out OUT --jobs JOBS [--batch N]`.

    Args:
        spec: the sweep file as a dict ({"base": {...}, "grid": {"/code/d": [2, 3]},
            "repetitions": 1, "name": ...}) or its path.
        out: output folder (runs/<slug>/ and index.csv); a rerun resumes.
        jobs: parallel runs.
        batch: runs per lock-step group (docs/sweeps.md "Lock-step groups"): runs sharing a
            data set, loss and partitions advance together, one pass over the data for all of
            them. None: the command's default; 1: one run at a time (`--no-batch`). The files
            written are the same bytes either way.

    Returns:
        The rows of index.csv as dicts (numbers as int or float, other cells as str).
    """
    text, path = _input(spec, "sweep")
    out = _os.fsdecode(out)
    if batch is None:
        batch = _stragglersim.DEFAULT_BATCH
    _stragglersim.sweep(text, path, out, jobs, batch)
    with open(_os.path.join(out, "index.csv"), newline="", encoding="utf-8") as f:
        return [{k: _typed(v) for k, v in row.items()} for row in _csv.DictReader(f)]


def iteration_times(config, iterations):
    """Delay-only iteration times of the config's cluster, as a float64 numpy array.

    The config's workers, partitions, code, stopping rule, delay model, straggler policy and
    seed are kept; data, loss, optimizer and backend are replaced by a delay-only run of
    `iterations` iterations ("data": null), so the result equals
    run(that config).trace["iteration_time"][1:] bit for bit.
    """
    text, path = _input(config)
    return _stragglersim.iteration_times(text, path, iterations)


def fit(times_csv, per_worker=False):
    """Fit every delay family to measured times: the table `stragglersim fit TIMES.csv` prints.

    Args:
        times_csv: CSV of iteration,worker,seconds (or worker,seconds) rows (docs/fit.md).
        per_worker: also fit each worker alone (the "per_worker" key of each row's report).

    Returns:
        A list with one dict per family, in the command's order: family, fitted, and when
        fitted parameters, standard_errors, parameter_count, log_likelihood, aic, ks_statistic,
        ks_p_value, iterations, best (True for the lowest AIC), delay (the config block of that
        family); else problem. The whole `fit --json` report is fit_report(times_csv).

    Raises:
        ConfigError: missing or malformed file (the message names file:line).
    """
    report = fit_report(times_csv, per_worker)
    rows = []
    for row in report["fits"]:
        row = dict(row)
        row["best"] = row["family"] == report.get("best")
        if row["fitted"]:
            row["delay"] = _delay_block(row)
        rows.append(row)
    return rows


def fit_report(times_csv, per_worker=False):
    """The dict `stragglersim fit TIMES.csv --json [--per-worker]` prints (docs/fit.md)."""
    return _json.loads(_stragglersim.fit(_os.fsdecode(times_csv), bool(per_worker)))


def _delay_block(row):
    block = {"kind": row["family"]}
    block.update(row["parameters"])
    block["tail"] = "load"
    if "factors" in row:
        block["factors"] = row["factors"]
    return block


def advise(config, suboptimality=None, repetitions=10, measure=0, fit=None, fixed_step=False,
           threads=1):
    """Rank coding schemes by predicted time to a target loss: `stragglersim advise CONFIG --json`.

    Args:
        config: a config with data and target_loss (dict or path), as for run().
        suboptimality: target f - f* <= s (f(x0) - f*) instead of the config's target_loss.
        repetitions: simulated runs per scheme where no exact curve applies.
        measure: also measure every scheme over this many seeded runs (0: no).
        fit: a CSV of measured times: predict with the delay model chosen on it by held-out
            error (as `advise --fit`; the result's model_choice says which and why).
        fixed_step: every scheme at the config's step and listed K, r and deadline (as
            `advise --fixed-step`); by default each at its own tuned step and parameters.
        threads: candidates estimated at once (`advise --threads`, whose default is the
            machine's cores); the result is the same at any count.

    Returns:
        The advice dict (docs/advise.md): predicted_delay, f_star, initial_gap, target_loss,
        target_gap, horizon, schemes (ranked, each with scheme, block, iteration_time,
        iterations_to_target, time_to_target and their methods), recommended and
        recommended_config (None when no scheme reaches the target), and with fit, model_choice.
    """
    text, path = _input(config)
    return _json.loads(
        _stragglersim.advise(
            text,
            path,
            float(suboptimality) if suboptimality is not None else 0.0,
            int(repetitions),
            int(measure),
            _os.fsdecode(fit) if fit is not None else "",
            bool(fixed_step),
            int(threads),
        )
    )


def validate(config, trace, holdout=0.5, threads=1):
    """Predictions from one part of a measured trace against a replay of the rest:
    `stragglersim validate CONFIG --trace TRACE --holdout H --json` (docs/validate.md).

    Args:
        config: a config with workers and data (dict or path), as for run().
        trace: CSV of iteration,worker,seconds rows (the config's workers).
        holdout: the held-out fraction of the iterations, in (0, 1).
        threads: candidates the time-to-target comparison estimates at once (`validate
            --threads`, whose default is the machine's cores); the result is the same at any
            count.

    Returns:
        The validation dict of docs/validate.md (the fit part, the stationarity test, one row
        per model and scheme with predicted and replayed times, and each model's verdict).

    Raises:
        ConfigError: a bad config, holdout or trace (the message names file:line).
    """
    text, path = _input(config)
    return _json.loads(
        _stragglersim.validate(text, path, _os.fsdecode(trace), float(holdout), int(threads)))


def trace_import(path, format, out, iteration=None, worker=None, seconds=None, scale=None,
                 events=None, group_by=None, missing="drop"):
    """Convert measured times to the trace layout: `stragglersim trace import` (docs/traces.md).

    Args:
        path: the source file (a CSV table, or Chrome trace-event JSON, plain or gzip).
        format: "csv" or "chrome".
        out: the trace file written (iteration,worker,seconds).
        iteration, worker, seconds, scale: csv only: the column names and seconds per unit.
        events: chrome only: the event names whose durations are summed (a list of str).
        group_by: chrome only: "dp_rank" (one worker per pid) or "rank" (per pid and tid).
        missing: "drop" or "censor" iterations in which some worker has no time.

    Returns:
        A dict: path, out, format, workers, iterations, missing_cells, dropped_iterations,
        censored_cells, repeated_rows, median, mean, max (of the times written), worker_ids
        (the source's id of each written worker), source_iterations, renumbered.

    Raises:
        ConfigError: a bad option (named as the command line spells it, e.g. --scale) or a
            malformed source (file:line, or file: event N).
    """
    return _json.loads(
        _stragglersim.trace_import(
            _os.fsdecode(path), str(format), _os.fsdecode(out),
            None if iteration is None else str(iteration),
            None if worker is None else str(worker),
            None if seconds is None else str(seconds),
            None if scale is None else float(scale),
            None if events is None else [str(e) for e in events],
            None if group_by is None else str(group_by),
            str(missing),
        )
    )


def _table(columns):
    """A pandas DataFrame of `columns` (name -> sequence) when pandas imports, else a numpy
    structured array with the same column names."""
    try:
        import pandas as _pandas
    except ImportError:
        _pandas = None
    if _pandas is not None:
        return _pandas.DataFrame(columns)
    import numpy as _numpy

    arrays = {name: _numpy.asarray(values) for name, values in columns.items()}
    rows = len(next(iter(arrays.values()))) if arrays else 0
    table = _numpy.zeros(rows, dtype=[(name, a.dtype) for name, a in arrays.items()])
    for name, a in arrays.items():
        table[name] = a
    return table


def load_run(folder):
    """A run folder's trace.csv (written by run() or `stragglersim run`) as a table.

    One row per trace row (row 0 is x0 at time 0), the columns of trace.csv: int64 for
    iteration, workers_heard and partitions_covered, float64 otherwise (NaN for an empty cell).
    """
    return _table(dict(_stragglersim.read_trace(_os.path.join(_os.fsdecode(folder), "trace.csv"))))


def _column_name(header):
    """A grid column of index.csv ("/code/d") as a tidy name ("code.d", the run folders' spelling)."""
    return header[1:].replace("/", ".") if header.startswith("/") else header


def _index_columns(folder):
    with open(_os.path.join(folder, "index.csv"), newline="", encoding="utf-8") as f:
        reader = _csv.reader(f)
        header = [_column_name(h) for h in next(reader)]
        rows = list(reader)
    columns = {}
    for c, name in enumerate(header):
        cells = [row[c] for row in rows]
        typed = [_typed(v) if v != "" else float("nan") for v in cells]
        if all(isinstance(v, int) for v in typed):
            columns[name] = typed
        elif all(isinstance(v, (int, float)) for v in typed):
            columns[name] = [float(v) for v in typed]
        else:
            columns[name] = cells
    return columns


def load_sweep(folder, traces=False):
    """A sweep folder (written by sweep() or `stragglersim sweep`) as a table.

    Args:
        folder: the sweep's output folder (index.csv and runs/<slug>/).
        traces: False: index.csv, one row per run (index, repetition, seed, one column per
            grid key, its "/" path written with dots as in the run folders, e.g. "code.d",
            then the summary columns and folder). True: every run's trace, one row per
            iteration of each run, the run's index, repetition, seed and grid columns first.
    """
    folder = _os.fsdecode(folder)
    index = _index_columns(folder)
    if not traces:
        return _table(index)
    # index.csv's columns up to status say which run a row is: index, repetition, seed, grid.
    names = list(index)
    grid = names[: names.index("status")]
    long = {}
    for i, run_folder in enumerate(index["folder"]):
        trace = dict(_stragglersim.read_trace(_os.path.join(folder, run_folder, "trace.csv")))
        rows = len(next(iter(trace.values())))
        for name in grid:
            long.setdefault(name, []).extend([index[name][i]] * rows)
        for name, values in trace.items():
            long.setdefault(name, []).extend(values.tolist())
    return _table(long)
