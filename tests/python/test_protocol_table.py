"""plots/protocol_table.py re-derived from the run files of a small sweep: each scheme's time to
the target (mean and 95 % t interval over the seeds) from the runs' summary.json, and the paired
speedup of ErasureHead over exact FRC with its delta-method interval computed by hand."""

import csv
import json
import math
import os
import subprocess
import sys

from scipy.stats import t as student_t

from conftest import CLI, ROOT, small_logistic_sweep_base

sys.path.insert(0, os.path.join(ROOT, "plots"))
import protocol_table  # noqa: E402


def test_protocol_rows_equal_their_run_files(tmp_path):
    sweep = {
        "name": "proto",
        "base": small_logistic_sweep_base(60),
        "schemes": [{"name": "uncoded", "/code": {"kind": "uncoded"},
                     "/stopping": {"rule": "all"}},
                    {"name": "exact FRC d=2", "/code": {"kind": "frc", "d": 2},
                     "/stopping": {"rule": "decodable"}},
                    {"name": "ErasureHead d=2 r=3", "/code": {"kind": "frc", "d": 2},
                     "/stopping": {"rule": "first_r", "r": 3}}],
        "baseline": "uncoded", "repetitions": 6}
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    out = tmp_path / "proto"
    result = subprocess.run([CLI, "sweep", str(tmp_path / "s.json"), "--out", str(out),
                             "--jobs", "2", "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    rows = {row["scheme"]: row for row in protocol_table.rows(str(out))}
    # Each run's time to target, from its own summary.json, in repetition order.
    times = {}
    with open(out / "index.csv", newline="") as f:
        for cells in sorted(csv.DictReader(f), key=lambda c: int(c["repetition"])):
            with open(out / cells["folder"] / "summary.json") as g:
                value = json.load(g)["time_to_target"]
            times.setdefault(cells["scheme"], []).append(value)
    t = float(student_t.ppf(0.975, 5))
    for scheme, values in times.items():
        assert all(isinstance(v, float) for v in values), (scheme, values)
        mean = sum(values) / 6
        se = math.sqrt(sum((v - mean) ** 2 for v in values) / 5 / 6)
        row = rows[scheme]
        assert row["reached"] == 6 and row["runs"] == 6
        assert abs(row["time"] - mean) <= 1e-12 * mean
        assert abs(row["time_low"] - (mean - t * se)) <= 1e-9 * mean
        assert abs(row["time_high"] - (mean + t * se)) <= 1e-9 * mean
    b, y = times["exact FRC d=2"], times["ErasureHead d=2 r=3"]
    r = (sum(b) / 6) / (sum(y) / 6)
    half = t * math.sqrt(sum((bk - r * yk) ** 2 for bk, yk in zip(b, y)) / 5 / 6) / (sum(y) / 6)
    ratio, low, high, n = rows["ErasureHead d=2 r=3"]["vs_exact"]
    assert n == 6
    assert abs(ratio - r) <= 1e-12 * r
    assert abs(low - (r - half)) <= 1e-9 and abs(high - (r + half)) <= 1e-9
    # The speedup over uncoded is summary.csv's: the same formula against the uncoded runs.
    u = times["uncoded"]
    r_u = (sum(u) / 6) / (sum(y) / 6)
    assert abs(rows["ErasureHead d=2 r=3"]["vs_uncoded"][0] - r_u) <= 1e-12 * r_u
    table = protocol_table.markdown(list(rows.values()))
    assert table.count("\n") == 4 and "1 (baseline)" in table
