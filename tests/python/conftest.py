"""Shared set-up of the Python module tests: the build tree to test and the CLI beside it.

STRAGGLERSIM_BUILD names the build folder (default: build/release of this checkout); its
python/ folder goes first on sys.path, so the module under test is the one built there even
when another copy is installed.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STRAGGLERSIM_BUILD", os.path.join(ROOT, "build", "release"))
CLI = os.path.join(BUILD, "experiments", "stragglersim")
sys.path.insert(0, os.path.join(BUILD, "python"))


def small_logistic_sweep_base(iterations, target_loss=0.45):
    """The base of the small scheme-comparison sweeps: 6 workers, 300 x 5 Gaussian-mixture rows
    (no test set), logistic l2 = 0.001, injected delays (Model B, rate 2), GD at step 1/beta."""
    return {"seed": 5, "workers": 6,
            "data": {"source": "synthetic", "generator": "gaussian_mixture", "rows": 300,
                     "features": 5, "test_fraction": 0.0},
            "loss": {"kind": "logistic", "l2": 0.001}, "code": {"kind": "uncoded"},
            "stopping": {"rule": "all"},
            "delay": {"kind": "shifted_exponential", "tail": "none", "rate": 2.0},
            "optimizer": {"kind": "gd", "step": "auto", "iterations": iterations},
            "target_loss": target_loss}


def run_sweep_file(tmp_path, sweep, name, jobs):
    """Writes `sweep` to tmp_path/s.json and runs it into tmp_path/name with `--jobs jobs`
    (quiet); asserts exit 0 and returns the output folder."""
    import json
    import subprocess
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    out = tmp_path / name
    result = subprocess.run([CLI, "sweep", str(tmp_path / "s.json"), "--out", str(out),
                             "--jobs", str(jobs), "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out
