#!/usr/bin/env bash
# Include-layer check (issue 9 part 3). Layers, left to right:
#   models/base < models < codes < sim < sim/theory < experiments/config < experiments
# (sim/replay ranks with sim/fastpath and sim/backends)
# A library file may include project headers of its own layer or a layer to its left; a test
# under tests/<folder>/ may include its folder's layer and the layers to its left (and tests/
# helpers). Files directly in tests/ and benchmarks/ may use every layer. Prints each
# violation as file:line and exits 1 if there is one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

git ls-files -- 'models/*' 'codes/*' 'fit/*' 'sim/*' 'experiments/*' 'bindings/*' 'tests/*' |
  grep -E '\.(cpp|h|h\.in)$' |
  xargs grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' |
  awk '
    function rank(path) {
      if (path ~ /^models\/base\//) return 0
      if (path ~ /^models\//) return 1
      if (path ~ /^codes\//) return 2
      if (path ~ /^fit\//) return 3
      if (path ~ /^sim\/delays\//) return 4
      if (path ~ /^sim\/theory\//) return 7
      if (path ~ /^sim\/(fastpath|backends|replay)\//) return 6
      if (path ~ /^sim\//) return 5
      if (path ~ /^experiments\/config\//) return 8
      if (path ~ /^experiments\/predict\//) return 9
      if (path ~ /^experiments\/cli\//) return 11
      if (path ~ /^experiments\//) return 10
      if (path ~ /^bindings\//) return 12
      return -1
    }
    {
      split($0, part, ":")
      file = part[1]
      line = part[2]
      header = $0
      sub(/^[^"]*"/, "", header)
      sub(/".*$/, "", header)
      subject = file
      if (file ~ /^tests\/fuzz\// || file ~ /^tests\/[^\/]*$/) next
      if (file ~ /^tests\//) sub(/^tests\//, "", subject)
      own = rank(subject)
      if (file ~ /^tests\/sim\/[^\/]*$/) own = rank("sim/fastpath/")
      if (file ~ /^tests\/fit\//) own = rank("sim/delays/")
      other = rank(header)
      if (own < 0 || other < 0) next
      if (other > own) {
        printf "%s:%s: includes \"%s\" from a layer to its right\n", file, line, header > "/dev/stderr"
        bad += 1
      }
    }
    END {
      if (bad > 0) {
        printf "include layers: %d violation(s)\n", bad > "/dev/stderr"
        exit 1
      }
      print "include layers: ok"
    }'
