#!/usr/bin/env bash
# .ci/gpu_big.sh OUT -- on the GPU machine: a matrix of more than 2^31 nonzeros solved on the
# GPU (poisson3d27:432: 80.6 M rows, 2.17e9 nonzeros, 26.6 GB in CSR), then compute-sanitizer
# over the gpu tests not covered by .ci/gpu_check.sh.
set -u
OUT=$1
cd "$(dirname "$0")/.."
cmake -S . -B bg -DCMAKE_CUDA_ARCHITECTURES=90 -DSPK_BUILD_BENCH=OFF >/dev/null &&
  cmake --build bg -j16 --target solve test_krylov test_api test_solvers > "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
cd bg
T0=$SECONDS
timeout 300 ./solve -A poisson3d27:432 --device gpu --format csr --method cg --maxiter 40 \
  --rtol 1e-6 > "$OUT/big.txt" 2>&1
echo "big rc=$? ($((SECONDS - T0)) s)"; cat "$OUT/big.txt"
S="timeout 120 compute-sanitizer --error-exitcode 9"
for t in "memcheck test_krylov" "memcheck test_api" "racecheck test_solvers"; do
  set -- $t
  $S --tool $1 ./$2 --device gpu > "$OUT/$1_$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$OUT/$1_$2.log" | tail -1) $(tail -1 "$OUT/$1_$2.log")"
done
