#!/usr/bin/env bash
# tests/test_cli.sh SOLVE INPUTS -- the solve command end to end on the CPU: exit codes for
# success, non-convergence, bad files and bad options; -o reads back and solves the system;
# --json is valid JSON; --history has one row per iteration; malformed files name the line.
set -u
SOLVE=$1
IN=$2
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# --- success, the summary, -o, the error against ones ----------------------------------
run "$SOLVE" -A "$IN/bcsstk09.mtx" --method cg --device cpu -o "$T/x.mtx"
check "converged solve exits 0 (rc=$rc: $err)" test "$rc" -eq 0
check "summary names the reason" grep -q "CONVERGED_RTOL" "$T/out"
check "summary reports the error against ones" grep -q "max |x - 1|" "$T/out"
check "-o wrote the solution" test -s "$T/x.mtx"
check "-o left no temporary file" test -z "$(ls "$T" | grep tmp)"

# the solution read back by an independent program gives a small residual
if command -v python3 >/dev/null; then
  python3 - "$IN/bcsstk09.mtx" "$T/x.mtx" >"$T/py" 2>&1 <<'EOF'
import sys, math
def read_mtx(path):
    with open(path) as f:
        head = f.readline().lower().split()
        sym = head[4] if len(head) > 4 else "general"
        line = f.readline()
        while line.startswith("%"):
            line = f.readline()
        dims = [int(t) for t in line.split()]
        rows = [l.split() for l in f if l.strip() and not l.startswith("%")]
    return head[2], sym, dims, rows
fmt, sym, dims, rows = read_mtx(sys.argv[1])
n = dims[0]
ent = [(int(r[0]) - 1, int(r[1]) - 1, float(r[2])) for r in rows]
if sym == "symmetric":
    ent += [(j, i, v) for (i, j, v) in ent if i != j]
_, _, xd, xr = read_mtx(sys.argv[2])
x = [float(r[0]) for r in xr]
assert len(x) == n
b = [0.0] * n; ax = [0.0] * n
for i, j, v in ent:
    b[i] += v
    ax[i] += v * x[j]
rel = math.sqrt(sum((b[i] - ax[i]) ** 2 for i in range(n)) / sum(t * t for t in b))
print(rel)
sys.exit(0 if rel <= 1e-7 else 1)
EOF
  check "x from -o gives ||b - Ax||/||b|| <= 1e-7 ($(cat "$T/py"))" test $? -eq 0
fi

# --- the defaults work on the first try: bcsstk13 (kappa 1e10) needs Jacobi, which auto takes;
# a hopeless matrix stops early with a reason and a hint ---------------------------------------
run "$SOLVE" -A "$IN/bcsstk13.mtx" --device cpu
check "bcsstk13 converges with the default options (rc=$rc: $err)" test "$rc" -eq 0
check "... auto took jacobi and says why" grep -q "precond jacobi (auto: jacobi: the diagonal is positive)" "$T/out"
run "$SOLVE" -A "$IN/mahindas.mtx" --device cpu --method bicgstab
check "bicgstab on mahindas stops with DIVERGED_DTOL (rc=$rc)" grep -q "DIVERGED_DTOL after 1 iterations" "$T/err"
check "... and names a remedy" grep -q "try --method gmres" "$T/err"
run "$SOLVE" -A "$IN/LF10.mtx" --device cpu --method cg --restart 10
check "--restart with cg is a warning (rc=$rc)" grep -q "warning: --restart applies to gmres and fgmres only" "$T/err"
check "... and the solve still runs" test "$rc" -eq 0
run "$SOLVE" -A "$IN/LF10.mtx" --device cpu --precond jacobi --amg-theta 0.1 --ilu-sweeps 3 --ilut-drop 0.01
check "AMG, ILU and ILUT options with jacobi converge (rc=$rc)" test "$rc" -eq 0
check "... with a warning for each" test "$(grep -c 'warning: --amg-theta applies to --precond amg only\|warning: --ilu-sweeps applies to --precond ilu0, ic0 and ilut only\|warning: --ilut-drop applies to --precond ilut only' "$T/err")" -eq 3
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --method gmres --precond ilut --ilut-drop 0.01 --ilu-sweeps 3
check "... and none where they apply (rc=$rc: $err)" test -z "$(grep warning "$T/err")"
run "$SOLVE" -A "$IN/mahindas.mtx" --device cpu --method gmres --stagnation 40 --json
check "--stagnation 40 ends gmres with DIVERGED_STAGNATION (rc=$rc)" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['reason'] == 'DIVERGED_STAGNATION' and r['iterations'] >= 40 else 1)"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --method cg --precond none --max-time 0.000001
check "--max-time ends the solve with DIVERGED_TIME_LIMIT (rc=$rc)" grep -q "DIVERGED_TIME_LIMIT" "$T/err"
run "$SOLVE" -A "$IN/LF10.mtx" --dtol -1
check "a negative --dtol is refused (rc=$rc)" test "$rc" -eq 2

