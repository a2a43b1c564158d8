#!/usr/bin/env python3
"""Checks that a figure plots exactly the data of the CSV it came from."""
import contextlib
import io
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_check  # noqa: E402
import test_plot_paper  # noqa: E402
import plot_theory_vs_measured  # noqa: E402
import test_plot_sweep  # noqa: E402
import test_plot_sweep_folder  # noqa: E402
import plot_traces  # noqa: E402
import plot_real_traces  # noqa: E402
import plot_nonconvex  # noqa: E402
import plot_whatif  # noqa: E402

CSV = """iteration,time,iteration_time,loss,grad_norm,decoding_error,gradient_error,gradient_error_relative,workers_heard,partitions_covered
0,0,0,0.6931471805599453,0.5,0,,,0,0
1,3.25,3.25,0.5,0.25,2,0.3,0.6,15,28
2,5.5,2.25,0.4,0.125,4,0.2,0.8,15,26
"""


SPEEDUP = """workers,predicted_speedup,measured_speedup,measured_se
8,1.1373,1.14,0.002
16,1.3172,1.31,0.003
"""


def check_speedup_figure():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "speedup.csv")
        with open(path, "w") as f:
            f.write(SPEEDUP)
        fig = plot_check.plot_speedup(plot_check.read_rows(path))
        (ax,) = fig.axes
        predicted = ax.get_lines()[0]
        assert list(predicted.get_xdata()) == [8.0, 16.0]
        assert list(predicted.get_ydata()) == [1.1373, 1.3172]
        assert ax.get_xscale() == "log"
        assert "workers" in ax.get_xlabel()


THEORY = """iteration,measured_mean,measured_se,exact,bound
0,0.5,0,0.5,0.5
1,0.1,0.01,0.11,0.4
2,0.05,0.005,0.052,
"""


def theory_axes(text):
    """The single panel plot_theory_vs_measured draws from a CSV holding `text`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "curves.csv")
        with open(path, "w") as f:
            f.write(text)
        fig = plot_theory_vs_measured.plot([("ls", plot_theory_vs_measured.read_curves(path))])
    (ax,) = fig.axes
    return ax


def check_theory_figure():
    ax = theory_axes(THEORY)
    measured, exact, bound = ax.get_lines()
    assert list(measured.get_ydata()) == [0.5, 0.1, 0.05]
    assert list(exact.get_ydata()) == [0.5, 0.11, 0.052]
    assert list(bound.get_ydata())[:2] == [0.5, 0.4]
    assert ax.get_yscale() == "log"
    # With the sd columns: two more lines, the exact sd cut where it stops.
    ax = theory_axes(THEORY_SD)
    _, _, _, measured_sd, exact_sd = ax.get_lines()
    # t = 0 has sd 0 (deterministic): left off the log axis.
    assert math.isnan(measured_sd.get_ydata()[0])
    assert list(measured_sd.get_ydata())[1:] == [0.14, 0.07]
    assert math.isnan(exact_sd.get_ydata()[0]) and math.isnan(exact_sd.get_ydata()[2])
    assert exact_sd.get_ydata()[1] == 0.15


THEORY_SD = """iteration,measured_mean,measured_se,exact,bound,measured_sd,exact_sd
0,0.5,0,0.5,0.5,0,0
1,0.1,0.01,0.11,0.4,0.14,0.15
2,0.05,0.005,0.052,,0.07,
"""


# The convex route lowers the bound at t = 2..4; the fit (floor 0.01, rate 0.5 on t = 1..4) is
# exact on this mean: 0.01 + 0.4·0.5^(t−1).
THEORY_FIT = """iteration,measured_mean,measured_se,exact,bound,measured_sd,exact_sd,measured_sd_se,bound_pl_routes
0,0.41,0,,0.41,0,,0,0.41
1,0.41,0.01,,0.9,0.1,,0.01,0.9
2,0.21,0.01,,0.6,0.1,,0.01,0.95
3,0.11,0.01,,0.3,0.1,,0.01,0.97
4,0.06,0.01,,0.2,0.1,,0.01,0.98
5,0.01,0.001,,0.2,0.1,,0.01,0.99
"""


def check_theory_fit_figure(tmp):
    """With bound_pl_routes different from bound and the theory JSON beside the CSV: the PL
    routes' bound, the fitted decay through the measured mean, and the fitted floor."""
    path = os.path.join(tmp, "fit.csv")
    with open(path, "w") as f:
        f.write(THEORY_FIT)
    with open(os.path.join(tmp, "fit.json"), "w") as f:
        json.dump({"measured_floor": 0.01, "measured_rate": 0.5,
                   "measured_rate_window": [1, 4]}, f)
    fig = plot_theory_vs_measured.plot([("logistic", plot_theory_vs_measured.read_curves(path))])
    (ax,) = fig.axes
    lines = ax.get_lines()
    labels = [line.get_label() for line in lines]
    assert labels[:2] == ["measured mean (±4 s.e.)", "coded bound"], labels
    pl = lines[2]
    assert list(pl.get_ydata()) == [0.41, 0.9, 0.95, 0.97, 0.98, 0.99]
    fitted = lines[3]
    assert list(fitted.get_xdata()) == [1, 2, 3, 4]
    for y, want in zip(fitted.get_ydata(), [0.41, 0.21, 0.11, 0.06]):
        assert abs(y - want) < 1e-12, (y, want)
    assert labels[4] == "fitted floor 0.01" and list(lines[4].get_ydata()) == [0.01, 0.01]
    # Without the JSON, and with bound_pl_routes equal to bound: neither.
    os.remove(os.path.join(tmp, "fit.json"))
    rows = [line.split(",") for line in THEORY_FIT.strip().splitlines()]
    same = "\n".join(",".join(r[:-1] + [r[4] if i else r[-1]]) for i, r in enumerate(rows))
    with open(path, "w") as f:
        f.write(same + "\n")
    fig = plot_theory_vs_measured.plot([("logistic", plot_theory_vs_measured.read_curves(path))])
    assert len(fig.axes[0].get_lines()) == 2


