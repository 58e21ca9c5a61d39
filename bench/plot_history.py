#!/usr/bin/env python3
"""bench/plot_history.py -- relative residual (log scale) against iteration, one line per
`solve --history` CSV file (header: iteration,cycle,residual_norm,relative_residual,seconds).

    python3 bench/plot_history.py -o docs/convergence.png \\
        [--title TEXT] [--rtol 1e-8] [--restarts] FILE.csv[:LABEL] ...

LABEL defaults to the file name without .csv. --rtol draws the tolerance as a dashed line;
--restarts marks the first row of each GMRES restart cycle (cycle > 1) with a dot, so the
jump between the implicit residual at the end of a cycle and the true one after the restart
can be seen. Needs matplotlib (pip install matplotlib); writes PNG without a display.
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

HEADER = ["iteration", "cycle", "residual_norm", "relative_residual", "seconds"]


def read_history(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or [h.strip() for h in rows[0]] != HEADER:
        raise ValueError("%s: expected the header %s" % (path, ",".join(HEADER)))
    it, cyc, rel = [], [], []
    for line, r in enumerate(rows[1:], start=2):
        if len(r) != len(HEADER):
            raise ValueError("%s:%d: expected %d columns, got %d" % (path, line, len(HEADER), len(r)))
        it.append(int(r[0]))
        cyc.append(int(r[1]))
        rel.append(float(r[3]))
    return it, cyc, rel


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="history CSV, optionally FILE:LABEL")
    ap.add_argument("-o", "--output", required=True, help="PNG to write")
    ap.add_argument("--title", default="")
    ap.add_argument("--rtol", type=float, default=0.0)
    ap.add_argument("--restarts", action="store_true")
    a = ap.parse_args()

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for spec in a.files:
        path, _, label = spec.partition(":") if not os.path.exists(spec) else (spec, "", "")
        label = label or os.path.splitext(os.path.basename(path))[0]
        try:
            it, cyc, rel = read_history(path)
        except (OSError, ValueError) as e:
            print("plot_history: %s" % e, file=sys.stderr)
            return 2
        # a zero residual has no logarithm: draw it at the smallest positive value
        floor = min([v for v in rel if v > 0] or [1e-300])
        rel = [v if v > 0 else floor for v in rel]
        line, = ax.semilogy(it, rel, label=label, linewidth=1.2)
        if a.restarts:
            starts = [i for i in range(1, len(cyc)) if cyc[i] > 1 and cyc[i] != cyc[i - 1]]
            ax.semilogy([it[i] for i in starts], [rel[i] for i in starts], ".",
                        color=line.get_color(), markersize=4)
    if a.rtol > 0:
        ax.axhline(a.rtol, color="gray", linestyle="--", linewidth=0.8, label="rtol %g" % a.rtol)
    ax.set_xlabel("iteration")
    ax.set_ylabel("relative residual ||r|| / ||b||")
    if a.title:
        ax.set_title(a.title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.output)
    print("wrote %s" % a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