# --- SIGINT during a long solve: x and the history so far are written, exit 130 ------------
"$SOLVE" -A poisson3d:40 --device cpu --method cg --precond none --rtol 0 --maxiter 100000000 \
  --stagnation 0 -o "$T/xi.mtx" --history "$T/hi.csv" >"$T/out" 2>"$T/err" &
pid=$!
sleep 1.5                                   # the matrix is made and the iterations run
kill -INT $pid
wait $pid
rc=$?
check "SIGINT ends the solve with exit 130 (rc=$rc)" test "$rc" -eq 130
check "... reporting DIVERGED_INTERRUPTED" grep -q "DIVERGED_INTERRUPTED" "$T/err"
check "... with x written" test -s "$T/xi.mtx"
check "... and the history so far" test "$(wc -l <"$T/hi.csv")" -gt 10

# --- non-convergence ---------------------------------------------------------------------
run "$SOLVE" -A poisson3d:12 --device cpu --method cg --rtol 0 --atol 0 --maxiter 100000
check "CG with rtol = atol = 0 ends at round-off (rc=$rc)" grep -q "the residual is at round-off" "$T/err"
check "... and says to give a tolerance, not that A is indefinite" grep -q "give --rtol or --atol > 0" "$T/err"
run "$SOLVE" -A "$IN/jagmesh7.mtx" --device cpu --method cg --precond none
check "CG on an indefinite A says p'Ap, where and how far (rc=$rc)" grep -q "DIVERGED_INDEFINITE.*p'Ap = -[0-9.e+]* <= 0 at iteration [0-9]*, ||r|| / ||b|| = " "$T/err"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --method cg --maxiter 3 --device cpu
check "maxiter exits 1 (rc=$rc)" test "$rc" -eq 1
check "non-convergence names the reason" grep -q "DIVERGED_MAXIT" "$T/err"

# --- JSON and history ----------------------------------------------------------------------
run "$SOLVE" -A "$IN/nos6.mtx" --method cg --precond jacobi --device cpu --json --history "$T/h.csv"
check "json run exits 0 (rc=$rc: $err)" test "$rc" -eq 0
if command -v python3 >/dev/null; then
  python3 - "$T/out" "$T/h.csv" <<'EOF'
import json, sys, csv
r = json.load(open(sys.argv[1]))
for k in ("reason", "iterations", "true_rel", "rnorm", "format", "method", "history"):
    assert k in r, k
assert r["reason"] == "CONVERGED_RTOL" and r["converged"] is True
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == r["iterations"] + 1, (len(rows), r["iterations"])
assert int(rows[-1]["iteration"]) == r["iterations"]
assert abs(float(rows[-1]["residual_norm"]) - r["rnorm"]) <= 1e-12 * r["rnorm"]
assert len(r["history"]) == len(rows)
EOF
  check "--json parses, history CSV has one row per iteration and ends at the reported residual" test $? -eq 0
fi