DELAY_ONLY = """iteration,time,iteration_time,workers_heard,partitions_covered
0,0,0,0,0
1,2,2,30,30
2,6,4,30,30
3,9,3,30,30
"""


def check_delay_only_trace(tmp):
    """A delay-only trace (no loss column) draws the iteration-time histogram and the running
    mean against the theory's value, instead of failing with KeyError 'loss'."""
    path = os.path.join(tmp, "delay.csv")
    with open(path, "w") as f:
        f.write(DELAY_ONLY)
    out = os.path.join(tmp, "delay.png")
    assert plot_traces.main(["--out", out, "--expected-iteration-time", "3.5", f"u={path}"]) == 0
    assert os.path.getsize(out) > 1000
    fig = plot_traces.plot_iteration_times([("u", plot_traces.read_trace(path))], 3.5)
    ax_hist, ax_mean = fig.axes
    running, theory = ax_mean.get_lines()
    assert list(running.get_xdata()) == [1, 2, 3]
    assert list(running.get_ydata()) == [2.0, 3.0, 3.0]  # 2, (2+4)/2, (2+4+3)/3
    assert list(theory.get_ydata()) == [3.5, 3.5]
    assert sum(p.get_height() * p.get_width() for p in ax_hist.patches) == \
        __import__("pytest").approx(1.0)


