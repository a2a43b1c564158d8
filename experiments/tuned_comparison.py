#!/usr/bin/env python3
"""A scheme comparison where every scheme runs at its own tuned step, chosen on tuning seeds and
reported on fresh evaluation seeds.

`stragglersim sweep` does this natively now: a sweep file's "tune" key (docs/sweeps.md "Tuning")
tunes any pointer per scheme with the same choice rule, in C++, resumably and with tuning.csv and
the chosen values in summary.csv. This script remains for the experiment folders that call it.

usage: tuned_comparison.py SWEEP.json --out DIR [--multipliers 0.25,0.5,1,2]
                           [--multipliers-for SCHEME=LIST ...] [--tuning-repetitions 2]
                           [--jobs 2] [--binary PATH]

SWEEP.json is a sweep with "schemes", a "target_loss" and a base whose optimizer step is "auto"
(1/beta). The script
  1. reads 1/beta from a one-iteration run of the base (its summary.json "step");
  2. runs the tuning sweep DIR/tuning: every scheme at every multiplier m of 1/beta (its own
     list when --multipliers-for names it: an asynchronous method whose every update is one
     stale gradient needs steps far below a synchronous one's), on --tuning-repetitions seeds
     (the base seed's repetitions);
  3. picks each scheme's step: the multiplier whose tuning runs all reached the target in the
     least mean time; if none did, the most runs reaching it, then the lowest mean final loss.
     A run that failed (a step so large the loss became non-finite, exit 3) counts as not
     reaching the target. A choice at either end of the grid is flagged: the grid did not
     bracket the optimum;
  4. writes DIR/tuned.json, the original sweep with each scheme's chosen "/optimizer/step" and a
     base seed of its own (seed + 1000; the data seed stays the original's, so the data are the
     same and only the delays and samples are fresh), and runs it into DIR/evaluation;
  5. writes DIR/tuning.csv: per scheme and multiplier, the step, the runs that reached the
     target, their mean time to it, the mean final loss, whether it was chosen and whether the
     choice sits at the grid's edge.
Exit status: 0 done; 2 bad input (the message names it); the CLI's own status if a sweep fails.
"""
import argparse
import copy
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BINARY = os.path.join(ROOT, "build", "release", "experiments", "stragglersim")
EVALUATION_SEED_OFFSET = 1000


def fail(message):
    print(f"tuned_comparison: {message}", file=sys.stderr)
    sys.exit(2)


