#!/usr/bin/env python3
"""bench/select_sweep.py -- the GPU format choice swept over row-length statistics.

bench_spmv times every spk format (and cuSPARSE) on a grid of `band` matrices whose row lengths
are uniform in [m - r, m + r]: for each mean m the spread r grows from 0 (every row alike: ELL's
case) to m - 1 (lengths 1 .. 2m - 1: max / mean -> 2, cv -> 0.58), then a few with lengths
skewed to short rows (max / mean 2.2-3.7). That walks the statistics across the thresholds of
src/select.c's GPU rule (ELL up to max / mean 1.5, HYB up to 3, CSR past it; docs/selection.md
also measures rule B: ELL up to 1.25, JDS up to 2 for rows of at most 32, CSR-vector else). Two
column layouts: "near", columns within HALF = 4096 of the diagonal (a reordered mesh: x is
gathered from a few cache lines), and "far", columns anywhere (a graph: every gather misses).
The report puts, for each matrix, the statistics, every format's time, the fastest, the rule's
pick (the `auto` of bench_spmv, i.e. the C code as built) and its time over the fastest's.

    python3 bench/select_sweep.py --build BUILD --out DIR [--reps 30] [--quick]
    python3 bench/select_sweep.py --report FILE.json [--markdown]

--build runs BUILD/bench_spmv once over the grid (--quick: a third of it, for a check) and
writes DIR/<date>-<gpu>-selsweep.{json,txt} and the report DIR/<date>-<gpu>-selsweep.md;
--report prints the report of an earlier run. Exit status: 0; 1 bench_spmv failed or the report
found a matrix with no result; 2 usage; 77 no usable GPU.
"""
import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys

FORMATS = ["csr", "coo", "ell", "hyb", "jds", "sell"]
NEAR_HALF = 4096
# mean row length -> (rows, spreads r): lengths uniform in [m - r, m + r]
GRID = [
    (8, 1 << 21, [0, 1, 2, 3, 4, 6, 7]),
    (16, 1 << 21, [0, 2, 4, 6, 8, 12, 15]),
    (24, 1 << 21, [0, 3, 6, 9, 12, 18, 23]),
    (48, 1 << 20, [0, 6, 12, 24, 36, 47]),
]
FAR_MEANS = (8, 24)      # the "far" layout only for these means (the device time is short)
# skewed lengths MIN + floor((MAX - MIN + 1) u^SKEW): max / mean 2.2-3.7, past the uniform's 2
# (rows, MIN, MAX, SKEW); the "far" layout for the first four
SKEWED = [
    (1 << 21, 1, 24, 2), (1 << 21, 4, 36, 2), (1 << 21, 1, 32, 3), (1 << 21, 8, 48, 2),
    (1 << 21, 1, 48, 3), (1 << 20, 16, 96, 2),
]
FAR_SKEWED = 4


def specs(quick):
    out = []
    for layout in ("near", "far"):
        for m, n, spreads in GRID:
            if layout == "far" and m not in FAR_MEANS:
                continue
            if quick:
                spreads = spreads[::3]
            for r in spreads:
                half = NEAR_HALF if layout == "near" else n
                out.append("band:%d:%d:%d:%d" % (n, m - r, m + r, half))
        skewed = SKEWED if layout == "near" else SKEWED[:FAR_SKEWED]
        for n, lo, hi, skew in (skewed[::2] if quick else skewed):
            half = NEAR_HALF if layout == "near" else n
            out.append("band:%d:%d:%d:%d:%d" % (n, lo, hi, half, skew))
    return out


def layout_of(name):
    m = re.match(r"band:(\d+):(\d+):(\d+):(\d+)", name)
    if not m:
        return "-"
    return "far" if int(m.group(4)) >= int(m.group(1)) else "near"