def check_suboptimality(tmp):
    """f - f* curves, repetition bands and time-to-level bars from the traces' rows."""
    f_star = 0.1
    rows_a = [(0, 0.0, 1.1), (1, 2.0, 0.2), (2, 4.0, 0.11), (3, 6.0, 0.1001)]
    rows_b = [(0, 0.0, 1.1), (1, 3.0, 0.3), (2, 6.0, 0.25), (3, 9.0, 0.15)]
    rows_c = [(0, 0.0, 1.1), (1, 1.0, 0.2), (2, 2.0, 0.15), (3, 7.0, 0.1005)]

    def write(name, rows):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write("iteration,time,iteration_time,loss\n")
            for it, t, loss in rows:
                f.write(f"{it},{t},0,{loss}\n")
        return plot_traces.read_trace(path)

    a, b, c = write("a.csv", rows_a), write("b.csv", rows_b), write("c.csv", rows_c)
    # Relative levels: gap0 = 1.0, so level 1e-1 is f - f* <= 0.1, 1e-2 is <= 0.01.
    assert plot_traces.time_to_level(a, f_star, 1e-1) == 2.0
    assert plot_traces.time_to_level(a, f_star, 1e-2) == 4.0
    assert plot_traces.time_to_level(a, f_star, 1e-3) == 6.0
    assert plot_traces.time_to_level(b, f_star, 1e-2) is None
    assert plot_traces.value_at(a, "loss", 3.9) == 0.2
    fig, times = plot_traces.plot_suboptimality([("A", [a, c]), ("B", [b])], f_star)
    # The common budget is the smallest last time: 6 s (A's first repetition).
    assert times["A"][1e-1] == (1.5, 0.5)  # mean of 2 and 1 s, standard error 0.5
    assert times["A"][1e-2] is None        # repetition c reaches 0.01 only at 7 s > 6 s
    assert times["B"][1e-1] is None
    ax_curve, ax_bars = fig.axes
    line_a = ax_curve.get_lines()[0]
    xs, ys = list(line_a.get_xdata()), list(line_a.get_ydata())
    assert xs[0] == 0.0 and xs[-1] == 6.0
    # At t = 6: repetition a has f = 0.1001, c has f = 0.15 (its next row is at 7 s).
    assert abs(ys[-1] - ((0.1001 - 0.1) + (0.15 - 0.1)) / 2) < 1e-12
    assert ax_curve.get_yscale() == "log"
    assert len(ax_curve.collections) == 1  # one band: only A has repetitions
    heights = sorted(round(p.get_height(), 9) for p in ax_bars.patches)
    # A at 1e-1 (1.5), A not reached twice (budget 6), B not reached three times (budget 6)
    assert heights == [1.5, 6.0, 6.0, 6.0, 6.0, 6.0], heights
    # A --time-budget past the shortest run's end is clipped to it, and said so.
    with contextlib.redirect_stderr(io.StringIO()) as err:
        fig, _ = plot_traces.plot_suboptimality([("A", [a, c]), ("B", [b])], f_star, budget=10.0)
    assert ("plot_traces: --time-budget 10 s is past the end of the shortest run (A, 6 s): the "
            "figure stops at 6 s") in err.getvalue(), err.getvalue()
    ax_curve = fig.axes[0]
    assert "common time budget 6 s (asked 10 s: the shortest run ends there)" in \
        ax_curve.get_title(), ax_curve.get_title()
    test_plot_sweep.check_readable_ticks(fig, ax_curve)


def check_regime_map(tmp):
    """Speedups of the map are K_base E[T_base] / (K_EH E[T_EH]) and the boundary reads them."""
    import plot_regime_map
    times = {}
    for rate in (10.0, 1.0):
        for size in (0.0, 1.0 / 30):  # communication shares 0 and 30 t / (30 t + 1) = 0.5
            times[(30, rate, size, "uncoded")] = 1.0 + 4.0 / rate + 30 * size
            times[(30, rate, size, "exact FRC")] = 2.0 + 3.0 / rate + 22 * size
            times[(30, rate, size, "ErasureHead")] = 2.0 + 1.35 / rate + 15 * size
    iters = {(30, "uncoded"): 40.0, (30, "exact FRC"): 40.0, (30, "ErasureHead"): 60.0}
    ratios, shares, grid = plot_regime_map.speedup_grid(times, iters, 30, "uncoded")
    assert ratios == [0.1, 1.0] and abs(shares[0]) == 0.0 and abs(shares[1] - 0.5) < 1e-12
    assert abs(grid[0][1] - 40 * 5.0 / (60 * 3.35)) < 1e-12    # 0.995: just slower
    assert abs(grid[1][0] - 40 * 2.4 / (60 * 2.635)) < 1e-12
    assert abs(grid[1][1] - 40 * 6.0 / (60 * 3.85)) < 1e-12    # 1.039: faster
    edges = plot_regime_map.boundary(ratios, shares, grid)
    assert edges == [(0.0, None), (shares[1], 1.0)], edges
    # The interval of one cell from two seeds of each kind of run, by hand: each factor's
    # paired delta-method s.e., their relative errors added in quadrature, t with 1 d.o.f.
    seed_k = {(30, "uncoded"): {0: 40, 1: 42}, (30, "ErasureHead"): {0: 60, 1: 58}}
    seed_t = {(30, 1.0, 0.0, "uncoded"): {0: 5.0, 1: 5.2},
              (30, 1.0, 0.0, "ErasureHead"): {0: 3.3, 1: 3.4}}
    rk, rt = 82 / 118, 10.2 / 6.7
    se_k = math.sqrt(((40 - rk * 60) ** 2 + (42 - rk * 58) ** 2) / 2) / 59
    se_t = math.sqrt(((5.0 - rt * 3.3) ** 2 + (5.2 - rt * 3.4) ** 2) / 2) / 3.35
    half = 12.706204736 * rk * rt * math.sqrt((se_k / rk) ** 2 + (se_t / rt) ** 2)
    low, high = plot_regime_map.speedup_interval(seed_k, seed_t, 30, 1.0, 0.0, "uncoded")
    assert abs(low - (rk * rt - half)) < 1e-8 and abs(high - (rk * rt + half)) < 1e-8, (low, high)
    # One seed: no interval.
    one = {k: {0: v[0]} for k, v in seed_k.items()}
    assert all(math.isnan(x) for x in plot_regime_map.speedup_interval(one, seed_t, 30, 1.0, 0.0,
                                                                      "uncoded"))


