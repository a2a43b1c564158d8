#!/usr/bin/python3
"""A reliability campaign: generated inputs against the stragglersim binary (docs/reliability.md).

usage: campaign.py [--inputs N] [--seed S] [--jobs J] [--timeout T] [--binary STRAGGLERSIM]
                   [--keep DIR]

Each input is one command of the program on generated material: a run, theory, advise or
validate config built from the factory rows of `stragglersim list --json` and then mutated
(extreme or mistyped values, missing and unknown keys, deep nesting), a `codes` command line,
a measured-times file for `fit` or `validate` (missing cells, malformed rows, huge and negative
times), a `trace import` source, a small sweep; with output-path faults (a device node, a FIFO,
a symlink, a folder, an existing file, a path under a file) and, for some runs, SIGINT or
SIGTERM during the run. Every input is checked for:

  - an exit status the program documents (0, 2, 3, 130, 143): 1 (a bug) or death by a signal
    is a finding;
  - no hang: still running after --timeout seconds is a finding;
  - exit 0: every cell of trace.csv finite (empty cells aside) and summary.json "ok";
  - exit 2: an `error: ` message, and no output written (no trace.csv or summary.json in a run
    folder, no file at an output path that was free);
  - every exit: a device node, FIFO or symlink given as an output path is still what it was,
    and no temporary file is left beside an output.

Prints a table of outcomes per kind of input and every finding with its reproducer (the
command, and the input files under --keep); exits 1 when there is a finding. Inputs are drawn
from --seed alone, so a campaign is reproducible.
"""

import argparse
import collections
import concurrent.futures
import json
import math
import os
import random
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTED = {0, 2, 3, 130, 143}
EXTREMES = [0, -1, 1e-300, 1e300, 1e308, -1e308, 0.5, 2, 3, 7, 1e9, 2**63, "x", "", None, True,
            [], {}, [1, 2], {"a": 1}, 1e-9, 0.999999]


