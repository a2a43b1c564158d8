"""stragglersim: stragglers and gradient coding in synchronous distributed gradient descent.

The simulator of the `stragglersim` command line, callable from Python. Every function goes
through the command line's own C++ entry points, so results are the same bytes:

    run(config, out=None) -> Run               stragglersim run CONFIG --out DIR
    theory(config) -> dict                     stragglersim theory CONFIG --json
    sweep(spec, out, jobs=1) -> list of dict   stragglersim sweep SWEEP --out DIR --jobs N
    code(workers, code_dict, ...) -> dict      stragglersim codes --workers N --code JSON --json
    iteration_times(config, iterations)        delay-only iteration times as a numpy array

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

import json
import os
import tempfile

from . import _stragglersim

__all__ = [
    "ConfigError",
    "NumericalError",
    "Run",
    "run",
    "theory",
    "sweep",
    "code",
    "iteration_times",
]

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
        out: the output folder, or None when the run went to a temporary folder.
    """

    def __init__(self, trace, summary, out=None):
        self.trace = trace
        self.summary = summary
        self.out = out

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


def _input(config, what="config"):
    """(json text, path) for the native module."""
    if isinstance(config, dict):
        try:
            return json.dumps(config, allow_nan=False), None
        except (TypeError, ValueError) as e:
            raise ConfigError("{}: the {} is not JSON: {}".format(_DICT, what, e)) from None
    if isinstance(config, (str, bytes, os.PathLike)):
        return None, os.fsdecode(config)
    raise TypeError("{} must be a dict or a path; got {}".format(what, type(config).__name__))


def _read_run(folder, out):
    trace = dict(_stragglersim.read_trace(os.path.join(folder, "trace.csv")))
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    return Run(trace, summary, out)


def run(config, out=None):
    """Run one experiment, exactly as `stragglersim run CONFIG --out OUT`.

    Args:
        config: the config as a dict, e.g. a delay-only run of 8 uncoded workers:
            {"workers": 8, "data": None, "code": {"kind": "uncoded"},
             "stopping": {"rule": "all"}, "delay": {"kind": "shifted_exponential"},
             "optimizer": {"iterations": 100}}
            or the path of a JSON config file.
        out: folder to write trace.csv and summary.json into (the same bytes as the command
            line, but for the measured summary["wall_clock_seconds"]); None runs into a temporary folder that is removed afterwards.

    Returns:
        Run with .trace (column -> numpy array), .summary (dict) and .to_pandas().

    Raises:
        ConfigError: bad config (nothing written).
        NumericalError: non-finite loss or refused exact decode; .run holds the partial run.
        KeyboardInterrupt: Ctrl-C; the run is abandoned and nothing is written.
    """
    text, path = _input(config)
    if out is not None:
        out = os.fsdecode(out)
        status, error = _stragglersim.run(text, path, out)
        result = _read_run(out, out)
    else:
        with tempfile.TemporaryDirectory(prefix="stragglersim-") as tmp:
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
    return json.loads(_stragglersim.theory(text, path))


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
    return json.loads(
        _stragglersim.code(workers, text, partitions, seed, stragglers, wait_for, samples)
    )


def _typed(value):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def sweep(spec, out, jobs=1):
    """Run a sweep, exactly as `stragglersim sweep SWEEP --out OUT --jobs JOBS`.

    Args:
        spec: the sweep file as a dict ({"base": {...}, "grid": {"/code/d": [2, 3]},
            "repetitions": 1, "name": ...}) or its path.
        out: output folder (runs/<index>-<slug>/ and index.csv); a rerun resumes.
        jobs: parallel runs.

    Returns:
        The rows of index.csv as dicts (numbers as int or float, other cells as str).
    """
    text, path = _input(spec, "sweep")
    out = os.fsdecode(out)
    _stragglersim.sweep(text, path, out, jobs)
    import csv

    with open(os.path.join(out, "index.csv"), newline="", encoding="utf-8") as f:
        return [{k: _typed(v) for k, v in row.items()} for row in csv.DictReader(f)]


def iteration_times(config, iterations):
    """Delay-only iteration times of the config's cluster, as a float64 numpy array.

    The config's workers, partitions, code, stopping rule, delay model, straggler policy and
    seed are kept; data, loss, optimizer and backend are replaced by a delay-only run of
    `iterations` iterations ("data": null), so the result equals
    run(that config).trace["iteration_time"][1:] bit for bit.
    """
    text, path = _input(config)
    return _stragglersim.iteration_times(text, path, iterations)
