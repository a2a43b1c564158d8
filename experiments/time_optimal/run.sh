#!/usr/bin/env bash
# The time-optimal SGD methods beside the codes and the baselines (docs/results.md "Time-optimal
# methods"): each of the four settings of this folder tuned and evaluated by
# experiments/tuned_comparison.py, then one figure and one table.
#
#   bash experiments/time_optimal/run.sh [--out DIR] [--jobs N]
#
# Default output: out/time_optimal/ (one folder per setting: tuning/, tuning.csv, tuned.json,
# evaluation/), time_optimal.png and time_optimal.csv. Each scheme's step grid is 1/2 ... 16
# times 1/beta (1/128 ... 1 for Ringmaster and Rescaled ASGD, whose every update is one stale
# gradient), on 2 tuning seeds; the evaluation runs the sweep's 10 repetitions on fresh seeds.
# Builds (incrementally) and uses build/release/experiments/stragglersim, or $STRAGGLERSIM_BIN.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/experiments/experiment_options.sh"
experiment_options "$root/out/time_optimal" "run.sh [--out DIR] [--jobs N]" "$@"
mkdir -p "$out"
for setting in default injected fixed trace; do
  start=$(date +%s)
  echo "== $setting"
  n=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["base"]["workers"])' \
    "$root/experiments/time_optimal/$setting.json")
  # One stale gradient per update (Ringmaster, Rescaled ASGD): a grid from 64 times lower.
  "$python" "$root/experiments/tuned_comparison.py" "$root/experiments/time_optimal/$setting.json" \
    --out "$out/$setting" --multipliers 0.5,1,2,4,8,16 \
    --multipliers-for "Ringmaster R=$n=0.0078125,0.015625,0.03125,0.0625,0.125,0.25,0.5,1" \
    --multipliers-for "Rescaled ASGD=0.0078125,0.015625,0.03125,0.0625,0.125,0.25,0.5,1" \
    --tuning-repetitions 2 --jobs "$jobs" --binary "$bin"
  echo "== $setting: $(( $(date +%s) - start )) s"
done
"$python" "$root/plots/plot_time_optimal.py" \
  --sweep "(a) default: n = 30, 0.1 s + Exp(1) per unit load=$out/default/evaluation" \
  --sweep "(b) injected: n = 30, 64 us + Exp(mean 0.5 s)=$out/injected/evaluation" \
  --sweep "(c) fixed: n = 30, tau_i = sqrt(i) s=$out/fixed/evaluation" \
  --sweep "(d) measured: Alibaba PAI job 1, n = 10=$out/trace/evaluation" \
  --out "$out/time_optimal.png" --csv "$out/time_optimal.csv"
