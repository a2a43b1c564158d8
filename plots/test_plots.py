#!/usr/bin/env python3
"""Checks that a figure plots exactly the data of the CSV it came from."""
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_check  # noqa: E402
import test_plot_paper  # noqa: E402
import plot_theory_vs_measured  # noqa: E402
import test_plot_sweep  # noqa: E402
import plot_traces  # noqa: E402

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


def main():
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
    check_speedup_figure()
    check_theory_figure()
    test_plot_paper.check_paper_figures()
    test_plot_sweep.check_sweep_plot()
    print("plots: figure data matches its CSV (ok)")


if __name__ == "__main__":
    main()
