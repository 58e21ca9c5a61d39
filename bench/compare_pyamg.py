#!/usr/bin/env python3
"""bench/compare_pyamg.py -- reference iteration counts for spk's smoothed-aggregation AMG: PyAMG
with the settings spk's AMG uses by default, beside spk's own count when its `solve` has
`--precond amg`.

PyAMG's side (the readable reference: Vanek, Mandel & Brezina, Computing 56, 1996; PyAMG's
pyamg/aggregation/{aggregation,tentative,smooth}.py):
    smoothed_aggregation_solver(A, B=B, symmetry='hermitian',
        strength=('symmetric', {'theta': 0.0}), aggregate='standard',
        smooth=('jacobi', {'omega': 4/3, 'degree': 1, 'filter_entries': False}),
        presmoother = postsmoother = ('jacobi', {'omega': 1.6, 'withrho': True, 'iterations': 1}),
        improve_candidates=None, max_coarse=500, max_levels=10, coarse_solver='splu',
        keep=False)
  P = (I - (4/3)/rho(D^-1 A) D^-1 A) T, T from a QR of B per aggregate; the smoother is damped
  Jacobi x += 1.6/rho(D^-1 A) D^-1 (b - A x) (spk's default weight; --omega W sets both sides'
  to W / rho, 4/3 the textbook value and spk's before 0.6.0): PyAMG's setup_jacobi divides omega by
  rho_D_inv_A(A) when withrho is set (pyamg/relaxation/smoothing.py). rho is estimated by
  Lanczos from a random vector (np.random.rand): the seed is set to 0 before each setup so that
  a rerun gives the same counts. (Older PyAMG names the prolongation option 'filter'.)
  The coarsest matrix is factored inside the setup time, not at the first solve. Sparse LU
  rather than 'cholesky' (both exact): with several candidates in B an aggregate of fewer
  unknowns than candidates gives T zero columns, hence zero rows and columns in the coarse
  matrix, which PyAMG's splu drops before factoring (its comment in multilevel.py) and its dense
  Cholesky would stop on.
  Solve: ml.solve(b, x0=0, tol=1e-8, accel='cg', maxiter, residuals=res): pyamg.krylov.cg with
  criteria 'rr', i.e. stop when ||r_k|| < tol ||b|| (r_k its recurrence residual, recomputed as
  b - A x every 8th step), the test spk makes (<= rtol ||b||, atol 0). res holds ||r_0|| and one
  norm per iteration: iterations = len(res) - 1. The true ||b - A x|| / ||b|| is recomputed here.
  Two right-hand sides b = A x_true, x0 = 0, each solved with the same hierarchy: x_true = ones
  ("ones", as the other scripts) and x_true uniform in [-1, 1] (numpy default_rng(0), "rand"):
  COMPARE ON rand. x_true = ones lies in the range of T (B = ones, or rigid-body modes, whose
  span holds ones), and then one V-cycle from x0 = 0 is exact wherever the smoother's weight w
  equals the prolongation's: the presmoothed x1 = w D^-1 b leaves x_true - x1 = (I - w D^-1 A)
  ones = P 1_c, in the range of P, which the exact coarse correction finds (and the same on each
  level). PyAMG estimates rho(D^-1 A) twice, from two random vectors, so its ones counts measure
  how far the two estimates differ (poisson3d:64: 8 iterations, 13 with rand; Trefethen_2000: 1
  and 6), and an AMG with one estimate per level takes 1 iteration on every ones problem (so
  does PyAMG given one: checked by seeding both estimates alike).
  B (near-null space): ones for scalar problems; for elasticity the rigid
  body modes from the node coordinates, interleaved per node as the unknowns are (3-D: the
  translations (1,0,0), (0,1,0), (0,0,1) and the rotations (0,-z,y), (z,0,-x), (-y,x,0); 2-D:
  two translations and (-y,x)), with A as BSR of blocksize = unknowns per node.
  --chebyshev adds a second PyAMG run with presmoother = postsmoother = ('chebyshev',
  {'degree': 3}) (PyAMG's polynomial in A itself, on [rho/30, 1.1 rho]).

spk's side: BUILD/solve -A SPEC --method cg --precond amg --rtol 1e-8 --maxiter N --device D
  --json [--block-size 3 --coords FILE] [-b FILE (rand)] ("iterations", "reason", "true_rel"), FILE a Matrix
  Market array of nodes x dim coordinates (column-major, as Matrix Market arrays are). A solve
  without --precond amg (exit 2 naming the option) leaves PyAMG's side alone, with a note.

Problems (--problems, comma separated; default all of them):
  poisson3d:M   7-point Laplacian on an M^3 interior grid (6 / -1, Dirichlet: neighbours outside
                dropped), built here as bench/cpu_cg_vs_scipy.py builds it and checked entry for
                entry against spk's generator through libspk (spk_matrix_generate +
                spk_matrix_csr) when libspk.so is found. M = 50, 64, 100, 150, 200: the
                refinement study (AMG's count should stay nearly flat).
  NAME          inputs/NAME.mtx (scipy.io.mmread): the SPD matrices bcsstk09, bcsstk13, nos6,
                nos5, bcsstk03, 1138_bus, LF10, Trefethen_2000, Journals (B = ones for all: no
                coordinates come with them, which is what spk will do too).
  jump3d:64, lame3d:N (N = 16, 24, 48)
                spk's own generators, read through libspk, not reimplemented; lame3d's node
                coordinates through spk_generate_coords. Skipped with a note while libspk lacks
                them.
  heat:N        examples/heat.c's system matrix M + dt K at its first time step (P1 elements on
                N x N squares, (N-1)^2 unknowns, dt = T/S ~ h^2), written by
                `heat --n N --write-matrix FILE`. N = 32 (heat's default), 100, 200, 400, 800.
                With dt ~ h^2 the mass matrix weighs as much as the stiffness: a well
                conditioned matrix that every preconditioner solves in a few steps.

Install PyAMG into its own folder, never over Debian's SciPy (PyAMG 5.4 needs SciPy >= 1.15,
Debian 12 ships 1.10; pip puts the newer SciPy and NumPy it needs into the same folder):
    /usr/bin/python3 -m pip install --target /work/pyamg-site pyamg
  (with no index reachable: pip download pyamg elsewhere, then PIP_FIND_LINKS=DIR or
  `pip install --no-index --find-links DIR --target /work/pyamg-site pyamg`), and run with
    PYTHONPATH=/work/pyamg-site /usr/bin/python3 bench/compare_pyamg.py [--spk BUILD/solve]
        [--lib BUILD/libspk.so] [--heat BUILD/heat] [--problems P,...] [--maxiter N]
        [--device cpu|gpu|auto] [--chebyshev] [--json out.json] [--markdown]
--lib and --heat default to the files beside --spk. Exit status 0 unless a run failed to start.
"""
import argparse
import ctypes
import datetime
import inspect
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy
import scipy.io
import scipy.sparse as sp