def check_real_traces_figure():
    """Each panel's bars are the summary's predicted and replayed times, with the t interval."""
    rows = [{"scheme": "uncoded", "predicted": 120.0, "replayed": 118.0, "replayed_se": 2.0,
             "runs": 10},
            {"scheme": "exact frc d=2", "predicted": 90.5, "replayed": 95.0, "replayed_se": 1.5,
             "runs": 10}]
    results = [{"trace": "t1", "workers": 4, "chosen_model": "block replay",
                "recommended": "exact frc d=2", "time_to_target": rows},
               {"trace": "t2", "workers": 2, "chosen_model": "empirical",
                "recommended": "uncoded", "time_to_target": rows[:1]}]
    fig = plot_real_traces.draw(results)
    first, second = fig.axes[0], fig.axes[1]
    heights = [p.get_height() for p in first.patches]
    assert heights == [120.0, 90.5, 118.0, 95.0], heights
    assert [p.get_height() for p in second.patches] == [120.0, 118.0]
    # scipy's t quantile for 9 degrees of freedom: 2.2621571627409915.
    (bars,) = [c for c in first.containers if getattr(c, "errorbar", None) is not None]
    segments = bars.errorbar.lines[2][0].get_segments()
    widths = [seg[1][1] - seg[0][1] for seg in segments]
    assert all(abs(w - 2 * 2.2621571627409915 * se) < 1e-9 for w, se in zip(widths, [2.0, 1.5])), widths
    assert "exact frc d=2 *" in [t.get_text() for t in first.get_xticklabels()]
    assert len([a for a in fig.axes if a.axison]) == 2


def write_nonconvex_sweep(folder):
    """A sweep folder of two schemes x two repetitions with hand-made traces."""
    import json
    runs = {("a", 0): [(0, 0.0, 2.0, 1.0, 0.1), (1, 1.0, 1.0, 0.5, 0.5), (2, 2.0, 0.5, 0.2, 0.7)],
            ("a", 1): [(0, 0.0, 2.0, 1.0, 0.1), (1, 1.5, 1.5, 0.6, 0.4), (2, 3.0, 0.9, 0.3, 0.6)],
            ("b", 0): [(0, 0.0, 2.0, 1.0, 0.1), (1, 0.5, 1.2, 0.7, 0.3), (2, 1.0, 0.8, 0.6, 0.5)],
            ("b", 1): [(0, 0.0, 2.0, 1.0, 0.1), (1, 0.4, 1.4, 0.8, 0.2), (2, 0.9, 1.0, 0.5, 0.4)]}
    index = ["index,repetition,seed,scheme,folder"]
    for k, ((scheme, rep), rows) in enumerate(runs.items()):
        sub = f"runs/{scheme}{rep}"
        os.makedirs(os.path.join(folder, sub))
        index.append(f"{k},{rep},{k},{scheme},{sub}")
        with open(os.path.join(folder, sub, "trace.csv"), "w") as f:
            f.write("iteration,time,loss,grad_norm,test_metric\n")
            f.writelines(",".join(str(v) for v in row) + "\n" for row in rows)
        with open(os.path.join(folder, sub, "summary.json"), "w") as f:
            json.dump({"wall_clock_seconds": 0.3 * (k + 1)}, f)
    with open(os.path.join(folder, "index.csv"), "w") as f:
        f.write("\n".join(index) + "\n")


