"""experiments/real_traces.py on two shipped real traces (docs/traces.md, "Predictions on the
real traces"): what the study claims, asserted on its own summary.

On ByteDance AR (4 ranks) and ST (2 ranks), both stationary: the model chosen by held-out error,
built from the whole trace, predicts the replay's mean iteration time of uncoded, exact FRC and
ErasureHead within 5 %, the time to target of its three best-ranked schemes within 10 % of the
mean over 20 seeded replays from random start rows, recommends a scheme within 10 % of the
replay's best, predicts the held-out half within max(10 %, 3 s.e.), and its held-out score is no
worse than the empirical marginals'.
"""

import json
import os
import subprocess
import sys

from conftest import CLI, ROOT


def test_the_chosen_model_predicts_the_replay_of_two_real_traces(tmp_path):
    subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "real_traces.py"),
                    "--bin", CLI, "--out", str(tmp_path), "--traces", "bytedance_ar,bytedance_st",
                    "--no-plot"], check=True, capture_output=True, text=True, timeout=300)
    with open(tmp_path / "summary.json") as f:
        results = json.load(f)
    assert [r["trace"] for r in results] == ["bytedance_ar", "bytedance_st"]
    for r in results:
        assert r["iteration_time"], r["trace"]
        for row in r["iteration_time"]:
            assert abs(row["chosen_error"]) < 0.05, (r["trace"], row)
            assert row["chosen_error"] == (row["chosen_iteration_time"] -
                                           row["replayed_iteration_time"]) / \
                row["replayed_iteration_time"]
        assert len(r["time_to_target"]) == 3
        for row in r["time_to_target"]:
            assert row["runs"] == 20
            assert abs(row["error"]) < 0.10, (r["trace"], row)
        assert r["recommended_within_10"]
        assert r["recommended_replayed"] <= 1.10 * r["best_replayed"]
        held = r["held_out"]
        assert held["stationary"]
        assert held["rows"] and all(row["within"] for row in held["rows"])
        scores = {s["model"]: s["score"] for s in r["scores"]}
        assert scores[r["chosen_model"]] <= scores["empirical"]
        # The choice is the smallest held-out score (the trace being stationary).
        assert scores[r["chosen_model"]] == min(scores.values())
