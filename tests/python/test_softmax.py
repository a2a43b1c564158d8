"""Softmax regression and the mlp through the CLI against independent numpy computations.

The data are drawn here with numpy and handed to the CLI as a CSV file; the loss trajectory of
uncoded full-batch gradient descent is recomputed in numpy from the same numbers by code that
shares nothing with the simulator (docs/model.md, "Multiclass models").
"""

import csv
import json
import subprocess

import numpy as np

from conftest import CLI


def write_data(path, m=60, p=4, classes=3, seed=5):
    """A CSV of m rows: p N(0, 1) features shifted by the class, then an integer label."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=m)
    centres = rng.normal(size=(classes, p))
    features = centres[labels] + rng.normal(size=(m, p))
    header = ",".join([f"a{j}" for j in range(p)] + ["label"])
    np.savetxt(path, np.column_stack([features, labels]), delimiter=",", fmt="%.17g",
               header=header, comments="")
    return features, labels


def config(path, loss, iterations=50, step=0.5, code=None, extra=None):
    c = {
        "name": "softmax", "seed": 4, "workers": 4,
        "data": {"source": "csv", "path": str(path), "test_fraction": 0.0},
        "loss": loss,
        "code": code or {"kind": "uncoded"},
        "stopping": {"rule": "all"},
        "delay": {"kind": "shifted_exponential"},
        "optimizer": {"kind": "gd", "step": step, "iterations": iterations},
    }
    c.update(extra or {})
    return c


def run(tmp_path, cfg, name="out"):
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    out = tmp_path / name
    return subprocess.run([CLI, "run", str(tmp_path / "c.json"), "--out", str(out)],
                          capture_output=True, text=True), out


def trace_losses(out):
    with open(out / "trace.csv") as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


def numpy_softmax_loss_gradient(a, y, classes, l2, w):
    """f(W) = mean(logsumexp(A W) - (A W)[y]) + (l2/2) |W|^2 and its gradient, in numpy."""
    m = a.shape[0]
    s = a @ w
    lse = np.logaddexp.reduce(s, axis=1)
    loss = np.mean(lse - s[np.arange(m), y]) + 0.5 * l2 * np.sum(w * w)
    prob = np.exp(s - lse[:, None])
    return loss, a.T @ (prob - np.eye(classes)[y]) / m + l2 * w


def numpy_softmax_gd(a, y, classes, l2, step, iterations):
    """f(W_t) for t = 0 … iterations of W <- W - step grad f(W), W = 0 (p x classes)."""
    w = np.zeros((a.shape[1], classes))
    losses = []
    for _ in range(iterations + 1):
        loss, gradient = numpy_softmax_loss_gradient(a, y, classes, l2, w)
        losses.append(loss)
        w = w - step * gradient
    return losses


def numpy_heavy_ball_cosine(a, y, classes, l2, step, momentum, floor, iterations):
    """The same trajectory under heavy-ball momentum and the cosine schedule (docs/model.md §2):
    v <- m v + g, W <- W - step_t v, step_t = step (f + (1 - f)(1 + cos(pi t / T)) / 2)."""
    w = np.zeros((a.shape[1], classes))
    v = np.zeros_like(w)
    losses = []
    for t in range(iterations + 1):
        loss, gradient = numpy_softmax_loss_gradient(a, y, classes, l2, w)
        losses.append(loss)
        v = momentum * v + gradient
        gamma = step * (floor + (1 - floor) * 0.5 * (1 + np.cos(np.pi * t / iterations)))
        w = w - gamma * v
    return losses


def test_softmax_trajectory_equals_numpy(tmp_path):
    a, y = write_data(tmp_path / "d.csv")
    l2 = 1e-3
    result, out = run(tmp_path, config(tmp_path / "d.csv", {"kind": "softmax", "l2": l2}))
    assert result.returncode == 0, result.stderr
    got = trace_losses(out)
    want = numpy_softmax_gd(a, y, 3, l2, 0.5, 50)
    assert len(got) == 51
    for t, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= 1e-12 * abs(w), f"iteration {t}: {g} != {w}"
    assert got[-1] < 0.7 * got[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["loss"]["classes"] == 3


def test_softmax_confusion_counts_in_summary(tmp_path):
    write_data(tmp_path / "d.csv", m=90)
    cfg = config(tmp_path / "d.csv", {"kind": "softmax", "l2": 1e-3}, iterations=20)
    cfg["data"]["test_fraction"] = 0.3
    result, out = run(tmp_path, cfg)
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    confusion = summary["test_confusion"]
    assert confusion["classes"] == 3
    counts = np.array(confusion["counts"])
    assert counts.shape == (3, 3) and counts.sum() == 27
    assert summary["test_metric"] == "accuracy"
    assert abs(np.trace(counts) / 27 - summary["final_test_metric"]) <= 1e-15
    for t in range(3):
        if counts[t].sum() > 0:
            assert abs(confusion["class_accuracy"][t] - counts[t, t] / counts[t].sum()) <= 1e-15


def test_bad_multiclass_configs_exit_2_with_the_pointer(tmp_path):
    write_data(tmp_path / "d.csv")
    cases = [
        ({"kind": "softmax", "classes": 2},
         "c.json:/loss/classes: a training or test label is outside the classes; got 2.0; "
         "expected integer labels 0 to 1 (classes = 2)"),
        ({"kind": "mlp", "hidden": [0]},
         "c.json:/loss/hidden: a hidden layer has no units; got 0; expected widths >= 1"),
        ({"kind": "mlp", "hidden": []},
         "c.json:/loss/hidden: not a list of layer widths; got []; expected a non-empty list of "
         "integer widths >= 1 (e.g. [128]; \"softmax\" for no hidden layer)"),
        ({"kind": "mlp", "activation": ""},
         "c.json:/loss/activation: unknown activation ''; valid values are: relu, tanh"),
    ]
    for loss, message in cases:
        result, _ = run(tmp_path, config(tmp_path / "d.csv", loss))
        assert result.returncode == 2, (loss, result.stderr)
        assert result.stderr.strip().endswith(message), result.stderr
    # A label that is not a class index.
    text = (tmp_path / "d.csv").read_text().splitlines()
    text[3] = ",".join(text[3].split(",")[:-1] + ["1.5"])
    (tmp_path / "e.csv").write_text("\n".join(text) + "\n")
    result, _ = run(tmp_path, config(tmp_path / "e.csv", {"kind": "softmax"}))
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "c.json:/loss/kind: a training or test label is not a class index; got 1.5; expected "
        "integer labels 0 to 2 (classes = 3, the largest label + 1)"), result.stderr
    # step "auto" needs a smoothness bound, which the mlp has not.
    result, _ = run(tmp_path, config(tmp_path / "d.csv", {"kind": "mlp"}, step="auto"))
    assert result.returncode == 2
    assert "c.json:/optimizer/step: \"auto\" (1/beta) needs a smoothness bound" in result.stderr


def test_mlp_theory_has_no_bound_but_times(tmp_path):
    write_data(tmp_path / "d.csv")
    cfg = config(tmp_path / "d.csv", {"kind": "mlp", "hidden": [8], "activation": "tanh"})
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    result = subprocess.run([CLI, "theory", str(tmp_path / "c.json"), "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    theory = json.loads(result.stdout)
    assert theory["bound"] is None
    assert "not convex" in theory["bound_problem"]
    assert theory["expected_iteration_time"] > 0


def test_momentum_and_cosine_schedule_trajectory_equals_numpy(tmp_path):
    a, y = write_data(tmp_path / "d.csv")
    l2 = 1e-3
    cfg = config(tmp_path / "d.csv", {"kind": "softmax", "l2": l2}, iterations=40)
    cfg["optimizer"].update({"momentum": 0.8, "schedule": {"kind": "cosine", "floor": 0.1}})
    result, out = run(tmp_path, cfg)
    assert result.returncode == 0, result.stderr
    got = trace_losses(out)
    want = numpy_heavy_ball_cosine(a, y, 3, l2, 0.5, 0.8, 0.1, 40)
    plain = numpy_softmax_gd(a, y, 3, l2, 0.5, 40)
    assert len(got) == 41
    for t, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= 1e-12 * abs(w), f"iteration {t}: {g} != {w}"
    # Not plain gradient descent: the schedule and the momentum both act.
    assert abs(got[-1] - plain[-1]) > 1e-3 * plain[-1]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["optimizer"]["schedule"] == {"kind": "cosine", "floor": 0.1}


def read_bytes(out, name="trace.csv"):
    return (out / name).read_bytes()


def test_mlp_minibatch_is_the_same_bytes_for_threads_backends_and_jobs(tmp_path):
    """The mlp with minibatch SGD, momentum and a 1/t schedule: the same trace and summary for
    every thread count, the loss trajectory of the simulated clock on the threaded backend
    (full batch there: real backends take no batch), and a sweep's runs for every --jobs."""
    write_data(tmp_path / "d.csv", m=120, p=5)
    loss = {"kind": "mlp", "hidden": [6, 4], "activation": "tanh", "l2": 1e-3}
    cfg = config(tmp_path / "d.csv", loss, iterations=30, step=0.3,
                 code={"kind": "frc", "d": 2})
    cfg["stopping"] = {"rule": "first_r", "r": 2}
    cfg["optimizer"].update({"batch": 10, "momentum": 0.9,
                             "schedule": {"kind": "inverse_t", "half_life": 10}})
    outputs = []
    for threads in (1, 2, 3):
        cfg["threads"] = threads
        result, out = run(tmp_path, cfg, name=f"t{threads}")
        assert result.returncode == 0, result.stderr
        summary = json.loads((out / "summary.json").read_text())
        # Measured real times (docs/model.md §7: outside the same-bytes guarantee).
        for measured in ("wall_clock_seconds", "f_star_seconds", "plan_seconds",
                         "predictions_seconds", "iterations_seconds", "writing_seconds",
                         "data_bytes_read"):
            summary.pop(measured, None)
        outputs.append((read_bytes(out), summary))
    assert outputs[0] == outputs[1] == outputs[2]
    losses = trace_losses(tmp_path / "t1")
    assert losses[-1] < 0.8 * losses[0]

    # Uncoded, every worker waited for: the threaded backend computes the same iterates.
    full = config(tmp_path / "d.csv", loss, iterations=15, step=0.3)
    full["optimizer"].update({"momentum": 0.5, "schedule": {"kind": "cosine"}})
    result, simulated = run(tmp_path, full, name="simulated")
    assert result.returncode == 0, result.stderr
    full["backend"] = {"kind": "threads", "seconds_per_unit": 0.001, "timeout": 20}
    result, threaded = run(tmp_path, full, name="threaded")
    assert result.returncode == 0, result.stderr
    assert trace_losses(simulated) == trace_losses(threaded)

    sweep = {"name": "mlp", "base": cfg, "repetitions": 2,
             "schemes": [{"name": "uncoded", "/code": {"kind": "uncoded"},
                          "/stopping": {"rule": "all"}},
                         {"name": "erasurehead", "/code": {"kind": "frc", "d": 2},
                          "/stopping": {"rule": "first_r", "r": 2}}]}
    del sweep["base"]["threads"]
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    traces = []
    for jobs in (1, 2):
        out = tmp_path / f"sweep{jobs}"
        result = subprocess.run([CLI, "sweep", str(tmp_path / "s.json"), "--out", str(out),
                                 "--jobs", str(jobs)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        traces.append((read_bytes(out, "traces.csv"), read_bytes(out, "summary.csv")))
    assert traces[0] == traces[1]