def check_nonconvex_figure(tmp):
    """The bands are the mean and 95 % t interval of the runs' step functions; the table's
    values are those at the common end, the seconds per row wall time over trace rows."""
    folder = os.path.join(tmp, "nonconvex")
    write_nonconvex_sweep(folder)
    traces, index = plot_nonconvex.read_sweep(folder)
    bands, end = plot_nonconvex.curves(traces, "loss", "time", points=3)
    assert end == 0.9  # the smallest last time: scheme b, repetition 1
    grid, mean, low, high, n = bands["a"]
    assert list(grid) == [0.0, 0.45, 0.9] and n == 2
    assert list(mean) == [2.0, 2.0, 2.0]  # scheme a has no row before t = 1
    grid, mean, low, high, n = bands["b"]
    # At 0.45: rows at 0.0 (2.0) and 0.4 (1.4); at 0.9: 0.5 (1.2) and 0.9 (1.0).
    assert abs(mean[1] - 1.7) < 1e-15 and abs(mean[2] - 1.1) < 1e-15
    t = 12.706204736174698  # Student's t, 0.975 quantile, 1 degree of freedom
    assert abs((high[2] - mean[2]) - t * 0.1) < 1e-9, high[2] - mean[2]
    by_iteration, last = plot_nonconvex.curves(traces, "grad_norm", "iteration", points=3)
    assert last == 2.0 and abs(by_iteration["a"][1][2] - 0.25) < 1e-15
    rows = plot_nonconvex.table_rows("x", folder, traces, index, "iteration", 2.0)
    a, b = rows
    assert a["scheme"] == "a" and a["runs"] == 2
    assert abs(a["loss_mean"] - 0.7) < 1e-15 and abs(a["test_accuracy_mean"] - 0.65) < 1e-15
    assert abs(a["loss_ci95"] - t * 0.2) < 1e-9
    assert abs(a["mean_iteration_time"] - 1.25) < 1e-15  # (2/2 + 3/2) / 2
    assert abs(a["seconds_per_row"] - (0.3 / 3 + 0.6 / 3) / 2) < 1e-15
    assert abs(b["seconds_per_row"] - (0.9 / 3 + 1.2 / 3) / 2) < 1e-15


def check_whatif_figures():
    """The heatmap's cells are the per-step S_w in step order; the bars are S and each
    mitigation's slowdown, NaN for one that was not run."""
    result = {"slowdown": 1.5,
              "steps": {"10": {"by_dp_rank": [1.0, 1.25]}, "2": {"by_dp_rank": [1.5, 1.0]}},
              "mitigations": {"backup_replicas": {"slowdown": 1.1},
                              "drop_compute": {"slowdown": 1.2},
                              "rebalance_stages": {"slowdown": 1.3}}}
    steps, rows = plot_whatif.heatmap_rows(result)
    assert steps == [2, 10] and rows == [[1.5, 1.0], [1.0, 1.25]], (steps, rows)
    fig = plot_whatif.draw_heatmap(result, "t")
    (image,) = fig.axes[0].get_images()
    assert image.get_array().tolist() == [[1.5, 1.0], [1.0, 1.25]]
    assert image.get_clim() == (1.0, 1.5)
    ((label, values),) = plot_whatif.mitigation_bars([("t", result)])
    assert label == "t" and values[:4] == [1.5, 1.1, 1.2, 1.3] and math.isnan(values[4]), values
    fig = plot_whatif.draw_mitigations([("t", result)])
    heights = [p.get_height() for p in fig.axes[0].patches]
    assert heights[:4] == [1.5, 1.1, 1.2, 1.3], heights


def main():
    check_whatif_figures()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.csv")
        with open(path, "w") as f:
            f.write(CSV)
        trace = plot_traces.read_trace(path)
        fig = plot_traces.plot([("scheme", trace)])
        ax_time, ax_iter = fig.axes
        (line,) = ax_time.get_lines()
        assert list(line.get_xdata()) == [0.0, 3.25, 5.5], line.get_xdata()
        assert list(line.get_ydata()) == [0.6931471805599453, 0.5, 0.4], line.get_ydata()
        (line,) = ax_iter.get_lines()
        assert list(line.get_xdata()) == [0.0, 1.0, 2.0]
        assert ax_time.get_xlabel() == "simulated time (s)"
        assert ax_time.get_yscale() == "log"
        out = os.path.join(tmp, "fig.png")
        assert plot_traces.main(["--out", out, f"s={path}"]) == 0
        assert os.path.getsize(out) > 1000
        check_delay_only_trace(tmp)
        check_suboptimality(tmp)
        check_regime_map(tmp)
        check_nonconvex_figure(tmp)
    check_speedup_figure()
    check_theory_figure()
    with tempfile.TemporaryDirectory() as tmp:
        check_theory_fit_figure(tmp)
    check_real_traces_figure()
    test_plot_paper.check_paper_figures()
    test_plot_sweep.check_sweep_plot()
    test_plot_sweep.check_narrow_axes()
    test_plot_sweep_folder.check_sweep_folder()
    print("plots: figure data matches its CSV (ok)")


if __name__ == "__main__":
    main()
