#!/usr/bin/env bash
# Predictions against replay on every shipped real trace (data/traces/imported/*.csv), with
# `stragglersim validate`: a delay-only config of the trace's worker count (uncoded baseline,
# the trace replayed), fitted on the first half, replayed on the second. Prints, per trace, the
# stationarity verdict and the rows of uncoded, exact FRC d=2 and ErasureHead FRC d=2 r=n/2 for
# every model, and writes the JSON reports to OUT_DIR.
#   bash benchmarks/real_traces.sh [BINARY] [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build/release/experiments/stragglersim}"
out="${2:-$root/out/real_traces}"
mkdir -p "$out"
for trace in "$root"/data/traces/imported/*.csv; do
  name=$(basename "$trace" .csv)
  workers=$(tail -n +2 "$trace" | cut -d, -f2 | sort -un | wc -l)
  cat > "$out/$name.json" <<JSON
{"name": "$name", "seed": 1, "workers": $workers, "data": null,
 "code": {"kind": "uncoded"}, "stopping": {"rule": "all"},
 "delay": {"kind": "trace", "path": "$trace", "mode": "block"},
 "optimizer": {"iterations": 100}}
JSON
  "$bin" validate "$out/$name.json" --trace "$trace" --holdout 0.5 --json > "$out/$name.report.json"
  /usr/bin/python3 - "$out/$name.report.json" "$name" "$workers" <<'PY'
import json, sys
report, name, n = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
keep = {"uncoded", "exact frc d=2", f"erasurehead frc d=2 r={n // 2}"}
st = report.get("stationarity", {})
print(f"{name} (n = {n}): stationarity p = {st.get('p_value'):.3g}: {'stationary' if st.get('stationary') else 'NOT stationary: the prediction does not apply'}")
for row in report.get("rows", []):
    if row.get("scheme") in keep and row.get("predicted") is not None:
        print(f"  {row['model']:<28} {row['scheme']:<28} predicted {row['predicted']:.4f}"
              f"  replayed {row['replayed']:.4f}  error {100 * row['relative_error']:+.2f}%")
PY
done