def run(binary, args):
    result = subprocess.run([binary] + args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit(result.returncode)
    return result


def absolute_paths(config, base_dir):
    """The sweep's relative data and trace paths made absolute (the generated sweeps live in
    DIR, not beside the original)."""
    if isinstance(config, dict):
        out = {}
        for key, value in config.items():
            if key in ("path", "file", "base_file") and isinstance(value, str) \
                    and not os.path.isabs(value):
                out[key] = os.path.normpath(os.path.join(base_dir, value))
            else:
                out[key] = absolute_paths(value, base_dir)
        return out
    if isinstance(config, list):
        return [absolute_paths(v, base_dir) for v in config]
    return config


def auto_step(binary, base, work):
    """1/beta of the base config, from a one-iteration run's summary."""
    config = copy.deepcopy(base)
    config["optimizer"] = dict(config["optimizer"], iterations=1)
    config.pop("time_budget", None)
    path = os.path.join(work, "step.json")
    with open(path, "w") as f:
        json.dump(config, f)
    out = os.path.join(work, "step_run")
    run(binary, ["run", path, "--out", out, "--quiet"])
    with open(os.path.join(out, "summary.json")) as f:
        return float(json.load(f)["step"])


def read_index(folder):
    with open(os.path.join(folder, "index.csv"), newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def choose(rows_by_multiplier, multipliers):
    """The chosen multiplier and the per-multiplier statistics."""
    stats = {}
    for m in multipliers:
        rows = rows_by_multiplier.get(m, [])
        times = [number(r["time_to_target"]) for r in rows]
        losses = [number(r["final_loss"]) if r["status"] == "ok" else math.inf for r in rows]
        reached = [t for t, r in zip(times, rows) if r["status"] == "ok" and math.isfinite(t)]
        stats[m] = {"runs": len(rows), "reached": len(reached),
                    "time": sum(reached) / len(reached) if reached else math.nan,
                    "loss": sum(losses) / len(losses) if losses else math.inf}

    def key(m):
        s = stats[m]
        complete = s["runs"] > 0 and s["reached"] == s["runs"]
        return (0 if complete else 1, s["time"] if complete else -s["reached"], s["loss"])

    chosen = min(multipliers, key=key)
    return chosen, stats


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep")
    parser.add_argument("--out", required=True)
    parser.add_argument("--multipliers", default="0.25,0.5,1,2")
    parser.add_argument("--multipliers-for", action="append", default=[], metavar="SCHEME=LIST")
    parser.add_argument("--tuning-repetitions", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--binary", default=DEFAULT_BINARY)
    args = parser.parse_args(argv)
    def grid(text, option):
        try:
            values = sorted({float(m) for m in text.split(",")})
        except ValueError:
            values = []
        if not values or min(values) <= 0:
            fail(f"{option} {text!r}: expected numbers > 0 separated by commas")
        return values

    multipliers = grid(args.multipliers, "--multipliers")
    own_grids = {}
    for item in args.multipliers_for:
        name, sep, text = item.rpartition("=")
        if not sep or not name:
            fail(f"--multipliers-for {item!r}: expected SCHEME=LIST")
        own_grids[name] = grid(text, "--multipliers-for")
    if args.tuning_repetitions < 1:
        fail("--tuning-repetitions: expected an integer >= 1")
    try:
        with open(args.sweep) as f:
            sweep = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{args.sweep}: {e}")
    for key in ("base", "schemes", "repetitions"):
        if key not in sweep:
            fail(f"{args.sweep}:/{key}: missing required key")
    if sweep["base"].get("optimizer", {}).get("step") != "auto":
        fail(f"{args.sweep}:/base/optimizer/step: the tuning grid multiplies 1/beta; "
             "expected \"auto\"")
    if "target_loss" not in sweep["base"]:
        fail(f"{args.sweep}:/base/target_loss: missing required key (the tuning objective)")
    names = [scheme.get("name") for scheme in sweep["schemes"]]
    for name in own_grids:
        if name not in names:
            fail(f"--multipliers-for {name!r}: no such scheme; the sweep's schemes are: "
                 + ", ".join(str(n) for n in names))
    sweep = absolute_paths(sweep, os.path.dirname(os.path.abspath(args.sweep)))
    os.makedirs(args.out, exist_ok=True)
    base = sweep["base"]
    with tempfile.TemporaryDirectory() as work:
        step = auto_step(args.binary, base, work)

    # 2. The tuning sweep: each scheme at each multiplier.
    tuning = copy.deepcopy(sweep)
    tuning["name"] = sweep.get("name", "sweep") + "_tuning"
    tuning["repetitions"] = args.tuning_repetitions
    tuning["schemes"] = []
    for scheme in sweep["schemes"]:
        for m in own_grids.get(scheme["name"], multipliers):
            entry = dict(scheme)
            entry["name"] = f"{scheme['name']} @ {m:g}"
            entry["/optimizer/step"] = m * step
            tuning["schemes"].append(entry)
    tuning["baseline"] = tuning["schemes"][0]["name"]
    tuning_path = os.path.join(args.out, "tuning.json")
    with open(tuning_path, "w") as f:
        json.dump(tuning, f, indent=2)
    run(args.binary, ["sweep", tuning_path, "--out", os.path.join(args.out, "tuning"),
                      "--jobs", str(args.jobs), "--quiet"])
    index = read_index(os.path.join(args.out, "tuning"))

    # 3. The choice per scheme.
    tuned = copy.deepcopy(sweep)
    tuned["name"] = sweep.get("name", "sweep") + "_tuned"
    data_seed = base.get("data_seed", base.get("seed", 1))
    tuned["base"]["data_seed"] = data_seed
    tuned["base"]["seed"] = base.get("seed", 1) + EVALUATION_SEED_OFFSET
    table = []
    for scheme, entry in zip(sweep["schemes"], tuned["schemes"]):
        own = own_grids.get(scheme["name"], multipliers)
        by_m = {m: [r for r in index if r["scheme"] == f"{scheme['name']} @ {m:g}"] for m in own}
        chosen, stats = choose(by_m, own)
        entry["/optimizer/step"] = chosen * step
        edge = len(own) > 1 and chosen in (own[0], own[-1])
        for m in own:
            s = stats[m]
            table.append({"scheme": scheme["name"], "multiplier": m, "step": m * step,
                          "runs": s["runs"], "reached": s["reached"],
                          "time_to_target_mean": s["time"], "final_loss_mean": s["loss"],
                          "chosen": m == chosen, "at_grid_edge": edge and m == chosen})
        print(f"{scheme['name']}: step {chosen:g} x 1/beta = {chosen * step:.6g}"
              + (" (at the grid's edge: the grid did not bracket the optimum)" if edge else ""))
    tuned_path = os.path.join(args.out, "tuned.json")
    with open(tuned_path, "w") as f:
        json.dump(tuned, f, indent=2)
    with open(os.path.join(args.out, "tuning.csv.tmp"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    os.replace(os.path.join(args.out, "tuning.csv.tmp"), os.path.join(args.out, "tuning.csv"))

    # 4. The evaluation on fresh seeds.
    run(args.binary, ["sweep", tuned_path, "--out", os.path.join(args.out, "evaluation"),
                      "--jobs", str(args.jobs), "--quiet"])
    print(f"wrote {args.out}/tuning.csv, {args.out}/tuned.json and {args.out}/evaluation/")


if __name__ == "__main__":
    main(sys.argv[1:])
