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
