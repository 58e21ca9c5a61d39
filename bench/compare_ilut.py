#!/usr/bin/env python3
"""bench/compare_ilut.py -- spk's ILUT-GMRES(30) against SciPy's: the inner iterations of
GMRES(30) to rtol 1e-8 with an incomplete LU as the preconditioner, SciPy's spilu beside
spk's ILUTP (solvers/ilut.c).

SciPy's side (the reference): M = spilu(A) with its defaults (drop_tol 1e-4, fill_factor 10:
SuperLU's ilu_dgstrf with COLAMD column ordering and threshold partial pivoting, diagonal
threshold 0.1), then gmres(A, b, M=LinearOperator(M.solve), restart=30, rtol=1e-8 (tol= on
SciPy < 1.12), atol=0, callback_type='pr_norm'): one callback per inner iteration, counted.
Also, as "right": the same spilu as a right preconditioner, gmres on A M^-1 with no M, whose
residual is the true one, the way spk's GMRES is preconditioned and stops.

spk's side, either or both:
  --solve BUILD/solve: `solve -A FILE -b RHS --method gmres --restart 30 --precond ilut
      --rtol 1e-8 --json` ("iterations", "reason"). A solve without an ILUT row (it refuses
      --precond ilut) leaves SciPy's counts alone, with a note.
  --bench BUILD/bench_ilut: spk's factors (bench_ilut --out), applied by SciPy (two
      triangular solves and the permutation: M^-1 r = x, x[perm] = U^-1 L^-1 r) in the same
      two GMRES runs as spilu: the iteration count spk's factorization gives, measured apart
      from spk's GMRES.

The ratio is spk's count over SciPy's (left) one; the exit status is 1 when it passes
--max-ratio (1.5) on a goal matrix (--matrices), 0 otherwise; --extra matrices are reported
only. Matrices and right-hand sides are read from inputs/, else from the folder --shared names
(a copy of the SuiteSparse files not shipped here, e.g. e20r0000); b = A * ones where a matrix
has no right-hand side file.
"""
import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy
import scipy.io as sio
import scipy.sparse.linalg as sla

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "..", "inputs")
RHS = {"cavity14": "cavity14_b.mtx", "e05r0100": "e05r0100_rhs1.mtx",
       "e20r0000": "e20r0000_rhs1.mtx", "sherman1": "sherman1_rhs1.mtx"}
RESTART, RTOL, MAXCYCLES = 30, 1e-8, 1000


def find(name, shared):
    for d in (INPUTS, shared) if shared else (INPUTS,):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def gmres_count(A, b, M=None, right=False):
    """Inner iterations of SciPy's GMRES(30) to RTOL, and the true relative residual."""
    n = A.shape[0]
    op = A
    if right:
        op = sla.LinearOperator(A.shape, matvec=lambda y: A @ M.matvec(y), dtype=float)
    count = [0]

    def cb(_):
        count[0] += 1
    kw = dict(restart=RESTART, atol=0.0, callback=cb, callback_type="pr_norm", maxiter=MAXCYCLES)
    kw["rtol" if "rtol" in inspect.signature(sla.gmres).parameters else "tol"] = RTOL
    y, info = sla.gmres(op, b, M=None if right else M, **kw)
    x = M.matvec(y) if right else y
    rel = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    return count[0], info, rel


def spk_factors(bench, path, tmp):
    prefix = os.path.join(tmp, "f")
    out = subprocess.run([bench, "--out", prefix, path], capture_output=True, text=True)
    if out.returncode:
        return None, out.stderr.strip()
    L = sio.mmread(prefix + "_L.mtx").tocsr()
    U = sio.mmread(prefix + "_U.mtx").tocsr()
    perm = np.asarray(sio.mmread(prefix + "_perm.mtx")).ravel().astype(int)
    # SuperLU on a triangular matrix in its natural order with no pivoting is a triangular solve
    opts = dict(permc_spec="NATURAL", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True))
    Ls, Us = sla.splu(L.tocsc(), **opts), sla.splu(U.tocsc(), **opts)

    def apply(r):
        x = np.empty_like(r)
        x[perm] = Us.solve(Ls.solve(r))
        return x
    return sla.LinearOperator(L.shape, matvec=apply, dtype=float), json.loads(out.stdout)


