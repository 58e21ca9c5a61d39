#!/usr/bin/env python3
"""bench/write_benchmarks.py -- regenerate the GPU sections of docs/benchmarks.md from the result
files of bench_spmv and bench_solvers (bench/results/<date>-<gpu>-{spmv,solvers}.json).

Only the text between the marker comments is replaced:

    <!-- gpu-spmv:begin -->     ...  <!-- gpu-spmv:end -->
    <!-- gpu-solvers:begin -->  ...  <!-- gpu-solvers:end -->

so the hand-written sections (Matrix Market reader, CPU against SciPy) stay as they are. A
marker pair missing from the file is appended at its end with a heading. Each section names the
GPU and the date of its run and the command that reproduces it, compares the figures with spk's
performance targets (met / not met), and the solver section shows docs/img/cg_per_iteration.png: CG time per iteration against rows
for spk, textbook cuSPARSE + cuBLAS and the floor (matplotlib; skipped with a note if absent).

    python3 bench/write_benchmarks.py [--results bench/results] [--doc docs/benchmarks.md]
        [--img docs/img] [--spmv FILE.json] [--solvers FILE.json]

Without --spmv / --solvers the newest GPU result of each kind in --results is used (by the date
in the file, then the file's modification time; CPU runs of bench_solvers are ignored).
"""
import argparse
import glob
import json
import math
import os
import re
import shutil
import sys

GENERATED_ORDER = ["poisson3d:150", "poisson3d27:100", "elasticity3d:60", "powerlaw:2000000:16",
                   "powerlaw:4000000:4"]
STENCILS = ("poisson3d:", "poisson3d27:", "elasticity3d:")


def newest(results, kind):
    best = None
    for path in glob.glob(os.path.join(results, "*-%s.json" % kind)):
        try:
            with open(path) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            print("write_benchmarks: skipping %s: %s" % (path, e), file=sys.stderr)
            continue
        if d.get("device", "gpu") != "gpu" or str(d.get("gpu", "")).startswith("self-test"):
            continue
        key = (d.get("date", ""), os.path.getmtime(path))
        if best is None or key > best[0]:
            best = (key, path, d)
    return (best[1], best[2]) if best else (None, None)


def load(path):
    with open(path) as f:
        return json.load(f)


def num(v, fmt="%.1f", none="-"):
    if v is None or (isinstance(v, float) and (math.isnan(v) or math.isinf(v))):
        return none
    return fmt % v


def ratio(a, b):
    try:
        if a is None or b is None or b == 0:
            return None
        r = a / b
        return None if math.isinf(r) or math.isnan(r) else r
    except TypeError:
        return None


def met(ok):
    return "met" if ok else "**not met**"


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def relpath(p):
    """A path as the repository sees it (absolute when outside it)."""
    r = os.path.relpath(os.path.abspath(p), ROOT)
    return os.path.abspath(p) if r.startswith("..") else r


def gpu_short(gpu):
    return gpu.split(" (")[0] if gpu else "GPU"


# ---- SpMV --------------------------------------------------------------------------------------

