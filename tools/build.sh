#!/usr/bin/env bash
# Configures and builds one flavour of stragglersim into build/<flavour>.
#   tools/build.sh release            optimised, warnings are errors
#   tools/build.sh address            address + undefined sanitizers
#   tools/build.sh thread             thread sanitizer
#   tools/build.sh fuzz               clang libFuzzer targets of tests/fuzz (ASan + UBSan)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) extra=(-DCMAKE_BUILD_TYPE=Release) ;;
  # -O1 with line tables (-g1): 45 % less compile time than RelWithDebInfo's -O2 -g (72 s against
  # 39.5 s for experiments/cli/check_command.cpp), symbolised reports; NDEBUG as in the release.
  address) extra=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1 -DNDEBUG"
    -DSTRAGGLERSIM_SANITIZE=address -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF) ;;
  thread) extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRAGGLERSIM_SANITIZE=thread -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF) ;;
  fuzz)
    # Debian's clang; warnings are not errors here (clang's -Wconversion differs from GCC's).
    export CC="${CC:-clang}" CXX="${CXX:-clang++}"
    # -O1 with line tables: half the compile time of -O2 -g, symbolised sanitizer reports.
    extra=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only"
      -DSTRAGGLERSIM_SANITIZE=fuzzer -DSTRAGGLERSIM_WERROR=OFF
      -DSTRAGGLERSIM_BUILD_FUZZERS=ON -DSTRAGGLERSIM_BUILD_TESTS=OFF -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF
      -DSTRAGGLERSIM_WITH_MPI=OFF) ;;
  *) echo "usage: $0 release|address|thread|fuzz [targets...]" >&2; exit 2 ;;
esac
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so another clone of the same sources hits the cache.
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
fi
cmake -S "$root" -B "$root/build/$flavour" -G Ninja -DSTRAGGLERSIM_WERROR=ON "${extra[@]}" "${launcher[@]}" >/dev/null
cmake --build "$root/build/$flavour" -j "$(nproc)" ${1:+--target "$@"}
