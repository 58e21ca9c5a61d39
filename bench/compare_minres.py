#!/usr/bin/env python3
"""bench/compare_minres.py -- spk's MINRES iteration count beside SciPy's minres.

The system: a Matrix Market file, or by default the 5-point Laplacian on a 30 x 30 grid
shifted by -0.55 I (symmetric indefinite: 37 of its 900 eigenvalues are negative, the nearest
to 0 is 0.024 away; tests/test_krylov.c builds the same). b = A * ones, x0 = 0.

The two codes stop on different tests: SciPy when ||r||_M^-1 <= rtol ||A|| ||x|| (its estimates
of both norms), spk when ||r|| <= rtol ||b||. So SciPy runs twice: once with rtol (its own
count, printed), once with a tolerance it cannot reach, a callback recording ||b - A x_k|| at
each step; the reference is the first k with ||b - A x_k|| <= rtol ||b||, spk's test, on the
same iterates (spk's recurrences are SciPy's). spk runs through `solve --json`.

    python3 bench/compare_minres.py --solve build/solve [--precond none|jacobi] [--rtol 1e-8]
        [--grid N] [--sigma S] [--tolerance 0.1] [FILE]

Exit status 1 when spk does not converge or its count is more than --tolerance (relative)
from the reference; 2 when a run fails.
"""
import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as sla


def shifted_laplacian(N, sigma):
    T = sp.diags([-np.ones(N - 1), 2 * np.ones(N), -np.ones(N - 1)], [-1, 0, 1])
    I = sp.identity(N)
    return (sp.kron(I, T) + sp.kron(T, I) - sigma * sp.identity(N * N)).tocsr()


def scipy_counts(A, b, M, rtol):
    """(SciPy's own count at rtol, the first k with ||b - A x_k|| <= rtol ||b||)."""
    kw = "rtol" if "rtol" in inspect.signature(sla.minres).parameters else "tol"
    bnorm = np.linalg.norm(b)
    seen = {"k": 0, "first": None}

    def count(xk):
        seen["k"] += 1

    def track(xk):
        seen["k"] += 1
        if seen["first"] is None and np.linalg.norm(b - A @ xk) <= rtol * bnorm:
            seen["first"] = seen["k"]

    sla.minres(A, b, M=M, callback=count, maxiter=10 * A.shape[0], **{kw: rtol})
    own = seen["k"]
    seen["k"] = 0
    sla.minres(A, b, M=M, callback=track, maxiter=10 * A.shape[0], **{kw: 1e-15})
    return own, seen["first"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solve", required=True)
    ap.add_argument("--precond", default="none", choices=["none", "jacobi"])
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--grid", type=int, default=30)
    ap.add_argument("--sigma", type=float, default=0.55)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("file", nargs="?")
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        if a.file:
            A = sp.csr_matrix(scipy.io.mmread(a.file), dtype=np.float64)
            path, name = a.file, os.path.basename(a.file)
        else:
            A = shifted_laplacian(a.grid, a.sigma)
            path, name = os.path.join(tmp, "A.mtx"), "laplacian%d-%g" % (a.grid, a.sigma)
            scipy.io.mmwrite(path, A, symmetry="symmetric")
        b = A @ np.ones(A.shape[0])
        M = sp.diags(1.0 / A.diagonal()) if a.precond == "jacobi" else None
        own, ref = scipy_counts(A, b, M, a.rtol)
        p = subprocess.run([a.solve, "-A", path, "--method", "minres", "--precond", a.precond,
                            "--rtol", repr(a.rtol), "--device", a.device, "--json"],
                           capture_output=True, text=True)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        print("solve failed (rc %d): %s" % (p.returncode, p.stderr.strip()))
        return 2
    its = r["iterations"]
    print("%s, precond %s, rtol %g: spk %d (%s, true_rel %.2e); SciPy %s to ||b - A x|| <= "
          "rtol ||b|| (%d at its own test)" % (name, a.precond, a.rtol, its, r["reason"],
                                                r["true_rel"], ref, own))
    if ref is None:
        print("SciPy never met the test")
        return 1
    ratio = its / ref
    print("ratio spk / SciPy = %.3f" % ratio)
    ok = r["reason"] == "CONVERGED_RTOL" and abs(ratio - 1) <= a.tolerance
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
