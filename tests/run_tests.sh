#!/usr/bin/env bash
# Builds and runs every test: the Release build (warnings are errors), then the same suite under
# address + undefined sanitizers, then the theory self-check. CI runs exactly this (.ci/run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/experiments/install_dependencies.sh"

echo "== release build and tests"
bash "$root/experiments/build.sh" release
ctest --test-dir "$root/build/release" --output-on-failure -j "$(nproc)"

echo "== address + undefined sanitizers"
bash "$root/experiments/build.sh" address stragglersim_tests stragglersim
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build/address" --output-on-failure -j "$(nproc)"

echo "== plots"
/usr/bin/python3 "$root/plots/test_plots.py"