try:
    import pyamg
except ImportError:
    sys.exit("compare_pyamg: PyAMG not found; install it into its own folder and run with "
             "PYTHONPATH=/work/pyamg-site (see the docstring: python3 bench/compare_pyamg.py -h)")

from cpu_cg_vs_scipy import poisson3d   # the one Python twin of spk's poisson3d:M

INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inputs")
SPD_INPUTS = ("bcsstk09", "bcsstk13", "nos6", "nos5", "bcsstk03", "1138_bus", "LF10",
              "Trefethen_2000", "Journals")
DEFAULT_PROBLEMS = (["poisson3d:%d" % m for m in (50, 64, 100, 150, 200)] + list(SPD_INPUTS)
                    + ["jump3d:64"] + ["lame3d:%d" % n for n in (16, 24, 48)]
                    + ["heat:%d" % n for n in (32, 100, 200, 400, 800)])
SPK_GENERATED = ("jump3d", "lame3d")    # read through libspk, never rebuilt here
RTOL = 1e-8
SEED = 0
OMEGA = 4.0 / 3.0                       # the prolongation's weight over rho(D^-1 A)
RELAX_OMEGA = 1.6                       # the smoother's (spk_amg_options.omega's default; --omega)
SPK_DEVICE_CPU = 1
# The right-hand sides, b = A x_true: "ones" as the other scripts; "rand" the count to compare
# (the docstring says why ones alone misleads here)
RHS = {"ones": "ones", "rand": "rand"}


