#!/usr/bin/python3
"""Mutation check: each one-line mutation of a critical formula or decoder must make a test fail.

    /usr/bin/python3 tests/mutation_check.py [--scratch DIR] [--only SUBSTRING] [--markdown FILE]

The tree (tracked and untracked-but-not-ignored files) is copied to a scratch folder
(default /tmp/stragglersim_mutation/src; the real tree is never modified) and built there with
tools/build.sh into its own build/release, which is kept between runs so every rebuild
is incremental (ccache hits for the unmutated files). For each mutation the script replaces the
original text (which must occur exactly once in the file), rebuilds, runs the quick tests and
restores the file:
  1. the Catch2 binary on every case but the slow real-time, sweep, CLI and data-set ones,
     stopping at the first failure;
  2. if that passes, `stragglersim check --quick` (the theory self-check).
A mutation is killed when either fails. A mutation whose text is not found, or that does not
compile, is an error of this list (fix the list), not a survivor. Exit status: 0 when every
mutation is killed, 1 otherwise.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (what it breaks, file, original text, replacement): one line each.
MUTATIONS = [
    ("harmonic number H_n", "sim/theory/iteration_time_theory.cpp",
     "h += 1.0 / i;", "h += 1.0 / (i + 1);"),
    ("exponential order-statistic mean", "sim/theory/iteration_time_theory.cpp",
     "sum += 1.0 / i;", "sum += 1.0 / (i + 1);"),
    ("exponential order-statistic variance", "sim/theory/iteration_time_theory.cpp",
     "sum += 1.0 / (static_cast<double>(i) * i);", "sum += 1.0 / static_cast<double>(i);"),
    ("q = C(n-d,r)/C(n,r)", "sim/theory/iteration_time_theory.cpp",
     "q *= static_cast<double>(n - r - j) / (n - j);",
     "q *= static_cast<double>(n - r - j) / (n - j + 1);"),
    ("q2 erases two groups", "sim/theory/iteration_time_theory.cpp",
     "erasure_probability_first_r(n, 2 * groups.size, scheme.r)",
     "erasure_probability_first_r(n, groups.size + 1, scheme.r)"),
    ("(1 - q) in the PL contraction", "sim/theory/convergence_theory.cpp",
     "return 1.0 - p.pl_constant * p.step * (1.0 - p.q);",
     "return 1.0 - p.pl_constant * p.step;"),
    ("(1 - q) in the noise floor", "sim/theory/convergence_theory.cpp",
     "(2.0 * p.pl_constant * (1.0 - p.q));", "(2.0 * p.pl_constant);"),
    ("expected rescale factor 1/(1 - q)", "codes/gradient_code.cpp",
     "factor = 1.0 / (1.0 - erasure_probability);", "factor = 1.0;"),
    ("empirical rescale factor k/covered", "codes/gradient_code.cpp",
     "factor = static_cast<double>(decoding.alpha.size()) / decoding.partitions_covered;",
     "factor = 1.0;"),
    ("FRC group decoding weight", "codes/fractional_repetition_code.cpp",
     "weights(i) = 1.0;", "weights(i) = 0.5;"),
    ("FRC decodable needs every group", "codes/fractional_repetition_code.cpp",
     "return count == groups();", "return count + 1 >= groups();"),
    ("CRC parity column", "codes/cyclic_repetition_code.cpp",
     "h.col(n - 1) = -h.leftCols(n - 1).rowwise().sum();",
     "h.col(n - 1) = h.leftCols(n - 1).rowwise().sum();"),
    ("CRC decodable from n - s workers", "codes/cyclic_repetition_code.cpp",
     "return distinct_workers(heard, workers()) >= workers() - s_;",
     "return distinct_workers(heard, workers()) >= workers() - s_ - 1;"),
    ("BGC one-step weight n/(d r)", "codes/bernoulli_gradient_code.cpp",
     "const double a = workers() / (d_ * r);", "const double a = workers() / (d_ * (r + 1));"),
    ("expander bipartite component error", "codes/expander_graph_code.cpp",
     "error += diff * diff / static_cast<double>(count[0] + count[1]);",
     "error += diff * diff / static_cast<double>(count[0] + count[1] + 1);"),
    ("Model A/B tail scaling", "sim/delays/delay_model.cpp",
     "worker_scale_.push_back((tail_ == TailScaling::kLoad ? l : 1.0) / rate_);",
     "worker_scale_.push_back((tail_ == TailScaling::kLoad ? 1.0 : l) / rate_);"),
    ("shift scales with the load", "sim/delays/delay_model.cpp",
     "worker_shift_.push_back(l * shift_);", "worker_shift_.push_back(shift_);"),
    ("Pareto tail exponent", "sim/delays/pareto_delay.cpp",
     "std::exp(exp1(rng) / shape_)", "std::exp(exp1(rng) * shape_)"),
    ("bimodal slow branch", "sim/delays/bimodal_delay.cpp",
     "const double factor = slow(rng) ? slowdown_ : 1.0;",
     "const double factor = slow(rng) ? 1.0 : slowdown_;"),
    ("first_r stops at the r-th arrival", "sim/stopping_rule.cpp",
     "return static_cast<int>(heard.size()) >= r_;",
     "return static_cast<int>(heard.size()) > r_;"),
    ("delay-only first_r selection rank", "sim/fastpath/delay_only.cpp",
     "const auto rank = static_cast<std::size_t>(r - 1);",
     "const auto rank = static_cast<std::size_t>(r > 1 ? r - 2 : 0);"),
    ("event queue FIFO among equal times", "sim/event_queue.h",
     "return a.time != b.time ? a.time > b.time : a.sequence > b.sequence;",
     "return a.time != b.time ? a.time > b.time : a.sequence < b.sequence;"),
    ("finish policy starts stragglers late", "sim/simulated_cluster.cpp",
     "policy_ == StragglerPolicy::kFinish ? std::max(0.0, busy_until_[w] - time_) : 0.0;",
     "policy_ == StragglerPolicy::kFinish ? std::max(0.0, busy_until_[w] - time_ - 0.5) : 0.0;"),
    ("order statistics: binomial class ratio", "sim/fastpath/order_statistics.cpp",
     "const double ratio = odds * static_cast<double>(d - j) / static_cast<double>(j + 1);",
     "const double ratio = odds * static_cast<double>(d - j) / static_cast<double>(j + 2);"),
    ("order statistics: column draws count overlaps", "sim/fastpath/order_statistics.cpp",
     "touched += touched == 0 ? k : hypergeometric(groups_ - touched, touched, k, rng);",
     "touched += k;"),
    ("trace theory: deadline mass", "sim/theory/iteration_time_theory.cpp",
     "masses.emplace_back(upper, before.waiting);",
     "masses.emplace_back(upper, 0.0);"),
]

# Every Catch2 case but the real-time threaded ones and the slow end-to-end groups.
CATCH_FILTER = "~[threads]~[sweep]~[cli]~[fashion_mnist]"
TIMEOUT = 900  # seconds per command


def tree_files():
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, check=True, capture_output=True).stdout
    return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]


def sync_tree(src):
    """Copies changed files only (content differs), keeping mtimes, so rebuilds stay small."""
    wanted = set(tree_files())
    for rel in wanted:
        a, b = os.path.join(ROOT, rel), os.path.join(src, rel)
        if os.path.exists(b):
            with open(a, "rb") as fa, open(b, "rb") as fb:
                if fa.read() == fb.read():
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copy2(a, b)
    for top in ("models", "codes", "sim", "experiments", "tests", "plots"):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), src)
                if rel not in wanted:
                    os.remove(os.path.join(dirpath, name))


def build(src):
    return subprocess.run(["bash", "tools/build.sh", "release", "stragglersim_tests",
                           "stragglersim"], cwd=src, capture_output=True, text=True)


def run_tests(src):
    """Returns None when every test passes, else what failed."""
    tests = os.path.join(src, "build/release/tests/stragglersim_tests")
    cli = os.path.join(src, "build/release/experiments/stragglersim")
    try:
        r = subprocess.run([tests, CATCH_FILTER, "--abort"], cwd=src, capture_output=True,
                           text=True, timeout=TIMEOUT)
        if r.returncode != 0:
            # The console reporter frames the failing case's name between two rules of dashes.
            lines = r.stdout.splitlines()
            rules = [i for i, l in enumerate(lines) if l.startswith("-----")]
            name = " ".join(l.strip() for l in lines[rules[0] + 1:rules[1]]) if len(rules) > 1 else ""
            return "catch2: " + (name or f"exit {r.returncode}")
        r = subprocess.run([cli, "check", "--quick"], cwd=src, capture_output=True, text=True,
                           timeout=TIMEOUT)
        if r.returncode != 0:
            fails = [l.split("  ")[0] for l in r.stdout.splitlines() if l.rstrip().endswith("FAIL")]
            return "check --quick: " + (fails[0] if fails else f"exit {r.returncode}")
    except subprocess.TimeoutExpired:
        return f"timeout after {TIMEOUT} s"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", default="/tmp/stragglersim_mutation/src")
    parser.add_argument("--only", default="", help="run the mutations whose name contains this")
    parser.add_argument("--markdown", default="", help="write the result table to this file")
    args = parser.parse_args()
    src = os.path.abspath(args.scratch)
    if os.path.commonpath([src, ROOT]) == ROOT:
        sys.exit("error: the scratch folder must lie outside the tree")
    os.makedirs(src, exist_ok=True)
    started = time.monotonic()
    sync_tree(src)
    b = build(src)
    if b.returncode != 0:
        sys.exit("error: the unmutated tree does not build:\n" + b.stdout[-3000:] + b.stderr[-3000:])
    baseline = run_tests(src)
    if baseline is not None:
        sys.exit(f"error: the unmutated tree fails its tests ({baseline})")
    print(f"baseline built and passing in {time.monotonic() - started:.0f} s", flush=True)

    rows, errors = [], 0
    chosen = [m for m in MUTATIONS if args.only in m[0]]
    for number, (what, rel, original, replacement) in enumerate(chosen, 1):
        path = os.path.join(src, rel)
        with open(path) as f:
            text = f.read()
        if text.count(original) != 1:
            print(f"[{number}] {what}: ERROR original text found {text.count(original)} times "
                  f"in {rel}", flush=True)
            rows.append((what, rel, original, replacement, "error: text not found", 0.0))
            errors += 1
            continue
        t0 = time.monotonic()
        try:
            with open(path, "w") as f:
                f.write(text.replace(original, replacement))
            b = build(src)
            if b.returncode != 0:
                result = "error: does not compile"
                errors += 1
            else:
                failure = run_tests(src)
                result = f"killed ({failure})" if failure else "SURVIVED"
        finally:
            with open(path, "w") as f:
                f.write(text)
        seconds = time.monotonic() - t0
        print(f"[{number}/{len(chosen)}] {what}: {result} ({seconds:.0f} s)", flush=True)
        rows.append((what, rel, original, replacement, result, seconds))
    build(src)  # leave the scratch build unmutated for the next run

    killed = sum(1 for r in rows if r[4].startswith("killed"))
    total = time.monotonic() - started
    summary = f"{killed} of {len(rows)} mutations killed in {total / 60:.1f} min"
    print(summary)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| # | mutation | file | original → replacement | result | s |\n")
            f.write("|---|---|---|---|---|---|\n")
            for i, (what, rel, original, replacement, result, seconds) in enumerate(rows, 1):
                f.write(f"| {i} | {what} | `{rel}` | `{original}` → `{replacement}` | {result} "
                        f"| {seconds:.0f} |\n")
            f.write(f"\n{summary}.\n")
    return 0 if killed == len(rows) and errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
