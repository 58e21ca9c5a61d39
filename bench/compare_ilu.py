#!/usr/bin/python3
"""bench/compare_ilu.py -- spk's ILU(0)-GMRES and IC(0)-CG iterations beside a textbook
reference written here on SciPy's CSR.

The reference: ILU(0) by the IKJ loop on A's pattern (Saad, Iterative Methods, 2nd ed., alg.
10.4), IC(0) by the row-wise incomplete Cholesky L L^T on A's lower triangle (a form other than
spk's L D L^T, so the two cross-check), triangular solves by scipy.sparse.linalg.
spsolve_triangular (run in C by SuperLU, see triangular()). A pivot of at most 1e-13 times its row's largest |a_ij| (IC: a
non-positive one) is refused, as spk refuses it. M^-1 is a LinearOperator; GMRES(30) runs on
the right-preconditioned operator A M^-1 (x = M^-1 y), as spk's GMRES does, so that both test
the unpreconditioned residual (SciPy's gmres with M= would precondition on the left and test
M^-1 r); its inner iterations are counted with callback_type='pr_norm', one call each, as spk
counts them. CG takes M directly (the preconditioned CG is the same either side).

b = A * ones (the solve command's default), x0 = 0, rtol 1e-8, atol 0; both codes get
max(1000, 10 n) iterations. For each matrix the table gives the reference's iterations beside
`solve --precond ilu0 --method gmres --json` (and ic0 with cg where A is symmetric with a
positive diagonal). Exit status 1 when spk takes more than 1.2x the reference's iterations
where the reference converged, or refuses a factorization the reference makes; 0 otherwise.

    /usr/bin/python3 bench/compare_ilu.py --solve build/solve [--ratio 1.2] [--device gpu] [FILE...]

With no FILE: every square matrix of inputs/ (right-hand sides left out).
"""
import argparse
import glob
import inspect
import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import scipy
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla

PIVOT_TINY = 1e-13          # spk's ILU_PIVOT_TINY (solvers/ilu0.c)


class Refused(Exception):
    pass


def read_matrix(path):
    A = scipy.io.mmread(path)
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.sort_indices()
    return A


def ilu0(A):
    """L (unit lower) and U with (L U)_ij = a_ij on A's pattern: the IKJ loop."""
    n, ptr, col = A.shape[0], A.indptr, A.indices
    w = A.data.copy()
    diag = np.full(n, -1)
    for i in range(n):
        hit = np.nonzero(col[ptr[i]:ptr[i + 1]] == i)[0]
        if len(hit) == 0:
            raise Refused("row %d: a(i,i) not stored" % (i + 1))
        diag[i] = ptr[i] + hit[0]
    for i in range(n):
        pos = {col[p]: p for p in range(ptr[i], ptr[i + 1])}
        for p in range(ptr[i], diag[i]):
            k = col[p]
            w[p] /= w[diag[k]]                                  # l_ik = a_ik / u_kk
            for q in range(diag[k] + 1, ptr[k + 1]):
                if col[q] in pos:
                    w[pos[col[q]]] -= w[p] * w[q]               # a_ij -= l_ik u_kj
        rowmax = np.max(np.abs(A.data[ptr[i]:ptr[i + 1]]))
        if not abs(w[diag[i]]) > PIVOT_TINY * rowmax:
            raise Refused("row %d: pivot %.3g" % (i + 1, w[diag[i]]))
    F = sp.csr_matrix((w, col, ptr), shape=A.shape)
    return (sp.tril(F, -1) + sp.eye(n)).tocsr(), sp.triu(F).tocsr()


def ic0(A):
    """L lower with (L L^T)_ij = a_ij on the lower triangle's pattern (row-wise)."""
    T = sp.tril(A).tocsr()
    T.sort_indices()
    n, ptr, col = T.shape[0], T.indptr, T.indices
    w = T.data.copy()
    rows = [None] * n                                           # row k of L as {m: l_km}
    for i in range(n):
        if ptr[i + 1] == ptr[i] or col[ptr[i + 1] - 1] != i:
            raise Refused("row %d: a(i,i) not stored" % (i + 1))
        li = {}
        for p in range(ptr[i], ptr[i + 1] - 1):
            k = col[p]
            s = w[p] - sum(li[m] * lkm for m, lkm in rows[k].items() if m < k and m in li)
            li[k] = s / rows[k][k]
        d = w[ptr[i + 1] - 1] - sum(v * v for v in li.values())
        if not d > PIVOT_TINY * np.max(np.abs(A.data[A.indptr[i]:A.indptr[i + 1]])):
            raise Refused("row %d: pivot %.3g" % (i + 1, d))
        li[i] = math.sqrt(d)
        rows[i] = li
        w[ptr[i]:ptr[i + 1]] = [li[c] for c in col[ptr[i]:ptr[i + 1]]]
    L = sp.csr_matrix((w, col, ptr), shape=T.shape)
    return L, L.T.tocsr()


