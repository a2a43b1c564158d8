# Sourced by the experiment scripts of experiments/*/run.sh: their common options and binary.
#   experiment_options DEFAULT_OUT USAGE "$@"
# sets `out` (--out DIR, default DEFAULT_OUT), `jobs` (--jobs N, default every core), `bin`
# ($STRAGGLERSIM_BIN, else build/release/experiments/stragglersim built incrementally) and
# `python` (Debian's, which has pandas and matplotlib); any other argument prints USAGE, exit 2.
experiment_options() {
  out="$1"
  local usage="$2"
  shift 2
  jobs="$(nproc)"
  while [ $# -gt 0 ]; do
    case "$1" in
      --out) out="$2"; shift ;;
      --jobs) jobs="$2"; shift ;;
      *) echo "usage: $usage" >&2; exit 2 ;;
    esac
    shift
  done
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ -n "${STRAGGLERSIM_BIN:-}" ]; then
    bin="$STRAGGLERSIM_BIN"
  else
    bash "$root/tools/build.sh" release stragglersim
    bin="$root/build/release/experiments/stragglersim"
  fi
  python=/usr/bin/python3
}
