#!/usr/bin/env python3
"""bench/cpu_cg_vs_scipy.py -- CG per iteration on the CPU: spk's `solve` against SciPy's `cg`
on the same system (the target: spk >= 2x faster per iteration on poisson3d:64 on a 2-core
machine; the figures are in docs/benchmarks.md).

The system: spk's generator poisson3d:M (7-point Laplacian on an M^3 grid, 6 on the diagonal,
-1 to each of the 6 neighbours, Dirichlet boundary: neighbours outside the grid dropped), b = A *
ones, x0 = 0, rtol 1e-8, atol 0 -- the same stopping test ||r|| <= max(rtol ||b||, atol) in both.
SciPy's matrix is built independently (Kronecker sums of the 1-D second difference) and checked
entry for entry against spk's own CSR, read through libspk's public API with ctypes
(spk_matrix_generate + spk_matrix_csr), before anything is timed.

spk:   solve -A poisson3d:M --device cpu --method cg --format F --rtol 1e-8 --json
       per iteration = "per_iter_s" (solve_s / iterations; the loop, its allocations and the true
       residual at the end). F = --format: auto (default; on the CPU it picks dia for this
       matrix) or any format solve takes.
SciPy: scipy.sparse.linalg.cg(A, b, rtol=1e-8, atol=0) in a fresh process, per iteration = the
       call's wall time / iterations (counted by callback; SciPy's own work is the same: one
       matvec per iteration plus the initial residual). A is a csr_matrix, or with
       --scipy-format dia SciPy's own dia_matrix (A.todia(), its diagonal matvec).

Each trial runs spk and SciPy, each in its own process, back to back (spk first in odd
trials, SciPy first in even ones, so that a machine slowing down or speeding up favours
neither), so both see the same machine load; --trials of them, reported as the minimum (the
run least disturbed by other processes), the median, and the median of the trials' own
ratios (SciPy / spk within one trial: a load that changes between trials cancels). Three settings: the default (spk's OpenMP on every core; SciPy's matvec is single
threaded, its BLAS may use every core); the default with OMP_WAIT_POLICY=passive (GNU OpenMP's
idle threads sleep instead of spinning: on a machine loaded by other processes a spinning thread
takes the core its partner needs, and every parallel region then waits a scheduler time slice);
and one thread for both (OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = 1). The load
average before and after each setting is printed: above ~0.5 on 2 cores the default's figure
measures the other processes, not spk. Needs numpy and scipy (bench/requirements.txt).

    python3 bench/cpu_cg_vs_scipy.py --build BUILD [--m 64] [--trials 5] [--json out.json]
                                     [--markdown] [--wait-idle S] [--format F]
                                     [--scipy-format csr|dia] [--settings all|default]
                                     [--busy K]

--busy K keeps K cores busy with spinning processes during the trials, to measure what a
machine shared with other work gives (spk times its iterations under a few thread counts and
keeps the fastest: src/threads.c).
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def poisson3d(m):
    """7-point Laplacian on an m^3 grid, Dirichlet boundary, as canonical CSR (sorted indices)."""
    import numpy as np
    import scipy.sparse as sp

    e = np.ones(m)
    T = sp.diags([-e[:-1], 2.0 * e, -e[:-1]], [-1, 0, 1], format="csr")
    I = sp.identity(m, format="csr")
    A = sp.kron(sp.kron(T, I), I) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(I, I), T)
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.sort_indices()
    A.eliminate_zeros()
    return A


def spk_matrix_arrays(lib_path, m):
    """(rowptr, colind, val) of spk's poisson3d:m through libspk's public API."""
    import numpy as np

    lib = ctypes.CDLL(lib_path)
    vp = ctypes.c_void_p
    lib.spk_context_create.argtypes = [ctypes.POINTER(vp), ctypes.c_int]
    lib.spk_matrix_generate.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(vp)]
    lib.spk_matrix_csr.argtypes = [vp, ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)),
                                   ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                   ctypes.POINTER(ctypes.POINTER(ctypes.c_double))]
    lib.spk_last_error.argtypes = [vp]
    lib.spk_last_error.restype = ctypes.c_char_p
    lib.spk_matrix_destroy.argtypes = [vp]
    lib.spk_context_destroy.argtypes = [vp]
    ctx, A = vp(), vp()
    SPK_DEVICE_CPU = 1
    if lib.spk_context_create(ctypes.byref(ctx), SPK_DEVICE_CPU) != 0:
        raise RuntimeError("spk_context_create: %s" % lib.spk_last_error(ctx).decode())
    if lib.spk_matrix_generate(ctx, ("poisson3d:%d" % m).encode(), ctypes.byref(A)) != 0:
        raise RuntimeError("spk_matrix_generate: %s" % lib.spk_last_error(ctx).decode())
    rp = ctypes.POINTER(ctypes.c_int64)()
    ci = ctypes.POINTER(ctypes.c_int32)()
    va = ctypes.POINTER(ctypes.c_double)()
    if lib.spk_matrix_csr(A, ctypes.byref(rp), ctypes.byref(ci), ctypes.byref(va)) != 0:
        raise RuntimeError("spk_matrix_csr failed")
    n = m ** 3
    rowptr = np.ctypeslib.as_array(rp, shape=(n + 1,)).copy()
    nnz = int(rowptr[-1])
    colind = np.ctypeslib.as_array(ci, shape=(nnz,)).copy()
    val = np.ctypeslib.as_array(va, shape=(nnz,)).copy()
    lib.spk_matrix_destroy(A)
    lib.spk_context_destroy(ctx)
    return rowptr, colind, val


def check_same_matrix(lib_path, m):
    import numpy as np

    A = poisson3d(m)
    rowptr, colind, val = spk_matrix_arrays(lib_path, m)
    same = (np.array_equal(A.indptr, rowptr) and np.array_equal(A.indices, colind)
            and np.array_equal(A.data, val))
    return same, A.shape[0], A.nnz, int(rowptr[-1])


def scipy_worker(m, rtol, fmt):
    """Run in a child process: build, solve once, print JSON."""
    import numpy as np
    import scipy
    import scipy.sparse.linalg as sla
    import inspect

    A = poisson3d(m)
    if fmt == "dia":
        A = A.todia()
    b = A @ np.ones(A.shape[0])
    count = [0]

    def cb(_):
        count[0] += 1

    kw = "rtol" if "rtol" in inspect.signature(sla.cg).parameters else "tol"
    t0 = time.perf_counter()
    x, info = sla.cg(A, b, atol=0.0, callback=cb, **{kw: rtol})
    t = time.perf_counter() - t0
    rel = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    print(json.dumps({"iterations": count[0], "info": int(info), "seconds": t,
                      "per_iter_s": t / max(count[0], 1), "true_rel": rel, "format": A.format,
                      "scipy": scipy.__version__, "numpy": np.__version__}))


def cpu_busy(interval=1.0):
    """Fraction of all CPUs busy over `interval` seconds (/proc/stat), or None off Linux."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(t) for t in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v), idle
    try:
        t0, i0 = snap()
        time.sleep(interval)
        t1, i1 = snap()
    except OSError:
        return None
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)


