#!/usr/bin/env bash
# The master/worker codes beside the all-reduce schemes and the straggler-tolerant collectives
# (docs/results.md "Collectives"): each of the three settings of this folder tuned and evaluated
# by experiments/tuned_comparison.py, then one figure and one table.
#
#   bash experiments/collectives/run.sh [--out DIR] [--jobs N]
#
# Default output: out/collectives/ (one folder per setting: tuning/, tuning.csv, tuned.json,
# evaluation/), collectives.png and collectives.csv. Each scheme's step grid is 1/2, 1, 2, 3, 4, 6, 8 and 16
# times 1/beta on 2 tuning seeds; the evaluation runs the sweep's 10 repetitions on fresh seeds.
# Builds (incrementally) and uses build/release/experiments/stragglersim, or $STRAGGLERSIM_BIN.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/experiments/experiment_options.sh"
experiment_options "$root/out/collectives" "run.sh [--out DIR] [--jobs N]" "$@"
mkdir -p "$out"
for setting in injected persistent slow_links trace; do
  start=$(date +%s)
  echo "== $setting"
  "$python" "$root/experiments/tuned_comparison.py" "$root/experiments/collectives/$setting.json" \
    --out "$out/$setting" --multipliers 0.5,1,2,3,4,6,8,16 --tuning-repetitions 2 --jobs "$jobs" \
    --binary "$bin"
  echo "== $setting: $(( $(date +%s) - start )) s"
done
"$python" "$root/plots/plot_collectives.py" \
  --sweep "(a) injected: n = 32, 0.1 s + Exp(1) per unit load=$out/injected/evaluation" \
  --sweep "(b) persistent straggler: worker 31 three times slower=$out/persistent/evaluation" \
  --sweep "(c) worker 31 ten times slower, links 100 times slower=$out/slow_links/evaluation" \
  --sweep "(d) measured: ByteDance job SE, 32 DP ranks=$out/trace/evaluation" \
  --out "$out/collectives.png" --csv "$out/collectives.csv"
