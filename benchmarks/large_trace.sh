#!/usr/bin/env bash
# validate and advise --fit on a 256-worker Lambda-like trace of 10 and 30 rounds
# (benchmarks/large_trace.md): writes the traces with make_lambda_trace.py into a scratch
# directory and prints each command's wall and CPU seconds. Needs a release build:
#   bash tools/build.sh release stragglersim && bash benchmarks/large_trace.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/build/release/experiments/stragglersim"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$root/benchmarks/large_trace.json" "$work/config.json"
for rounds in 10 30; do
  /usr/bin/python3 "$root/benchmarks/make_lambda_trace.py" "$work/lambda_$rounds.csv" --rounds "$rounds"
  for command in validate advise; do
    if [ "$command" = validate ]; then
      args=(validate "$work/config.json" --trace "$work/lambda_$rounds.csv")
    else
      args=(advise "$work/config.json" --fit "$work/lambda_$rounds.csv" --suboptimality 0.01
        --fixed-step)
    fi
    /usr/bin/time -f "$command, $rounds rounds: %e s wall, %U s user, %S s system" \
      timeout 900 "$bin" "${args[@]}" > "$work/$command-$rounds.txt"
  done
done
