#!/usr/bin/env python3
"""plot_sweep.py on a hand-made index.csv: points are the means of the repetitions, error bars
their standard errors (computed here independently), lines follow --hue, and user mistakes exit 2.
Run by test_plots.py."""
import contextlib
import io
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_sweep  # noqa: E402

HEADER = ("index,repetition,seed,/code/d,/stopping/r,status,iterations,total_time,"
          "mean_iteration_time,final_loss,best_loss,folder")


def write_index(folder):
    """d in {1, 2, 4} x r in {3, 6} x 2 repetitions; total_time = 10 d + r + 0.5 k (k = rep),
    except one failed run (d = 4, r = 6, k = 1)."""
    lines = [HEADER]
    i = 0
    for d in (1, 2, 4):
        for r in (3, 6):
            for k in (0, 1):
                status = "failed" if (d, r, k) == (4, 6, 1) else "ok"
                total = 10 * d + r + 0.5 * k
                lines.append(f"{i},{k},7,{d},{r},{status},5,{total},{total / 5},0.1,0.1,"
                             f"runs/code.d={d}_stopping.r={r}_rep{k}")
                i += 1
    with open(os.path.join(folder, "index.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def check_readable_ticks(fig, ax):
    """At least two labelled ticks on each axis and no offset or factor text beside them."""
    fig.canvas.draw()
    for axis in (ax.xaxis, ax.yaxis):
        low, high = sorted(axis.get_view_interval())
        shown = [t for t, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels())
                 if low <= t <= high and label.get_text()]
        assert len(shown) >= 2, (axis, shown)
        assert axis.get_offset_text().get_text() == "", axis.get_offset_text().get_text()


def check_narrow_axes():
    """Values 1000.01 .. 1000.03 (an offset axis by default) and a log axis inside one decade
    (one tick by default) get plain labels and two or more ticks."""
    rows = []
    for i, (d, value) in enumerate([(1, 1000.01), (2, 1000.02), (4, 1000.03)]):
        rows.append({"index": str(i), "/code/d": str(d), "total_time": str(value),
                     "status": "ok"})
    for logy in (False, True):
        fig = plot_sweep.plot(rows, "/code/d", "total_time", logy=logy)
        (ax,) = fig.axes
        check_readable_ticks(fig, ax)
        plot_sweep.plt.close(fig)


def check_sweep_plot():
    with tempfile.TemporaryDirectory() as tmp:
        write_index(tmp)
        columns, rows = plot_sweep.read_index(tmp)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            fig = plot_sweep.plot(rows, "/code/d", "total_time", "/stopping/r")
        assert "left out 1 runs" in err.getvalue(), err.getvalue()
        (ax,) = fig.axes
        containers = ax.containers
        assert len(containers) == 2, containers
        # Two repetitions 0.5 apart: mean = first + 0.25; sd = sqrt(2 * 0.25^2 / 1), s.e. =
        # sd / sqrt(2) = 0.25. The failed run leaves d = 4, r = 6 one value, s.e. 0.
        standard_error = math.sqrt(2 * 0.25 ** 2) / math.sqrt(2)
        for container, r in zip(containers, (3, 6)):
            line, _, (bars,) = container
            assert list(line.get_xdata()) == [1.0, 2.0, 4.0], line.get_xdata()
            expected = [10 * d + r + 0.25 for d in (1, 2)] + [40 + r + (0.25 if r == 3 else 0)]
            assert list(line.get_ydata()) == expected, (line.get_ydata(), expected)
            half = [(seg[1][1] - seg[0][1]) / 2 for seg in bars.get_segments()]
            errors = [standard_error, standard_error, standard_error if r == 3 else 0.0]
            assert all(abs(h - e) < 1e-12 for h, e in zip(half, errors)), (half, errors)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["workers waited for r = 3", "workers waited for r = 6"], labels
        assert ax.get_xlabel() == "replication d", ax.get_xlabel()
        assert ax.get_ylabel() == "total simulated time (s), mean ± s.e.", ax.get_ylabel()
        check_readable_ticks(fig, ax)

        out = os.path.join(tmp, "fig.png")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert plot_sweep.main([tmp, "--x", "code.d", "--y", "total_time",
                                    "--hue", "stopping/r", "--out", out]) == 0
            assert os.path.getsize(out) > 1000
            assert plot_sweep.main([tmp, "--x", "/code/d", "--y", "mean_iteration_time"]) == 0
            assert plot_sweep.main([tmp, "--x", "stopping.r", "--y", "total_time",
                                    "--hue", "code.d", "--out", out]) == 0
        assert os.path.isfile(os.path.join(tmp, "mean_iteration_time_vs_code.d.png"))

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert plot_sweep.main([tmp, "--x", "/code/dd", "--y", "total_time"]) == 2
            assert plot_sweep.main([tmp, "--x", "/code/d", "--y", "folder"]) == 2
            assert plot_sweep.main([os.path.join(tmp, "nope"), "--x", "a", "--y", "b"]) == 2
        assert "error: no column '/code/dd' in index.csv; expected one of index," in err.getvalue()
        assert "nothing to plot" in err.getvalue()

    # Categorical x (JSON objects) in index order.
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "index.csv"), "w") as f:
            f.write("index,repetition,seed,/code,status,total_time,folder\n"
                    '0,0,1,"{""kind"":""uncoded""}",ok,3,runs/a\n'
                    '1,0,1,"{""d"":2,""kind"":""frc""}",ok,2,runs/b\n')
        _, rows = plot_sweep.read_index(tmp)
        fig = plot_sweep.plot(rows, "/code", "total_time")
        (ax,) = fig.axes
        line = ax.containers[0][0]
        assert list(line.get_xdata()) == [0, 1]
        assert list(line.get_ydata()) == [3.0, 2.0]
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert ticks == ['{"kind":"uncoded"}', '{"d":2,"kind":"frc"}'], ticks


if __name__ == "__main__":
    check_sweep_plot()
    check_narrow_axes()
    print("plot_sweep: ok")
