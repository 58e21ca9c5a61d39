#!/usr/bin/env bash
# .ci/gpu_precond.sh OUT -- the preconditioner and method round on the GPU machine, in one call:
# .ci/gpu_check.sh (build, ctest -L gpu, the install test through dlopen, solves in every
# format, compute-sanitizer memcheck of the new tests and racecheck of the short ones), test_ilu
# without CUDA graphs, then bench_ilu: ILU(0)-GMRES(30) with exact (cuSPARSE SpSV) and Jacobi-sweep
# triangular solves against Jacobi-GMRES, and IC(0)-CG against Jacobi-CG. Logs land in OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; mkdir -p "$OUT"
SAN_ONLY=${SAN_ONLY:-"ilu pc amg krylov heat solve"} SAN_TOOLS=${SAN_TOOLS:-"racecheck memcheck"} \
  RACE_SKIP=${RACE_SKIP:-" krylov amg heat solve "} \
  timeout ${CHECK_TIMEOUT:-420} bash .ci/gpu_check.sh "$OUT/check" > "$OUT/check.txt" 2>&1
echo "gpu_check rc=$?"
grep -E "tests passed|Failed|FAILED|rc=|^ok|FAIL|us/it|===|memcheck|racecheck" "$OUT/check.txt" | tail -40
B=build-gpu
SPK_CUDA_GRAPH=0 $B/test_ilu --device gpu > "$OUT/ilu_nograph.txt" 2>&1; echo "test_ilu without graphs rc=$?"; tail -1 "$OUT/ilu_nograph.txt"
bash tests/test_install.sh $B cc "$PWD" > "$OUT/install.txt" 2>&1; echo "test_install rc=$?"; tail -1 "$OUT/install.txt"
cmake --build $B -j 16 --target bench_ilu > "$OUT/bench_build.log" 2>&1 || tail -20 "$OUT/bench_build.log"
timeout ${BENCH_TIMEOUT:-120} $B/bench_ilu --device gpu --json "$OUT/ilu_gmres.json" \
  ${ILU_SPECS:-poisson2d:1000 poisson3d:100 inputs/sherman3.mtx inputs/orsirr_1.mtx inputs/epb0.mtx} \
  > "$OUT/ilu_gmres.txt" 2>&1; echo "bench_ilu gmres rc=$?"; cat "$OUT/ilu_gmres.txt"
timeout ${BENCH_TIMEOUT:-120} $B/bench_ilu --device gpu --precond ic0 --json "$OUT/ic0_cg.json" \
  ${IC0_SPECS:-poisson3d:100 poisson3d:150 inputs/nos6.mtx} > "$OUT/ic0_cg.txt" 2>&1
echo "bench_ilu ic0 rc=$?"; cat "$OUT/ic0_cg.txt"
