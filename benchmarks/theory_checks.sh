#!/usr/bin/env bash
# Re-verifies the "what it must show" list of the convergence theory (docs/convergence.md) and
# prints the numbers recorded in benchmarks/theory_checks.md.
#   bash benchmarks/theory_checks.sh [OUT_DIR]
# Uses build/release/experiments/stragglersim (or $STRAGGLERSIM_BIN); about 3 minutes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${STRAGGLERSIM_BIN:-$root/build/release/experiments/stragglersim}"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
py=/usr/bin/python3

echo "== 1. smallest case: 100 rows of 1,1; uncoded, first_r 50 of 100, l2 = 1, 30 iterations"
for _ in $(seq 100); do echo "1,1"; done > "$out/ones.csv"
cat > "$out/smallest.json" <<JSON
{"name": "smallest", "workers": 100, "partitions": 100,
 "data": {"source": "csv", "path": "ones.csv", "header": false, "label_column": -1,
          "test_fraction": 0},
 "loss": {"kind": "least_squares", "l2": 1}, "code": {"kind": "uncoded"},
 "stopping": {"rule": "first_r", "r": 50},
 "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0},
 "optimizer": {"kind": "gd", "step": "auto", "iterations": 30}}
JSON
"$bin" theory "$out/smallest.json" --json --measure 1 > "$out/smallest_theory.json"
$py - "$out/smallest_theory.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
print(f"bound[30] = {p['bound'][30]:.6g}   run's f - f* at t=30 = {p['measured_gap'][30]:.6g}   "
      f"exact curve[30] = {p['exact_curve'][30]:.6g}   holds: {p['bound'][30] >= p['measured_gap'][30]}")
PY

echo "== 2. realistic case: Gaussian LS 600 x 20, FRC d = 2, first_r 30 of 60, l2 = 1, 40 seeds"
for rescale in none expected empirical; do
  cat > "$out/realistic_$rescale.json" <<JSON
{"name": "realistic-$rescale", "seed": 3, "workers": 60, "partitions": 60,
 "data": {"source": "synthetic", "generator": "linear_regression", "rows": 600, "features": 20,
          "test_fraction": 0, "condition": 1},
 "loss": {"kind": "least_squares", "l2": 1}, "code": {"kind": "frc", "d": 2},
 "stopping": {"rule": "first_r", "r": 30}, "rescale": "$rescale",
 "delay": {"kind": "shifted_exponential", "shift": 1.0, "rate": 1.0},
 "optimizer": {"kind": "gd", "step": "auto", "iterations": 60}}
JSON
  "$bin" theory "$out/realistic_$rescale.json" --measure 40 --csv "$out/realistic_$rescale.csv" > /dev/null
  $py - "$out/realistic_$rescale.csv" "$rescale" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
viol = [r for r in rows if float(r["measured_mean"]) > float(r["bound"]) + 4 * float(r["measured_se"])]
ratio = max(float(r["measured_mean"]) / float(r["bound"]) for r in rows[1:])
last = rows[-1]
print(f"rescale {sys.argv[2]:9}: t over bound + 4 s.e.: {len(viol)} of {len(rows)}; "
      f"max mean/bound {ratio:.3g}; t=60 mean {float(last['measured_mean']):.4g} "
      f"+- {float(last['measured_se']):.2g}, bound {float(last['bound']):.4g}, exact {float(last['exact']):.4g}")
PY
done

echo "== 3. least squares m = 400, p = 20, n = 20, FRC d = 2, r = 10, l2 = 0.1, 200 seeds"
example="$root/experiments/examples/theory_least_squares.json"
sed 's/"kind": "gd"/"kind": "nesterov"/' "$example" > "$out/theory_nesterov.json"
for opt in gd nesterov; do
  cfg=$([ "$opt" = gd ] && echo "$example" || echo "$out/theory_nesterov.json")
  start=$(date +%s.%N)
  "$bin" theory "$cfg" > "$out/theory_$opt.txt"
  end=$(date +%s.%N)
  echo "$opt: theory (no --measure) took $($py -c "print(f'{$end - $start:.2f}')") s"
  "$bin" theory "$cfg" --measure 200 --csv "$out/theory_$opt.csv" > /dev/null
  $py - "$out/theory_$opt.csv" "$opt" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
z = [(float(r["measured_mean"]) - float(r["exact"])) / float(r["measured_se"]) for r in rows[1:]]
print(f"{sys.argv[2]}: |mean - exact| <= 4 s.e. at {sum(abs(v) <= 4 for v in z)} of {len(z)} t >= 1 "
      f"(t = 0 exact: {rows[0]['measured_mean']} vs {rows[0]['exact']}); max |z| {max(map(abs, z)):.2f}")
sd_rows = [r for r in rows[1:] if r["exact_sd"] != ""]
if sd_rows:
    zsd = [(float(r["measured_sd"]) - float(r["exact_sd"])) / float(r["measured_sd_se"])
           for r in sd_rows]
    print(f"  exact sd given for t <= {len(sd_rows)}; |sample sd - exact sd| <= 4 s.e. at "
          f"{sum(abs(v) <= 4 for v in zsd)} of {len(zsd)}; max |z| {max(map(abs, zsd)):.2f}")
print("| t | measured mean | s.e. | exact E[f - f*] | z | measured sd | exact sd | bound |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in (0, 1, 2, 3, 5, 10, 20, 30, 40):
    r = rows[t]
    zz = 0.0 if t == 0 else z[t - 1]
    print(f"| {t} | {float(r['measured_mean']):.6g} | {float(r['measured_se']):.3g} | "
          f"{float(r['exact']):.6g} | {zz:.2f} | {float(r['measured_sd']):.4g} | "
          f"{r['exact_sd'] and format(float(r['exact_sd']), '.4g')} | "
          f"{r['bound'] and format(float(r['bound']), '.4g')} |")
PY
done
grep "exact" "$out/theory_gd.txt" "$out/theory_nesterov.txt" || true

echo "== 4. theory on the default ErasureHead config"
"$bin" theory "$root/experiments/examples/default_erasurehead.json" | grep -i "bound\|floor\|speedup\|config n\|n = 30\|^ *30 " || true

echo "== 5. figure"
$py "$root/plots/plot_theory_vs_measured.py" --out "$out/theory_vs_measured.png" \
  --title "least squares m=400 p=20, FRC d=2 r=10 of 20, l2=0.1 (200 runs)" \
  "GD=$out/theory_gd.csv" "Nesterov=$out/theory_nesterov.csv"
echo "figure: $out/theory_vs_measured.png"