class Libspk:
    """spk's generators through its public API (ctypes), as bench/cpu_cg_vs_scipy.py reads them."""

    def __init__(self, path):
        vp = ctypes.c_void_p
        lib = ctypes.CDLL(path)
        lib.spk_context_create.argtypes = [ctypes.POINTER(vp), ctypes.c_int]
        lib.spk_matrix_generate.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(vp)]
        lib.spk_matrix_csr.argtypes = [vp, ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)),
                                       ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                       ctypes.POINTER(ctypes.POINTER(ctypes.c_double))]
        lib.spk_matrix_get_info.argtypes = [vp, ctypes.c_char_p]
        lib.spk_last_error.argtypes = [vp]
        lib.spk_last_error.restype = ctypes.c_char_p
        lib.spk_matrix_destroy.argtypes = [vp]
        lib.spk_context_destroy.argtypes = [vp]
        self.lib, self.path, self.ctx = lib, path, vp()
        if lib.spk_context_create(ctypes.byref(self.ctx), SPK_DEVICE_CPU) != 0:
            raise RuntimeError("spk_context_create: %s" % self.error())
        self.has_coords = hasattr(lib, "spk_generate_coords")
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [vp]

    def error(self):
        return (self.lib.spk_last_error(self.ctx) or b"").decode()

    def matrix(self, spec):
        """spk's matrix of `spec` as a canonical csr_matrix (copied out of libspk)."""
        lib, vp = self.lib, ctypes.c_void_p
        A = vp()
        if lib.spk_matrix_generate(self.ctx, spec.encode(), ctypes.byref(A)) != 0:
            raise LookupError("spk_matrix_generate(%s): %s" % (spec, self.error()))
        try:
            # spk_matrix_info opens with int64 nrows, ncols, nnz; the rest of the struct is
            # not read here, so a generous buffer keeps this independent of its later fields
            info = ctypes.create_string_buffer(4096)
            if lib.spk_matrix_get_info(A, info) != 0:
                raise RuntimeError("spk_matrix_get_info: %s" % self.error())
            nrows, ncols, nnz = struct.unpack_from("<qqq", info.raw)
            rp = ctypes.POINTER(ctypes.c_int64)()
            ci = ctypes.POINTER(ctypes.c_int32)()
            va = ctypes.POINTER(ctypes.c_double)()
            if lib.spk_matrix_csr(A, ctypes.byref(rp), ctypes.byref(ci), ctypes.byref(va)) != 0:
                raise RuntimeError("spk_matrix_csr: %s" % self.error())
            rowptr = np.ctypeslib.as_array(rp, shape=(nrows + 1,)).copy()
            colind = np.ctypeslib.as_array(ci, shape=(nnz,)).copy() if nnz else np.zeros(0, np.int32)
            val = np.ctypeslib.as_array(va, shape=(nnz,)).copy() if nnz else np.zeros(0)
        finally:
            lib.spk_matrix_destroy(A)
        return sp.csr_matrix((val, colind, rowptr), shape=(nrows, ncols))

    def coords(self, spec):
        """The generator's node coordinates, nodes x dim (node-major from spk), or None."""
        if not self.has_coords:
            return None
        f = self.lib.spk_generate_coords   # (ctx, spec, double **xyz, int64_t *nodes, int *dim)
        f.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_double)),
                      ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int)]
        xyz = ctypes.POINTER(ctypes.c_double)()
        nodes, dim = ctypes.c_int64(0), ctypes.c_int(0)
        st = f(self.ctx, spec.encode(), ctypes.byref(xyz), ctypes.byref(nodes), ctypes.byref(dim))
        if st != 0:
            raise LookupError("spk_generate_coords(%s): %s" % (spec, self.error()))
        X = np.ctypeslib.as_array(xyz, shape=(nodes.value * dim.value,)).copy()
        self.libc.free(ctypes.cast(xyz, ctypes.c_void_p))
        return X.reshape(nodes.value, dim.value)

    def close(self):
        self.lib.spk_context_destroy(self.ctx)


