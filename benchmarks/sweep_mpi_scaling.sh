#!/usr/bin/env bash
# Wall time of the 48-run gradient sweep (sweep_gradient_48.json: 4 codes x 2 wait rules x 6
# repetitions, 20 000 x 300 logistic, 100 iterations) with `--jobs 1` and under mpirun with
# P = 1, 2, 3 ranks (oversubscribed past the cores), checking that every MPI output folder is
# byte-identical to the --jobs 1 one.
#   benchmarks/sweep_mpi_scaling.sh [OUT_DIR] [P...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${STRAGGLERSIM:-$root/build/release/experiments/stragglersim}"
sweep="$root/benchmarks/sweep_gradient_48.json"
out="${1:-/tmp/sweep_mpi_scaling}"
shift || true
ranks=("${@:-1 2 3}")
rm -rf "$out" && mkdir -p "$out"
seconds() { /usr/bin/python3 -c 'import sys, time; print(f"{time.time():.3f}")'; }
echo "cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(seconds)
"$bin" sweep "$sweep" --out "$out/jobs1" --jobs 1 > /dev/null 2>&1
t1=$(seconds)
echo "--jobs 1: $(/usr/bin/python3 -c "print(f'{$t1 - $t0:.1f}')") s"
for p in ${ranks[*]}; do
  t0=$(seconds)
  mpirun --oversubscribe --allow-run-as-root --mca btl self,vader -np "$p" \
    "$bin" sweep "$sweep" --out "$out/mpi$p" > /dev/null 2>&1
  t1=$(seconds)
  same=identical
  diff -r "$out/jobs1" "$out/mpi$p" > /dev/null || same=DIFFERENT
  echo "mpirun -np $p: $(/usr/bin/python3 -c "print(f'{$t1 - $t0:.1f}')") s ($same bytes; load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