def factory_rows(binary):
    out = subprocess.run([binary, "list", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class Generator:
    """Inputs drawn from one random stream (a seed per input, so each is reproducible)."""

    def __init__(self, rows, rng):
        self.rows = rows
        self.rng = rng
        # Half the inputs are clean (plausible values, no damage), so that runs get past
        # validation and their traces, signals and output paths are exercised too.
        self.clean = rng.random() < 0.5

    def value(self, default):
        """A key's value: mostly plausible, sometimes extreme or mistyped."""
        if self.clean:
            try:
                number = float(default)
            except (TypeError, ValueError):
                return default if default is not None else self.rng.choice([1, 2, 3])
            if 0.0 < number < 1.0:  # a probability or a fraction
                return number * self.rng.choice([0.5, 1.0])
            return number * self.rng.choice([0.5, 1, 1, 2])
        r = self.rng.random()
        if r < 0.55 and default is not None:
            try:
                number = float(default)
            except (TypeError, ValueError):
                return default
            return number * self.rng.choice([0.5, 1, 1, 2, 3])
        if r < 0.75:
            return self.rng.choice([0.1, 0.5, 1, 2, 3, 5, 0.9])
        return self.rng.choice(EXTREMES)

    def block(self, category, kind_key="kind", exclude=()):
        rows = [r for r in self.rows[category]["rows"] if r["name"] not in exclude]
        row = self.rng.choice(rows)
        b = {kind_key: row["name"]}
        for key in row["keys"]:
            if self.clean and key["default"] is None:
                b[key["name"]] = self.rng.choice([1, 2, 2, 3])  # a required count
            elif self.rng.random() < 0.6:
                b[key["name"]] = self.value(key["default"])
        if self.clean and "r" in b and "fraction" in b:
            del b[self.rng.choice(["r", "fraction"])]
        return b

    def mutate(self, value, depth=0):
        """Random damage: a dropped key, a replaced value, an unknown key, deep nesting."""
        if not isinstance(value, dict) or depth > 3 or self.clean:
            return value
        for key in list(value):
            r = self.rng.random()
            if r < 0.04:
                del value[key]
            elif r < 0.08:
                value[key] = self.rng.choice(EXTREMES)
            else:
                value[key] = self.mutate(value[key], depth + 1)
        if self.rng.random() < 0.03:
            value[self.rng.choice(["worker", "iteration", "seeds", "codes", "x"])] = 1
        if depth == 0 and self.rng.random() < 0.01:
            inner = value
            for _ in range(self.rng.choice([63, 64, 65, 200])):
                inner["a"] = {}
                inner = inner["a"]
        return value

    def data(self, folder):
        r = self.rng.random()
        if r < 0.45:
            return None
        if r < 0.85:
            b = self.block("generators", "generator")
            if self.clean:  # generators whose size keys take small values
                b = {"generator": self.rng.choice(["gaussian_mixture", "linear_regression"])}
            b["source"] = "synthetic"
            b["rows"] = self.rng.choice([20, 60, 200, 400] + ([] if self.clean else [1, 5]))
            b["features"] = self.rng.choice([1, 2, 5, 12, 30])
            b.pop("storage", None) if self.rng.random() < 0.5 else None
            return b
        path = os.path.join(folder, "data.csv")
        self.write_table(path)
        return {"source": "csv", "path": path, "test_fraction": self.rng.choice([0, 0.2, 0.5])}

    def write_table(self, path):
        rows = self.rng.choice([0, 1, 3, 30, 120])
        cols = self.rng.choice([1, 2, 4])
        lines = [",".join([f"x{j}" for j in range(cols)] + ["label"])]
        for _ in range(rows):
            cells = [f"{self.rng.gauss(0, 1):.4g}" for _ in range(cols)] + [
                str(self.rng.choice([0, 1]))]
            r = self.rng.random()
            if r < 0.03:
                cells[0] = self.rng.choice(["nan", "inf", "", "abc", "1e999"])
            elif r < 0.05:
                cells = cells[:-1]
            lines.append(",".join(cells))
        with open(path, "w") as f:
            f.write("\n".join(lines) + ("\n" if self.rng.random() < 0.9 else ""))

    def times(self, path, workers):
        """A measured-times file: iteration,worker,seconds, sometimes damaged."""
        iterations = self.rng.choice([1, 2, 5, 40, 150])
        lines = ["iteration,worker,seconds"]
        for t in range(1, iterations + 1):
            for w in range(workers):
                seconds = 1 + self.rng.expovariate(1.0) * (3 if w == 0 else 1)
                r = self.rng.random()
                cell = f"{seconds:.6g}"
                if r < 0.01:
                    cell = self.rng.choice(["", "nan", "-1", "1e308", "0", "inf", "x"])
                elif r < 0.015:
                    continue  # a missing cell
                lines.append(f"{t},{w},{cell}")
        if self.rng.random() < 0.05:
            lines.insert(self.rng.randrange(1, len(lines) + 1), "1,2")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")

    def config(self, folder, with_data=None):
        workers = self.rng.choice([1, 2, 3, 4, 4, 6, 8, 8, 12, 16])
        if self.rng.random() < 0.03 and not self.clean:
            workers = self.rng.choice([0, -3, 100000, 10**7, "8", 2.5])
        c = {"name": "campaign", "seed": self.rng.randrange(1, 2**31), "workers": workers}
        c["data"] = self.data(folder) if with_data is None else with_data
        c["code"] = self.block("codes")
        c["stopping"] = self.block("rules", "rule")
        if self.clean and isinstance(workers, int) and self.rng.random() < 0.6:
            # A scheme known to fit the cluster: the run gets to its iterations.
            even = workers % 2 == 0
            c["code"] = self.rng.choice([{"kind": "uncoded"}] +
                                        ([{"kind": "frc", "d": 2}] if even else []))
            c["stopping"] = self.rng.choice(
                [{"rule": "all"}, {"rule": "first_r", "r": max(1, workers // 2)},
                 {"rule": "deadline", "after": self.rng.choice([1.5, 3.0])}] +
                ([{"rule": "decodable"}] if c["code"]["kind"] == "frc" else []))
        c["delay"] = self.block("delays", exclude=("trace",))
        if self.clean and isinstance(workers, int) and "factors" in c["delay"]:
            c["delay"]["factors"] = [self.rng.choice([1, 1.5, 3]) for _ in range(workers)]
        if self.rng.random() < 0.1 and isinstance(workers, int) and 0 < workers <= 16:
            path = os.path.join(folder, "times.csv")
            self.times(path, workers)
            c["delay"] = {"kind": "trace", "path": path,
                          "mode": self.rng.choice(["cycle", "bootstrap", "block", "x"])}
        if self.rng.random() < 0.5:
            c["stragglers"] = self.rng.choice(["cancel", "finish", "drain"] +
                                              ([] if self.clean else ["x"]))
        if c["data"] is not None:
            c["loss"] = self.block("losses")
            if c["loss"]["kind"] in ("mlp", "softmax") and self.rng.random() < 0.7:
                c["loss"] = {"kind": "logistic"}
        iterations = self.rng.choice([1, 2, 5, 10, 30])
        c["optimizer"] = {"iterations": iterations}
        if c["data"] is not None:
            c["optimizer"]["step"] = self.rng.choice(["auto", "auto", 0.1, 1e300, -1])
        if self.rng.random() < 0.05:
            c["backend"] = {"kind": "threads", "seconds_per_unit": 0.001,
                            "timeout": self.rng.choice([0.5, 5])}
        if self.rng.random() < 0.1:
            c["target_loss"] = self.rng.choice([0.1, 0.5, 1e-9])
        return self.mutate(c)

    def output_path(self, folder, name):
        """An output path, sometimes a fault: (path, what it is)."""
        path = os.path.join(folder, name)
        r = self.rng.random()
        if r < 0.75:
            return path, "free"
        kind = self.rng.choice(["device", "fifo", "symlink", "folder", "file", "under_file"])
        if kind == "device":
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "symlink":
            target = os.path.join(folder, "elsewhere.txt")
            with open(target, "w") as f:
                f.write("not the program's\n")
            os.symlink(target, path)
        elif kind == "folder":
            os.mkdir(path)
        elif kind == "file":
            with open(path, "w") as f:
                f.write("someone's file\n")
        else:
            blocker = os.path.join(folder, "blocker")
            with open(blocker, "w") as f:
                f.write("x\n")
            path = os.path.join(blocker, name)
        return path, kind

    def maybe_output(self, folder, argv, option, name, chance):
        """With probability `chance`, appends `option PATH` (output_path) to argv; returns
        {PATH: what it is}, or {} when the command writes no file."""
        if self.rng.random() >= chance:
            return {}
        path, what = self.output_path(folder, name)
        argv += [option, path]
        return {path: what}

    def input(self, folder):
        """(kind, argv, outputs {path: what}, run folder or None, signal delay or None)."""
        r = self.rng.random()
        write = lambda name, value: json_file(os.path.join(folder, name), value)
        if r < 0.45:
            config = write("config.json", self.config(folder))
            out, what = self.output_path(folder, "out")
            delay = self.rng.uniform(0.0, 0.4) if self.rng.random() < 0.08 else None
            return "run", ["run", config, "--out", out], {out: what}, out, delay
        if r < 0.55:
            config = write("config.json", self.config(folder))
            argv = ["theory", config]
            if self.rng.random() < 0.3:
                argv += ["--json"]
            return "theory", argv, {}, None, None
        if r < 0.65:
            workers = self.rng.choice([1, 2, 4, 8, 12, 30, 0, 100001])
            code = self.mutate(self.block("codes"))
            argv = ["codes", "--workers", str(workers), "--code", json.dumps(code)]
            for option, values in (("--wait-for", [0, 1, 3, 8, 50]),
                                   ("--stragglers", [-1, 0, 1, 2, 9]),
                                   ("--samples", [1, 20, 200])):
                if self.rng.random() < 0.3:
                    argv += [option, str(self.rng.choice(values))]
            outputs = self.maybe_output(folder, argv, "--csv", "b.csv", 0.3)
            return "codes", argv, outputs, None, None
        if r < 0.78:
            times = os.path.join(folder, "times.csv")
            self.times(times, self.rng.choice([1, 2, 4, 8]))
            argv = ["fit", times]
            outputs = self.maybe_output(folder, argv, "--out", "delay.json", 0.4)
            if self.rng.random() < 0.2:
                argv += ["--per-worker"]
            return "fit", argv, outputs, None, None
        if r < 0.84:
            source = os.path.join(folder, "source.csv")
            out, what = self.output_path(folder, "imported.csv")
            if self.clean:  # a measured-times table in its own column names
                self.times(source, self.rng.choice([1, 2, 4]))
                with open(source) as f:
                    text = f.read().replace("iteration,worker,seconds", "step,rank,ms", 1)
                with open(source, "w") as f:
                    f.write(text)
                argv = ["trace", "import", source, "--format", "csv", "--iteration", "step",
                        "--worker", "rank", "--seconds", "ms", "--out", out]
                if self.rng.random() < 0.5:
                    argv += ["--scale", self.rng.choice(["0.001", "1", "2.5"])]
                if self.rng.random() < 0.3:
                    argv += ["--missing", self.rng.choice(["drop", "censor"])]
                return "trace import", argv, {out: what}, None, None
            self.write_table(source)
            argv = ["trace", "import", source, "--format", self.rng.choice(["csv", "chrome", "x"]),
                    "--out", out]
            for option, values in (("--iteration", ["x0", "label", "nope"]),
                                   ("--worker", ["x1", "label"]),
                                   ("--seconds", ["x0", "x2"]),
                                   ("--scale", ["0.001", "0", "-1", "x"])):
                if self.rng.random() < 0.6:
                    argv += [option, self.rng.choice(values)]
            return "trace import", argv, {out: what}, None, None
        if r < 0.90:
            workers = self.rng.choice([2, 4, 8])
            config = self.config(folder, with_data={"source": "synthetic",
                                                    "generator": "gaussian_mixture",
                                                    "rows": 120, "features": 4})
            if isinstance(config, dict):
                config["workers"] = workers
            times = os.path.join(folder, "times.csv")
            self.times(times, workers)
            holdouts = [0.5, 0.3] + ([] if self.clean else [0.0, 1.0, -1])
            argv = ["validate", write("config.json", config), "--trace", times, "--holdout",
                    str(self.rng.choice(holdouts))]
            return "validate", argv, {}, None, None
        if r < 0.94:
            config = self.config(folder, with_data={"source": "synthetic",
                                                    "generator": "linear_regression",
                                                    "rows": 100, "features": 3})
            if isinstance(config, dict):
                config["target_loss"] = self.rng.choice([0.5, 1.0, 1e-9])
                config["loss"] = {"kind": "least_squares"}
                config["workers"] = self.rng.choice([2, 4, 6])
            argv = ["advise", write("config.json", config), "--repetitions", "2"]
            outputs = self.maybe_output(folder, argv, "--write", "advised.json", 0.4)
            return "advise", argv, outputs, None, None
        base = self.config(folder)
        grid_key = self.rng.choice(["/seed", "/workers", "/code/d", "/code", "/x"])
        sweep = {"base": base, "grid": {grid_key: self.rng.choice([[1, 2], [2, 4], [[]], []])},
                 "repetitions": self.rng.choice([1, 2])}
        if self.clean:
            sweep["grid"] = {"/seed": [1, 2]}
        if self.rng.random() < 0.1:
            sweep["grid"]["/code/kind"] = ["uncoded"]
        out, what = self.output_path(folder, "sweep")
        argv = ["sweep", write("sweep.json", self.mutate(sweep)), "--out", out, "--jobs", "1"]
        return "sweep", argv, {out: what}, None, None


def json_file(path, value):
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def describe(path):
    """What a path is, to compare before and after: (type, detail)."""
    try:
        s = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ("missing", None)
    if stat.S_ISLNK(s.st_mode):
        return ("symlink", os.readlink(path))
    if stat.S_ISCHR(s.st_mode):
        return ("device", s.st_rdev)
    if stat.S_ISFIFO(s.st_mode):
        return ("fifo", None)
    if stat.S_ISDIR(s.st_mode):
        return ("folder", None)
    with open(path, "rb") as f:
        return ("file", f.read())


def non_finite_cells(trace):
    with open(trace) as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines[1:], start=2):
        for cell in line.split(","):
            if cell == "":
                continue
            try:
                value = float(cell)
            except ValueError:
                continue
            if not math.isfinite(value):
                return f"trace.csv:{number}: {cell}"
    return None


def one(binary, seed, rows, timeout, keep):
    """Generates and runs input `seed`; returns (kind, outcome, finding or None)."""
    rng = random.Random(seed)
    folder = tempfile.mkdtemp(prefix=f"campaign-{seed}-")
    try:
        gen = Generator(rows, rng)
        kind, argv, outputs, run_dir, delay = gen.input(folder)
        before = {path: describe(path) for path in outputs}
        # A FIFO output is written through (docs/reliability.md): like `cmd > fifo`, it needs a
        # reader, which drains it here while the command runs.
        readers = [os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                   for path, what in outputs.items() if what == "fifo"]
        draining = threading.Event()

        def drain():
            while not draining.is_set():
                for fd in readers:
                    try:
                        while os.read(fd, 65536):
                            pass
                    except BlockingIOError:
                        pass
                time.sleep(0.01)

        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        command = [binary] + argv
        proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        if delay is not None:
            time.sleep(delay)
            if proc.poll() is None:
                proc.send_signal(rng.choice([signal.SIGINT, signal.SIGTERM]))
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            draining.set()
            return kind, "hang", finding(seed, command, f"no exit after {timeout} s", folder, keep)
        draining.set()
        drainer.join()
        for fd in readers:
            os.close(fd)
        status = proc.returncode
        outcome = f"exit {status}" if status >= 0 else f"signal {-status}"
        if delay is not None and status in (-signal.SIGINT, -signal.SIGTERM):
            # The signal came before `run` installed its handlers (it does so before planning):
            # the default action, which a shell reports as 130 / 143 too.
            outcome = f"killed by the signal sent ({-status})"
            status = 128 - status
        problems = []
        if status not in DOCUMENTED:
            problems.append(f"undocumented status {status}: {err.strip()[-300:]}")
        if status == 2 and not err.startswith("error: "):
            problems.append(f"exit 2 without an 'error: ' line: {err.strip()[:200]!r}")
        for path, what in outputs.items():
            now = describe(path)
            if what in ("device", "fifo", "symlink") and now != before[path]:
                problems.append(f"{what} at {path} became {now[0]}")
            if status == 2 and what == "free" and now[0] != "missing" and run_dir != path:
                problems.append(f"exit 2 but {path} was written ({now[0]})")
            parent = os.path.dirname(path)
            if os.path.isdir(parent):
                left = [n for n in os.listdir(parent) if ".tmp" in n]
                if left:
                    problems.append(f"temporary files left: {left}")
        if run_dir is not None and os.path.isdir(run_dir) and outputs.get(run_dir) == "free":
            trace = os.path.join(run_dir, "trace.csv")
            summary = os.path.join(run_dir, "summary.json")
            if status == 2 and (os.path.exists(trace) or os.path.exists(summary)):
                problems.append("exit 2 but the run folder holds output")
            if status == 0:
                with open(summary) as f:
                    s = json.load(f)
                if s.get("status") != "ok":
                    problems.append(f"exit 0 with status {s.get('status')}")
                bad = non_finite_cells(trace)
                if bad:
                    problems.append(f"non-finite cell in an ok run: {bad}")
        if problems:
            return kind, outcome, finding(seed, command, "; ".join(problems), folder, keep)
        return kind, outcome, None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def finding(seed, command, what, folder, keep):
    kept = ""
    if keep:
        target = os.path.join(keep, f"input-{seed}")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder, target, symlinks=True,
                        ignore=lambda d, names: [n for n in names
                                                 if not os.path.isfile(os.path.join(d, n))
                                                 and not os.path.isdir(os.path.join(d, n))])
        kept = f" (inputs kept in {target})"
    return f"input {seed}: {what}\n    $ {shlex.join(command)}{kept}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "release",
                                                         "experiments", "stragglersim"))
    parser.add_argument("--keep", help="copy each finding's input files here")
    args = parser.parse_args()
    rows = factory_rows(args.binary)
    seeds = [args.seed * 1_000_003 + i for i in range(args.inputs)]
    table = collections.defaultdict(collections.Counter)
    findings = []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for kind, outcome, found in pool.map(
                lambda s: one(args.binary, s, rows, args.timeout, args.keep), seeds):
            table[kind][outcome] += 1
            if found:
                findings.append(found)
    outcomes = sorted({o for counts in table.values() for o in counts})
    print(f"campaign: {args.inputs} inputs, seed {args.seed}, {time.monotonic() - start:.0f} s")
    print("| input | " + " | ".join(outcomes) + " | total |")
    print("|---|" + "---|" * (len(outcomes) + 1))
    for kind in sorted(table):
        counts = table[kind]
        print(f"| {kind} | " + " | ".join(str(counts.get(o, 0)) for o in outcomes) +
              f" | {sum(counts.values())} |")
    print(f"findings: {len(findings)}")
    for f in findings:
        print(f)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