def rigid_body_modes(X):
    """Near-null space of linear elasticity at nodes X (nodes x dim), unknowns interleaved per
    node: 3-D 3 translations + 3 rotations, 2-D 2 translations + 1 rotation."""
    nodes, dim = X.shape
    if dim == 2:
        x, y = X[:, 0], X[:, 1]
        B = np.zeros((nodes, 2, 3))
        B[:, 0, 0] = B[:, 1, 1] = 1.0
        B[:, 0, 2], B[:, 1, 2] = -y, x                       # (-y, x)
    elif dim == 3:
        x, y, z = X[:, 0], X[:, 1], X[:, 2]
        B = np.zeros((nodes, 3, 6))
        B[:, 0, 0] = B[:, 1, 1] = B[:, 2, 2] = 1.0
        B[:, 1, 3], B[:, 2, 3] = -z, y                       # (0, -z, y)
        B[:, 0, 4], B[:, 2, 4] = z, -x                       # (z, 0, -x)
        B[:, 0, 5], B[:, 1, 5] = -y, x                       # (-y, x, 0)
    else:
        raise ValueError("coordinates of dimension %d" % dim)
    return B.reshape(nodes * dim, B.shape[2])


def write_coords(path, X):
    """X (nodes x dim) as a Matrix Market array, column by column."""
    with open(path, "w") as f:
        f.write("%%%%MatrixMarket matrix array real general\n%d %d\n" % X.shape)
        np.savetxt(f, X.ravel(order="F"), fmt="%.17g")


def canonical(A):
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.sort_indices()
    return A