# --- bad usage: exit 2 with a message ----------------------------------------------------
run "$SOLVE" -A "$IN/bcsstk09.mtx" --no-such-option
check "unknown option exits 2" test "$rc" -eq 2
check "unknown option is named" grep -q "no-such-option" "$T/err"
run "$SOLVE" --method cg
check "missing -A exits 2" test "$rc" -eq 2
run "$SOLVE" -A "$IN/bcsstk09.mtx" --rtol abc
check "bad number exits 2" test "$rc" -eq 2
run "$SOLVE" -A "$IN/bcsstk09.mtx" --method sor
check "unknown method exits 2" test "$rc" -eq 2
run "$SOLVE" -A "$T/does-not-exist.mtx"
check "missing file exits 2" test "$rc" -eq 2
check "missing file is named" grep -q "does-not-exist.mtx" "$T/err"
run "$SOLVE" -A "$IN/w156.mtx"
check "complex matrix exits 2" test "$rc" -eq 2
check "complex is called unsupported" grep -qi "complex" "$T/err"
run "$SOLVE" -A "$IN/well1033.mtx"
check "rectangular matrix exits 2" test "$rc" -eq 2
run "$SOLVE" -A "$IN/bcsstk09.mtx" -b "$IN/sherman1_rhs1.mtx"
check "rhs of the wrong length exits 2" test "$rc" -eq 2
run "$SOLVE" -A "$IN/bcsstk09.mtx" --help
check "--help exits 0 and lists --method" grep -q -- "--method" "$T/out"
check "--help lists each preconditioner of the library's table with its summary" \
  grep -q "jacobi  M = diag(A)" "$T/out"
check "--help lists none" grep -q "none    no preconditioner" "$T/out"
check "--help's usage has no printf residue" grep -q "%.17g" "$T/out"
run "$SOLVE" -A "$IN/LF10.mtx" --precond ilu9
check "unknown --precond exits 2 (rc=$rc)" test "$rc" -eq 2
check "unknown --precond lists the table's names" grep -q "expects none|jacobi|amg|ilu0|ic0|ilut|bjacobi|chebyshev|auto, got 'ilu9'" "$T/err"
run "$SOLVE" -A "$IN/LF10.mtx" --precond user
check "--precond user (the API's only) is refused (rc=$rc)" test "$rc" -eq 2
run "$SOLVE" -A "$IN/LF10.mtx" --device cpu --format ell --json
check "--format ell's reason names the automatic choice" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['format_reason'].startswith('ell: asked for (auto would pick csr)') and r['precond'] == 'jacobi' and r['precond_reason'].startswith('jacobi: the diagonal is positive') else 1)"
run "$SOLVE" --version
check "--version exits 0" test "$rc" -eq 0

# --- every malformed file exits 2 and names the line --------------------------------------
bad() { # bad NAME EXPECTED_LINE CONTENT
  printf "%b" "$3" >"$T/$1.mtx"
  run "$SOLVE" -A "$T/$1.mtx" --device cpu
  check "malformed $1 exits 2 (rc=$rc)" test "$rc" -eq 2
  check "malformed $1 names line $2 ($err)" grep -q "$1.mtx:$2:" "$T/err"
}
bad nobanner 1 "3 3 1\n1 1 1\n"
bad badfield 1 "%%MatrixMarket matrix coordinate quaternion general\n3 3 1\n1 1 1\n"
bad badsize 2 "%%MatrixMarket matrix coordinate real general\n3 x 1\n1 1 1\n"
bad rowzero 3 "%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1\n"
bad rowbig 4 "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n4 1 1\n"
bad colbig 3 "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 9 1\n"
bad notnum 3 "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 abc\n"
bad nanval 3 "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 nan\n"
bad toofew 4 "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 1\n"
bad toomany 5 "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 2 1\n3 3 1\n"

# --- generators and formats -----------------------------------------------------------------
run "$SOLVE" -A poisson2d:30 --method cg --device cpu --format auto --explain
check "generator spec solves (rc=$rc: $err)" test "$rc" -eq 0
check "--explain shows the choice" grep -q "choice" "$T/out"
run "$SOLVE" -A poisson2d:0
check "bad generator exits 2" test "$rc" -eq 2