def report(doc, markdown):
    """The table of one sweep and its summary, as text, and the number of matrices without a
    result."""
    rows, missing = [], 0
    for mat in doc["matrices"]:
        t = {r["format"]: r["us"] for r in mat["results"]
             if r["impl"] == "spk" and r["status"] == "ok" and r["us"] is not None}
        if not t:
            missing += 1
            continue
        best = min(t, key=t.get)
        st = mat.get("row_stats", {})
        auto = mat["auto"]
        ratio = t[auto] / t[best] if auto in t else float("nan")
        rows.append((mat, st, t, best, auto, ratio))

    hdr = ["matrix", "layout", "mean", "cv", "max/mean", "max"] + FORMATS + \
          ["fastest", "auto", "auto/fastest", "cuSPARSE best"]
    def fmt_us(v):
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else "%.1f" % v
    lines = []
    if markdown:
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "---|" * len(hdr))
    else:
        lines.append("  ".join(hdr))
    for mat, st, t, best, auto, ratio in rows:
        cells = [mat["name"], layout_of(mat["name"]), "%.2f" % st.get("mean", float("nan")),
                 "%.2f" % st.get("cv", float("nan")), "%.2f" % st.get("ell_fill", float("nan")),
                 str(st.get("max", "-"))]
        for f in FORMATS:
            v = fmt_us(t.get(f))
            cells.append("**%s**" % v if markdown and f == best else v)
        cells += [best, auto, "%.3f" % ratio,
                  "%s %s" % (mat.get("best_cusparse", "-"), fmt_us(mat.get("best_cusparse_us")))]
        lines.append(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    ratios = [r[5] for r in rows if not math.isnan(r[5])]
    within = sum(1 for x in ratios if x <= 1.10)
    if ratios:
        worst = max(rows, key=lambda r: r[5] if not math.isnan(r[5]) else 0)
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append("\n%s: %d matrices; auto within 10%% of spk's fastest on %d, the fastest on %d; "
              "geometric mean auto/fastest %.3f; worst %.3f (%s: auto %s, fastest %s)" %
              (doc.get("gpu", "?"), len(rows), within, sum(1 for x in ratios if x <= 1.0 + 1e-9),
               geo, worst[5], worst[0]["name"], worst[4], worst[3]))
    if missing:
        lines.append("%d matrices without any spk result" % missing)
    return "\n".join(lines), missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="a CUDA build holding bench_spmv")
    ap.add_argument("--out", default="bench/results", help="directory for the results")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--timeout", type=int, default=120, help="bench_spmv's watchdog per matrix")
    ap.add_argument("--quick", action="store_true", help="a third of the grid")
    ap.add_argument("--report", help="print the report of this earlier sweep's JSON")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    if bool(a.build) == bool(a.report):
        ap.error("give --build (run the sweep) or --report (print an earlier one)")
    if a.report:
        with open(a.report) as f:
            text, missing = report(json.load(f), a.markdown)
        print(text)
        return 1 if missing else 0

    exe = os.path.join(a.build, "bench_spmv")
    if not os.access(exe, os.X_OK):
        print("select_sweep: %s is missing (a build without CUDA?)" % exe, file=sys.stderr)
        return 2
    probe = subprocess.run([exe, "--probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("select_sweep: no usable GPU (bench_spmv --probe exit %d): %s" %
              (probe.returncode, (probe.stdout + probe.stderr).strip()), file=sys.stderr)
        return 77 if probe.returncode == 77 else 1
    name = (probe.stdout + probe.stderr).strip()
    gpu = re.sub(r"-+$", "", re.sub(r"[^a-z0-9]+", "-", name.split(" (")[0].lower()))
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, "%s-%s-selsweep" % (datetime.date.today().isoformat(), gpu))
    grid = specs(a.quick)
    print("select_sweep: %s, %d matrices -> %s.{json,txt,md}" % (name, len(grid), base), flush=True)
    with open(base + ".txt", "w") as log:
        rc = subprocess.run([exe, "--reps", str(a.reps), "--timeout", str(a.timeout),
                             "--out", base + ".json"] + grid, stdout=log,
                            stderr=subprocess.STDOUT).returncode
    if rc != 0:
        print("select_sweep: bench_spmv exited %d (its log: %s.txt)" % (rc, base), file=sys.stderr)
    if not os.path.exists(base + ".json"):
        return 1
    with open(base + ".json") as f:
        doc = json.load(f)
    with open(base + ".md", "w") as md:
        md.write(report(doc, True)[0] + "\n")
    text, missing = report(doc, a.markdown)
    print(text)
    return 1 if rc != 0 or missing else 0


if __name__ == "__main__":
    sys.exit(main())
