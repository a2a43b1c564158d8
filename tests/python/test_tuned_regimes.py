"""experiments/tuned/regimes.py and plot_regimes.py --tuned on a small regime sweep: the tuning
grid is the multipliers times 1/beta of an independent one-iteration run, the objective is the
fixed-step table's level, every scheme's time in the tuned table is re-derived here from the
evaluation's traces at that level, the chosen steps are stated as multiples of 1/beta, the
fixed-step speedups stand beside the tuned ones, and bad input exits 2 naming it."""

import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import CLI, ROOT, small_logistic_sweep_base

SCRIPT = os.path.join(ROOT, "experiments", "tuned", "regimes.py")
MULTIPLIERS = [0.5, 1.0, 4.0]
NAME = "regime_injected_kc_housing_like"
LEVEL = 0.05
SCHEMES = [{"name": "uncoded", "/stopping": {"rule": "all"}},
           {"name": "exact FRC d=2", "/code": {"kind": "frc", "d": 2},
            "/stopping": {"rule": "decodable"}},
           {"name": "ErasureHead d=2 r=4", "/code": {"kind": "frc", "d": 2},
            "/stopping": {"rule": "first_r", "r": 4}}]
FIXED_COLUMNS = ["regime", "workload", "scheme", "runs", "reached", "time", "time_low",
                 "time_high", "vs_uncoded", "vs_uncoded_low", "vs_uncoded_high", "vs_exact_frc",
                 "vs_exact_frc_low", "vs_exact_frc_high", "level", "budget"]


def write_inputs(tmp_path, level=LEVEL):
    base = small_logistic_sweep_base(60)
    base["optimizer"]["time_budget"] = 40.0
    sweep = {"name": NAME, "base": base, "schemes": SCHEMES, "baseline": "uncoded",
             "repetitions": 3}
    paper = tmp_path / "paper"
    paper.mkdir(exist_ok=True)
    (paper / f"{NAME}.json").write_text(json.dumps(sweep))
    fixed = tmp_path / "fixed.csv"
    with open(fixed, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIXED_COLUMNS)
        writer.writeheader()
        for scheme, speedups in (("uncoded", ["", "", "", "0.5", "0.4", "0.6"]),
                                 ("exact FRC d=2", ["1.7", "1.6", "1.8", "", "", ""]),
                                 ("ErasureHead d=2 r=4", ["3.25", "3", "3.5", "1.9", "1.8",
                                                          "2"])):
            writer.writerow(dict(zip(FIXED_COLUMNS, ["injected", "kc_housing_like", scheme,
                                                     "3", "3", "1", "0.9", "1.1"] + speedups
                                     + [str(level), "40"])))
    return paper, fixed


def run_regimes(tmp_path, *extra):
    paper, fixed = write_inputs(tmp_path)
    return subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path / "out"), "--fixed",
                           str(fixed), "--sweeps", str(paper), "--multipliers",
                           ",".join(str(m) for m in MULTIPLIERS), "--jobs", "2", "--binary",
                           CLI, *extra], capture_output=True, text=True)


def auto_step(tmp_path):
    """1/beta from a one-iteration run of the base, computed here."""
    base = small_logistic_sweep_base(1)
    (tmp_path / "one.json").write_text(json.dumps(base))
    result = subprocess.run([CLI, "run", str(tmp_path / "one.json"), "--out",
                             str(tmp_path / "one"), "--quiet"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / "one" / "summary.json").read_text())["step"]


def times_to_level(folder, level):
    """{scheme: [time to the level per repetition]} from traces.csv, recomputed here."""
    runs = {}
    with open(os.path.join(folder, "traces.csv"), newline="") as f:
        for row in csv.DictReader(f):
            runs.setdefault((row["scheme"], row["rep"]), []).append(row)
    times = {}
    for (scheme, _), rows in sorted(runs.items()):
        f_star = float(rows[0]["f_star"])
        start = float(rows[0]["loss"]) - f_star
        hit = next((float(r["time"]) for r in rows
                    if float(r["loss"]) - f_star <= level * start), None)
        times.setdefault(scheme, []).append(hit)
    return times