def spmv_section(d, src):
    L = []
    gpu = d.get("gpu", "?")
    L.append("### SpMV: spk formats against cuSPARSE (%s, %s)" % (gpu_short(gpu), d.get("date", "?")))
    L.append("")
    L.append("Measured by `bench_spmv` (`make bench`) on %s, %s. Device-to-device copy bandwidth "
             "in the same run: **%s GB/s** (bytes read + written). Each time is the median of %d "
             "SpMVs (CUDA events) after %d warm-up calls; every result was checked against the "
             "CPU reference (max relative error %g)%s. Reproduce: `make bench` (bench/run.sh), or "
             "`bash bench/gpu_bench.sh OUTDIR` and `python3 bench/write_benchmarks.py --spmv "
             "OUTDIR/<date>-<gpu>-spmv.json`. Source: `%s`." %
             (gpu, d.get("date", "?"), num(d.get("copy_gbs"), "%.0f"), d.get("reps", 0),
              d.get("warmup", 0), d.get("max_rel_err", 1e-12),
              "" if not d.get("failures") else ", **%d FAILED**" % d["failures"],
              relpath(src)))
    L.append("")
    L.append("Floor = (12 nnz + 8 (rows + 1) + 8 cols + 8 rows) bytes / copy bandwidth: the CSR "
             "matrix, x and y each moved once. GB/s and % of copy use that byte count for every "
             "format, so a layout that moves fewer bytes passes 100%: spk's CUDA ELL keeps int16 "
             "column offsets from the row where they fit, 10 bytes a slot against CSR's 12 "
             "(stencils and grid-numbered meshes). cusp/auto > 1: spk's automatic format is faster than cuSPARSE's best of "
             "CSR (default algorithm = ALG1, and ALG2), COO (ALG1 and ALG2) and sliced ELL (slice 32, SELL_ALG1).")
    L.append("")
    mats = d.get("matrices", [])
    gen = [m for m in mats if m.get("generated")]
    gen.sort(key=lambda m: GENERATED_ORDER.index(m["name"]) if m["name"] in GENERATED_ORDER else 99)
    files = [m for m in mats if not m.get("generated")]

    def pct(m):
        r = ratio(m["floor_us"], m.get("auto_us"))
        return None if r is None else 100.0 * r

    def summary_rows(ms):
        rows = ["| matrix | rows | nnz | floor us | auto | auto us | % copy | auto / spk best "
                "| cuSPARSE CSR us | cuSPARSE best | cusp best / auto |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for m in ms:
            rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s %s | **%s** |" % (
                m["name"], "{:,}".format(m["rows"]), "{:,}".format(m["nnz"]), num(m["floor_us"], "%.3g"),
                m["auto"], num(m.get("auto_us")), num(pct(m), "%.0f%%"),
                num(ratio(m.get("auto_us"), m.get("best_spk_us")), "%.2f"),
                num(m.get("cusparse_csr_default_us")), m.get("best_cusparse", "-"),
                num(m.get("best_cusparse_us")),
                num(ratio(m.get("best_cusparse_us"), m.get("auto_us")), "%.2f")))
        return rows

    L.append("#### The five generated matrices")
    L.append("")
    L += summary_rows(gen)
    L.append("")
    # the performance targets
    if gen:
        ok_best = all((ratio(m.get("best_cusparse_us"), m.get("auto_us")) or 0) >= 1.0 for m in gen)
        g = d.get("geomean_generated", {}).get("cusp_csr_default_over_auto")
        stencil = [m for m in gen if m["name"].startswith(STENCILS)]
        ok_bw = all((pct(m) or 0) >= 85.0 for m in stencil)
        ok_auto = all((ratio(m.get("auto_us"), m.get("best_spk_us")) or 99) <= 1.10 for m in gen)
        L.append("Targets on these matrices:")
        L.append("")
        L.append("- auto at least as fast as cuSPARSE's best on every matrix: %s (worst cusp best / "
                 "auto %s)" % (met(ok_best), num(min((ratio(m.get("best_cusparse_us"),
                                                               m.get("auto_us")) or 0) for m in gen), "%.2f")))
        L.append("- geometric mean >= 1.15x cuSPARSE's CSR default: %s (%s)" %
                 (met(g is not None and g >= 1.15), num(g, "%.3f")))
        L.append("- stencil matrices at >= 85%% of the copy bandwidth, on CSR bytes: %s (%s)" %
                 (met(ok_bw), ", ".join("%s %s" % (m["name"], num(pct(m), "%.0f%%")) for m in stencil)))
        def moved(m):            # the bytes spk's ELL reads and writes, over its time
            if m.get("auto") != "ell" or not m.get("ell_bytes") or not m.get("auto_us"):
                return None
            return 100.0 * m["ell_bytes"] / (m["auto_us"] * 1e-6) / (d["copy_gbs"] * 1e9)
        if any(moved(m) is not None for m in stencil):
            ok_moved = all((moved(m) or 0) >= 85.0 for m in stencil)
            L.append("  - on the bytes spk's ELL layout moves (rows x width slots of 10 bytes, x and y "
                     "once; x is partly served from L2): %s (%s)" %
                     (met(ok_moved), ", ".join("%s %s" % (m["name"], num(moved(m), "%.1f%%"))
                                               for m in stencil)))
        gb = d.get("geomean_generated", {}).get("cusp_best_over_auto")
        if gb is not None:
            L.append("- (not a target) geometric mean against cuSPARSE's best format per matrix: %s" %
                     num(gb, "%.3f"))
        L.append("- auto within 10%% of spk's fastest format: %s" % met(ok_auto))
        L.append("")
    for m in gen:
        L.append("<details><summary>%s: every format (%s rows, %s nnz; auto: %s)</summary>" %
                 (m["name"], "{:,}".format(m["rows"]), "{:,}".format(m["nnz"]), m["auto"]))
        L.append("")
        L.append("auto's reason: %s" % m.get("auto_reason", ""))
        L.append("")
        L.append("| impl | format | us | GB/s | % copy | setup ms | setup / SpMV | cusp best / this | note |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in m["results"]:
            if r["status"] in ("refused", "skipped"):
                L.append("| %s | %s | %s | | | %s | | | %s |" % (r["impl"], r["format"], r["status"],
                                                                  num(r.get("setup_ms"), "%.1f"),
                                                                  r.get("note", "").replace("|", "/")))
                continue
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["impl"], r["format"], num(r["us"]), num(r["gbs"], "%.0f"),
                num(r["pct_copy"], "%.0f%%"), num(r["setup_ms"], "%.1f"),
                num(r["setup_spmv"], "%.0f"), num(r["cusp_best_over_this"], "%.2f"),
                ("FAIL " if r["status"] == "fail" else "") + r.get("note", "").replace("|", "/")))
        L.append("")
        L.append("</details>")
        L.append("")
    if files:
        L.append("#### The real matrices of `inputs/` (small: launch-bound, not bandwidth-bound)")
        L.append("")
        L += summary_rows(files)
        L.append("")
    return L


