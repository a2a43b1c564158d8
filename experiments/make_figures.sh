#!/usr/bin/env bash
# Runs the paper's sweeps (experiments/paper/*.json) and draws every figure into one folder.
#
#   bash experiments/make_figures.sh [--quick] [--out DIR] [--jobs N]
#
# Default output: out/figures/ (PNG figures) with the sweeps' outputs in out/figures/sweeps/
# (sweeps-quick/ for --quick).
# --quick runs the same sweep files on smaller data (rows and features cut, see data_quick
# below; the regime sweeps' compute shift scaled with the rows, as it is proportional to the
# partition's non-zeros and the generators keep the non-zeros per row), delay-only runs cut to
# 500 iterations, the wait-fraction target at 0.15, at most 2 repetitions per point and the mlp
# sweeps cut to 100 iterations, 30 simulated s and 500 test images; without it the paper's sizes are used
# (docs/results.md: measured times). f* of each regime workload is the f_star of its runs' summary.json
# (the same in its three regimes, checked), kept in the sweeps folder as f_star.json; that of
# regime_map_training comes from `stragglersim theory --json`.
# Sweeps are resumable: rerunning after an interruption skips the runs already complete. After
# editing a sweep file, delete its output folder (a folder only resumes the sweep that made it).
# Builds (incrementally) and uses build/release/experiments/stragglersim, or uses $STRAGGLERSIM_BIN.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
quick=0
out="$root/out/figures"
jobs="$(nproc)"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    *) echo "usage: make_figures.sh [--quick] [--out DIR] [--jobs N]" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "${STRAGGLERSIM_BIN:-}" ]; then
  bin="$STRAGGLERSIM_BIN"
else
  bash "$root/tools/build.sh" release stragglersim
  bin="$root/build/release/experiments/stragglersim"
fi
python=/usr/bin/python3
# Quick and full sweeps live apart: a sweep folder only resumes the sweep that made it.
sweeps="$out/sweeps$([ "$quick" = 1 ] && echo -quick || true)"
mkdir -p "$sweeps"
start=$(date +%s)

# The sweep files to run: the paper's as they are, or (--quick) copies with smaller data.
files="$sweeps/files"
mkdir -p "$files"
QUICK="$quick" PAPER="$root/experiments/paper" FILES="$files" "$python" - <<'EOF'
import json, os
paper, files, quick = os.environ["PAPER"], os.environ["FILES"], os.environ["QUICK"] == "1"
# --quick: data cut to a size that runs in seconds (same generators, same shape of the problem).
data_quick = {
    "amazon_like": {"rows": 4000, "features": 20000},
    "covtype_like": {"rows": 8000, "features": 2000},
    "kc_housing_like": {"rows": 4000, "features": 4000},
    "fashion_mnist": {"rows": 3000},
}
target_quick = {"wait_fraction": 0.15}
# Rows of the full-size data sets whose config does not state them (the generator defaults).
FULL_ROWS = {"amazon_like": 26215, "covtype_like": 396112, "kc_housing_like": 17290,
             "fashion_mnist": 12000}
for name in sorted(os.listdir(paper)):
    if name.startswith("base_") or not name.endswith(".json"):
        continue
    with open(os.path.join(paper, name)) as f:
        sweep = json.load(f)
    if "base_file" in sweep:
        with open(os.path.join(paper, sweep.pop("base_file"))) as f:
            sweep["base"] = json.load(f)
    base = sweep["base"]
    # A delay trace's path is relative to the sweep file, which is copied elsewhere.
    delay = base.get("delay", {})
    if "path" in delay and not os.path.isabs(delay["path"]):
        delay["path"] = os.path.normpath(os.path.join(paper, delay["path"]))
    if quick:
        data = base.get("data")
        if data:
            key = data.get("generator", data["source"])
            if key in data_quick:
                if name.startswith("regime_") and "rows" in data_quick[key]:
                    # Compute time is proportional to the partition's non-zeros: with the same
                    # non-zeros per row, to its rows (the tail mean follows it in regime b).
                    full = data.get("rows", FULL_ROWS[key])
                    base["delay"]["shift"] *= data_quick[key]["rows"] / full
                    if base["delay"]["tail"] == "load" and "network" in base:
                        base["delay"]["rate"] *= full / data_quick[key]["rows"]
                data.update(data_quick[key])
        elif base["optimizer"]["iterations"] > 500:
            base["optimizer"]["iterations"] = 500
        # Seeds: two per point (the full run's 10 give the intervals); the mlp sweeps also
        # shorter (30 simulated s, 100 iterations) and with 500 test images.
        if sweep.get("repetitions", 1) > 2:
            sweep["repetitions"] = 2
        if name.startswith("mlp_"):
            base["data"]["test_rows"] = 500
            base["optimizer"]["iterations"] = min(base["optimizer"]["iterations"], 100)
            if "time_budget" in base["optimizer"]:
                base["optimizer"]["time_budget"] = 30.0
        stem = name[:-5]
        if stem in target_quick:
            sweep["grid"]["/target_loss"] = [target_quick[stem]]
    with open(os.path.join(files, name), "w") as f:
        f.write(json.dumps(sweep, indent=2) + "\n")
