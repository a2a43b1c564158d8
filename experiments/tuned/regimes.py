#!/usr/bin/env python3
"""The regime table at tuned steps: the twelve regime sweeps (experiments/paper/regime_<regime>_
<workload>.json, docs/results.md "The paper's workloads in three delay regimes") re-run with every
scheme at its own tuned step, chosen on tuning seeds and reported on the sweep's own seeds.

usage: regimes.py --out DIR [--fixed TABLE.csv] [--multipliers LIST]
                  [--tuning-repetitions 2] [--sweeps FOLDER] [--only NAME ...]
                  [--jobs 2] [--binary PATH] [--sustained]

For each regime sweep NAME = regime_<regime>_<workload> in FOLDER (default experiments/paper):
  1. 1/beta of its base, from a one-iteration run (experiments/tuned_comparison.py auto_step);
  2. the level: the fixed-step table's level of that regime and workload (--fixed, default
     plots/figures/regimes.csv, the table plots/plot_regimes.py writes from the fixed-step
     sweeps), so that both tables time the same relative suboptimality;
  3. DIR/sweeps/NAME.json: the sweep with the native tuning of `stragglersim sweep`
     (docs/sweeps.md "Tuning"): "tune": {"/optimizer/step": [m / beta for each multiplier m]}
     (--multipliers; by default 1, 2, 4, 8, 16 for the logistic workloads, whose 1/beta bounds
     the curvature by |x|^2/4 and is loose, and 0.5, 0.75, 1, 1.5, 2, 3 for least squares, where
     beta is the largest curvature itself and gradient descent diverges above 2/beta),
     "tune_objective": {"suboptimality": level}, "tuning_repetitions"; run into DIR/sweeps/NAME
     (resumable: a rerun skips the runs already complete). Every scheme's step is chosen on its
     tuning seeds (a stream of their own) and the evaluation runs on the untuned sweep's seeds,
     so no evaluation seed enters the choice. The other parameters (r, K, the window) stay those
     of the fixed-step sweep.
  4. DIR/sweeps/auto_steps.json: 1/beta of every sweep (the table states the chosen steps as
     multiples of it).
Then plots/plot_regimes.py draws DIR/paper_regime_tuned_<regime>.png, DIR/regimes_tuned.csv and
DIR/regimes_tuned.md: every scheme's time to the level at its tuned step, and ErasureHead's
speedups at tuned steps beside those of the fixed-step table.

--sustained: the objective {"suboptimality": level, "sustained": true} (docs/sweeps.md
"Tuning"): each step chosen for the time from which the loss stays at or below the level, and
the table timed the same way (plot_regimes.py --sustained: paper_regime_tuned_sustained_<regime>
.png, regimes_tuned_sustained.csv and .md). Use its own --out: the sweeps differ.

Exit status: 0 done; 2 bad input (the message names it); the CLI's own status if a run fails.
"""
import argparse
import copy
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import tuned_comparison  # noqa: E402

REGIMES = ("injected", "cluster", "model_a")
# Cheapest first, so that a partial run already gives whole rows of the table.
WORKLOADS = ("kc_housing_like", "fashion_mnist", "amazon_like", "covtype_like")
DEFAULT_FIXED = os.path.join(ROOT, "plots", "figures", "regimes.csv")
DEFAULT_MULTIPLIERS = {"logistic": [1, 2, 4, 8, 16], "least_squares": [0.5, 0.75, 1, 1.5, 2, 3]}