# ---- solvers -----------------------------------------------------------------------------------

def find(m, impl, prefix):
    for r in m.get("results", []):
        if r["impl"] == impl and r["method"].startswith(prefix):
            return r
    return None


def plot_cg(d, png_paths):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot (pip install matplotlib)"
    pts = sorted((m for m in d["matrices"] if m.get("poisson_m")), key=lambda m: m["rows"])
    if not pts:
        return "no poisson3d matrices in the results: no plot"
    rows = [m["rows"] for m in pts]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = [("spk CG", [(find(m, "spk", "cg") or {}).get("us_per_iter") for m in pts], "o-"),
              ("cuSPARSE + cuBLAS textbook CG",
               [(find(m, "textbook", "cg") or {}).get("us_per_iter") for m in pts], "s-"),
              ("floor (M + 10n doubles) / copy bandwidth",
               [(find(m, "spk", "cg") or {}).get("floor_us") for m in pts], "k--")]
    for label, ys, style in series:
        xy = [(x, y) for x, y in zip(rows, ys) if y is not None]
        if xy:
            ax.plot([p[0] for p in xy], [p[1] for p in xy], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows (poisson3d:m, m = %s)" % ", ".join(str(m["poisson_m"]) for m in pts))
    ax.set_ylabel("time per CG iteration (us)")
    ax.set_title("CG per iteration, %s, %s" % (gpu_short(d.get("gpu")), d.get("date", "")))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    for p in png_paths:
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return None


def solvers_section(d, src, img_rel, plot_note, spmv=None):
    L = []
    gpu = d.get("gpu", "?")
    L.append("### Solvers: time per iteration against the floor (%s, %s)" %
             (gpu_short(gpu), d.get("date", "?")))
    L.append("")
    L.append("Measured by `bench_solvers` (`make bench`) on %s, %s. Copy bandwidth in the same run: "
             "**%s GB/s**. spk_solve with the automatic format, no preconditioner, rtol = atol = 0 "
             "and maxiter %d, so each method runs %d iterations (unless it breaks down); time per "
             "iteration = median over %d pairs of solves of (solve_s(full) - solve_s(30 "
             "iterations)) / (iterations - 30), the marginal cost of an iteration without the "
             "fixed costs of a solve (allocations, final true residual, download of x; "
             "`us_per_iter_whole` in the JSON keeps solve_s / iterations). The textbook loop is "
             "timed bare. b is random. Reproduce: `make bench` (bench/run.sh), or `bash "
             "bench/gpu_bench.sh OUTDIR` and `python3 bench/write_benchmarks.py --solvers "
             "OUTDIR/<date>-<gpu>-solvers.json`. Source: `%s`." %
             (gpu, d.get("date", "?"), num(d.get("copy_gbs"), "%.0f"), d.get("maxiter", 0),
              d.get("maxiter", 0), d.get("reps", 0), relpath(src)))
    L.append("")
    fl = d.get("floors", {})
    L.append("Floors per iteration, M = %s bytes (CSR), B = copy bandwidth:" %
             d.get("matrix_bytes", "12 nnz + 8 (n + 1)").replace("M = ", ""))
    L.append("")
    L.append("- CG: %s (the fused floor);" % fl.get("cg", "?"))
    L.append("- BiCGStab: %s;" % fl.get("bicgstab", "?"))
    L.append("- GMRES(%d): %s." % (d.get("restart", 30), fl.get("gmres", "?")))
    L.append("")
    L.append("The derivation of each (which vector is read or written in which fused pass) is in "
             "the header of bench/bench_solvers.cu. Textbook CG: cusparseSpMV (CSR, default "
             "algorithm) + cublasDdot / Daxpy / Dscal with host scalars, as NVIDIA's "
             "conjugateGradient sample.")
    L.append("")
    L.append("| matrix | rows | format | CG us | x floor | BiCGStab us | x floor | GMRES(%d) us | "
             "x floor | textbook CG us | textbook / spk CG |" % d.get("restart", 30))
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in sorted(d.get("matrices", []), key=lambda m: (not m.get("poisson_m"), m["rows"])):
        cg, bi, gm, tb = (find(m, "spk", "cg"), find(m, "spk", "bicgstab"), find(m, "spk", "gmres"),
                          find(m, "textbook", "cg"))

        def cell(r):
            if not r:
                return "-", "-"
            note = "" if r["reason"] in ("DIVERGED_MAXIT", "maxiter") else " (%s after %d)" % (
                r["reason"], r["iterations"])
            return num(r["us_per_iter"]) + note, num(r["ratio_to_floor"], "%.2f")

        c, b, g = cell(cg), cell(bi), cell(gm)
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            m["name"], "{:,}".format(m["rows"]), m["format"], c[0], c[1], b[0], b[1], g[0], g[1],
            num(tb["us_per_iter"]) if tb else "-",
            num(ratio(tb["us_per_iter"], cg["us_per_iter"]), "%.2f") if tb and cg else "-"))
    L.append("")
    by = {m["name"]: m for m in d.get("matrices", [])}

    def us(name, method="cg"):
        r = find(by.get(name, {}), "spk", method)
        return r["us_per_iter"] if r else None

    def rf(name, method):
        r = find(by.get(name, {}), "spk", method)
        return r["ratio_to_floor"] if r else None

    L.append("Targets:")
    L.append("")
    if "poisson3d:150" in by:
        u, r = us("poisson3d:150"), rf("poisson3d:150", "cg")
        rc = find(by["poisson3d:150"], "spk", "cg")
        fl = rc.get("floor_us") if rc else None
        L.append("- CG on poisson3d:150 <= 170 us per iteration: %s (%s us)" %
                 (met(u is not None and u <= 170), num(u)))
        L.append("- the same <= 1.15x its fused floor: %s against this benchmark's floor (%sx of "
                 "%s us: M + 10 n doubles at the copy bandwidth of the run); against the target's "
                 "stated floor of 146 us (at which 170 us is 1.16x) this run is %sx" %
                 (met(r is not None and r <= 1.15), num(r, "%.2f"), num(fl),
                  num(u / 146.0 if u is not None else None, "%.2f")))
        for meth, label in (("bicgstab", "BiCGStab"), ("gmres", "GMRES(30)")):
            rm = rf("poisson3d:150", meth)
            L.append("- %s within 1.25x of its floor on poisson3d:150: %s (%sx)" %
                     (label, met(rm is not None and rm <= 1.25), num(rm, "%.2f")))
        # The floors again with the matrix bytes of the ELL layout the solve ran (bench_spmv's
        # ell_bytes less x and y): the floors above count the CSR matrix, as the targets do.
        sm = {m["name"]: m for m in (spmv or {}).get("matrices", [])}.get("poisson3d:150")
        m150 = by["poisson3d:150"]
        if sm and sm.get("ell_bytes") and m150.get("format") == "ell" and d.get("copy_gbs"):
            m_ell = sm["ell_bytes"] - 8.0 * (sm["cols"] + sm["rows"])
            saved_us = (m150["matrix_bytes"] - m_ell) / (d["copy_gbs"] * 1e9) * 1e6
            parts = []
            for meth, label, k in (("cg", "CG", 1), ("bicgstab", "BiCGStab", 2),
                                   ("gmres", "GMRES(30)", 1)):
                r = find(m150, "spk", meth)
                if r and r.get("floor_us"):
                    parts.append("%s %sx of %s us" % (label, num(r["us_per_iter"] / (r["floor_us"] - k * saved_us), "%.2f"),
                                                      num(r["floor_us"] - k * saved_us)))
            L.append("- (the same floors with the matrix counted in the bytes of the ELL layout the "
                     "solve ran, %.1f MB instead of %.1f MB, from bench_spmv's `ell_bytes`): %s" %
                     (1e-6 * m_ell, 1e-6 * m150["matrix_bytes"], ", ".join(parts)))
    for name, lim in (("poisson3d:32", 20.0), ("poisson3d:64", 30.0)):
        if name in by:
            u = us(name)
            L.append("- CG on %s <= %.0f us per iteration: %s (%s us)" %
                     (name, lim, met(u is not None and u <= lim), num(u)))
    L.append("")
    if plot_note:
        L.append("(%s)" % plot_note)
    else:
        L.append("![CG time per iteration against rows: spk, cuSPARSE + cuBLAS textbook, floor](%s)"
                 % img_rel)
    L.append("")
    return L


