#!/usr/bin/python3
"""Predictions against replay on every shipped real trace (docs/traces.md, "Predictions on the
real traces").

    /usr/bin/python3 experiments/real_traces.py [--bin BINARY] [--out DIR] [--traces NAME,...]

For each trace of data/traces/imported/ (n workers), one workload: logistic regression on a
seeded 2 000 x 20 Gaussian mixture split into n partitions, the trace as the delay, a target of
relative suboptimality 0.05. Then, with `stragglersim`:

  replay     `advise replay.json --measure M`: the config's delay is the trace replayed in cycle
             mode from a random start row per seed ("start": "random"), so each scheme's iteration
             time is the exact mean over the trace's rows, and its time to target is measured over
             M seeded replays (mean and s.e.);
  chosen     `advise replay.json --fit TRACE`: the model chosen on the trace by held-out error
             (first half fitted, second half replayed), built from the whole trace, predicts each
             scheme's iteration time and time to target (R simulated runs);
  family     the same with `--fit-model family`: the delay family AIC picks, fitted to every time;
  held out   `validate delay_only.json --trace TRACE`: every model fitted on the first half
             against the replay of the second, and the stationarity test.

Writes DIR/<trace>/{replay,chosen,family,validate}.json, DIR/summary.json (every figure the
tables print), prints the tables as Markdown, and draws DIR/real_traces.png
(plots/plot_real_traces.py).
"""
import argparse
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMES = ("uncoded", "exact frc d=2", "erasurehead frc d=2 r={half}")
SUBOPTIMALITY = 0.05


def workers_of(trace):
    with open(trace) as f:
        next(f)
        return len({line.split(",")[1] for line in f if line.strip()})


def run_json(args, cwd):
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"error: {' '.join(map(str, args))} exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def write_configs(folder, trace, n):
    replay = {
        "name": os.path.basename(folder), "seed": 1, "workers": n, "partitions": n,
        "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 2000,
                 "features": 20, "test_fraction": 0},
        "loss": {"kind": "logistic", "l2": 0.001},
        "code": {"kind": "uncoded"}, "stopping": {"rule": "all"}, "rescale": "none",
        "delay": {"kind": "trace", "path": trace, "mode": "cycle", "start": "random"},
        "stragglers": "cancel",
        "optimizer": {"kind": "gd", "step": "auto", "iterations": 400},
        "backend": {"kind": "simulated"}}
    delay_only = {"name": os.path.basename(folder), "seed": 1, "workers": n, "data": None,
                  "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
                  "delay": {"kind": "trace", "path": trace, "mode": "cycle"},
                  "optimizer": {"iterations": 1}}
    paths = {}
    for name, cfg in (("replay", replay), ("delay_only", delay_only)):
        paths[name] = os.path.join(folder, f"{name}.cfg.json")
        with open(paths[name], "w") as f:
            json.dump(cfg, f, indent=1)
    return paths


def by_scheme(advice):
    return {row["scheme"]: row for row in advice["schemes"] if "problem" not in row}


def study(binary, trace, out, repetitions, measure):
    name = os.path.splitext(os.path.basename(trace))[0]
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    n = workers_of(trace)
    cfg = write_configs(folder, trace, n)
    # --fixed-step: the schemes at the config's step, the iteration-time predictions this
    # script checks against the replay (docs/advise.md "Tuning" ranks them at tuned steps).
    common = ["--json", "--suboptimality", str(SUBOPTIMALITY), "--repetitions", str(repetitions),
              "--fixed-step"]
    reports = {
        "replay": run_json([binary, "advise", cfg["replay"], *common, "--measure", str(measure)],
                           folder),
        "chosen": run_json([binary, "advise", cfg["replay"], *common, "--fit", trace], folder),
        "family": run_json([binary, "advise", cfg["replay"], *common, "--fit", trace,
                            "--fit-model", "family"], folder),
        "validate": run_json([binary, "validate", cfg["delay_only"], "--trace", trace, "--json"],
                             folder),
    }
    for key, report in reports.items():
        with open(os.path.join(folder, f"{key}.json"), "w") as f:
            json.dump(report, f, indent=1)
    return summarise(name, n, reports)


def relative(predicted, actual):
    if predicted is None or actual is None:
        return None
    return (predicted - actual) / actual