# --- AMG: the hierarchy in --explain and --json, the near-null space from the command line ---
run "$SOLVE" -A poisson2d:60 --device cpu --precond amg --explain
check "--precond amg converges (rc=$rc: $err)" test "$rc" -eq 0
check "--explain prints the AMG hierarchy" grep -q "amg: smoothed aggregation, [0-9]* levels" "$T/out"
check "--explain prints each level's format" grep -q "P, R formats by level" "$T/out"
run "$SOLVE" -A poisson2d:60 --device cpu --precond amg --json
check "--json holds precond_info and precond_setup_s" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['precond'] == 'amg' and 'operator complexity' in r['precond_info'] and r['precond_setup_s'] > 0 else 1)"
# --- block-Jacobi and Chebyshev: the rows' names, options and descriptions -----------------
run "$SOLVE" -A lame3d:8 --device cpu --method cg --precond bjacobi --block-size 3 --json
check "--precond bjacobi --block-size 3 converges (rc=$rc: $err)" test "$rc" -eq 0
check "... and --json names it with its 3 x 3 blocks" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['reason'] == 'CONVERGED_RTOL' and r['precond'] == 'bjacobi' and '648 diagonal blocks of 3 x 3' in r['precond_info'] else 1)"
check "... without a warning that --block-size is AMG's" test -z "$err"
run "$SOLVE" -A poisson3d:16 --device cpu --precond chebyshev --poly-degree 4 --json
check "--precond chebyshev --poly-degree 4 converges (rc=$rc: $err)" test "$rc" -eq 0
check "... and --json gives its degree and interval" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['reason'] == 'CONVERGED_RTOL' and r['precond'] == 'chebyshev' and r['method'] == 'cg' and 'degree 4' in r['precond_info'] and '1.1 lmax] = [' in r['precond_info'] else 1)"
run "$SOLVE" -A poisson3d:16 --device cpu --precond chebyshev --explain
check "--explain prints Chebyshev's interval" grep -q "chebyshev: degree 3 in D^-1 A" "$T/out"
run "$SOLVE" -A poisson2d:10 --device cpu --precond chebyshev --poly-degree 0
check "--poly-degree 0 exits 2 (rc=$rc)" test "$rc" -eq 2
run "$SOLVE" -A poisson2d:10 --device cpu --precond jacobi --poly-degree 2
check "--poly-degree without chebyshev warns" grep -q "applies to --precond chebyshev only" "$T/err"
run "$SOLVE" -A poisson2d:10 --device cpu --precond amg --amg-degree 3
check "--amg-degree with AMG's Jacobi smoother warns" grep -q "applies to --amg-smoother chebyshev only" "$T/err"
run "$SOLVE" -A poisson2d:10 --device cpu --precond amg --amg-smoother chebyshev --amg-degree 3
check "... and with its Chebyshev smoother does not" test -z "$(grep warning "$T/err")"
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --method cg --precond chebyshev
check "Chebyshev-CG refuses a negative diagonal, naming the entry (rc=$rc: $err)" \
  grep -q "Chebyshev needs a positive diagonal.*a([0-9]*,[0-9]*) = -" "$T/err"

# lame3d with the rigid-body modes from its grid, and from a coordinate file: the same count
if command -v python3 >/dev/null; then
  python3 - "$T/b.mtx" 6084 <<'EOF'
import sys, random
random.seed(1)
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n%d 1\n" % n)
    f.write("".join("%.17g\n" % random.random() for _ in range(n)))
EOF
  run "$SOLVE" -A lame3d:12 -b "$T/b.mtx" --device cpu --precond amg --coords grid --json
  check "--coords grid converges (rc=$rc: $err)" test "$rc" -eq 0
  its_grid=$(python3 -c "import json; print(json.load(open('$T/out'))['iterations'])" 2>/dev/null)
  run "$SOLVE" -A lame3d:12 -b "$T/b.mtx" --device cpu --precond amg --json
  its_scalar=$(python3 -c "import json; print(json.load(open('$T/out'))['iterations'])" 2>/dev/null)
  check "rigid-body modes cut lame3d:12's iterations ($its_grid against $its_scalar)" \
    test "${its_grid:-999}" -lt $(( ${its_scalar:-0} / 2 ))
  # the same coordinates as a file: lame3d:12's nodes (i, j, k) / 12, i = 1..12, x fastest
  python3 - "$T/xyz.mtx" <<'EOF'
