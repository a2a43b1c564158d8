#!/usr/bin/env bash
# Configures and builds one flavour of stragglersim into build/<flavour>.
#   tools/build.sh release            optimised, warnings are errors
#   tools/build.sh address            address + undefined sanitizers (clang), with the libFuzzer
#                                     targets of tests/fuzz
#   tools/build.sh thread             thread sanitizer (clang)
# Every flavour compiles in unity batches (tools/unity.cmake): a cold build parses the heavy
# headers once per batch of eight files instead of once per file. clang-tidy still checks each
# file alone (tests/clang_tidy_check.py points the batch's command at each of its files).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) extra=(-DCMAKE_BUILD_TYPE=Release -DSTRAGGLERSIM_UNITY=all) ;;
  # Address + undefined with clang, every library also instrumented for libFuzzer's coverage
  # (fuzzer-no-link), so the one build holds both the suite and the fuzz targets of tests/fuzz:
  # the sanitizer stage and the fuzz stage compile the project once between them. -O1 with line
  # tables (-g1): 45 % less compile time than -O2 -g, symbolised reports; NDEBUG as in the
  # release. Warnings are not errors here (clang's -Wconversion differs from GCC's; the release
  # build holds the line).
  address)
    export CC="${CC:-clang}" CXX="${CXX:-clang++}"
    extra=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1 -DNDEBUG"
      -DSTRAGGLERSIM_SANITIZE=fuzzer -DSTRAGGLERSIM_WERROR=OFF -DSTRAGGLERSIM_BUILD_FUZZERS=ON
      -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF -DSTRAGGLERSIM_UNITY=all) ;;
  # Clang at -O1 -g1, as the address build (clang compiles this code about 40 % faster than GCC
  # under the sanitizers: 63 s against 102 s for the unity batch of codes/).
  thread)
    export CC="${CC:-clang}" CXX="${CXX:-clang++}"
    extra=(-DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1 -DNDEBUG" -DSTRAGGLERSIM_SANITIZE=thread
      -DSTRAGGLERSIM_WERROR=OFF -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF -DSTRAGGLERSIM_UNITY=all) ;;
  *) echo "usage: $0 release|address|thread [targets...]" >&2; exit 2 ;;
esac
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so another clone of the same sources hits the cache.
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
fi
cmake -S "$root" -B "$root/build/$flavour" -G Ninja -DSTRAGGLERSIM_WERROR=ON "${extra[@]}" "${launcher[@]}" >/dev/null
cmake --build "$root/build/$flavour" -j "$(nproc)" ${1:+--target "$@"}
