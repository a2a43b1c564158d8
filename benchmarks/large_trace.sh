#!/usr/bin/env bash
# validate, advise --fit --fixed-step and the tuned advise --fit (on every core, then on one:
# the same output) on a 256-worker Lambda-like trace of 10 and 30 rounds
# (benchmarks/large_trace.md): writes the traces with make_lambda_trace.py into a scratch
# directory and prints each command's wall and CPU seconds and the machine's load.
# Needs a release build:
#   bash tools/build.sh release stragglersim && bash benchmarks/large_trace.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/build/release/experiments/stragglersim"
work="$(mktemp -d)"
# KEEP=1 keeps the outputs (their folder is printed).
if [ "${KEEP:-0}" = 1 ]; then echo "outputs in $work"; else trap 'rm -rf "$work"' EXIT; fi
cp "$root/benchmarks/large_trace.json" "$work/config.json"
for rounds in 10 30; do
  /usr/bin/python3 "$root/benchmarks/make_lambda_trace.py" "$work/lambda_$rounds.csv" --rounds "$rounds"
  for command in validate "advise --fixed-step" advise "advise --threads 1"; do
    case "$command" in
      validate) args=(validate "$work/config.json" --trace "$work/lambda_$rounds.csv") ;;
      "advise --fixed-step")
        args=(advise "$work/config.json" --fit "$work/lambda_$rounds.csv" --suboptimality 0.01
          --fixed-step) ;;
      advise)  # the tuned default, on every core
        args=(advise "$work/config.json" --fit "$work/lambda_$rounds.csv" --suboptimality 0.01
          -q) ;;
      "advise --threads 1")  # the same on one core: the same bytes
        args=(advise "$work/config.json" --fit "$work/lambda_$rounds.csv" --suboptimality 0.01
          -q --threads 1) ;;
    esac
    # The load average when the command starts: other work on the cores stretches the wall time.
    load="$(cut -d' ' -f1 /proc/loadavg)"
    /usr/bin/time -f "$command, $rounds rounds: %e s wall, %U s user, %S s system (load $load)" \
      timeout 900 "$bin" "${args[@]}" > "$work/${command// /_}-$rounds.txt"
  done
  if cmp -s "$work/advise-$rounds.txt" "$work/advise_--threads_1-$rounds.txt"; then
    echo "advise, $rounds rounds: the same output on every core and on one"
  else
    echo "advise, $rounds rounds: the output differs between the thread counts" >&2
    exit 1
  fi
done
