#!/usr/bin/env bash
# .ci/gpu_round.sh OUT -- one verification + measurement round on the GPU machine:
# .ci/gpu_check.sh (SAN_ONLY / SAN_TIMEOUT pass through), then bench_spmv on the five generated
# matrices, bench_solvers on a few sizes and heat at n = 1000. Logs tarred into OUT/round.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; L=/tmp/round; rm -rf $L; mkdir -p $L
timeout 330 bash .ci/gpu_check.sh $L/check > $L/check.txt 2>&1; echo "gpu_check rc=$?" | tee -a $L/check.txt
grep -E "tests passed|FAIL|Failed|rc=|ok|us/it" $L/check.txt | tail -30
cp build-gpu/Testing/Temporary/LastTest.log $L/ 2>/dev/null
B=build-gpu
cmake -S . -B $B -DSPK_BUILD_BENCH=ON >/dev/null 2>&1 && cmake --build $B -j 16 --target bench_solvers bench_spmv heat > $L/bench_build.log 2>&1 || tail -20 $L/bench_build.log
timeout 100 $B/bench_spmv --timeout 90 ${SPMV:-} > $L/spmv.txt 2>&1; echo "bench_spmv rc=$?"
grep -E "^== [a-z]|^spk  *(csr|ell|hyb)|^cusparse" $L/spmv.txt; sed -n "/== summary/,\$p" $L/spmv.txt
timeout 120 $B/bench_solvers --sizes ${SIZES:-16,32,64,150} --extra elasticity3d:40 --reps 3 --timeout 100 > $L/solvers.txt 2>&1; echo "bench_solvers rc=$?"
grep -E "^==|^cg|^bicg|^gmres" $L/solvers.txt
timeout 120 $B/heat --device gpu --n 1000 --steps 4 > $L/heat.txt 2>&1; echo "heat rc=$?"; tail -15 $L/heat.txt
tar czf $OUT/round.tgz -C /tmp round
