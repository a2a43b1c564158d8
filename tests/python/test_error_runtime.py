"""K-sync's error-runtime trade-off (docs/results.md "K-sync's error-runtime trade-off"): on a
reduced copy of experiments/paper/error_runtime.json, the simulator's mean f - f* at each
simulated time against the exact least-squares curve composed with K-sync's renewal count
(plots/plot_error_runtime.py), within 4 standard errors at every time and K; small K ahead
early and behind late (the trade-off itself); and anything but K-sync refused."""

import json
import os
import subprocess
import sys

import pytest

from conftest import CLI, ROOT

sys.path.insert(0, os.path.join(ROOT, "plots"))
import plot_error_runtime  # noqa: E402


def reduced_sweep(tmp_path, edit=None):
    with open(os.path.join(ROOT, "experiments", "paper", "error_runtime.json")) as f:
        sweep = json.load(f)
    base = sweep["base"]
    base["workers"] = base["partitions"] = 10
    base["data"].update(rows=200, features=10)
    base["optimizer"]["iterations"] = 40
    sweep["schemes"] = [{"name": f"K={k}", "/stopping": {"rule": "first_r", "r": k}}
                        for k in (2, 10)]
    sweep["repetitions"] = 60
    if edit:
        edit(sweep)
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    out = tmp_path / "sweep"
    result = subprocess.run([CLI, "sweep", str(tmp_path / "s.json"), "--out", str(out),
                             "--jobs", "2", "-q"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return str(out)


def test_measured_error_against_time_matches_the_renewal_theory(tmp_path):
    rows = plot_error_runtime.compare(reduced_sweep(tmp_path), CLI)
    by_k = {}
    for row in rows:
        by_k.setdefault(row["k"], []).append(row)
    assert sorted(by_k) == [2, 10]
    for k, part in by_k.items():
        assert len(part) == plot_error_runtime.POINTS and part[0]["runs"] == 60
        for row in part:
            assert abs(row["z"]) <= 4.0, row
        # Not vacuous: the runs move, and the measurement is far tighter than the change.
        assert part[-1]["theory"] < 0.5 * part[0]["theory"], part[-1]
        assert max(r["measured_se"] for r in part) < 0.1 * part[0]["theory"]
    # The trade-off: waiting for 2 of 10 is well ahead early (several iterations before full
    # GD's first few) and behind at the end (its floor, from the estimate's variance, against
    # full GD converging).
    early = [i for i, (a, b) in enumerate(zip(by_k[2], by_k[10]))
             if a["theory"] < 0.5 * b["theory"]]
    assert early and early[0] < plot_error_runtime.POINTS // 3, early
    assert by_k[2][early[0]]["measured"] < by_k[10][early[0]]["measured"]
    assert by_k[2][-1]["theory"] > 2 * by_k[10][-1]["theory"]
    assert by_k[2][-1]["measured"] > 2 * by_k[10][-1]["measured"]


def test_a_sweep_other_than_k_sync_is_refused(tmp_path):
    def unscaled(sweep):
        sweep["base"]["rescale"] = "none"

    with pytest.raises(SystemExit, match="expected K-sync runs"):
        plot_error_runtime.compare(reduced_sweep(tmp_path, unscaled), CLI)
