#!/usr/bin/env bash
# The main job: installs what is needed, builds, runs the default experiment (logistic regression
# on embedded synthetic data, n = 30 workers, uncoded vs exact FRC vs ErasureHead) and draws the
# suboptimality f - f* against simulated time, up to a common budget of 400 simulated s, beside
# the time each scheme takes to reach relative suboptimality 1e-1, 1e-2, 1e-3.
#   Output: out/default/<scheme>/{trace.csv,summary.json} and out/default/loss_vs_time.png
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/tools/install_dependencies.sh"
bash "$root/tools/build.sh" release stragglersim
bin="$root/build/release/experiments/stragglersim"
out="${STRAGGLERSIM_OUT:-$root/out/default}"
mkdir -p "$out"
for scheme in uncoded frc_exact erasurehead; do
  "$bin" run "$root/experiments/examples/default_$scheme.json" --out "$out/$scheme"
done
# f* and the theory's iteration times (docs/model.md §6) for the figure's title.
theory() { "$bin" theory "$root/experiments/examples/default_$1.json" --json; }
read -r fstar t_unc < <(theory uncoded | /usr/bin/python3 -c \
  'import json, sys; d = json.load(sys.stdin); print(repr(d["f_star"]), d["expected_iteration_time"])')
t_frc=$(theory frc_exact | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["expected_iteration_time"])')
t_eh=$(theory erasurehead | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["expected_iteration_time"])')
printf -v regime 'Model A shifted exponential, tail-heavy: shift a = 0.1 s, rate λ = 1/s per unit load (shift and tail scale with the load d), no network; theory E[T]: uncoded %.3f s, exact FRC %.3f s, ErasureHead %.3f s' \
  "$t_unc" "$t_frc" "$t_eh"
/usr/bin/python3 "$root/plots/plot_traces.py" --out "$out/loss_vs_time.png" --f-star "$fstar" \
  --title "Logistic regression, n = 30 workers, Gaussian mixture 6000 x 200, common budget 400 simulated s" \
  --caption "$regime" \
  "uncoded=$out/uncoded/trace.csv" \
  "exact FRC d=2=$out/frc_exact/trace.csv" \
  "ErasureHead d=2 r=15=$out/erasurehead/trace.csv"
echo "figure: $out/loss_vs_time.png"
