#!/usr/bin/python3
"""clang-tidy over the project's translation units, with a result cache.

    /usr/bin/python3 tests/clang_tidy_check.py [--build build/release] [-j N] [--no-cache]

Checks every .cpp of models/, codes/, fit/, sim/, experiments/ and bindings/ compiled by the
build (headers through HeaderFilterRegex in .clang-tidy); every warning is an error. A file the
build compiles inside a unity batch (tools/unity.cmake) is checked on its own, with the batch's
compile command pointed at it (clang-tidy_commands/compile_commands.json in the build folder).
A translation unit found clean is remembered under ~/.cache/stragglersim-clang-tidy (or
$STRAGGLERSIM_TIDY_CACHE) by a key over the clang-tidy version, .clang-tidy, its compile command,
and the contents of the file and of every project header it includes (from Ninja's dependency
log), with paths relative to the checkout, so a rerun — in this or another clone — re-checks
only what changed. Exit status 1 when a warning is found.
"""
import argparse
import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("models/", "codes/", "fit/", "sim/", "experiments/", "bindings/")
# clang-tidy 22 (Debian's clang-tidy-22): unlike 14, it does not run the checks over the system
# headers, which made up most of a unit's time (docs/tooling.md).
CLANG_TIDY = os.environ.get("STRAGGLERSIM_CLANG_TIDY", "clang-tidy-22")


@functools.lru_cache(maxsize=None)
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


DIAGNOSTIC = re.compile(r"^(?P<path>[^\s:][^:]*):\d+:\d+: (?:warning|error): .*\[(?P<check>[^\]]+)\]$")


def project_findings(output):
    """The diagnostics located in the project's files, and whether any were located elsewhere.
    The analyzer ends some paths inside a system header (Eigen's sparse storage), and clang 22
    reports libstdc++ 12's own use of a name it deprecates; like clang-tidy 14, which never showed
    them, the check counts only what it finds in our files. A compile error counts anywhere."""
    findings, elsewhere = [], False
    for line in output.splitlines():
        m = DIAGNOSTIC.match(line)
        if not m:
            continue
        path = os.path.realpath(m.group("path"))
        ours = path.startswith(ROOT + os.sep) and not path.startswith(os.path.join(ROOT, "build"))
        if ours or "clang-diagnostic-error" in m.group("check"):
            findings.append(line)
        else:
            elsewhere = True
    return findings, elsewhere


def unity_members(path):
    """The project sources a unity batch includes, in order (absolute paths)."""
    members = []
    with open(path) as f:
        for line in f:
            if line.startswith('#include "'):
                members.append(os.path.join(ROOT, line.split('"')[1]))
    return members


def per_file_entries(build, entries):
    """One entry per project source: a unity batch's command is repeated for each file it holds,
    with the batch's path replaced by the file's; `batch_obj` keeps the batch's object file, whose
    dependency log lists the headers."""
    unity_dir = os.path.join(build, "unity") + os.sep
    out = []
    for e in entries:
        args = shlex.split(e["command"])
        obj = args[args.index("-o") + 1] if "-o" in args else ""
        if not e["file"].startswith(unity_dir):
            out.append(dict(e, batch_obj=obj))
            continue
        for member in unity_members(e["file"]):
            out.append(dict(e, file=member, command=e["command"].replace(e["file"], member),
                            batch_obj=obj))
    return out


def key_of(entry, build, version, config):
    obj = entry["batch_obj"]
    deps = project_deps(build, obj) if obj else []
    # A batch's log lists every file of the batch: the other sources are not this file's inputs.
    deps = [d for d in deps if not d.endswith(".cpp") or d == entry["file"]]
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
        entries = [e for e in per_file_entries(build, json.load(f))
                   if os.path.relpath(e["file"], ROOT).startswith(FOLDERS)
                   and args.only in e["file"]]
    # clang-tidy looks a file up in a compilation database: this one has a command per file.
    database = os.path.join(build, "clang-tidy_commands")
    os.makedirs(database, exist_ok=True)
    with open(os.path.join(database, "compile_commands.json.tmp"), "w") as f:
        json.dump([{k: e[k] for k in ("directory", "command", "file")} for e in entries], f,
                  indent=0)
    os.replace(os.path.join(database, "compile_commands.json.tmp"),
               os.path.join(database, "compile_commands.json"))
    version = subprocess.run([CLANG_TIDY, "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(ROOT, ".clang-tidy")) as f:
        config = f.read()
    cache = os.environ.get("STRAGGLERSIM_TIDY_CACHE",
                           os.path.expanduser("~/.cache/stragglersim-clang-tidy"))
    os.makedirs(cache, exist_ok=True)

    def check(entry):
        key = None if args.no_cache else key_of(entry, build, version, config)
        if key and os.path.exists(os.path.join(cache, key)):
            return entry["file"], "cached", ""
        r = subprocess.run([CLANG_TIDY, "-p", database, "--quiet", "--warnings-as-errors=*",
                            entry["file"]], capture_output=True, text=True)
        findings, elsewhere = project_findings(r.stdout + r.stderr)
        # A non-zero status with no finding of ours: clang-tidy itself failed (a crash, a
        # missing file); that fails too, with its whole output.
        clean = not findings and (r.returncode == 0 or elsewhere)
        if clean and key:
            open(os.path.join(cache, key), "w").close()
        text = "\n".join(findings) if findings else r.stdout + r.stderr
        return entry["file"], "clean" if clean else "failed", text

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
