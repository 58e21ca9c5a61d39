#!/usr/bin/env python3
"""bench/compare_scipy.py -- iteration counts of spk's CG, BiCGStab and GMRES(m) beside SciPy's.

For each Matrix Market file: b = A * ones, x0 = 0, rtol as given, atol = 0, the same iteration
budget for both. SciPy's iterations are counted by callback (bicgstab: one call per full step;
gmres: callback_type='pr_norm', one call per inner iteration, which is what spk counts).
spk runs through the `solve` command (`--json`: "iterations", "reason", "true_rel").

Restarted GMRES and BiCGStab are sensitive to rounding on ill-conditioned matrices: two
correct implementations that agree to 10 digits for hundreds of steps can end hundreds
of iterations apart, or one converge where the other stagnates. To tell such drift from a
bug, wherever either code converges SciPy is run again on b perturbed by a relative 1e-14
(--spread K seeds, default 5); the table gives the range of those counts and how many of the
perturbed runs converged.

Budgets: both get maxiter (default max(1000, 10 n)) iterations; SciPy's gmres counts restart
cycles, so it gets ceil(maxiter / restart) cycles, up to restart - 1 more inner iterations.
With --precond jacobi the BiCGStab rows compare like with like (SciPy's bicgstab applies M
on the right, as spk does), the GMRES rows do not: SciPy's gmres preconditions on the left
and tests M^-1 r inside a cycle, spk tests r itself.

    python3 bench/compare_scipy.py --solve build/solve [--rtol 1e-8] [--restart 30]
        [--precond none|jacobi] [--maxiter N] [--spread K] [--methods cg,bicgstab,gmres]
        [-o table.md] FILE...

Needs numpy and scipy (pip install scipy). Exit status 0 unless a run failed to start.
"""
import argparse
import inspect
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import scipy
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla

SCIPY_INFO = {0: "converged", -10: "rho breakdown", -11: "omega/(r0,v) breakdown"}


def tol_kw(fn):
    """SciPy >= 1.12 calls the relative tolerance `rtol`; older versions `tol`."""
    return "rtol" if "rtol" in inspect.signature(fn).parameters else "tol"


def read_matrix(path):
    A = scipy.io.mmread(path)
    if not sp.issparse(A):
        A = sp.csr_matrix(A)
    A = sp.csr_matrix(A, dtype=np.float64)
    if A.shape[0] != A.shape[1]:
        raise ValueError("%s is %d x %d, not square" % (path, A.shape[0], A.shape[1]))
    return A


def jacobi(A):
    d = A.diagonal()
    if np.any(d == 0):
        return None
    inv = 1.0 / d
    return sla.LinearOperator(A.shape, matvec=lambda x: inv * np.ravel(x), dtype=np.float64)


def run_scipy(A, b, method, rtol, restart, maxiter, M):
    """(iterations, info, true relative residual, seconds)"""
    count = [0]

    def cb(_):
        count[0] += 1

    t0 = time.perf_counter()
    if method == "cg":
        kw = {tol_kw(sla.cg): rtol}
        x, info = sla.cg(A, b, atol=0.0, maxiter=maxiter, M=M, callback=cb, **kw)
    elif method == "bicgstab":
        kw = {tol_kw(sla.bicgstab): rtol}
        x, info = sla.bicgstab(A, b, atol=0.0, maxiter=maxiter, M=M, callback=cb, **kw)
    else:
        kw = {tol_kw(sla.gmres): rtol}
        cycles = max(1, math.ceil(maxiter / restart))   # SciPy's maxiter counts cycles
        x, info = sla.gmres(A, b, atol=0.0, restart=restart, maxiter=cycles, M=M,
                            callback=cb, callback_type="pr_norm", **kw)
    t = time.perf_counter() - t0
    rel = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    return count[0], info, rel, t