def fail(message):
    print(f"regimes.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_levels(path):
    """{(regime, workload): level} from a fixed-step regime table (plot_regimes.py's CSV)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"--fixed {path}: {e}")
    levels = {}
    for line, row in enumerate(rows, start=2):
        try:
            key, level = (row["regime"], row["workload"]), float(row["level"])
        except (KeyError, TypeError, ValueError):
            fail(f"{path}:{line}: expected the columns regime, workload and a numeric level "
                 "(the table plots/plot_regimes.py writes)")
        if not 0 < level < 1:
            fail(f"{path}:{line}: level {row['level']}; expected a relative suboptimality in "
                 "(0, 1)")
        if levels.setdefault(key, level) != level:
            fail(f"{path}:{line}: a second level for {key[0]} / {key[1]}")
    return levels


def multipliers_of(text):
    try:
        values = sorted({float(m) for m in text.split(",")})
    except ValueError:
        values = []
    if len(values) < 2 or min(values) <= 0:
        fail(f"--multipliers {text!r}: expected two or more numbers > 0 separated by commas")
    return values


def tuned_sweep(sweep, step, multipliers, level, repetitions, sustained=False):
    """The regime sweep with the native step tuning added."""
    tuned = copy.deepcopy(sweep)
    tuned["tune"] = {"/optimizer/step": [float(f"{m * step:.12g}") for m in multipliers]}
    tuned["tune_objective"] = {"suboptimality": level}
    if sustained:
        tuned["tune_objective"]["sustained"] = True
    tuned["tuning_repetitions"] = repetitions
    return tuned


def run_sweep(binary, path, out, jobs):
    result = subprocess.run([binary, "sweep", path, "--out", out, "--jobs", str(jobs), "-q"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit(result.returncode)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--fixed", default=DEFAULT_FIXED)
    parser.add_argument("--multipliers")
    parser.add_argument("--tuning-repetitions", type=int, default=2)
    parser.add_argument("--sweeps", default=os.path.join(ROOT, "experiments", "paper"))
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--binary", default=tuned_comparison.DEFAULT_BINARY)
    parser.add_argument("--sustained", action="store_true")
    args = parser.parse_args(argv)
    fixed_grid = multipliers_of(args.multipliers) if args.multipliers else None
    if args.tuning_repetitions < 1:
        fail("--tuning-repetitions: expected an integer >= 1")
    levels = read_levels(args.fixed)
    names = [(r, w, f"regime_{r}_{w}") for w in WORKLOADS for r in REGIMES
             if os.path.exists(os.path.join(args.sweeps, f"regime_{r}_{w}.json"))]
    known = {n for _, _, n in names}
    for name in args.only:
        if name not in known:
            fail(f"--only {name!r}: no such regime sweep in {args.sweeps}; expected one of: "
                 + ", ".join(sorted(known)))
    if args.only:
        names = [entry for entry in names if entry[2] in args.only]
    if not names:
        fail(f"--sweeps {args.sweeps}: no regime_<regime>_<workload>.json there")
    for regime, workload, _ in names:
        if (regime, workload) not in levels:
            fail(f"--fixed {args.fixed}: no level for {regime} / {workload}; run the "
                 "fixed-step sweeps and plots/plot_regimes.py first")
    sweeps = os.path.join(args.out, "sweeps")
    os.makedirs(sweeps, exist_ok=True)
    steps_path = os.path.join(sweeps, "auto_steps.json")
    steps = {}
    if os.path.exists(steps_path):
        with open(steps_path) as f:
            steps = json.load(f)
    for regime, workload, name in names:
        start = time.monotonic()
        source = os.path.join(args.sweeps, name + ".json")
        with open(source) as f:
            sweep = tuned_comparison.absolute_paths(json.load(f), os.path.dirname(source))
        if sweep["base"].get("optimizer", {}).get("step") != "auto":
            fail(f"{source}:/base/optimizer/step: the grid multiplies 1/beta; expected \"auto\"")
        multipliers = fixed_grid or DEFAULT_MULTIPLIERS[sweep["base"]["loss"]["kind"]]
        with tempfile.TemporaryDirectory() as work:
            steps[name] = tuned_comparison.auto_step(args.binary, sweep["base"], work)
        with open(steps_path + ".tmp", "w") as f:
            json.dump(steps, f, indent=2, sort_keys=True)
        os.replace(steps_path + ".tmp", steps_path)
        path = os.path.join(sweeps, name + ".json")
        with open(path, "w") as f:
            json.dump(tuned_sweep(sweep, steps[name], multipliers, levels[(regime, workload)],
                                  args.tuning_repetitions, args.sustained), f, indent=2)
        run_sweep(args.binary, path, os.path.join(sweeps, name), args.jobs)
        print(f"{name}: 1/beta = {steps[name]:.6g}, level {levels[(regime, workload)]:g}, "
              f"{time.monotonic() - start:.0f} s", flush=True)
    table = "regimes_tuned_sustained" if args.sustained else "regimes_tuned"
    command = [sys.executable, os.path.join(ROOT, "plots", "plot_regimes.py"), "--sweeps",
               sweeps, "--out", args.out, "--tuned", "--levels", args.fixed, "--fixed",
               args.fixed, "--auto-steps", steps_path,
               "--csv", os.path.join(args.out, table + ".csv"),
               "--markdown", os.path.join(args.out, table + ".md")]
    if args.sustained:
        command.append("--sustained")
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
