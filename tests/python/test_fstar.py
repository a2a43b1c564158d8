"""f* of a run against an independent L-BFGS (scipy) on the same data (docs/model.md, f*).

The data are drawn here with numpy and handed to the CLI as a CSV file, so the solve compared
with is computed from the same numbers by code that shares nothing with the simulator.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import CLI

# scipy may live with the system interpreter only (python3-scipy).
SCIPY_SOLVE = r"""
import json, sys
import numpy as np
from scipy.optimize import minimize
data = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)
a, b = data[:, :-1], data[:, -1]
l2 = float(sys.argv[2])
m = a.shape[0]

def f(x):
    t = b * (a @ x)
    value = np.logaddexp(0.0, -t).mean() + 0.5 * l2 * x @ x
    slope = -b * np.exp(-np.logaddexp(0.0, t))  # -b sigmoid(-t)
    return value, a.T @ slope / m + l2 * x

res = minimize(f, np.zeros(a.shape[1]), jac=True, method="L-BFGS-B",
               options={"maxiter": 10000, "maxcor": 20, "gtol": 1e-13, "ftol": 1e-17})
print(json.dumps({"f_star": float(res.fun), "grad": float(np.linalg.norm(res.jac))}))
"""


def scipy_python():
    for python in (sys.executable, "/usr/bin/python3"):
        if python and os.path.exists(python) and subprocess.run(
                [python, "-c", "import scipy"], capture_output=True).returncode == 0:
            return python
    return None


def test_f_star_equals_scipy_lbfgs(tmp_path):
    python = scipy_python()
    if python is None:
        pytest.skip("scipy is not installed (python3-scipy)")
    # The shape of the paper's logistic run: 100 features, l2 = 0.001 (fewer rows).
    rng = np.random.default_rng(3)
    m, p, l2 = 10000, 100, 0.001
    labels = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    mu = rng.normal(size=p)
    mu *= 1.5 / np.linalg.norm(mu)
    features = labels[:, None] * mu[None, :] + rng.normal(size=(m, p))
    path = tmp_path / "data.csv"
    header = ",".join([f"a{j}" for j in range(p)] + ["label"])
    np.savetxt(path, np.column_stack([features, labels]), delimiter=",", fmt="%.17g",
               header=header, comments="")
    config = {
        "name": "fstar", "seed": 3, "workers": 10,
        "data": {"source": "csv", "path": str(path), "test_fraction": 0.0},
        "loss": {"kind": "logistic", "l2": l2},
        "code": {"kind": "frc", "d": 2},
        "stopping": {"rule": "first_r", "r": 5},
        "delay": {"kind": "shifted_exponential"},
        "optimizer": {"kind": "gd", "step": "auto", "iterations": 1},
    }
    (tmp_path / "c.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    subprocess.run([CLI, "run", str(tmp_path / "c.json"), "--out", str(out)], check=True,
                   capture_output=True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["f_star_method"] == "newton"
    assert summary["f_star_source"] == "solved"
    assert summary["f_star_stop"] == "newton decrement"
    assert 0.5 * summary["f_star_newton_decrement"] <= 1e-16 * max(1.0, abs(summary["f_star"]))
    assert summary["f_star_iterations"] <= summary["f_star_iteration_limit"] == 50
    reference = json.loads(subprocess.run([python, "-c", SCIPY_SOLVE, str(path), str(l2)],
                                          check=True, capture_output=True, text=True).stdout)
    # scipy's own point is only near-optimal: its f is above f* by about ‖∇f‖²/(2 l2).
    assert reference["grad"] ** 2 / (2 * l2) <= 1e-13 * reference["f_star"]
    assert abs(summary["f_star"] - reference["f_star"]) <= 1e-12 * abs(reference["f_star"])
    # f* is a minimum: scipy cannot go below it beyond rounding.
    assert reference["f_star"] >= summary["f_star"] - 1e-15