def test_the_tuned_table_times_each_scheme_at_its_chosen_step(tmp_path):
    result = run_regimes(tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    step = auto_step(tmp_path)
    tuned = json.loads((out / "sweeps" / f"{NAME}.json").read_text())
    assert tuned["tune"]["/optimizer/step"] == pytest.approx([m * step for m in MULTIPLIERS],
                                                             rel=1e-11)
    assert tuned["tune_objective"] == {"suboptimality": LEVEL}
    assert tuned["tuning_repetitions"] == 2
    assert json.loads((out / "sweeps" / "auto_steps.json").read_text())[NAME] == step
    with open(out / "sweeps" / NAME / "tuning.csv", newline="") as f:
        chosen = {r["scheme"]: float(r["optimizer.step"]) for r in csv.DictReader(f)
                  if r["chosen"] == "1"}
    with open(out / "regimes_tuned.csv", newline="") as f:
        table = {r["scheme"]: r for r in csv.DictReader(f)}
    assert set(table) == {s["name"] for s in SCHEMES}
    times = times_to_level(out / "sweeps" / NAME, LEVEL)
    for scheme, row in table.items():
        assert float(row["step"]) == pytest.approx(chosen[scheme], rel=1e-5)
        assert float(row["step_multiple"]) * step == pytest.approx(chosen[scheme], rel=1e-5)
        assert float(row["level"]) == LEVEL
        reached = [t for t in times[scheme] if t is not None]
        assert int(row["reached"]) == len(reached)
        if len(reached) == len(times[scheme]):
            assert float(row["time"]) == pytest.approx(sum(reached) / len(reached), rel=1e-5)
    assert (out / "paper_regime_tuned_injected.png").stat().st_size > 0
    lines = (out / "regimes_tuned.md").read_text().splitlines()
    assert "ErasureHead vs uncoded, tuned | at step 1/β" in lines[0]
    row = lines[2]
    assert row.startswith(f"| injected | kc_housing_like | {LEVEL:g} |")
    # The fixed-step speedups from the fixed table, beside the tuned ones.
    assert "3.25× [3.00, 3.50]" in row and "1.90× [1.80, 2.00]" in row
    eh = table["ErasureHead d=2 r=4"]
    if eh["vs_uncoded"]:
        assert f"{float(eh['vs_uncoded']):.2f}×" in row
    assert f"at {float(eh['step_multiple']):.3g}/β" in row


def times_to_stay(folder, level):
    """{scheme: [time from which the run stays at or below the level, up to the shortest run's
    end, per repetition]} from traces.csv, recomputed here from the last row backwards."""
    runs = {}
    with open(os.path.join(folder, "traces.csv"), newline="") as f:
        for row in csv.DictReader(f):
            runs.setdefault((row["scheme"], row["rep"]), []).append(row)
    budget = min(float(rows[-1]["time"]) for rows in runs.values())
    times = {}
    for (scheme, _), rows in sorted(runs.items()):
        f_star = float(rows[0]["f_star"])
        start = float(rows[0]["loss"]) - f_star
        kept = [r for r in rows if float(r["time"]) <= budget]
        hit = None
        for r in reversed(kept):
            if float(r["loss"]) - f_star > level * start:
                break
            hit = float(r["time"])
        times.setdefault(scheme, []).append(hit)
    return times


def test_sustained_tunes_and_times_the_level_kept(tmp_path):
    result = run_regimes(tmp_path, "--sustained")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    tuned = json.loads((out / "sweeps" / f"{NAME}.json").read_text())
    assert tuned["tune_objective"] == {"suboptimality": LEVEL, "sustained": True}
    with open(out / "regimes_tuned_sustained.csv", newline="") as f:
        table = {r["scheme"]: r for r in csv.DictReader(f)}
    assert set(table) == {s["name"] for s in SCHEMES}
    times = times_to_stay(out / "sweeps" / NAME, LEVEL)
    first = times_to_level(out / "sweeps" / NAME, LEVEL)
    for scheme, row in table.items():
        reached = [t for t in times[scheme] if t is not None]
        assert int(row["reached"]) == len(reached)
        if len(reached) == len(times[scheme]):
            assert float(row["time"]) == pytest.approx(sum(reached) / len(reached), rel=1e-5)
        # Never before the first crossing.
        for kept, crossed in zip(times[scheme], first[scheme]):
            assert kept is None or kept >= crossed
    assert (out / "paper_regime_tuned_sustained_injected.png").stat().st_size > 0
    assert not (out / "regimes_tuned.csv").exists()
    # Only with --tuned.
    plot = subprocess.run([sys.executable, os.path.join(ROOT, "plots", "plot_regimes.py"),
                           "--sweeps", str(out / "sweeps"), "--out", str(tmp_path / "p"),
                           "--sustained"], capture_output=True, text=True)
    assert plot.returncode == 2 and "--sustained: expected --tuned" in plot.stderr


def test_bad_input_exits_2_naming_it(tmp_path):
    result = run_regimes(tmp_path, "--only", "regime_nowhere_x")
    assert result.returncode == 2
    assert "regime_nowhere_x" in result.stderr and NAME in result.stderr
    paper, fixed = write_inputs(tmp_path, level=1.5)
    result = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path / "bad"), "--fixed",
                             str(fixed), "--sweeps", str(paper), "--binary", CLI],
                            capture_output=True, text=True)
    assert result.returncode == 2 and f"{fixed}:2:" in result.stderr
    assert "(0, 1)" in result.stderr
    result = subprocess.run([sys.executable, SCRIPT, "--out", str(tmp_path / "bad"),
                             "--multipliers", "2", "--binary", CLI],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "--multipliers" in result.stderr
    assert not (tmp_path / "bad").exists()
