#!/usr/bin/env bash
# tests/test_cli_mpi.sh SOLVE INPUTS MPIRUN -- `mpirun -n P solve ...` (a build with MPI):
# for P = 1 to 4 the distributed solve takes the lone run's iterations within 2, writes its x
# (to 1e-12 relative), history and JSON from rank 0, and every failure ends every rank with the
# lone run's exit code and message, never a hang.
set -u
SOLVE=$1
IN=$2
MPIRUN=$3
source "$(dirname "$0")/cli_lib.sh"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mp() { local np=$1; shift; timeout 300 "$MPIRUN" -n "$np" "$SOLVE" "$@"; }
json_int() { sed -n "s/^  \"$1\": \([0-9-]*\),*$/\1/p" <<<"$out" | head -1; }
# max |a - b| / max |b| over two array files (their value lines: one field each)
rel_diff() {
  awk 'FNR == 1 { f++ } /^[-0-9.]/ && NF == 1 { if (f == 1) a[FNR] = $1; else { d = $1 - a[FNR]; if (d < 0) d = -d;
       if (d > m) m = d; v = $1 < 0 ? -$1 : $1; if (v > s) s = v } } END { print (s > 0 ? m / s : m) }' "$1" "$2"
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

cases=("poisson3d:16 --method cg --precond jacobi"
       "poisson3d:16 --method cg --precond none"
       "$IN/cage8.mtx --method bicgstab --precond jacobi"
       "$IN/orsirr_1.mtx --method gmres --precond jacobi --maxiter 5000")
for cs in "${cases[@]}"; do
  # shellcheck disable=SC2086
  run "$SOLVE" -A $cs --json -o "$T/x1.mtx"
  check "lone run: $cs" test "$rc" = 0
  one=$(json_int iterations)
  for np in 1 2 3 4; do
    # shellcheck disable=SC2086
    run mp "$np" -A $cs --json -o "$T/xp.mtx" --history "$T/h.csv"
    check "$np ranks: $cs: exit $rc" test "$rc" = 0
    it=$(json_int iterations)
    check "$np ranks: $cs: ranks in the JSON" test "$(json_int ranks)" = "$np"
    check "$np ranks: $cs: $it iterations, $one alone" test $((it > one ? it - one : one - it)) -le 2
    d=$(rel_diff "$T/x1.mtx" "$T/xp.mtx")
    check "$np ranks: $cs: x within $d of the lone run's" le "$d" 1e-12
    check "$np ranks: $cs: history of $((it + 1)) rows" test "$(($(wc -l <"$T/h.csv") - 1))" = $((it + 1))
  done
done

# AMG as block-Jacobi over the ranks: converges, and says what it is
run mp 3 -A poisson3d:16 --method cg --precond amg --explain
check "block-Jacobi AMG on 3 ranks converges (exit $rc)" test "$rc" = 0
check "--explain says block-Jacobi over the ranks" grep -q "block-Jacobi over 3 ranks" <<<"$out"
check "the summary names the ranks" grep -q "^ranks     3 (MPI)" <<<"$out"

# not converged: exit 1 on every rank
run mp 2 -A poisson3d:16 --method cg --maxiter 3
check "maxiter 3 on 2 ranks: exit 1 (got $rc)" test "$rc" = 1
check "maxiter: said once" test "$(grep -c 'did not converge' <<<"$err")" = 1

# failures: the lone run's code and message, from rank 0 alone
run mp 2 -A "$T/none.mtx"
check "a missing file on 2 ranks: exit 2 (got $rc)" test "$rc" = 2
check "a missing file: the message names it" grep -q "none.mtx" <<<"$err"
# --device gpu: where a lone run finds a GPU, the ranks share it with the lone run's count and
# say how the halo travels; where it finds none, every rank fails with the lone run's code
run "$SOLVE" -A poisson3d:8 --device gpu --json
lone=$rc
one=$(json_int iterations)
run mp 2 -A poisson3d:8 --device gpu --json
check "--device gpu over ranks: the lone run's exit code $lone (got $rc)" test "$rc" = "$lone"
if [ "$lone" = 0 ]; then
  two=$(json_int iterations)
  check "--device gpu on 2 ranks: $two iterations, the lone run $one" test $((two - one)) -le 2 -a $((one - two)) -le 2
  check "--device gpu on 2 ranks: the JSON says the halo of device vectors" grep -qE '"halo": "(staged|device)"' <<<"$out"
