#!/usr/bin/env bash
# The main job: installs what is needed, builds, runs the default experiment (logistic regression
# on embedded synthetic data, n = 30 workers, uncoded vs exact FRC vs ErasureHead, 10 delay seeds
# each: experiments/examples/default_schemes.json) and draws the mean suboptimality f - f*
# against simulated time with its 95 % band, up to a common budget of 400 simulated s, beside the
# mean time each scheme takes to reach relative suboptimality 1e-1, 1e-2, 1e-3.
#   Output: out/default/ (the sweep: runs/<scheme>_rep<k>/{trace.csv,summary.json,workers.csv},
#   index.csv, summary.csv, traces.csv) and out/default/loss_vs_time.png
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/tools/install_dependencies.sh"
bash "$root/tools/build.sh" release stragglersim
bin="$root/build/release/experiments/stragglersim"
out="${STRAGGLERSIM_OUT:-$root/out/default}"
"$bin" sweep "$root/experiments/examples/default_schemes.json" --out "$out" --jobs "$(nproc)"
# The theory's iteration times (docs/model.md §6) for the figure's caption.
theory() {
  "$bin" theory "$root/experiments/examples/default_$1.json" --json |
    /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["expected_iteration_time"])'
}
printf -v regime 'Model A shifted exponential, tail-heavy: shift a = 0.1 s, rate λ = 1/s per unit load (shift and tail scale with the load d), no network; theory E[T]: uncoded %.3f s, exact FRC %.3f s, ErasureHead %.3f s' \
  "$(theory uncoded)" "$(theory frc_exact)" "$(theory erasurehead)"
# One LABEL=trace,trace,... item per scheme: its 10 runs, in the sweep's scheme order.
mapfile -t items < <(/usr/bin/python3 - "$out" <<'PY'
import csv, os, sys
out = sys.argv[1]
runs = {}
with open(os.path.join(out, "index.csv"), newline="") as f:
    for row in csv.DictReader(f):
        runs.setdefault(row["scheme"], []).append(os.path.join(out, row["folder"], "trace.csv"))
for scheme, traces in runs.items():
    print(f"{scheme}={','.join(traces)}")
PY
)
/usr/bin/python3 "$root/plots/plot_traces.py" --out "$out/loss_vs_time.png" \
  --title "Logistic regression, n = 30 workers, Gaussian mixture 6000 x 200, 10 delay seeds per scheme, common budget 400 simulated s" \
  --caption "$regime" "${items[@]}"
# Each scheme's mean time to relative suboptimality 1e-2 with its 95 % interval, and the speedup
# over uncoded with its interval (summary.csv, docs/sweeps.md).
/usr/bin/python3 - "$out/summary.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1], newline="")):
    print("{}: time to 1e-2 {:.1f} s [{:.1f}, {:.1f}] over {} seeds, speedup over uncoded {:.2f}x "
          "[{:.2f}, {:.2f}]".format(r["scheme"], *(float(r[k]) for k in (
              "time_to_1e-2_mean", "time_to_1e-2_ci_low", "time_to_1e-2_ci_high")), r["runs"],
          *(float(r[k]) for k in ("speedup_time_to_1e-2", "speedup_time_to_1e-2_ci_low",
                                  "speedup_time_to_1e-2_ci_high"))))
PY
echo "figure: $out/loss_vs_time.png"