import sys
N = 12
nodes = [(i / N, j / N, k / N) for k in range(N + 1) for j in range(N + 1) for i in range(1, N + 1)]
with open(sys.argv[1], "w") as f:
    f.write("%%%%MatrixMarket matrix array real general\n%d 3\n" % len(nodes))
    for d in range(3):
        f.write("".join("%.17g\n" % p[d] for p in nodes))
EOF
  run "$SOLVE" -A lame3d:12 -b "$T/b.mtx" --device cpu --precond amg --coords "$T/xyz.mtx" --json
  its_file=$(python3 -c "import json; print(json.load(open('$T/out'))['iterations'])" 2>/dev/null)
  check "--coords FILE gives --coords grid's count ($its_file, $its_grid)" test "${its_file:-x}" = "${its_grid:-y}"
  # the near-null space as vectors: B = ones for a scalar problem gives the default's count
  python3 -c "
n = 3481
open('$T/ones.mtx', 'w').write('%%%%MatrixMarket matrix array real general\n%d 1\n' % n + '1\n' * n)"
  run "$SOLVE" -A poisson2d:60 --device cpu --precond amg --nullspace "$T/ones.mtx" --json
  check "--nullspace of the wrong length exits 2 (rc=$rc)" test "$rc" -eq 2
  check "... naming the shape it needs" grep -q "an n x k array is needed" "$T/err"
fi
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --precond amg --coords grid
check "--coords grid with a file matrix exits 2 (rc=$rc)" test "$rc" -eq 2
check "... saying it needs a generator" grep -q "not a generator spec" "$T/err"
run "$SOLVE" -A poisson3d:10 --device cpu --precond amg --block-size 3
check "--block-size that does not divide n exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming the option and the rows" grep -q -- "--block-size 3 must divide the 1000 rows" "$T/err"
run "$SOLVE" -A lame3d:4 --device cpu --precond amg --block-size 2 --coords grid
check "--coords of 3-D nodes with --block-size 2 exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming both options" grep -q -- "--coords grid gives 3 coordinates a node.*--block-size is 2" "$T/err"
run "$SOLVE" -A poisson2d:10 --device cpu --precond amg --amg-smoother gauss
check "an unknown --amg-smoother exits 2 (rc=$rc)" test "$rc" -eq 2
run "$SOLVE" -A poisson2d:10 --device cpu --precond amg --amg-omega 2
check "--amg-omega 2 exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming the range" grep -q -- "--amg-omega expects a number in (0, 2)" "$T/err"
run "$SOLVE" -A poisson2d:10 --device cpu --precond amg --amg-omega 1.2 --explain
check "--amg-omega 1.2 solves and --explain names the weight (rc=$rc)" \
  grep -q "smoother: jacobi, omega = 1.2/rho(D^-1 A)" "$T/out"
run "$SOLVE" -A poisson2d:10 --device cpu --precond amg --amg-smoother chebyshev --amg-omega 1.2
check "--amg-omega with AMG's Chebyshev smoother warns" \
  grep -q "applies to --amg-smoother jacobi only" "$T/err"
run "$SOLVE" -A poisson2d:10 --device cpu --precond jacobi --block-size 2
check "--block-size without amg or bjacobi warns" \
  grep -q "applies to --precond amg and bjacobi only" "$T/err"

