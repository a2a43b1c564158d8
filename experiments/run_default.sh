#!/usr/bin/env bash
# The main job: installs what is needed, builds, runs the default experiment (logistic regression
# on embedded synthetic data, n = 30 workers, uncoded vs exact FRC vs ErasureHead) and draws the
# loss-against-time figure.   Output: out/default/<scheme>/{trace.csv,summary.json} and
#                                      out/default/loss_vs_time.png
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/experiments/install_dependencies.sh"
bash "$root/experiments/build.sh" release stragglersim
bin="$root/build/release/experiments/stragglersim"
out="${STRAGGLERSIM_OUT:-$root/out/default}"
mkdir -p "$out"
for scheme in uncoded frc_exact erasurehead; do
  "$bin" run "$root/experiments/examples/default_$scheme.json" --out "$out/$scheme"
done
/usr/bin/python3 "$root/plots/plot_traces.py" --out "$out/loss_vs_time.png" \
  --title "Logistic regression, n = 30, Gaussian mixture (6000 x 200)" \
  "uncoded=$out/uncoded/trace.csv" \
  "exact FRC d=2=$out/frc_exact/trace.csv" \
  "ErasureHead d=2 r=15=$out/erasurehead/trace.csv"
echo "figure: $out/loss_vs_time.png"