EOF

for sweep in "$files"/*.json; do
  name="$(basename "$sweep" .json)"
  echo "== sweep $name"
  # One f* cache for every sweep of the tree: each workload's f* is solved once.
  "$bin" sweep "$sweep" --out "$sweeps/$name" --jobs "$jobs" --f-star-cache "$sweeps/f_star_cache"
done

echo "== f* solves (f_star_source of every run's summary.json)"
SWEEPS="$sweeps" "$python" - <<'EOF'
import glob, json, os
solved, cached = 0, 0
for path in glob.glob(os.path.join(os.environ["SWEEPS"], "*", "runs", "*", "summary.json")):
    with open(path) as f:
        source = json.load(f).get("f_star_source")
    solved += source == "solved"
    cached += source == "cache"
entries = glob.glob(os.path.join(os.environ["SWEEPS"], "f_star_cache", "*.json"))
print(f"f* solved {solved} times, read from the cache by {cached} runs; "
      f"{len(entries)} data sets and objectives in the cache")
EOF

echo "== f* of the regime workloads (f_star of their runs' summary.json; theory for the map)"
fstar="$sweeps/f_star.json"
FSTAR="$fstar" SWEEPS="$sweeps" "$python" - <<'EOF'
import csv, json, os, sys
path, sweeps = os.environ["FSTAR"], os.environ["SWEEPS"]
known = json.load(open(path)) if os.path.exists(path) else {}
for workload in ("fashion_mnist", "amazon_like", "covtype_like", "kc_housing_like"):
    values = {}
    for regime in ("injected", "cluster", "model_a"):
        folder = os.path.join(sweeps, f"regime_{regime}_{workload}")
        with open(os.path.join(folder, "index.csv")) as f:
            first = next(csv.DictReader(f))
        with open(os.path.join(folder, first["folder"], "summary.json")) as f:
            summary = json.load(f)
        values[regime] = summary["f_star"]
        if summary["f_star"] is None:
            print(f"f* {workload} ({regime}): {summary['f_star_method']}", file=sys.stderr)
    # Same data and loss in every regime: the same f*, to the bit.
    if len(set(values.values())) != 1:
        sys.exit(f"f* of {workload} differs between regimes: {values}")
    known[workload] = values["injected"]
    print(f"f* {workload}: {known[workload]!r}")
with open(path, "w") as f:
    json.dump(known, f, indent=2)
EOF
FSTAR="$fstar" BIN="$bin" FILES="$files" "$python" - <<'EOF'
import json, os, subprocess, tempfile
path, files, key = os.environ["FSTAR"], os.environ["FILES"], "regime_map_training"
known = json.load(open(path))
if key not in known:
    with open(os.path.join(files, key + ".json")) as f:
        config = json.load(f)["base"]
    # f* depends on the data and the loss only; one iteration keeps theory's other work (the
    # bound along the run) small.
    config["optimizer"]["iterations"] = 1
    config["optimizer"].pop("time_budget", None)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    out = subprocess.run([os.environ["BIN"], "theory", f.name, "--json"], check=True,
                         capture_output=True, text=True).stdout
    os.unlink(f.name)
    known[key] = json.loads(out)["f_star"]
    with open(path, "w") as f:
        json.dump(known, f, indent=2)
print(f"f* {key}: {known[key]!r}")
EOF

echo "== figures"
"$python" "$root/plots/plot_paper.py" --sweeps "$sweeps" --out "$out"
# The regime figures and their table: every scheme over its seeds, each run's own f*.
"$python" "$root/plots/plot_regimes.py" --sweeps "$sweeps" --out "$out" \
  --csv "$out/regimes.csv" --markdown "$out/regimes.md"
# The regime map: ErasureHead's speedup in time to relative suboptimality 1e-2.
map_fstar=$("$python" -c 'import json, sys; print(repr(json.load(open(sys.argv[1]))["regime_map_training"]))' "$fstar")
"$python" "$root/plots/plot_regime_map.py" --times "$sweeps/regime_map_30" "$sweeps/regime_map_240" \
  --training "$sweeps/regime_map_training" --f-star "$map_fstar" --level 1e-2 \
  --out "$out/regime_map.png" --csv "$out/regime_map.csv"
# The noise floor at stationarity against d and r, beside the exact least-squares curve and the
# PL bound's floor (theory of each point's resolved config).
"$python" "$root/plots/plot_noise_floor.py" --sweep "$sweeps/noise_floor" --bin "$bin" \
  --out "$out/paper_noise_floor.png" --csv "$out/paper_noise_floor.csv"
# A non-convex workload (docs/results.md): the mlp on Fashion-MNIST's ten classes, injected
# delays and the noise floor, 10 seeds each.
"$python" "$root/plots/plot_nonconvex.py" --regime "$sweeps/mlp_regime_injected" \
  --noise-floor "$sweeps/mlp_noise_floor" --out "$out/mlp_fashion_mnist.png" \
  --csv "$out/mlp_fashion_mnist.csv"
# Gradient codes against the baselines that do not code (docs/results.md): K-sync, K-async and
# Anytime minibatch beside uncoded, exact FRC and ErasureHead, injected delays and a PAI trace.
"$python" "$root/plots/plot_baselines.py" --injected "$sweeps/baselines_injected" \
  --trace "$sweeps/baselines_trace" --out "$out/baselines.png" --csv "$out/baselines.csv"
# K-sync's error-runtime trade-off (docs/results.md): the runs against the exact least-squares
# curve composed with K-sync's renewal count.
"$python" "$root/plots/plot_error_runtime.py" --sweep "$sweeps/error_runtime" --bin "$bin" \
  --out "$out/error_runtime.png" --csv "$out/error_runtime.csv"
# Theory against measurement (docs/convergence.md): least squares (GD and Nesterov) and the
# default ErasureHead config (logistic, 200 iterations). Each JSON beside its CSV carries the
# fitted floor and rate the figure draws.
reps=$([ "$quick" = 1 ] && echo 40 || echo 200)
example="$root/experiments/examples/theory_least_squares.json"
sed 's/"kind": "gd"/"kind": "nesterov"/' "$example" > "$sweeps/theory_nesterov.json"
sed 's/"iterations": 1000/"iterations": 200/' "$root/experiments/examples/default_erasurehead.json" \
  > "$sweeps/theory_logistic.json"
for name in gd nesterov logistic; do
  config="$sweeps/theory_$name.json"
  [ "$name" = gd ] && config="$example"
  rm -f "$sweeps/measured_$name.csv"
  "$bin" theory "$config" --measure "$reps" --csv "$sweeps/measured_$name.csv" --json -q \
    > "$sweeps/measured_$name.json"
done
"$python" "$root/plots/plot_theory_vs_measured.py" --out "$out/theory_vs_measured.png" \
  --title "measured mean f - f* ($reps runs) against the exact curve and the bound" \
  "least squares m=400 p=20, FRC d=2 r=10 of 20, l2=0.1: GD=$sweeps/measured_gd.csv" \
  "the same, Nesterov=$sweeps/measured_nesterov.csv" \
  "default ErasureHead (logistic, l2=1e-4): GD=$sweeps/measured_logistic.csv"
end=$(date +%s)
echo "make_figures: $(( end - start )) s ($([ "$quick" = 1 ] && echo quick || echo full)); figures in $out"
