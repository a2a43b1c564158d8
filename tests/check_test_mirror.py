#!/usr/bin/env python3
"""Every source module has a same-named test file or a row in docs/conventions.md.

A module is a git-tracked .cpp under models/, codes/, fit/, sim/, experiments/ or bindings/; its
test is tests/<folder>/<module>_test.cpp. A module without one must be named (its path, or a
brace group such as `sim/delays/{gamma,weibull}_delay.cpp`) in the "covered by" table of
docs/conventions.md. Prints each module with neither and exits 1.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["models", "codes", "fit", "sim", "experiments", "bindings"]


def expand(pattern):
    """`a/{b,c}_d.cpp` -> [`a/b_d.cpp`, `a/c_d.cpp`] (one brace group at most)."""
    match = re.search(r"\{([^}]*)\}", pattern)
    if not match:
        return [pattern]
    return [pattern[: match.start()] + alt + pattern[match.end():] for alt in match.group(1).split(",")]


def documented():
    """Module paths named in the first column of the conventions table."""
    names = set()
    with open(os.path.join(ROOT, "docs", "conventions.md"), encoding="utf-8") as f:
        for line in f:
            cells = line.strip().split("|")
            if len(cells) < 3:
                continue
            for code in re.findall(r"`([^`]+\.cpp)`", cells[1]):
                names.update(expand(code))
    return names


def main():
    sources = subprocess.run(
        ["git", "ls-files", "--", *[f + "/*.cpp" for f in FOLDERS]],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    listed = documented()
    missing = []
    for path in sources:
        folder, name = os.path.split(path)
        test = os.path.join("tests", folder, name[: -len(".cpp")] + "_test.cpp")
        if not os.path.exists(os.path.join(ROOT, test)) and path not in listed:
            missing.append(path)
    for path in missing:
        print(f"{path}: no {os.path.join('tests', os.path.splitext(path)[0])}_test.cpp and no row "
              "in docs/conventions.md saying which tests cover it", file=sys.stderr)
    if missing:
        print(f"test mirror: {len(missing)} module(s) without a test", file=sys.stderr)
        return 1
    print(f"test mirror: ok ({len(sources)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
