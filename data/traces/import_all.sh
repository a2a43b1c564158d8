#!/usr/bin/env bash
# Regenerates imported/*.csv from the shipped source files with `stragglersim trace import`
# (docs/traces.md). A test (tests/experiments/cli/trace_command_test.cpp) re-imports each and
# compares the bytes, so edit this script and the shipped files together.
#   data/traces/import_all.sh BINARY [OUT]   (BINARY: build/release/experiments/stragglersim;
#                                            OUT: the folder written, default data/traces/imported)
set -euo pipefail
binary="$(realpath "${1:?usage: import_all.sh path/to/stragglersim [OUT]}")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=imported
if [ $# -ge 2 ]; then
  out="$(mkdir -p "$2" && cd "$2" && pwd)"
fi
cd "$here"
mkdir -p "$out"
# Alibaba PAI: times in the normalised 0-1000 scale (unitless, --scale 1); iterations with a
# missing worker are dropped (the default --missing drop).
for job in 1 2 3 4; do
  "$binary" trace import "alibaba-pai/job_${job}_norm.csv" --format csv \
    --iteration time --worker worker --seconds batch_time_norm \
    --out "$out/pai_job${job}.csv"
done
# ByteDance: per (step, data-parallel rank) the summed forward-compute and backward-compute
# durations in seconds (the defaults --events forward-compute,backward-compute --group-by
# dp_rank --missing drop); steps renumbered 0.. (the summary line lists the original steps).
for job in AR SE ST; do
  lower="$(echo "$job" | tr '[:upper:]' '[:lower:]')"
  "$binary" trace import "bytedance/timeline-${job}.json.gz" --format chrome \
    --out "$out/bytedance_${lower}.csv"
done