else
  check "--device gpu over ranks without a GPU: says so" grep -qi "GPU" <<<"$err"
fi
run mp 2 -A poisson3d:8 --device auto
check "--device auto over ranks: exit 0 (got $rc)" test "$rc" = 0
# a knob that picks the collective steps, set on one rank only: agreed, no hang
run timeout 60 "$MPIRUN" -n 1 env SPK_MPI_STEPS=composed "$SOLVE" -A poisson3d:8 : -n 1 "$SOLVE" -A poisson3d:8
check "SPK_MPI_STEPS on rank 0 alone: exit 0 (got $rc)" test "$rc" = 0
check "SPK_MPI_STEPS on rank 0 alone: every rank takes the composed steps" grep -q "staged through host buffers" <<<"$out"
run mp 2 -A poisson3d:8 --reorder rcm
check "--reorder over ranks: refused, exit 2 (got $rc)" test "$rc" = 2
# the near-null space over ranks: each rank's AMG gets its rows of it
printf '%%%%MatrixMarket matrix array real general\n1 1\n1\n' >"$T/ns.mtx"
run mp 2 -A poisson3d:4 --precond amg --nullspace "$T/ns.mtx"
check "--nullspace of the wrong length over ranks: exit 2 (got $rc)" test "$rc" = 2
awk 'BEGIN { print "%%MatrixMarket matrix array real general"; print "4096 1"; for (i = 0; i < 4096; i++) print 1 }' >"$T/ones.mtx"
run mp 2 -A poisson3d:16 --precond amg --json
def=$(json_int iterations)
run mp 2 -A poisson3d:16 --precond amg --nullspace "$T/ones.mtx" --json
check "--nullspace ones over 2 ranks: rc $rc, the default's count (${def:-?})" test "$rc" = 0 -a "$(json_int iterations)" = "${def:-x}"
run mp 2 -A lame3d:12 --precond amg --json
scalar=$(json_int iterations)
run mp 2 -A lame3d:12 --precond amg --coords grid --json
rbm=$(json_int iterations)
check "--coords grid over 2 ranks: rc $rc, ${rbm:-?} iterations, under half the scalar AMG's ${scalar:-?}" test "$rc" = 0 -a "${rbm:-999}" -lt $(( ${scalar:-0} / 2 ))
check "--coords grid over 2 ranks: whole nodes on each rank" grep -q '"rows_min": 3042' <<<"$out"
# a zero diagonal entry in the last rank's rows: Jacobi fails there, rank 0 says which rank
printf '%%%%MatrixMarket matrix coordinate real general\n4 4 7\n1 1 4\n1 2 -1\n2 1 -1\n2 2 4\n3 3 4\n3 4 1\n4 3 1\n' >"$T/z.mtx"
run mp 2 -A "$T/z.mtx" --method gmres --precond jacobi
check "a zero diagonal on rank 1: exit 2 (got $rc)" test "$rc" = 2
check "the message names rank 1" grep -q "rank 1" <<<"$err"

# rank 0's write that fails says why, as the lone run does
run mp 2 -A poisson3d:10 -o /dev/full -q
check "-o /dev/full over 2 ranks: exit 3 (got $rc)" test "$rc" = 3
check "... naming the reason" grep -q "cannot write the solution to /dev/full: .*No space left on device" <<<"$err"

echo "test_cli_mpi: $pass passed, $fail failed"
[ "$fail" = 0 ]
