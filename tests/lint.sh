#!/usr/bin/env bash
# Lint stage of tests/run_tests.sh: include layers, the test mirror (every module has a test,
# tests/check_test_mirror.py), clang-format, clang-tidy. Each part prints its
# time. clang-tidy (22) reads build/release/compile_commands.json and Ninja's dependency log, so the
# release build comes first.
#   tests/lint.sh            all three
#   tests/lint.sh format     one part: layers | format | tidy
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
part="${1:-all}"
jobs="$(nproc)"

timed() {
  local name="$1"
  shift
  local start=$SECONDS
  "$@"
  echo "lint: $name ok in $((SECONDS - start)) s"
}

# The project's C++ sources: the four library/application folders and the tests (git-tracked,
# so build folders and generated files are never included).
sources() { git ls-files -- 'models/*' 'codes/*' 'fit/*' 'sim/*' 'experiments/*' 'bindings/*' 'benchmarks/*' 'tests/*' | grep -E '\.(cpp|h)$'; }

format_check() {
  sources | xargs -P "$jobs" -n 20 clang-format --dry-run -Werror
}

# Translation units of models/, codes/, sim/ and experiments/ (headers through HeaderFilterRegex),
# with results cached per unit (tests/clang_tidy_check.py). Tests are left out: Catch2's macro
# expansions are not our code; tests still build with every warning as an error.
tidy_check() {
  /usr/bin/python3 "$root/tests/clang_tidy_check.py" --build "$root/build/release" -j "$jobs"
}

case "$part" in
  layers)
    timed "include layers" bash "$root/tests/check_include_layers.sh"
    timed "test mirror" /usr/bin/python3 "$root/tests/check_test_mirror.py"
    ;;
  format) timed "clang-format" format_check ;;
  tidy) timed "clang-tidy" tidy_check ;;
  all)
    timed "include layers" bash "$root/tests/check_include_layers.sh"
    timed "test mirror" /usr/bin/python3 "$root/tests/check_test_mirror.py"
    timed "clang-format" format_check
    timed "clang-tidy" tidy_check
    ;;
  *) echo "usage: $0 [all|layers|format|tidy]" >&2; exit 2 ;;
esac
