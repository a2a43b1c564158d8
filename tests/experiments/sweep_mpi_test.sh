#!/usr/bin/env bash
# MPI sweeps (CTest `sweep_mpi`, label mpi): three oversubscribed ranks on loopback give the same
# bytes as `--jobs 1` (every file: trace.csv, summary.json but its measured wall_clock_seconds,
# config.json, index.csv, sweep_spec.json), and an MPI sweep killed with SIGKILL (mpirun and every rank) then rerun under
# mpirun completes to the same bytes.
#   tests/experiments/sweep_mpi_test.sh path/to/stragglersim
set -euo pipefail
bin="$(realpath "$1")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mpi=(mpirun --oversubscribe --allow-run-as-root --mca btl self,vader -np 3)

# wall_clock_seconds and the phases' *_seconds are measured, not simulated: excluded from the
# comparison.
mask_wall_clock() {
  find "$1" -name summary.json -exec sed -i -E 's/"(wall_clock_seconds|plan_seconds|predictions_seconds|iterations_seconds|writing_seconds|f_star_seconds|f_star_source|data_bytes_read)": [^,}]+/"\1": 0/' {} +
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cat > grad.json <<'JSON'
{"name": "grad", "repetitions": 2,
 "grid": {"/code/d": [1, 2, 3], "/stopping/r": [3, 6]},
 "base": {"seed": 5, "workers": 6,
  "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 300, "features": 5},
  "loss": {"kind": "logistic", "l2": 0.001}, "code": {"kind": "frc", "d": 2},
  "stopping": {"rule": "first_r", "r": 3}, "delay": {"kind": "shifted_exponential"},
  "optimizer": {"kind": "gd", "step": "auto", "iterations": 15}, "target_loss": 0.6}}
JSON
"$bin" sweep grad.json --out j1 --jobs 1 > /dev/null 2>&1 || fail "sweep --jobs 1"
timeout 300 "${mpi[@]}" "$bin" sweep grad.json --out m3 > m3.log 2>&1 || { cat m3.log; fail "mpirun sweep"; }
grep -q "with 3 MPI ranks" m3.log || { cat m3.log; fail "rank 0 did not report 3 ranks"; }
mask_wall_clock j1
mask_wall_clock m3
diff -r j1 m3 > /dev/null || fail "3 MPI ranks differ from --jobs 1: $(diff -rq j1 m3 | head -3)"
[ "$(ls m3/runs | wc -l)" = 12 ] || fail "expected 12 run folders"
echo "ok: 3 MPI ranks byte-identical to --jobs 1 (12 gradient runs)"

# Threads-backend runs are timed on real cores: an MPI sweep of them is refused (exit 2).
sed 's/"optimizer"/"backend": {"kind": "threads", "seconds_per_unit": 0.001}, "optimizer"/' \
  grad.json > threads.json
status=0
"${mpi[@]}" "$bin" sweep threads.json --out t3 > t3.log 2>&1 || status=$?
[ "$status" = 2 ] || { cat t3.log; fail "threads-backend MPI sweep: exit $status, expected 2"; }
grep -q 'threads.json run 0 (/code/d = 1, /stopping/r = 3, repetition 0):/backend/kind: threads-backend runs are timed on real cores that other ranks may share; got "threads" in an MPI sweep of 3 ranks' t3.log ||
  { cat t3.log; fail "threads-backend refusal message"; }
[ ! -e t3 ] || fail "a refused MPI sweep wrote t3"
echo "ok: threads-backend MPI sweep refused with exit 2, nothing written"

# 80 delay-only runs of about 50-100 ms each (20 000 workers drawn one by one, 600 iterations),
# several seconds in all: the kill below comes after 5 runs, long before the last. (Order
# statistics made the same runs take half a millisecond, and the whole sweep could finish
# between two polls.)
cat > slow.json <<'JSON'
{"name": "slow", "repetitions": 10,
 "grid": {"/code/d": [1, 2, 4, 5], "/stopping/r": [500, 1000]},
 "base": {"seed": 11, "workers": 20000, "sampler": "workers", "data": null,
  "code": {"kind": "frc", "d": 2},
  "stopping": {"rule": "first_r", "r": 6}, "delay": {"kind": "shifted_exponential"},
  "optimizer": {"iterations": 600}}}
JSON
"$bin" sweep slow.json --out whole --jobs 1 > /dev/null 2>&1 || fail "slow sweep --jobs 1"
"${mpi[@]}" "$bin" sweep slow.json --out killed > killed.log 2>&1 &
launcher=$!
done_runs() { find killed/runs -name summary.json 2> /dev/null | wc -l; }
for _ in $(seq 1 6000); do
  [ "$(done_runs)" -ge 5 ] && break
  sleep 0.01
done
# The whole job dies at once, as when a scheduler kills it: mpirun and each of its ranks.
ranks=$(pgrep -P "$launcher" || true)
kill -9 "$launcher" $ranks 2> /dev/null || true
wait "$launcher" 2> /dev/null || true
for _ in $(seq 1 500); do  # the ranks are gone before the rerun starts
  alive=0
  for r in $ranks; do kill -0 "$r" 2> /dev/null && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.01
done
killed_at=$(done_runs)
[ -e killed/index.csv ] && fail "index.csv exists after the kill (done: $killed_at)"
[ "$killed_at" -lt 80 ] || fail "the sweep finished before the kill"
timeout 300 "${mpi[@]}" "$bin" sweep slow.json --out killed > resumed.log 2>&1 || { cat resumed.log; fail "resume"; }
mask_wall_clock whole
mask_wall_clock killed
diff -r whole killed > /dev/null || fail "resumed MPI sweep differs: $(diff -rq whole killed | head -3)"
echo "ok: MPI sweep killed with SIGKILL at $killed_at of 80 runs resumed to the same bytes"
