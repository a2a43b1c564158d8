#!/usr/bin/env bash
# Installs the Debian packages stragglersim needs (build, tests, benchmarks, figures, data).
# Idempotent: does nothing when every package is already installed.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache git
  libeigen3-dev libboost-dev nlohmann-json3-dev libfmt-dev catch2 libcli11-dev
  libbenchmark-dev libopenblas-dev zlib1g-dev libboost-math-dev
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-pybind11 python3-dev python3-pytest python3-pytest-xdist
  clang clang-format clang-tidy-22 libclang-rt-14-dev
  python3 python3-matplotlib python3-numpy python3-scipy python3-sklearn python3-pandas
  python3-jsonschema
  libopenblas0-pthread  # numpy's libblas.so.3 and liblapack.so.3 (alternatives): end_to_end.py's peer
  dataset-fashion-mnist
)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
