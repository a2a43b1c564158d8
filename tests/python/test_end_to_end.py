"""benchmarks/end_to_end.py's correctness part on a small size: stragglersim and the numpy/scipy
script of the same experiments (the default experiment's three schemes, the injected covtype-like
regime's four) read the same data and delay files and must give the same iteration times, losses,
test metrics and f* (the script exits 1 on any difference; benchmarks/end_to_end.md)."""

import os
import subprocess

import pytest

from conftest import CLI, ROOT

SCRIPT = os.path.join(ROOT, "benchmarks", "end_to_end.py")
PYTHON = "/usr/bin/python3"  # the numpy side needs numpy, scipy and scikit-learn's LIBSVM reader


def has_peers():
    return os.path.exists(PYTHON) and subprocess.run(
        [PYTHON, "-c", "import numpy, scipy, sklearn"], capture_output=True).returncode == 0


@pytest.mark.skipif(not has_peers(), reason="numpy, scipy or scikit-learn missing")
def test_numpy_script_gives_the_same_outputs(tmp_path):
    # 600 rows; the covtype-like job with 200 columns (at 2000 its f* is a Newton solve on a
    # 2000 x 2000 Hessian, seconds per run).
    result = subprocess.run(
        [PYTHON, SCRIPT, "--check-only", "--rows", "600", "--features", "200",
         "--exe", CLI, "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    schemes = ["uncoded", "frc_exact", "erasurehead", "uncoded_decodable", "uncoded_first_r",
               "frc_decodable", "frc_first_r"]
    for scheme in schemes:
        line = next(l for l in lines if l.strip().startswith(scheme + ":"))
        # The simulated clocks agree exactly: the same trace rows replayed, the same stops.
        assert "iteration_time 0," in line and " time 0," in line, line
    # Both sides ran every scheme and wrote a trace of more than one row.
    for scheme in schemes[:3]:
        assert (tmp_path / "default" / "numpy" / f"{scheme}.csv").read_text().count("\n") > 2


@pytest.mark.skipif(not has_peers(), reason="numpy, scipy or scikit-learn missing")
def test_numpy_sweep_gives_the_same_outputs_run_by_run(tmp_path):
    # The covtype-sweep job at 600 x 200: the regime's 7 schemes x 10 seeds, one sweep process
    # against one numpy process; every seed's random start row, K-async's event loop and the
    # Anytime rule's row samples must give the same trace on both sides.
    result = subprocess.run(
        [PYTHON, SCRIPT, "--check-only", "--job", "covtype-sweep", "--rows", "600",
         "--features", "200", "--exe", CLI, "--keep", str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for scheme in ("uncoded", "exact FRC d=2", "ErasureHead d=2 r=15", "ignore stragglers r=15",
                   "K-sync K=15", "K-async K=15", "Anytime T=0.3421"):
        line = next(l for l in lines if l.strip().startswith(scheme + ":"))
        assert line.strip().startswith(scheme + ": 10 seeds,"), line
        assert "iteration_time 0," in line and " time 0," in line, line
    assert len(list((tmp_path / "covtype-sweep" / "numpy").glob("*.csv"))) == 70


def load_script():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "end_to_end_numpy", os.path.join(ROOT, "benchmarks", "end_to_end_numpy.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_replayed_generators_match_their_definitions():
    np = pytest.importorskip("numpy")
    script = load_script()
    # The C++ standard's check value: the 10000th output of a default-seeded mt19937_64.
    assert script.mt19937_64(np, 5489, 10000)[9999] == 9981545732273789042
    # SplitMix64's finaliser on seed + golden gamma (stream 0), computed by hand.
    z = 0x9E3779B97F4A7C15
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
    assert script.derive_seed(0, 0) == z ^ (z >> 31)
    # Boost's uniform_int: a range of one value takes no draw; otherwise the draw's bucket.
    assert script.boost_uniform_int([5], 0, 0) == (0, 0)
    assert script.boost_uniform_int([2**63], 0, 1) == (1, 1)
    assert script.boost_uniform_int([2**63 - 1], 0, 1) == (0, 1)
    # Selection sampling keeps exactly c distinct rows, ascending, and all rows at c = size.
    rows = script.selection_sample(np, 42, 50, 17)
    assert len(rows) == 17 and rows == sorted(set(rows)) and 0 <= rows[0] and rows[-1] < 50
    assert script.selection_sample(np, 42, 9, 9) == list(range(9))


REFERENCE_DIRS = ["/usr/lib/x86_64-linux-gnu/blas", "/usr/lib/x86_64-linux-gnu/lapack"]


@pytest.mark.skipif(not has_peers() or not all(
    os.path.exists(os.path.join(d, n)) for d, n in zip(REFERENCE_DIRS, ["libblas.so.3",
                                                                         "liblapack.so.3"])),
    reason="numpy, scipy or scikit-learn missing, or no reference BLAS to point numpy at")
def test_a_race_against_numpy_on_the_reference_blas_is_refused(tmp_path):
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(REFERENCE_DIRS))
    command = [PYTHON, SCRIPT, "--job", "default", "--repetitions", "1", "--rows", "600",
               "--exe", CLI, "--keep", str(tmp_path), "--table", str(tmp_path / "t.md")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "reference BLAS" in result.stderr and "--allow-reference-blas" in result.stderr
    assert not (tmp_path / "t.md").exists() and not (tmp_path / "default").exists()