# --- fgmres and minres: run, report in --json; MINRES's count is SciPy's -------------------
run "$SOLVE" -A "$IN/orsirr_1.mtx" --device cpu --method gmres --precond jacobi --json
its_gmres=$(python3 -c "import json; print(json.load(open('$T/out'))['iterations'])" 2>/dev/null)
run "$SOLVE" -A "$IN/orsirr_1.mtx" --device cpu --method fgmres --precond jacobi --restart 30 --json
check "--method fgmres converges (rc=$rc: $err)" test "$rc" -eq 0
check "... takes --restart without a warning" test -z "$err"
check "... reports fgmres and restart 30 in --json" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['method'] == 'fgmres' and r['restart'] == 30 and r['reason'] == 'CONVERGED_RTOL' else 1)"
its_fgmres=$(python3 -c "import json; print(json.load(open('$T/out'))['iterations'])" 2>/dev/null)
check "... in GMRES's iterations with a fixed M ($its_fgmres, $its_gmres)" test "${its_fgmres:-x}" = "${its_gmres:-y}"
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --method minres --json
check "--method minres converges on sherman1 (rc=$rc: $err)" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['method'] == 'minres' and r['reason'] == 'CONVERGED_RTOL' and r['true_rel'] <= 1e-7 else 1)"
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --json
check "auto takes minres for sherman1 (symmetric, negative diagonal) and says why" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['method'] == 'minres' and r['method_reason'].startswith('minres: the matrix is symmetric but its diagonal is not positive') and r['precond'] == 'none' else 1)"
run "$SOLVE" -A "$IN/jagmesh7.mtx" --device cpu --json
check "auto on jagmesh7: cg meets an indefinite A, minres takes over and converges" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['method'] == 'minres' and r['method_reason'].startswith('minres: cg stopped with DIVERGED_INDEFINITE') and r['reason'] == 'CONVERGED_RTOL' else 1)"
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --method minres --precond jacobi
check "minres with jacobi on a negative diagonal is refused (rc=$rc)" grep -q "Jacobi needs a positive diagonal" "$T/err"
run "$SOLVE" --help
check "--help lists fgmres and minres" grep -q "fgmres    gmres keeping M^-1 v" "$T/out"
check "... minres" grep -q "minres    A symmetric, indefinite allowed" "$T/out"
# the first python3 with SciPy: the one on PATH, else the system's
py_scipy=
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import scipy' 2>/dev/null; then py_scipy=$py; break; fi
done
if [ -n "$py_scipy" ]; then
  CMP="$(dirname "${BASH_SOURCE[0]}")/../bench/compare_minres.py"
  run "$py_scipy" "$CMP" --solve "$SOLVE"
  check "MINRES on the shifted Laplacian within 10% of SciPy's count: $out" test "$rc" -eq 0
  run "$py_scipy" "$CMP" --solve "$SOLVE" --precond jacobi "$IN/bcsstk09.mtx"
  check "MINRES + Jacobi on bcsstk09 within 10% of SciPy's count: $out" test "$rc" -eq 0
else
  echo "skip: the MINRES comparison with SciPy (python3 has no scipy)"
fi

# --- the incomplete factorizations: options, --explain, the textbook reference -----------
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --method gmres --precond ilu0 --ilu-trisolve jacobi --ilu-sweeps 3 --explain
check "ilu0 with Jacobi sweeps converges (rc=$rc: $err)" test "$rc" -eq 0
check "--explain describes the factors and the sweeps" grep -q "nnz(L) + nnz(U) = 1375 + 2375 = 3750.*trisolve jacobi, 3 sweeps" "$T/out"
run "$SOLVE" -A "$IN/cavity14.mtx" --device cpu --method gmres --precond ilu0
check "a zero pivot exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming the row and ILUT" grep -q "zero pivot at row 20.*--precond ilut" "$T/err"
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --precond ilu0 --ilu-trisolve fast
check "an unknown --ilu-trisolve exits 2 (rc=$rc)" test "$rc" -eq 2
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --precond ilut --ilut-drop 2
check "--ilut-drop out of [0, 1) exits 2 (rc=$rc)" test "$rc" -eq 2
# spk's ILU(0)-GMRES and IC(0)-CG iterations against bench/compare_ilu.py's textbook
# factorizations on SciPy (skipped without SciPy)
if /usr/bin/python3 -c "import scipy" 2>/dev/null; then
  run /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/../bench/compare_ilu.py" --solve "$SOLVE" \
      "$IN/sherman1.mtx" "$IN/orsirr_1.mtx" "$IN/pores_1.mtx" "$IN/nos6.mtx" "$IN/bcsstk03.mtx" "$IN/cavity14.mtx"
  check "compare_ilu.py: spk within 1.2x of the reference ILU(0)/IC(0) (rc=$rc: $(grep -h FAIL "$T/out"))" test "$rc" -eq 0
  check "... on every matrix asked for" test "$(grep -c '| ok' "$T/out")" -eq 8
