#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a fixed time each, as many at once as there are
# cores (FUZZ_JOBS; each target is one process, single-threaded), from its
# seed corpus (tests/fuzz/corpus/<target>/; new inputs go to a scratch corpus, never the
# repository's). Stops with exit 1 at the first finding (crash, leak, sanitizer report, timeout
# or out-of-memory); the reproducer is kept in the artifacts folder. Prints one summary line per
# target: executions, executions per second, coverage (edges) and features.
#   tests/fuzz/run_fuzzers.sh SECONDS [target...]     (builds them with tools/build.sh address)
# The targets live in the address + undefined build (build/address), which instruments every
# library for libFuzzer's coverage as well: the suite's sanitizer stage and this one share it.
# Environment: FUZZ_OUT (default build/address/campaign), FUZZ_NO_BUILD=1 to skip the build,
# FUZZ_TIMEOUT (seconds of wall time one input may take, default 20; raise it on a loaded machine).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
seconds="${1:?usage: run_fuzzers.sh SECONDS [target...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(config run libsvm csv idx sweep codes_args trace_import)
fi
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  bash "$root/tools/build.sh" address "${targets[@]/#/fuzz_}"
fi
out="${FUZZ_OUT:-$root/build/address/campaign}"
mkdir -p "$out"
# One target: its run, then its summary line in $work/summary and its status in $work/status.
fuzz_one() {
  local t="$1" work="$out/$1" result
  rm -rf "$work/corpus"
  mkdir -p "$work/corpus" "$work/artifacts"
  local log="$work/fuzz.log"
  # -timeout: one input taking 20 s is a finding; -rss_limit_mb: the harness lowers the
  # memory limit to 64 MB, so 1 GB of RSS means an allocation that escaped the estimate.
  if "$root/build/address/tests/fuzz/fuzz_$t" "$work/corpus" "$root/tests/fuzz/corpus/$t" \
      -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-20}" -rss_limit_mb=1024 -max_len=4096 \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 -close_fd_mask=1 \
      >"$log" 2>&1; then
    result=clean
  else
    result="FINDING (see $log and $work/artifacts/)"
  fi
  local runs speed cov ft
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "fuzz_$t: ${seconds} s, ${runs:-?} executions (${speed:-?}/s), coverage ${cov:-?} edges, ${ft:-?} features: $result" >"$work/summary"
  echo "$result" >"$work/status"
}
jobs="${FUZZ_JOBS:-$(nproc)}"
running=0
for t in "${targets[@]}"; do
  mkdir -p "$out/$t"
  rm -f "$out/$t/summary" "$out/$t/status"
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
# Summaries in the targets' order, whatever order they finished in.
status=0
for t in "${targets[@]}"; do
  work="$out/$t"
  cat "$work/summary" 2>/dev/null || echo "fuzz_$t: no summary (the runner itself failed)"
  if [ "$(cat "$work/status" 2>/dev/null)" != clean ]; then
    status=1
    tail -40 "$work/fuzz.log" >&2 || true
  fi
done
exit "$status"