def wait_idle(limit_s, threshold):
    """Wait until the machine is idle (other processes below `threshold` of the CPUs) for at
    most limit_s seconds; return the busy fraction seen last."""
    t0 = time.time()
    while True:
        b = cpu_busy()
        if b is None or b <= threshold or time.time() - t0 > limit_s:
            return b


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build dir holding solve and libspk.so")
    ap.add_argument("--m", type=int, default=64, help="grid size: poisson3d:M")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", action="store_true", help="also print a markdown table")
    ap.add_argument("--wait-idle", type=float, default=0.0, metavar="S",
                    help="before each run wait up to S seconds for the other processes to leave "
                         "the CPUs idle (below 10%% busy): a shared machine's load otherwise "
                         "decides the figures")
    ap.add_argument("--format", default="auto",
                    help="spk's --format (default auto: dia for this matrix on the CPU)")
    ap.add_argument("--scipy-format", default="csr", choices=("csr", "dia"),
                    help="SciPy's matrix class: csr_matrix (default) or dia_matrix")
    ap.add_argument("--settings", default="all", choices=("all", "default"),
                    help="all three thread settings (default), or the default one alone")
    ap.add_argument("--busy", type=int, default=0, metavar="K",
                    help="keep K cores busy with spinning processes of our own during the trials "
                         "(a machine shared with other work; --wait-idle is then skipped)")
    ap.add_argument("--scipy-worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.scipy_worker:
        scipy_worker(a.m, a.rtol, a.scipy_format)
        return 0

    solve = os.path.join(a.build, "solve")
    lib = os.path.join(a.build, "libspk.so")
    for f in (solve, lib):
        if not os.path.exists(f):
            sys.exit("cpu_cg_vs_scipy: %s not found (build first: cmake --build %s)" % (f, a.build))

    same, n, nnz_scipy, nnz_spk = check_same_matrix(lib, a.m)
    print("matrix poisson3d:%d: n %d, nnz SciPy %d, spk %d: %s" %
          (a.m, n, nnz_scipy, nnz_spk, "identical (indptr, indices, data)" if same else "DIFFERENT"))
    if not same:
        sys.exit("cpu_cg_vs_scipy: SciPy's matrix is not spk's; nothing timed")

    spk_cmd = [solve, "-A", "poisson3d:%d" % a.m, "--device", "cpu", "--method", "cg",
               "--precond", "none", "--format", a.format, "--rtol", repr(a.rtol), "--json"]
    sci_cmd = [sys.executable, os.path.abspath(__file__), "--scipy-worker", "--m", str(a.m),
               "--rtol", repr(a.rtol), "--scipy-format", a.scipy_format]
    configs = [("default threads", {}),
               ("default, passive", {"OMP_WAIT_POLICY": "passive"}),
               ("1 thread", {v: "1" for v in THREAD_VARS})]
    if a.settings == "default":
        configs = configs[:1]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    if hogs:
        a.wait_idle = 0.0
        time.sleep(1.0)                           # the spinning processes are running
    results = []
    for label, extra in configs:
        env = dict(os.environ)
        for v in THREAD_VARS + ("OMP_WAIT_POLICY",):
            env.pop(v, None)
        env.update(extra)
        spk_t, sci_t, spk_last, sci_last = [], [], None, None
        load0 = os.getloadavg()[0]
        busy = []
        for trial in range(a.trials):
            for side in ((0, 1) if trial % 2 == 0 else (1, 0)):
                if a.wait_idle > 0:
                    busy.append(wait_idle(a.wait_idle, 0.10))
                if side == 0:
                    spk_last = run(spk_cmd, env)
                else:
                    sci_last = run(sci_cmd, env)
            spk_t.append(spk_last["per_iter_s"])
            sci_t.append(sci_last["per_iter_s"])
        paired = [q / p for p, q in zip(spk_t, sci_t)]
        load1 = os.getloadavg()[0]
        r = {
            "threads": label,
            "spk_device": spk_last["device_name"], "spk_format": spk_last.get("format"),
            "scipy_format": sci_last.get("format"),
            "spk_iterations": spk_last["iterations"], "spk_reason": spk_last["reason"],
            "spk_true_rel": spk_last["true_rel"],
            "scipy_iterations": sci_last["iterations"], "scipy_info": sci_last["info"],
            "scipy_true_rel": sci_last["true_rel"],
            "spk_ms_min": 1e3 * min(spk_t), "spk_ms_median": 1e3 * statistics.median(spk_t),
            "scipy_ms_min": 1e3 * min(sci_t), "scipy_ms_median": 1e3 * statistics.median(sci_t),
            "speedup_min": min(sci_t) / min(spk_t),
            "speedup_median": statistics.median(sci_t) / statistics.median(spk_t),
            "speedup_paired_median": statistics.median(paired),
            "speedup_paired_min": min(paired), "speedup_paired_max": max(paired),
            "spk_ms_all": [1e3 * t for t in spk_t], "scipy_ms_all": [1e3 * t for t in sci_t],
            "load_before": load0, "load_after": load1,
            "busy_before_runs": [b for b in busy if b is not None],
            "scipy_version": sci_last["scipy"], "numpy_version": sci_last["numpy"],
        }
        results.append(r)

    for h in hogs:
        h.kill()
        h.wait()
    info = {"date": datetime.date.today().isoformat(), "cpu": cpu_model(),
            "cores": os.cpu_count(), "busy_cores": a.busy,
            "matrix": "poisson3d:%d" % a.m, "n": n, "nnz": nnz_spk,
            "rtol": a.rtol, "trials": a.trials, "spk_command": " ".join(spk_cmd[1:]),
            "results": results}
    print("%s, %d cores (%d kept busy), %s; %d trials (min / median per iteration); spk format "
          "%s, SciPy %s" % (info["cpu"], info["cores"], a.busy, info["date"], a.trials,
                            results[0]["spk_format"], results[0]["scipy_format"]))
    print("%-16s %6s %6s %18s %18s %16s %22s %9s" % (
        "threads", "spk it", "SciPy", "spk ms/it", "SciPy ms/it", "SciPy/spk",
        "paired: median (range)", "load"))
    for r in results:
        print("%-16s %6d %6d %8.2f / %7.2f %8.2f / %7.2f %7.2f / %6.2f %6.2f (%.2f-%.2f) %4.1f-%4.1f" %
              (r["threads"], r["spk_iterations"], r["scipy_iterations"], r["spk_ms_min"],
               r["spk_ms_median"], r["scipy_ms_min"], r["scipy_ms_median"], r["speedup_min"],
               r["speedup_median"], r["speedup_paired_median"], r["speedup_paired_min"],
               r["speedup_paired_max"], r["load_before"], r["load_after"]))
    if a.markdown:
        print()
        print("| threads | iterations spk / SciPy | spk ms/it (min, median) | SciPy ms/it (min, median)"
              " | SciPy / spk (min, median) | per-trial SciPy / spk: median (range) | load avg |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            print("| %s | %d / %d | %.2f, %.2f | %.2f, %.2f | **%.2fx**, %.2fx | %.2fx (%.2f-%.2f) "
                  "| %.1f-%.1f |" %
                  (r["threads"], r["spk_iterations"], r["scipy_iterations"], r["spk_ms_min"],
                   r["spk_ms_median"], r["scipy_ms_min"], r["scipy_ms_median"], r["speedup_min"],
                   r["speedup_median"], r["speedup_paired_median"], r["speedup_paired_min"],
                   r["speedup_paired_max"], r["load_before"], r["load_after"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(info, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