else
  echo "skip: compare_ilu.py (no SciPy for /usr/bin/python3)"
fi

# --- --reorder: the ordering, the bandwidths and the SpMV times in --json and --explain;
# x in the caller's order (the error against ones); a bad value is a usage error -------------
run "$SOLVE" -A "$IN/orsirr_1.mtx" --device cpu --reorder rcm --json
check "--reorder rcm converges (rc=$rc: $err)" test "$rc" -eq 0
check "... and --json gives rcm, the bandwidths (554 -> 122), the profiles and both SpMV times" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['converged'] and r['reorder'] == 'rcm' and r['bandwidth_before'] == 554 and r['bandwidth_after'] == 122 and r['profile_before'] > 0 and r['profile_after'] > 0 and r['spmv_s_original'] > 0 and r['spmv_s_reordered'] > 0 and r['error_inf'] < 1e-3 and r['true_rel'] <= 1e-8 else 1)"
run "$SOLVE" -A "$IN/orsirr_1.mtx" --device cpu --json
check "without --reorder the JSON says none and gives no bandwidths" \
  python3 -c "import json,sys; r=json.load(open('$T/out')); sys.exit(0 if r['reorder'] == 'none' and 'bandwidth_before' not in r else 1)"
run "$SOLVE" -A "$IN/nos6.mtx" --device cpu --reorder rcm --explain
check "--explain prints the bandwidth and the SpMV times (rc=$rc)" \
  grep -q "reorder   rcm: bandwidth 30 -> 16" "$T/out"
check "... and the SpMV of A beside P A P^T's" grep -q "spmv      A .* us, P A P^T .* us" "$T/out"
run "$SOLVE" -A "$IN/nos6.mtx" --device cpu --reorder amd
check "--reorder amd exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming the values it takes" grep -q "reorder expects none|rcm|degree" "$T/err"
check "--help lists --reorder" sh -c "'$SOLVE' --help | grep -q -- '--reorder R         none|rcm|degree (default none; the others are opt-in)'"
# --- --precision: mixed converges to the same rtol and says so; a bad value is usage; on a
# machine without a GPU --device gpu fails as it does in double ------------------------------
run "$SOLVE" -A "$IN/sherman1.mtx" --device cpu --method gmres --precision mixed --json
check "--precision mixed converges (rc=$rc: $err)" test "$rc" -eq 0
check "... --json says precision mixed" grep -q '"precision": "mixed"' "$T/out"
check "... with the refinement steps in its reason" grep -q '"precision_reason": "mixed: [0-9]* refinement step' "$T/out"
check "... and refinement_steps >= 1" grep -q '"refinement_steps": [1-9]' "$T/out"
check "... converged" grep -q '"converged": true' "$T/out"
if command -v python3 >/dev/null; then
  check "... true_rel <= rtol in the JSON" python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["true_rel"] <= r["rtol"] else 1)' "$T/out"
fi
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --method cg --precision double --json
check "--precision double: precision double, 0 steps" grep -q '"refinement_steps": 0' "$T/out"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --method cg --precision mixed
check "the summary has a precision line" grep -q "^precision mixed: [0-9]* refinement step" "$T/out"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --precision single
check "--precision single exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming the values" grep -q "expects double|mixed|auto, got 'single'" "$T/err"
run "$SOLVE" --help
check "--help lists --precision" grep -q -- "--precision P       double|mixed|auto" "$T/out"
# --precision auto: mixed for CG + Jacobi past the CPU's 8 MB and for AMG, double below it,
# each saying why (the precision line, the JSON's precision_choice)
run "$SOLVE" -A poisson3d:64 --device cpu --method cg --precond jacobi --precision auto --json
check "--precision auto on poisson3d:64 runs mixed (rc=$rc)" grep -q '"precision": "mixed"' "$T/out"
check "... and says why" grep -q '"precision_choice": "auto: mixed: CG + Jacobi on' "$T/out"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --method cg --precision auto
check "--precision auto on bcsstk09 runs double (rc=$rc)" grep -q "^precision auto: double: the matrix is below" "$T/out"
run "$SOLVE" -A poisson3d:64 --device cpu --method cg --precond amg --precision auto
check "--precision auto with AMG runs AMG's cycle in fp32" grep -q "^precision auto: mixed: AMG's V-cycle in fp32 inside the fp64 method" "$T/out"
run "$SOLVE" -A poisson3d:64 --device cpu --method cg --precond amg --precision mixed --json
check "--precision mixed with AMG: no refinement (rc=$rc)" grep -q '"precision_reason": "mixed: AMG.s V-cycle in fp32 inside the method on the fp64 A' "$T/out"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device gpu
rc_double=$rc
err_double=$err
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device gpu --precision mixed
if [ "$rc_double" -eq 3 ]; then
  check "--precision mixed --device gpu without a GPU: the device error (rc=$rc)" test "$rc" -eq 3
  check "... the same message as double" test "$err" = "$err_double"