# ---- the document ------------------------------------------------------------------------------

def replace_section(text, key, body_lines, heading):
    begin, end = "<!-- %s:begin -->" % key, "<!-- %s:end -->" % key
    body = "\n".join([begin, "<!-- generated by bench/write_benchmarks.py: edits here are "
                             "overwritten -->", ""] + body_lines + [end])
    pat = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pat.search(text):
        return pat.sub(lambda _: body, text, count=1)
    return text.rstrip("\n") + "\n\n" + heading + "\n\n" + body + "\n"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(root, "bench", "results"))
    ap.add_argument("--doc", default=os.path.join(root, "docs", "benchmarks.md"))
    ap.add_argument("--img", default=os.path.join(root, "docs", "img"))
    ap.add_argument("--spmv", help="a bench_spmv JSON file (default: the newest in --results)")
    ap.add_argument("--solvers", help="a bench_solvers JSON file (default: the newest)")
    a = ap.parse_args()

    spmv_path, spmv = (a.spmv, load(a.spmv)) if a.spmv else newest(a.results, "spmv")
    sol_path, sol = (a.solvers, load(a.solvers)) if a.solvers else newest(a.results, "solvers")
    if not spmv and not sol:
        print("write_benchmarks: no GPU results in %s: nothing to do" % a.results)
        return 0
    with open(a.doc) as f:
        text = f.read()
    if spmv:
        text = replace_section(text, "gpu-spmv", spmv_section(spmv, spmv_path), "## GPU: SpMV")
        print("write_benchmarks: gpu-spmv section from %s" % spmv_path)
    if sol:
        stem = os.path.splitext(sol_path)[0]
        png_doc = os.path.join(a.img, "cg_per_iteration.png")
        note = plot_cg(sol, [stem + "-cg.png", png_doc])
        img_rel = os.path.relpath(png_doc, os.path.dirname(os.path.abspath(a.doc)))
        text = replace_section(text, "gpu-solvers", solvers_section(sol, sol_path, img_rel, note, spmv),
                               "## GPU: solvers")
        print("write_benchmarks: gpu-solvers section from %s%s" %
              (sol_path, "" if note else "; plot %s" % png_doc))
    tmp = a.doc + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    shutil.move(tmp, a.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
