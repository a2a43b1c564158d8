#!/usr/bin/python3
"""The what-if analysis of an op timeline as figures (docs/whatif.md).

    /usr/bin/python3 plots/plot_whatif.py heatmap RESULT.json --out HEATMAP.png
    /usr/bin/python3 plots/plot_whatif.py mitigations A.json [B.json ...] --out BARS.png

RESULT.json is what `stragglersim whatif TIMELINE --json` prints. `heatmap`: step × data-parallel
rank, each cell the step's slowdown with only that replica measured (the per-step S_w of
`steps.<step>.by_dp_rank`, as the paper's Fig. 14 over time), colour from 1 to the largest value.
`mitigations`: per result (labelled by its file name), the slowdown S and the slowdown left by
each mitigation (a)–(d), with 1 (no straggler) as a line.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MITIGATIONS = [("backup_replicas", "(a) backup"), ("drop_compute", "(b) DropCompute"),
               ("rebalance_stages", "(c) rebalance"), ("replicate_slowest", "(d) repetition")]


def heatmap_rows(result):
    """(steps in increasing order, rows [step][dp rank] of per-step S_w)."""
    steps = sorted(result["steps"], key=int)
    return [int(s) for s in steps], [result["steps"][s]["by_dp_rank"] for s in steps]


def draw_heatmap(result, title=""):
    steps, rows = heatmap_rows(result)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.25 * len(rows[0]) + 2), max(3.0, 0.12 * len(rows) + 1.5)))
    image = ax.imshow(rows, aspect="auto", cmap="Reds", vmin=1.0,
                      vmax=max(1.0001, max(max(r) for r in rows)), interpolation="nearest")
    ax.set_xlabel("data-parallel rank")
    ax.set_ylabel("step")
    ax.set_yticks(range(len(steps)))
    ax.set_yticklabels([str(s) for s in steps], fontsize=5)
    fig.colorbar(image, ax=ax, label="step slowdown, only this replica measured")
    ax.set_title(title or f"S = {result['slowdown']:.3f}")
    fig.tight_layout()
    return fig


def mitigation_bars(results):
    """Per result: (label, [S, slowdown left by each mitigation or NaN when not run])."""
    out = []
    for label, r in results:
        values = [r["slowdown"]]
        values += [r["mitigations"].get(key, {}).get("slowdown", float("nan")) for key, _ in MITIGATIONS]
        out.append((label, values))
    return out


def draw_mitigations(results):
    bars = mitigation_bars(results)
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(bars), 3.4))
    names = ["measured (S)"] + [name for _, name in MITIGATIONS]
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        ax.bar([i + (k - (len(names) - 1) / 2) * width for i in range(len(bars))],
               [values[k] for _, values in bars], width=width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([label for label, _ in bars])
    ax.set_ylabel("mean step time / ideal")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def label_of(path):
    return os.path.basename(path).split(".")[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["heatmap", "mitigations"])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    loaded = []
    for path in args.results:
        with open(path) as f:
            loaded.append((label_of(path), json.load(f)))
    if args.kind == "heatmap":
        fig = draw_heatmap(loaded[0][1], loaded[0][0])
    else:
        fig = draw_mitigations(loaded)
    fig.savefig(args.out, dpi=150)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
