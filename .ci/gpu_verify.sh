#!/usr/bin/env bash
# .ci/gpu_verify.sh OUT -- one verification round on the GPU machine, in one call:
# .ci/gpu_check.sh (build, ctest -L gpu, solves in every format, compute-sanitizer; SAN_TOOLS,
# SAN_ONLY, SAN_JOBS pass through), then bench/solve_loop.sh (the stopping tests on hopeless
# matrices, GMRES's counts, cold against warm) and bench_solvers on small systems
# (SIZES, default 16,34,64). Everything lands in OUT/verify.tgz; the summaries are printed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; L=/tmp/verify; rm -rf $L; mkdir -p $L
timeout ${CHECK_TIMEOUT:-420} bash .ci/gpu_check.sh $L/check > $L/check.txt 2>&1
echo "gpu_check rc=$?"
grep -E "tests passed|Failed|FAILED|rc=|ok|FAIL|us/it" $L/check.txt | tail -30
cp build-gpu/Testing/Temporary/LastTest.log $L/ 2>/dev/null
cmake -S . -B build-gpu -DSPK_BUILD_BENCH=ON > /dev/null 2>&1
cmake --build build-gpu -j 16 --target bench_cold bench_solvers > $L/bench_build.log 2>&1 || tail -20 $L/bench_build.log
timeout ${LOOP_TIMEOUT:-240} bash bench/solve_loop.sh build-gpu $L/loop gpu
timeout 100 build-gpu/bench_solvers --sizes ${SIZES:-16,34,64} --extra elasticity3d:20 --reps 5 \
    --timeout 90 > $L/solvers.txt 2>&1; echo "bench_solvers rc=$?"
grep -E "^==|^cg|^bicg|^gmres" $L/solvers.txt
tar czf $OUT/verify.tgz -C /tmp verify