def summarise(name, n, r):
    replay, chosen, family = (by_scheme(r[k]) for k in ("replay", "chosen", "family"))
    labels = [s.format(half=max(1, n // 2)) for s in SCHEMES]
    rows = []
    for label in labels:
        if label not in replay or label not in chosen:
            continue
        rep = replay[label]
        rows.append({
            "scheme": label,
            "replayed_iteration_time": rep["iteration_time"],
            "chosen_iteration_time": chosen[label]["iteration_time"],
            "family_iteration_time": family[label]["iteration_time"],
            "chosen_error": relative(chosen[label]["iteration_time"], rep["iteration_time"]),
            "family_error": relative(family[label]["iteration_time"], rep["iteration_time"]),
        })
    # Time to target: the chosen model's three best-ranked schemes that the replay also measured.
    top = []
    for row in r["chosen"]["schemes"]:
        label = row["scheme"]
        rep = replay.get(label)
        if len(top) == 3 or row.get("time_to_target") is None or rep is None:
            continue
        if rep.get("measured_reached") != rep.get("measured_runs"):
            continue
        top.append({
            "scheme": label,
            "predicted": row["time_to_target"],
            "predicted_iterations": row["iterations_to_target"],
            "replayed": rep["measured_time_to_target"],
            "replayed_se": rep["measured_se"],
            "runs": rep["measured_runs"],
            "error": relative(row["time_to_target"], rep["measured_time_to_target"]),
        })
    measured = [(row["measured_time_to_target"], row["scheme"]) for row in replay.values()
                if row.get("measured_reached") == row.get("measured_runs")
                and row.get("measured_time_to_target") is not None]
    best_time, best = min(measured)
    recommended = r["chosen"]["recommended"]
    recommended_time = replay[recommended]["measured_time_to_target"]
    v = r["validate"]
    held = []
    for row in v["rows"]:
        if row["model"] == v["chosen"] and row["scheme"] in labels and "predicted" in row:
            bound = max(0.10 * row["replayed"], 3.0 * row["replayed_se"])
            held.append({"scheme": row["scheme"], "error": row["relative_error"],
                         "replayed_se": row["replayed_se"],
                         "within": abs(row["predicted"] - row["replayed"]) <= bound})
    return {
        "trace": name, "workers": n,
        "chosen_model": r["chosen"]["model_choice"]["chosen"],
        "family": r["family"]["predicted_delay"]["kind"],
        "scores": r["chosen"]["model_choice"].get("scores", []),
        "iteration_time": rows,
        "time_to_target": top,
        "recommended": recommended, "recommended_replayed": recommended_time,
        "best": best, "best_replayed": best_time,
        "recommended_within_10": recommended_time <= 1.10 * best_time,
        "held_out": {"stationary": v["stationarity"]["stationary"],
                     "p_value": v["stationarity"]["p_value"], "chosen": v["chosen"],
                     "rows": held},
    }


def pct(x):
    return "-" if x is None else f"{100 * x:+.1f} %"


def print_tables(results):
    print("Mean iteration time, fitted on the whole trace (replayed: the exact mean over the rows):")
    print()
    print("| trace (n) | chosen model | scheme | replayed | chosen | error | AIC family | error |")
    print("|---|---|---|---:|---:|---:|---|---:|")
    for r in results:
        for row in r["iteration_time"]:
            print(f"| {r['trace']} ({r['workers']}) | {r['chosen_model']} | {row['scheme']} | "
                  f"{row['replayed_iteration_time']:.4g} | {row['chosen_iteration_time']:.4g} | "
                  f"{pct(row['chosen_error'])} | {r['family']} "
                  f"{row['family_iteration_time']:.4g} | {pct(row['family_error'])} |")
    print()
    print("Time to target (relative suboptimality 0.05), the chosen model's top 3 against the "
          "replay (mean ± s.e. over random start rows):")
    print()
    print("| trace | scheme | predicted | replayed | error | recommended within 10 % of the best |")
    print("|---|---|---:|---:|---:|---|")
    for r in results:
        for row in r["time_to_target"]:
            mark = ""
            if row["scheme"] == r["recommended"]:
                mark = ("yes" if r["recommended_within_10"] else "NO") + \
                    f" (best: {r['best']}, {r['best_replayed']:.4g})"
            print(f"| {r['trace']} | {row['scheme']} | {row['predicted']:.4g} | "
                  f"{row['replayed']:.4g} ± {row['replayed_se']:.2g} | {pct(row['error'])} | "
                  f"{mark} |")
    print()
    print("Held out (fitted on the first half, the second replayed), the chosen model:")
    print()
    print("| trace | stationary (p) | chosen | " + " | ".join(s.split(" r=")[0] for s in SCHEMES)
          + " |")
    print("|---|---|---|---|---|---|")
    for r in results:
        h = r["held_out"]
        found = {row["scheme"].split(" r=")[0]: row for row in h["rows"]}
        cells = []
        for s in SCHEMES:
            row = found.get(s.split(" r=")[0])
            cells.append("-" if row is None else
                         f"{pct(row['error'])}{'' if row['within'] else ' (outside)'}")
        print(f"| {r['trace']} | {'yes' if h['stationary'] else '**no**'} ({h['p_value']:.3f}) | "
              f"{h['chosen']} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build/release/experiments/stragglersim"))
    parser.add_argument("--out", default=os.path.join(ROOT, "out/real_traces"))
    parser.add_argument("--traces", default="", help="comma-separated names (default: all)")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--measure", type=int, default=20)
    parser.add_argument("--no-plot", action="store_true")
    a = parser.parse_args()
    traces = sorted(glob.glob(os.path.join(ROOT, "data/traces/imported/*.csv")))
    if a.traces:
        wanted = set(a.traces.split(","))
        traces = [t for t in traces if os.path.splitext(os.path.basename(t))[0] in wanted]
    os.makedirs(a.out, exist_ok=True)
    binary = os.path.abspath(a.bin)
    results = [study(binary, t, os.path.abspath(a.out), a.repetitions, a.measure) for t in traces]
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(results, f, indent=1)
    print_tables(results)
    if not a.no_plot:
        subprocess.run([sys.executable, os.path.join(ROOT, "plots/plot_real_traces.py"),
                        os.path.join(a.out, "summary.json"),
                        "--out", os.path.join(a.out, "real_traces.png")], check=True)


if __name__ == "__main__":
    main()
