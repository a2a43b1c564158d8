#!/usr/bin/env bash
# Configures and builds one flavour of stragglersim into build/<flavour>.
#   experiments/build.sh release            optimised, warnings are errors
#   experiments/build.sh address            address + undefined sanitizers
#   experiments/build.sh thread             thread sanitizer
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) extra=(-DCMAKE_BUILD_TYPE=Release) ;;
  address) extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRAGGLERSIM_SANITIZE=address -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF) ;;
  thread) extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRAGGLERSIM_SANITIZE=thread -DSTRAGGLERSIM_BUILD_BENCHMARKS=OFF) ;;
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
