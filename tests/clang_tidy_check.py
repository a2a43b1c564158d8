#!/usr/bin/python3
"""clang-tidy over the project's translation units, with a result cache.

    /usr/bin/python3 tests/clang_tidy_check.py [--build build/release] [-j N] [--no-cache]

Checks every .cpp of models/, codes/, fit/, sim/, experiments/ and bindings/ listed in the build's
compile_commands.json (headers through HeaderFilterRegex in .clang-tidy); every warning is an
error. A translation unit found clean is remembered under ~/.cache/stragglersim-clang-tidy (or
$STRAGGLERSIM_TIDY_CACHE) by a key over the clang-tidy version, .clang-tidy, its compile command,
and the contents of the file and of every project header it includes (from Ninja's dependency
log), with paths relative to the checkout, so a rerun — in this or another clone — re-checks
only what changed. Exit status 1 when a warning is found.
"""
import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("models/", "codes/", "fit/", "sim/", "experiments/", "bindings/")


def project_deps(build, obj):
    """Project files (source and headers) the object was compiled from, per Ninja's deps log."""
    out = subprocess.run(["ninja", "-C", build, "-t", "deps", obj], capture_output=True,
                         text=True).stdout
    deps = []
    for line in out.splitlines()[1:]:
        path = os.path.normpath(os.path.join(build, line.strip()))
        if path.startswith(ROOT + os.sep) and not path.startswith(os.path.join(ROOT, "build")):
            deps.append(path)
    return sorted(set(deps))


def key_of(entry, build, version, config):
    args = shlex.split(entry["command"])
    obj = args[args.index("-o") + 1] if "-o" in args else ""
    deps = project_deps(build, obj) if obj else []
    if not deps:
        return None  # not built yet: no key, always checked
    # Paths relative to the checkout, so another clone of the same sources (CI's) hits the cache.
    h = hashlib.sha256()
    for part in (version, config, entry["command"].replace(ROOT, "<root>")):
        h.update(part.encode())
    for path in [entry["file"]] + deps:
        h.update(os.path.relpath(path, ROOT).encode())
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    parser.add_argument("-j", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--only", default="", help="check only files whose path contains this")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f)
                   if os.path.relpath(e["file"], ROOT).startswith(FOLDERS)
                   and args.only in e["file"]]
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(ROOT, ".clang-tidy")) as f:
        config = f.read()
    cache = os.environ.get("STRAGGLERSIM_TIDY_CACHE",
                           os.path.expanduser("~/.cache/stragglersim-clang-tidy"))
    os.makedirs(cache, exist_ok=True)

    def check(entry):
        key = None if args.no_cache else key_of(entry, build, version, config)
        if key and os.path.exists(os.path.join(cache, key)):
            return entry["file"], "cached", ""
        r = subprocess.run(["clang-tidy", "-p", build, "--quiet", "--warnings-as-errors=*",
                            entry["file"]], capture_output=True, text=True)
        clean = r.returncode == 0
        if clean and key:
            open(os.path.join(cache, key), "w").close()
        lines = [l for l in (r.stdout + r.stderr).splitlines()
                 if "warning:" in l or "error:" in l]
        return entry["file"], "clean" if clean else "failed", "\n".join(lines) or r.stdout + r.stderr

    counts = {"cached": 0, "clean": 0, "failed": 0}
    with ThreadPoolExecutor(max_workers=args.j) as pool:
        for _, status, text in pool.map(check, entries):
            counts[status] += 1
            if status == "failed":
                print(text, file=sys.stderr)
    failed = counts["failed"]
    print(f"clang-tidy: {len(entries)} translation units: {counts['clean']} checked clean, "
          f"{counts['cached']} clean from the cache ({cache}), {failed} with warnings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