else
  check "--precision mixed on the GPU converges (rc=$rc)" test "$rc" -eq 0
  check "... on a CUDA twin" grep -q "^precision mixed: [0-9]* refinement step.*32-cuda" "$T/out"
fi

# --- progress on long work: --progress S prints a line every S seconds of a step; none by
# default when stderr is not a terminal, none with -q, none in the solve with --monitor -------
long=(-A poisson3d:60 --device cpu --method cg --precond none --rtol 0 --max-time 0.6)
run "$SOLVE" "${long[@]}" --progress 0.1
check "--progress 0.1: a 0.6 s solve prints its iteration and residual (rc=$rc: $err)" \
  grep -Eq "^solve: solving: [0-9.]+ s, iteration [0-9]+, relative residual [0-9.e+-]+" "$T/err"
check "... more than one line, every 0.1 s" test "$(grep -c "^solve: solving:" "$T/err")" -ge 2
check "... and still ends with the time limit's reason" grep -q "DIVERGED_TIME_LIMIT" "$T/err"
run "$SOLVE" "${long[@]}"
check "no progress lines by default when stderr is not a terminal" \
  sh -c "! grep -q '^solve: solving:' '$T/err'"
run "$SOLVE" "${long[@]}" --progress 0.1 -q
check "-q: no progress lines" sh -c "! grep -q '^solve: solving:' '$T/err'"
run "$SOLVE" "${long[@]}" --progress 0.1 --monitor-every 50
check "--monitor prints the solve's lines, --progress none of its own" \
  sh -c "grep -q '^  it ' '$T/err' && ! grep -q '^solve: solving:' '$T/err'"
run "$SOLVE" -A poisson3d:90 --device cpu --precond amg --maxiter 1 --progress 0.05
check "--progress 0.05: the AMG setup gets its lines (rc=$rc)" \
  grep -q "^solve: setting up the solver (preconditioner amg): [0-9.]* s$" "$T/err"
# a stderr that nobody reads for a while (a paused pager): the ticker's lines wait in the full
# pipe, the solve does not (it ran its 1.5 s, not the reader's 5)
( "$SOLVE" -A poisson3d:60 --device cpu --method cg --precond none --rtol 0 --max-time 1.5 \
    --progress 0.0001 --json 2>&1 >"$T/pj.json"; echo $? >"$T/pj.rc" ) | (sleep 5; cat >/dev/null)
check "a blocked stderr does not hold the solve (rc=$(cat "$T/pj.rc"), $(grep -o '"solve_s": [0-9.e+-]*' "$T/pj.json"))" \
  python3 -c "import json,sys; r=json.load(open('$T/pj.json')); sys.exit(not r['solve_s'] < 3.5)"
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --progress -1
check "--progress -1 is refused (rc=$rc)" test "$rc" -eq 2
run "$SOLVE" -A "$IN/bcsstk09.mtx" --device cpu --progress 2e6
check "--progress 2e6 is refused, naming the range (rc=$rc)" grep -q "\[0, 1e6\]" "$T/err"

echo "test_cli: $pass passed, $fail failed"
test "$fail" -eq 0
