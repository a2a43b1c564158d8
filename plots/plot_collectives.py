#!/usr/bin/env python3
"""The master/worker codes beside the all-reduce schemes and the straggler-tolerant collectives,
as one figure and one table.

usage: plot_collectives.py --sweep LABEL=DIR [--sweep LABEL=DIR ...] --out FIG.png --csv TABLE.csv
Each DIR is a finished sweep of experiments/collectives/*.json (a target_loss, every scheme
named by its aggregation: "PS ..." on the parameter server, "ring ..." over a ring all-reduce,
"StragglAR ..."). The figure has one panel per sweep: each scheme's mean time to the target loss
with its 95 % t interval over the seeds (a hollow marker at the right edge for a scheme that
missed the target in some run), coloured by family. The table has one row per sweep and scheme,
as plot_baselines.table_rows. Both outputs are written complete or not at all.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_time_optimal  # noqa: E402

# Families, by the prefix of the scheme's name (the longest matching prefix wins).
FAMILY = {"PS": "parameter server", "ring uncoded": "all-reduce",
          "ring ErasureHead": "code over all-reduce", "ring exact FRC": "code over all-reduce",
          "ring backup": "changed collective", "ring bounded-time": "changed collective",
          "ring DropCompute": "changed collective", "StragglAR": "changed collective"}
COLOURS = {"parameter server": "tab:blue", "all-reduce": "black",
           "code over all-reduce": "tab:green", "changed collective": "tab:red"}


def family(scheme):
    matches = [prefix for prefix in FAMILY if scheme.startswith(prefix)]
    return FAMILY[max(matches, key=len)] if matches else "other"


if __name__ == "__main__":
    plot_time_optimal.main(sys.argv[1:], __doc__.splitlines()[0], family, COLOURS)
