#!/usr/bin/env bash
# Include-layer check (issue 9 part 3). Layers, left to right:
#   models/base < models < codes < sim < sim/theory < experiments/config < experiments
# A library file may include project headers of its own layer or a layer to its left; a test
# under tests/<folder>/ may include its folder's layer and the layers to its left (plus tests/).
# Prints every violation as file:line: text and exits 1 if there is one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Rank of the layer a path (source file or included header) belongs to; empty if none.
rank() {
  case "$1" in
    models/base/*) echo 0 ;;
    models/*) echo 1 ;;
    codes/*) echo 2 ;;
    sim/theory/*) echo 4 ;;
    sim/*) echo 3 ;;
    experiments/config/*) echo 5 ;;
    experiments/*) echo 6 ;;
    tests/*) echo 7 ;;
    *) echo "" ;;
  esac
}

violations=0
while IFS= read -r file; do
  # A test's own layer is the one of its folder under tests/; files directly in tests/ (the
  # shared support header, the Catch2 main) and benchmarks may use every layer.
  subject="$file"
  case "$file" in
    tests/benchmarks/*) continue ;;
    tests/*/*) subject="${file#tests/}" ;;
    tests/*) continue ;;
  esac
  own=$(rank "$subject")
  [ -n "$own" ] || continue
  while IFS= read -r hit; do
    line="${hit%%:*}"
    header=$(sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]+)".*/\1/' <<<"$hit")
    [[ "$header" == tests/* ]] && continue
    other=$(rank "$header")
    [ -n "$other" ] || continue
    if [ "$other" -gt "$own" ]; then
      echo "$file:$line: includes \"$header\" from a layer to its right" >&2
      violations=$((violations + 1))
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$file" || true)
done < <(git ls-files -- '*.h' '*.cpp' '*.h.in' 2>/dev/null || find models codes sim experiments tests -name '*.h' -o -name '*.cpp')

if [ "$violations" -gt 0 ]; then
  echo "include layers: $violations violation(s)" >&2
  exit 1
fi
echo "include layers: ok"