def run_spk(solve, path, method, rtol, restart, maxiter, precond):
    cmd = [solve, "-A", path, "--method", method, "--restart", str(restart), "--rtol",
           repr(rtol), "--maxiter", str(maxiter), "--precond", precond, "--device", "cpu",
           "--json", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    d = json.loads(p.stdout)
    return d["iterations"], d["reason"], d["true_rel"], d.get("solve_s", float("nan"))


def verdict(s_its, s_info, pert, k_its, k_reason, left_precond):
    """pert: (iterations, info) of the perturbed SciPy runs."""
    conv = k_reason.startswith("CONVERGED")
    spread = [i for i, inf in pert if inf == 0] + ([s_its] if s_info == 0 else [])
    s_fail = sum(1 for _, inf in pert if inf != 0) + (s_info != 0)
    note = " (SciPy's gmres preconditions on the left: its inner test is on M^-1 r)" if left_precond else ""
    if s_info == 0 and conv:
        if abs(k_its / max(s_its, 1) - 1) <= 0.15:
            return "ok (within 15%)"
        if 0.85 * min(spread) <= k_its <= 1.15 * max(spread):
            return "ok (within SciPy's own spread)"
        return "DIFFERS" + note
    if conv != (s_info == 0) and s_fail and len(spread):
        return "rounding-sensitive: SciPy converges in %d of %d runs, spk %s" % (
            len(spread), len(pert) + 1, "converges" if conv else "does not")
    s_word = "SciPy: breakdown" if s_info < 0 else "SciPy: maxiter" if s_info > 0 else "SciPy converges"
    k_word = "spk converges" if conv else "spk: " + k_reason.replace("DIVERGED_", "").lower()
    return s_word + ", " + k_word + note


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--solve", required=True, help="path of spk's solve command")
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--restart", type=int, default=30)
    ap.add_argument("--maxiter", type=int, default=0, help="default max(1000, 10 n), as spk")
    ap.add_argument("--precond", choices=["none", "jacobi"], default="none")
    ap.add_argument("--methods", default="bicgstab,gmres")
    ap.add_argument("--spread", type=int, default=5, help="perturbed SciPy runs (0: none)")
    ap.add_argument("-o", "--output", help="also write the table here")
    a = ap.parse_args()

    rows = ["| matrix | n | method | SciPy its | SciPy info | SciPy its, b(1+1e-14 u) | spk its | spk reason "
            "| spk/SciPy | SciPy true rel | spk true rel | verdict |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in a.files:
        name = os.path.basename(path)
        try:
            A = read_matrix(path)
        except Exception as e:  # noqa: BLE001 -- report and go on with the next file
            print("%s: skipped: %s" % (name, e), file=sys.stderr)
            continue
        n = A.shape[0]
        b = A @ np.ones(n)
        maxiter = a.maxiter if a.maxiter > 0 else max(1000, 10 * n)
        M = jacobi(A) if a.precond == "jacobi" else None
        if a.precond == "jacobi" and M is None:
            print("%s: skipped: zero diagonal, no Jacobi" % name, file=sys.stderr)
            continue
        for method in a.methods.split(","):
            label = "gmres(%d)" % a.restart if method == "gmres" else method
            s_its, s_info, s_rel, _ = run_scipy(A, b, method, a.rtol, a.restart, maxiter, M)
            k_its, k_reason, k_rel, _ = run_spk(a.solve, path, method, a.rtol, a.restart,
                                                maxiter, a.precond)
            pert = []                                # where either converges: is it rounding?
            if s_info == 0 or k_reason.startswith("CONVERGED"):
                for seed in range(a.spread):
                    u = np.random.default_rng(seed).uniform(-1, 1, n)
                    p_its, p_info, _, _ = run_scipy(A, b * (1 + 1e-14 * u), method, a.rtol,
                                                    a.restart, maxiter, M)
                    pert.append((p_its, p_info))
            info = SCIPY_INFO.get(s_info, "maxiter" if s_info > 0 else str(s_info))
            ratio = "%.2f" % (k_its / s_its) if s_its else "-"
            conv_p = [i for i, inf in pert if inf == 0]
            rng_txt = "-" if not pert else "%s (%d/%d conv.)" % (
                "%d-%d" % (min(conv_p), max(conv_p)) if conv_p else "none", len(conv_p), len(pert))
            left = method == "gmres" and a.precond != "none"
            rows.append("| %s | %d | %s | %d | %d (%s) | %s | %d | %s | %s | %.1e | %.1e | %s |" % (
                name, n, label, s_its, s_info, info, rng_txt, k_its, k_reason, ratio, s_rel, k_rel,
                verdict(s_its, s_info, pert, k_its, k_reason, left)))
            print(rows[-1], file=sys.stderr)
    head = ("SciPy %s, numpy %s; rtol %g, atol 0, b = A*ones, x0 = 0, precond %s, GMRES restart %d\n\n"
            % (scipy.__version__, np.__version__, a.rtol, a.precond, a.restart))
    table = head + "\n".join(rows) + "\n"
    print(table)
    if a.output:
        with open(a.output, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