def triangular(T, lower):
    """x = T^-1 v for triangular T. spsolve_triangular is the definition, but SciPy < 1.12
    runs it as a Python loop over the rows (70 ms on 1138 rows): GMRES would take hours.
    SuperLU's LU of a triangular matrix in its natural order without pivoting is the matrix
    itself (no fill, no permutation), so its solve is the same substitution in C; it is
    checked against spsolve_triangular once per factor."""
    lu = sla.splu(sp.csc_matrix(T), permc_spec="NATURAL", diag_pivot_thresh=0.0,
                  options={"SymmetricMode": True})
    v = np.random.default_rng(1).uniform(-1, 1, T.shape[0])
    want = sla.spsolve_triangular(sp.csr_matrix(T), v, lower=lower)
    got = lu.solve(v)
    if not np.allclose(got, want, rtol=1e-8, atol=1e-12 * np.max(np.abs(want))):
        raise Refused("SuperLU's triangular solve differs from spsolve_triangular")
    return lu.solve


def minv(L, U):
    lsolve, usolve = triangular(L, True), triangular(U, False)
    return sla.LinearOperator(L.shape, matvec=lambda r: usolve(lsolve(np.ravel(r))),
                              dtype=np.float64)


def tol_kw(fn):
    return {("rtol" if "rtol" in inspect.signature(fn).parameters else "tol"): 1e-8}


def ref_gmres(A, b, M, maxiter, restart=30):
    """Inner iterations of GMRES(restart) on A M^-1, or None when it did not converge."""
    count = [0]
    AM = sla.LinearOperator(A.shape, matvec=lambda v: A @ (M @ np.ravel(v)), dtype=np.float64)

    def cb(_):
        count[0] += 1
    y, info = sla.gmres(AM, b, restart=restart, maxiter=max(1, math.ceil(maxiter / restart)),
                        atol=0.0, callback=cb, callback_type="pr_norm", **tol_kw(sla.gmres))
    rel = np.linalg.norm(b - A @ (M @ y)) / np.linalg.norm(b)
    return (count[0] if info == 0 else None), rel


def ref_cg(A, b, M, maxiter):
    count = [0]

    def cb(_):
        count[0] += 1
    x, info = sla.cg(A, b, M=M, maxiter=maxiter, atol=0.0, callback=cb, **tol_kw(sla.cg))
    return (count[0] if info == 0 else None), np.linalg.norm(b - A @ x) / np.linalg.norm(b)


def run_spk(solve, path, method, precond, maxiter, device):
    cmd = [solve, "-A", path, "--method", method, "--precond", precond, "--rtol", "1e-8",
           "--maxiter", str(maxiter), "--device", device, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    d = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {"error": p.stderr.strip()}
    if "error" in d:
        m = re.search(r"[\w-]+ pivot [^;(]*?at row \d+", d["error"])
        return None, "refused (%s)" % (m.group(0) if m else d["error"][:60])
    conv = d["reason"].startswith("CONVERGED")
    return (d["iterations"] if conv else None), "%s %d" % (d["reason"], d["iterations"])


def compare(solve, path, label, factor, ref_solve, method, precond, ratio, device):
    """One row of the table; returns (row, ok)."""
    A = read_matrix(path)
    n = A.shape[0]
    maxiter = max(1000, 10 * n)
    b = A @ np.ones(n)
    try:
        ref_its, ref_rel = ref_solve(A, b, minv(*factor(A)), maxiter)
        ref_txt = "%d" % ref_its if ref_its is not None else "no conv. (rel %.1e)" % ref_rel
    except Refused as e:
        ref_its, ref_txt = None, "refused (%s)" % e
    spk_its, spk_txt = run_spk(solve, path, method, precond, maxiter, device)
    ok, verdict = True, ""
    if ref_its is not None:
        if spk_its is None:
            ok, verdict = False, "FAIL: spk did not converge"
        elif spk_its > ratio * ref_its:
            ok, verdict = False, "FAIL: %.2fx the reference" % (spk_its / ref_its)
        else:
            verdict = "ok (%.2fx)" % (spk_its / ref_its)
    elif ref_txt.startswith("refused"):
        if spk_txt.startswith("refused"):
            verdict = "ok (both refuse)"
        else:
            ok, verdict = spk_its is not None, "reference refuses, spk factors"
    else:
        verdict = "reference does not converge"
    return "| %s | %d | %s | %s | %s | %s |" % (os.path.basename(path), n, label, ref_txt,
                                                spk_its if spk_its is not None else spk_txt,
                                                verdict), ok


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--solve", required=True, help="path of spk's solve command")
    ap.add_argument("--ratio", type=float, default=1.2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"],
                    help="the device spk solves on (default cpu)")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    files = a.files or sorted(f for f in glob.glob(os.path.join(here, "..", "inputs", "*.mtx"))
                              if "_rhs" not in f and not f.endswith(("_b.mtx", "_x.mtx")))
    print("SciPy %s; b = A*ones, x0 = 0, rtol 1e-8; GMRES(30) right-preconditioned\n" %
          scipy.__version__)
    print("| matrix | n | method | reference its | spk its | verdict |")
    print("|---|---|---|---|---|---|")
    all_ok = True
    for path in files:
        if scipy.io.mminfo(path)[4] == "complex":        # spk reads real matrices only
            continue
        A = read_matrix(path)
        if A.shape[0] != A.shape[1]:
            continue
        row, ok = compare(a.solve, path, "ilu0 + gmres(30)", ilu0, ref_gmres, "gmres", "ilu0",
                          a.ratio, a.device)
        print(row, flush=True)
        all_ok &= ok
        if abs(A - A.T).max() == 0 and np.all(A.diagonal() > 0):
            row, ok = compare(a.solve, path, "ic0 + cg", ic0, ref_cg, "cg", "ic0", a.ratio,
                              a.device)
            print(row, flush=True)
            all_ok &= ok
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
