#!/usr/bin/env bash
# .ci/gpu_dev.sh -- a development round on the GPU machine in one call: the checks of
# .ci/gpu_check.sh, then the solver and SpMV benchmarks on chosen sizes. Logs in OUT, tarred.
#   bash .ci/gpu_dev.sh OUT [SIZES] [SPMV_MATRICES...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; SIZES=${2:-16,32,64,150}; shift; shift || true
mkdir -p "$OUT/logs"
bash .ci/gpu_check.sh "$OUT/logs/check" > "$OUT/logs/check.txt" 2>&1; echo "gpu_check rc=$?" | tee -a "$OUT/logs/check.txt"
tail -30 "$OUT/logs/check.txt"
B=build-gpu
cmake -S . -B $B -DSPK_BUILD_BENCH=ON >/dev/null 2>&1 && cmake --build $B -j 16 --target bench_solvers bench_spmv > "$OUT/logs/bench_build.log" 2>&1 || tail -20 "$OUT/logs/bench_build.log"
timeout 200 $B/bench_solvers --sizes "$SIZES" --extra elasticity3d:40 --reps 3 --timeout 150 > "$OUT/logs/solvers.txt" 2>&1; echo "bench_solvers rc=$?"
grep -E "^==|^cg|^bicg|^gmres|faster" "$OUT/logs/solvers.txt"
if [ $# -gt 0 ]; then
  timeout 150 $B/bench_spmv --timeout 120 "$@" > "$OUT/logs/spmv.txt" 2>&1; echo "bench_spmv rc=$?"
  grep -E "^==|^spk|^cusparse|^auto|cusp/auto" "$OUT/logs/spmv.txt"
fi
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