def problem(name, lib, heat, workdir):
    """A dict: A (csr), block (unknowns per node), B, spec (spk's -A), spk_args, check (a note
    on where A came from); raises LookupError with the reason to skip."""
    kind, _, arg = name.partition(":")
    p = {"name": name, "block": 1, "X": None, "spk_args": [], "check": ""}
    if kind == "poisson3d":
        p["A"], p["spec"] = poisson3d(int(arg)), name
        if lib is None:
            p["check"] = "built here (no libspk to check against)"
        else:
            K = lib.matrix(name)
            A = p["A"]
            same = (np.array_equal(A.indptr, K.indptr) and np.array_equal(A.indices, K.indices)
                    and np.array_equal(A.data, K.data))
            if not same:
                raise LookupError("the matrix built here is NOT spk's (indptr, indices or data differ)")
            p["check"] = "identical to spk's (indptr, indices, data)"
    elif kind in SPK_GENERATED:
        if lib is None:
            raise LookupError("needs libspk (--lib or --spk): spk's generator, not rebuilt here")
        p["A"], p["spec"], p["check"] = canonical(lib.matrix(name)), name, "spk's generator"
        if kind == "lame3d":
            X = lib.coords(name)
            if X is None:
                raise LookupError("libspk has no spk_generate_coords yet (rigid-body modes)")
            if X.shape[0] * X.shape[1] != p["A"].shape[0]:
                raise LookupError("%d nodes x %d coordinates for %d unknowns" %
                                  (X.shape[0], X.shape[1], p["A"].shape[0]))
            p["X"], p["block"] = X, X.shape[1]
            path = os.path.join(workdir, "%s.coords.mtx" % name.replace(":", "_"))
            write_coords(path, X)
            p["spk_args"] = ["--block-size", str(X.shape[1]), "--coords", path]
    elif kind == "heat":
        if not heat or not os.path.exists(heat):
            raise LookupError("needs examples/heat (--heat or --spk) to write its matrix")
        path = os.path.join(workdir, "heat_%s.mtx" % arg)
        r = subprocess.run([heat, "--device", "cpu", "--n", arg, "--write-matrix", path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise LookupError("%s --write-matrix: exit %d: %s" % (heat, r.returncode,
                              (r.stderr.strip().splitlines() or [""])[0]))
        p["A"], p["spec"], p["check"] = canonical(scipy.io.mmread(path)), path, r.stdout.strip()
    else:
        path = os.path.join(INPUTS, name + ".mtx")
        if not os.path.exists(path):
            raise LookupError("neither a known generator nor inputs/%s.mtx" % name)
        p["A"], p["spec"], p["check"] = canonical(scipy.io.mmread(path)), os.path.abspath(path), "inputs/"
    n = p["A"].shape[0]
    p["B"] = rigid_body_modes(p["X"]) if p["X"] is not None else np.ones((n, 1))
    return p


def pyamg_options(smoother):
    """The settings of spk's AMG, spelled for the installed PyAMG."""
    from pyamg.aggregation import smooth as sm
    params = inspect.signature(sm.jacobi_prolongation_smoother).parameters
    filt = "filter_entries" if "filter_entries" in params else "filter"
    relax = (("jacobi", {"omega": RELAX_OMEGA, "withrho": True, "iterations": 1})
             if smoother == "jacobi"
             else ("chebyshev", {"degree": 3, "iterations": 1}))
    return dict(symmetry="hermitian", strength=("symmetric", {"theta": 0.0}), aggregate="standard",
                smooth=("jacobi", {"omega": OMEGA, "degree": 1, filt: False}),
                presmoother=relax, postsmoother=relax, improve_candidates=None, max_coarse=500,
                max_levels=10, coarse_solver="splu", keep=False)


def x_true(n, rhs):
    """The exact solution of each right-hand side: ones, or uniform in [-1, 1] (seeded)."""
    return np.ones(n) if rhs == "ones" else np.random.default_rng(SEED).uniform(-1.0, 1.0, n)


def run_pyamg(p, maxiter, smoother="jacobi"):
    """One setup, then one solve for each right-hand side in RHS."""
    A = p["A"]
    if p["block"] > 1:
        A = A.tobsr(blocksize=(p["block"], p["block"]))
    n = A.shape[0]
    np.random.seed(SEED)                       # rho(D^-1 A) by Lanczos from np.random.rand
    t0 = time.perf_counter()
    ml = pyamg.smoothed_aggregation_solver(A, B=p["B"], **pyamg_options(smoother))
    coarse = ml.levels[-1].A
    ml.coarse_solver(coarse, np.zeros(coarse.shape[0]))   # factor now: setup, not solve
    rho = getattr(ml.levels[0].A, "rho_D_inv", None)
    out = {"levels": len(ml.levels), "sizes": [int(lv.A.shape[0]) for lv in ml.levels],
           "operator_complexity": float(ml.operator_complexity()),
           "grid_complexity": float(ml.grid_complexity()),
           "rho_DinvA": None if rho is None else float(rho),
           "setup_s": time.perf_counter() - t0}
    for rhs in RHS:
        b = p["A"] @ x_true(n, rhs)
        res = []
        t0 = time.perf_counter()
        x, info = ml.solve(b, x0=np.zeros(n), tol=RTOL, accel="cg", maxiter=maxiter,
                           residuals=res, return_info=True)
        out[rhs] = {"iterations": len(res) - 1, "info": int(info), "solve_s": time.perf_counter() - t0,
                    "true_rel": float(np.linalg.norm(b - p["A"] @ x) / np.linalg.norm(b))}
    return out


def run_spk(solve, p, maxiter, device, b_path):
    """spk's result (dict), or {"note": why there is none}; b_path None: b = A * ones."""
    cmd = [solve, "-A", p["spec"], "--method", "cg", "--precond", "amg", "--rtol", repr(RTOL),
           "--maxiter", str(maxiter), "--device", device, "--json", "--quiet",
           "--amg-omega", repr(RELAX_OMEGA)] + p["spk_args"]
    cmd += ["-b", b_path] if b_path else []
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        try:
            msg = json.loads(r.stdout).get("error", "")
        except ValueError:
            msg = (r.stderr.strip().splitlines() or [""])[0]
        return {"note": "exit %d: %s" % (r.returncode, msg), "command": " ".join(cmd)}
    d = json.loads(r.stdout)
    return {"iterations": d["iterations"], "reason": d["reason"], "true_rel": d["true_rel"],
            "setup_s": d.get("setup_s"), "solve_s": d.get("solve_s"), "command": " ".join(cmd)}


def run_spk_all(solve, p, maxiter, device, workdir):
    out = {}
    for rhs in RHS:
        b_path = None
        if rhs != "ones":
            b_path = os.path.join(workdir, "b.mtx")
            b = p["A"] @ x_true(p["A"].shape[0], rhs)
            with open(b_path, "w") as f:
                f.write("%%%%MatrixMarket matrix array real general\n%d 1\n" % b.size)
                np.savetxt(f, b, fmt="%.17g")
        out[rhs] = run_spk(solve, p, maxiter, device, b_path)
    return out


def spk_has_amg(solve):
    """(True, "") if solve takes --precond amg, else (False, what it says)."""
    r = subprocess.run([solve, "-A", "poisson3d:4", "--method", "cg", "--precond", "amg",
                        "--device", "cpu", "--json", "--quiet"], capture_output=True, text=True)
    if r.returncode in (0, 1):
        return True, ""
    return False, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[0]


def its(d):
    """An iteration count, starred where maxiter stopped it (PyAMG info > 0) or the solve
    did not converge (spk)."""
    if "iterations" not in d:
        return "-"
    bad = d.get("info", 0) != 0 or not d.get("reason", "CONVERGED").startswith("CONVERGED")
    return "%d%s" % (d["iterations"], "*" if bad else "")


def ratio(k, a):
    return "%.2f" % (k["iterations"] / max(a["iterations"], 1)) if "iterations" in k else "-"


def fields(r, cheb, spk):
    """One row's cells: the hierarchy, then per right-hand side PyAMG (Chebyshev) (spk, ratio)."""
    a = r["pyamg"]
    f = [r["problem"], "%d" % r["n"], "%d" % a["levels"], "%.3f" % a["operator_complexity"],
         "%.3f" % a["grid_complexity"], "%d" % a["sizes"][-1],
         "-" if a["rho_DinvA"] is None else "%.4f" % a["rho_DinvA"], "%.2f" % a["setup_s"]]
    if spk:
        f.append(seconds(r["spk"]["rand"].get("setup_s")))
    for rhs in RHS:
        f += [its(a[rhs]), "%.1e" % a[rhs]["true_rel"], "%.2f" % a[rhs]["solve_s"]]
        if cheb:
            f.append(its(r["chebyshev"][rhs]))
        if spk:
            f += [its(r["spk"][rhs]), seconds(r["spk"][rhs].get("solve_s")),
                  ratio(r["spk"][rhs], a[rhs])]
    return f


def seconds(v):
    return "-" if v is None else "%.2f" % v


def header(cheb, spk):
    h = ["problem", "n", "levels", "op. cx", "grid cx", "coarse n", "rho(D^-1 A)", "setup s"]
    h += ["spk setup s"] if spk else []
    for rhs in RHS:
        t = RHS[rhs]
        h += ["its " + t, "true rel", "solve s"] + (["Cheb. its"] if cheb else [])
        h += ["spk its", "spk solve s", "spk/PyAMG"] if spk else []
    return h


WIDTH = {"problem": -15, "n": 8, "lev": 3, "coarse": 6, "rho": 6, "setup s": 7, "rel": 7,
         "solve s": 7, "spk setup s": 7, "spk solve s": 7}   # default 5; negative: left-aligned


def text_row(cells, labels):
    out = []
    for c, h in zip(cells, labels):
        w = WIDTH.get(h, 5)
        out.append(c.ljust(-w) if w < 0 else c.rjust(w))
    return " ".join(out)


def markdown(rows, cheb, spk):
    h = header(cheb, spk)
    out = ["| " + " | ".join(h) + " |", "|" + "---|" * len(h)]
    out += ["| " + " | ".join(fields(r, cheb, spk)) + " |" for r in rows]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spk", help="spk's solve command (BUILD/solve)")
    ap.add_argument("--lib", help="libspk.so (default: beside --spk)")
    ap.add_argument("--heat", help="examples/heat built with --write-matrix (default: beside --spk)")
    ap.add_argument("--problems", default=",".join(DEFAULT_PROBLEMS))
    ap.add_argument("--maxiter", type=int, default=1000, help="for both (default 1000)")
    ap.add_argument("--device", default="cpu", help="spk's --device (default cpu)")
    ap.add_argument("--chebyshev", action="store_true",
                    help="also PyAMG with Chebyshev (degree 3) smoothing")
    ap.add_argument("--omega", type=float, default=RELAX_OMEGA,
                    help="the Jacobi smoother's weight times rho(D^-1 A), both sides (default %g)"
                    % RELAX_OMEGA)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--markdown", action="store_true", help="also print a markdown table")
    a = ap.parse_args()
    globals()["RELAX_OMEGA"] = a.omega

    build = os.path.dirname(os.path.abspath(a.spk)) if a.spk else None
    lib_path = a.lib or (os.path.join(build, "libspk.so") if build else None)
    heat = a.heat or (os.path.join(build, "heat") if build else None)
    lib = Libspk(lib_path) if lib_path and os.path.exists(lib_path) else None
    amg, why = spk_has_amg(a.spk) if a.spk else (False, "no --spk given")
    print("PyAMG %s, SciPy %s, NumPy %s; CG, rtol %g, b = A x_true, x0 = 0, maxiter %d; libspk: %s"
          % (pyamg.__version__, scipy.__version__, np.__version__, RTOL, a.maxiter,
             lib.path if lib else "none"))
    if a.spk and not amg:
        print("spk: %s has no --precond amg yet (%s): PyAMG's side only" % (a.spk, why))
    short = ["problem", "n", "lev", "op.cx", "gr.cx", "coarse", "rho", "setup s"]
    short += ["spk setup s"] if amg else []
    for rhs in RHS:
        short += [rhs, "rel", "solve s"] + (["cheb"] if a.chebyshev else [])
        short += ["spk", "spk solve s", "ratio"] if amg else []
    print(text_row(short, short))
    sys.stdout.flush()
    rows, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="compare_pyamg.") as workdir:
        for name in a.problems.split(","):
            try:
                p = problem(name, lib, heat, workdir)
            except LookupError as e:
                skipped.append({"problem": name, "note": str(e)})
                print("%-16s skipped: %s" % (name, e))
                continue
            r = {"problem": name, "n": int(p["A"].shape[0]), "nnz": int(p["A"].nnz),
                 "block": p["block"], "near_null": int(p["B"].shape[1]), "source": p["check"],
                 "pyamg": run_pyamg(p, a.maxiter)}
            if a.chebyshev:
                r["chebyshev"] = run_pyamg(p, a.maxiter, "chebyshev")
            if amg:
                r["spk"] = run_spk_all(a.spk, p, a.maxiter, a.device, workdir)
                for rhs in RHS:
                    if "note" in r["spk"][rhs]:
                        print("%-16s spk (%s): %s" % (name, RHS[rhs], r["spk"][rhs]["note"]))
            rows.append(r)
            print(text_row(fields(r, a.chebyshev, amg), short))
            sys.stdout.flush()
            del p
    print("(* = maxiter reached or not converged; ones: x_true = ones, rand: x_true uniform in "
          "[-1, 1], seed %d; ratio: spk / PyAMG iterations; setup s and solve s: PyAMG's, and spk's "
          "one-shot `solve` (its setup of the rand run) on --device)" % SEED)
    for r in rows:
        print("%s: %s; B %d column(s), blocksize %d" % (r["problem"], r["source"], r["near_null"],
                                                       r["block"]))
    if a.markdown:
        print()
        print(markdown(rows, a.chebyshev, amg))
    if a.json:
        info = {"date": datetime.date.today().isoformat(), "pyamg": pyamg.__version__,
                "scipy": scipy.__version__, "numpy": np.__version__, "rtol": RTOL,
                "maxiter": a.maxiter, "seed": SEED, "settings": repr(pyamg_options("jacobi")),
                "spk": a.spk, "spk_amg": amg, "spk_note": why, "libspk": lib.path if lib else None,
                "results": rows, "skipped": skipped}
        with open(a.json, "w") as f:
            json.dump(info, f, indent=2)
            f.write("\n")
    if lib:
        lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
