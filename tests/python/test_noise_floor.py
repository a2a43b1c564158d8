"""The stationary noise floor (docs/results.md "Noise floor at stationarity") on a reduced grid of
experiments/paper/noise_floor.json: ErasureHead's window mean against the exact least-squares
curve (4 standard errors over 10 independent seeds), the window's two halves against each other
(stationarity), exact GD's gap at rounding level, and the PL bound's floor above the truth."""

import json
import os
import subprocess
import sys

from conftest import CLI, ROOT

sys.path.insert(0, os.path.join(ROOT, "plots"))
import plot_noise_floor  # noqa: E402


def test_erasurehead_floor_is_stationary_and_matches_the_exact_curve(tmp_path):
    with open(os.path.join(ROOT, "experiments", "paper", "noise_floor.json")) as f:
        sweep = json.load(f)
    sweep["grid"] = {"/code/d": [2, 4],
                     "/stopping": [{"rule": "all"}, {"rule": "first_r", "r": 10}]}
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    out = tmp_path / "sweep"
    result = subprocess.run([CLI, "sweep", str(tmp_path / "s.json"), "--out", str(out),
                             "--jobs", "2"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    rows = plot_noise_floor.points(str(out), CLI)
    assert len(rows) == 4
    exact = {row["d"]: row for row in rows if row["rule"] == "all"}
    eh = {row["d"]: row for row in rows if row["rule"] == "first_r"}
    for d in (2, 4):
        row = eh[d]
        assert row["runs"] == 10
        # Enough erased groups in the windows for the mean to estimate the floor.
        assert row["expected_erasures"] >= plot_noise_floor.MIN_EVENTS, row
        assert abs(row["z"]) <= 4.0, row
        assert abs(row["halves_diff"]) <= 4.0 * row["halves_diff_se"], row
        # The curve has reached its limit: its window mean is its value at T.
        assert abs(row["exact_window"] - row["exact_at_T"]) <= 1e-6 * row["exact_at_T"], row
        # Above exact GD's stationary gap, which is rounding.
        assert abs(exact[d]["measured"]) < 1e-15
        assert row["measured"] - 4.0 * row["se"] > exact[d]["measured"]
        # The PL bound's floor is a bound: above the exact stationary gap.
        assert row["bound_floor"] >= row["exact_window"], row
    # The floor falls with d (q = C(n - d, r)/C(n, r) per group falls).
    assert eh[4]["measured"] < eh[2]["measured"]
