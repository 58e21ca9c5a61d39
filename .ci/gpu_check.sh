#!/usr/bin/env bash
# .ci/gpu_check.sh -- what a GPU machine runs before a CUDA change lands (CI has no GPU):
# build for the GPU, run the gpu-labelled tests, solve poisson3d:150 with every format,
# and run compute-sanitizer memcheck over the gpu SpMV test and one solve.
# Usage: bash .ci/gpu_check.sh [LOGDIR]   (logs land in LOGDIR, default ./gpu-logs)
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${1:-gpu-logs}
mkdir -p "$LOG"
B=build-gpu
status=0
step() { echo "=== $*"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$LOG/gpu.txt"
step build
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$LOG/build.log" 2>&1 &&
  cmake --build $B -j 16 --target solve heat $(cd $B && cmake --build . --target help | grep -oE "test_[a-z_]+" | grep -v util | sort -u) >>"$LOG/build.log" 2>&1 || { tail -50 "$LOG/build.log"; exit 1; }

step "ctest -L gpu"
(cd $B && ctest -L gpu --output-on-failure 2>&1) | tee "$LOG/ctest_gpu.log" | tail -40
grep -q "100% tests passed" "$LOG/ctest_gpu.log" || status=1

step "solve poisson3d:150 --device gpu, every format"
for f in auto coo csr ell hyb jds; do
  $B/solve -A poisson3d:150 --device gpu --format $f --method cg --json >"$LOG/solve_$f.json" 2>&1
  rc=$?
  python3 -c "import json,sys; r=json.load(open('$LOG/solve_$f.json')); print('%-4s rc=$rc %-16s %5d its true_rel %.2e  %7.1f us/it  fmt %s' % ('$f', r['reason'], r['iterations'], r['true_rel'], 1e6*r['per_iter_s'], r['format']))" || { echo "$f: rc=$rc"; cat "$LOG/solve_$f.json" | tail -5; }
  [ $rc -eq 0 ] || status=1
done | tee "$LOG/solve_formats.txt"

if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck"
  compute-sanitizer --tool memcheck --error-exitcode 9 $B/test_spmv --device gpu >"$LOG/memcheck_spmv.log" 2>&1
  echo "memcheck test_spmv rc=$?" | tee -a "$LOG/sanitizer.txt"
  compute-sanitizer --tool memcheck --error-exitcode 9 $B/solve -A poisson3d:30 --device gpu --format hyb --method cg --quiet >"$LOG/memcheck_solve.log" 2>&1
  echo "memcheck solve rc=$?" | tee -a "$LOG/sanitizer.txt"
  grep -h "ERROR SUMMARY" "$LOG"/memcheck_*.log | tee -a "$LOG/sanitizer.txt"
  grep -q "rc=9" "$LOG/sanitizer.txt" && status=1
fi
exit $status
