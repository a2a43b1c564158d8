#!/usr/bin/env bash
# Builds and runs every test: the Release build (warnings are errors), the lint stage (include
# layers, clang-format, clang-tidy), the theory self-check, then the suite under address +
# undefined and thread sanitizers. CI runs exactly this (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Every stage prints its wall time when it ends (and the whole run its total), also on failure.
stage_name=""
stage_start=$SECONDS
end_stage() {
  if [ -n "$stage_name" ]; then echo "-- $stage_name: $((SECONDS - stage_start)) s"; fi
}
stage() {
  end_stage
  stage_name="$1"
  stage_start=$SECONDS
  echo "== $1"
}
trap 'end_stage; echo "-- total: $SECONDS s"' EXIT
stage "install dependencies"
bash "$root/tools/install_dependencies.sh"

stage "release build and tests"
bash "$root/tools/build.sh" release
# Every Catch2 test case must be its own CTest test: a name with '[', ']', ',' or ';' would be
# merged or split by catch_discover_tests and silently run as something else.
# (Catch2 v2 exits with the number of cases listed, hence the `|| true`.)
cases=$({ "$root/build/release/tests/stragglersim_tests" --list-test-names-only || true; } | grep -c .)
discovered=$(ctest --test-dir "$root/build/release" -N -LE mpi | sed -n 's/^Total Tests: //p')
if [ "$cases" != "$discovered" ]; then
  echo "error: $cases Catch2 test cases but $discovered CTest tests; avoid [ ] , ; in test names" >&2
  exit 1
fi
# The threaded backend's timing test ("threads timing: ...") asserts only what wake-up jitter
# cannot flip (each disagreement with the simulated heard set must show the lateness that
# explains it), so it runs with the rest, once, without retries.
ctest --test-dir "$root/build/release" --output-on-failure -j "$(nproc)" -LE mpi

stage "lint: include layers, clang-format, clang-tidy (tests/lint.sh)"
bash "$root/tests/lint.sh"

stage "Python module (pytest: tests/python against the CLI of the same build, one process per core)"
# Any non-zero status fails the stage, including pytest's 5 ("no tests collected"). Every test
# works in its own tmp_path, so pytest-xdist runs them side by side.
status=0
STRAGGLERSIM_BUILD="$root/build/release" PYTHONPATH="$root/build/release/python" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider -n "$(nproc)" "$root/tests/python" || status=$?
if [ "$status" -ne 0 ]; then
  echo "error: Python module tests failed (pytest exit status $status; 5 means no tests ran)" >&2
  exit 1
fi

stage "MPI backend under mpirun (label mpi; alone: each case measures real wake-up times)"
# Every case bounds each mpirun job (60 s) and CTest bounds the case (120 s).
if ctest --test-dir "$root/build/release" -N -L mpi | grep -q 'Total Tests: 0'; then
  # Skipped only when deliberately off: install_dependencies.sh installs Open MPI.
  if grep -q '^STRAGGLERSIM_WITH_MPI:BOOL=OFF' "$root/build/release/CMakeCache.txt"; then
    echo "MPI tests skipped: the MPI backend is not compiled in (STRAGGLERSIM_WITH_MPI=OFF)"
  else
    echo "error: STRAGGLERSIM_WITH_MPI is on but Open MPI was not found" >&2
    exit 1
  fi
else
  ctest --test-dir "$root/build/release" --output-on-failure -L mpi
fi

stage "theory self-check (stragglersim check: every claim within 4 standard errors)"
"$root/build/release/experiments/stragglersim" check

stage "address + undefined sanitizers (clang; the same build holds the fuzz targets)"
bash "$root/tools/build.sh" address stragglersim_tests stragglersim
# The sanitizer build discovers every case but the [heavy] and [timing] ones (tests/CMakeLists.txt,
# docs/testing.md): those run in the release stage above.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build/address" --output-on-failure -j "$(nproc)" -LE mpi

stage "thread sanitizer (threaded backend; timing-precision assertions excluded)"
# stragglersim_thread_tests: the test files that hold [threads] cases (tests/CMakeLists.txt); a
# check below fails the stage if a [threads] case lives anywhere else.
bash "$root/tools/build.sh" thread stragglersim_thread_tests
TSAN_OPTIONS=halt_on_error=1 "$root/build/thread/tests/stragglersim_thread_tests" "[threads]~[timing]"
# Catch2 2's listing exits with the number of cases it lists: its status is not an error here.
count_threads_cases() { { "$1" "[threads]~[timing]" --list-test-names-only || true; } | grep -c .; }
threads_in_suite=$(count_threads_cases "$root/build/release/tests/stragglersim_tests")
threads_here=$(count_threads_cases "$root/build/thread/tests/stragglersim_thread_tests")
if [ "$threads_in_suite" != "$threads_here" ]; then
  echo "error: $threads_in_suite [threads] cases in the suite, $threads_here in stragglersim_thread_tests; add the file to it in tests/CMakeLists.txt" >&2
  exit 1
fi

stage "fuzz targets (libFuzzer in the address build, 15 s each from the seed corpora, one per core)"
# Long campaigns: bash tests/fuzz/run_fuzzers.sh 600 (benchmarks/fuzzing.md).
bash "$root/tests/fuzz/run_fuzzers.sh" 15

stage "plots"
/usr/bin/python3 "$root/plots/test_plots.py"

# Optional (STRAGGLERSIM_MUTATION=1): every one-line mutation of a critical formula or decoder
# must make a test fail. It rebuilds a scratch copy once per mutation; see
# benchmarks/mutation.md for the list, the kill rate and the time.
if [ "${STRAGGLERSIM_MUTATION:-0}" = 1 ]; then
  echo "== mutation check (tests/mutation_check.py)"
  /usr/bin/python3 "$root/tests/mutation_check.py"
fi