def spk_solve(solve, path, rhs):
    cmd = [solve, "-A", path, "--method", "gmres", "--restart", str(RESTART), "--precond",
           "ilut", "--rtol", str(RTOL), "--json", "-q"]
    if rhs:
        cmd += ["-b", rhs]
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        res = json.loads(out.stdout)
    except ValueError:
        res = {"error": (out.stderr or out.stdout).strip()}
    if "error" in res:
        err = str(res["error"])
        if "ilut" in err.lower() or "precond" in err.lower():
            return None, "this solve has no ILUT row (%s)" % err.splitlines()[0]
        return None, "solve failed: %s" % err.splitlines()[0]
    return res, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solve", help="spk's solve binary")
    ap.add_argument("--bench", help="spk's bench_ilut binary")
    ap.add_argument("--matrices", default="cavity14,e05r0100")
    ap.add_argument("--extra", default="", help="e.g. west0479,bayer10,e20r0000")
    ap.add_argument("--shared", default=None,
                    help="a folder of the matrices not in inputs/ (e.g. e20r0000.mtx)")
    ap.add_argument("--max-ratio", type=float, default=1.5)
    args = ap.parse_args()
    goal = [m for m in args.matrices.split(",") if m]
    extra = [m for m in args.extra.split(",") if m]
    print("SciPy %s: spilu (drop_tol 1e-4, fill_factor 10) + gmres(restart=30, rtol=1e-8), "
          "inner iterations" % scipy.__version__)
    bad, notes = 0, []
    for name in goal + extra:
        path = find(name + ".mtx", args.shared)
        if not path:
            print("%-10s not found in inputs/%s" % (name, " or " + args.shared if args.shared else ""))
            bad += name in goal
            continue
        rhs = find(RHS[name], args.shared) if name in RHS else None
        A = sio.mmread(path).tocsc()
        b = np.asarray(sio.mmread(rhs)).ravel() if rhs else A @ np.ones(A.shape[0])
        line = "%-10s n %6d  " % (name, A.shape[0])
        try:
            ilu = sla.spilu(A)
            M = sla.LinearOperator(A.shape, matvec=ilu.solve, dtype=float)
            ref, info, rel = gmres_count(A, b, M)
            rref, rinfo, rrel = gmres_count(A, b, M, right=True)
            line += "scipy %5d%s (right %5d%s) fill %.2f" % (
                ref, "" if info == 0 else "!", rref, "" if rinfo == 0 else "!",
                (ilu.L.nnz + ilu.U.nnz - A.shape[0]) / A.nnz)
        except RuntimeError as e:
            ref = None
            line += "scipy spilu failed: %s" % e
        spk = None
        if args.bench:
            with tempfile.TemporaryDirectory() as tmp:
                Ms, st = spk_factors(args.bench, path, tmp)
                if Ms is None:
                    line += "  | spk factors failed: %s" % st
                else:
                    its, info, rel = gmres_count(A.tocsr(), b, Ms)
                    rits, rinfo, rrel = gmres_count(A.tocsr(), b, Ms, right=True)
                    line += "  | spk factors %5d%s (right %5d%s) fill %.2f, %d moved, %d zero " \
                            "pivots, %.3f s" % (its, "" if info == 0 else "!", rits,
                                                "" if rinfo == 0 else "!", st["fill"],
                                                st["columns_moved"], st["zero_pivots"],
                                                st["seconds"])
                    spk = its if info == 0 else None
        if args.solve:
            res, note = spk_solve(args.solve, path, rhs)
            if res is None:
                notes.append("%s: %s" % (name, note))
            else:
                line += "  | spk solve %5d %s" % (res["iterations"], res.get("reason", ""))
                spk = res["iterations"] if str(res.get("reason", "")).startswith("CONVERGED") \
                    else None
        if ref and (args.bench or args.solve):
            if spk is None:
                line += "  ratio -"
                bad += name in goal
            else:
                ratio = spk / ref
                line += "  ratio %.3g" % ratio
                bad += name in goal and ratio > args.max_ratio
        print(line)
    for n in notes:
        print("note: " + n + ": SciPy's counts only")
    print("'!': did not reach rtol in %d restarts; fill: (nnz(L) + nnz(U) - n) / nnz(A)" %
          MAXCYCLES)
    if bad:
        print("FAIL: %d goal matrices above %.2fx of SciPy's iterations (or not converged)" %
              (bad, args.max_ratio))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
