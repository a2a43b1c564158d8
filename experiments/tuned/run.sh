#!/usr/bin/env bash
# The project's headline comparisons re-stated at tuned steps (docs/results.md "The headline at
# tuned steps"): the default experiment (default.json: its three schemes, target relative
# suboptimality 1e-2) and the Amazon-like workload in the paper's injected regime
# (amazon_injected.json: uncoded, exact FRC d = 2 and ErasureHead d = 2 r = 15 under this
# project's protocol, target loss 0.23), each scheme's step tuned by
# experiments/tuned_comparison.py on 2 tuning seeds over 1/2 … 16 × 1/beta and reported on 10
# fresh evaluation seeds.
#
#   bash experiments/tuned/run.sh [--out DIR] [--jobs N]
#
# Default output: out/tuned/ (per setting: tuning/, tuning.csv, tuned.json, evaluation/) and
# out/tuned/tables.md (plots/protocol_table.py over both evaluations).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/experiments/experiment_options.sh"
experiment_options "$root/out/tuned" "run.sh [--out DIR] [--jobs N]" "$@"
mkdir -p "$out"
for setting in default amazon_injected; do
  start=$(date +%s)
  echo "== $setting"
  "$python" "$root/experiments/tuned_comparison.py" "$root/experiments/tuned/$setting.json" \
    --out "$out/$setting" --multipliers 0.5,1,2,3,4,6,8,12,16 --tuning-repetitions 2 \
    --jobs "$jobs" --binary "$bin"
  echo "== $setting: $(( $(date +%s) - start )) s"
done
"$python" "$root/plots/protocol_table.py" "$out/default/evaluation" \
  "$out/amazon_injected/evaluation" | tee "$out/tables.md"
