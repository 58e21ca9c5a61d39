#!/usr/bin/env bash
# .ci/gpu_ab.sh OUT -- an interleaved A/B of one environment switch on the GPU machine:
# bench_solvers on poisson3d:64, :150 and elasticity3d:40 under AB_VAR=A, B, A, B, then ncu of the
# ELL spmv_dot kernel inside CG on poisson3d:150 under each value. Defaults: AB_VAR=SPK_ELL_INDEX,
# AB_VALUES="32 16" (32: int32 ELL columns; any other value: the int16 offsets where they fit).
# CTEST=1 also runs ctest -L gpu first. Logs in OUT/ab.
set -uo pipefail
OUT=$1; L=$OUT/ab; mkdir -p $L; B=build-gpu
VAR=${AB_VAR:-SPK_ELL_INDEX}; read -r VA VB <<<"${AB_VALUES:-32 16}"
nvidia-smi --query-gpu=name,driver_version --format=csv > $L/gpu.txt
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPK_BUILD_BENCH=ON > $L/build.log 2>&1 && cmake --build $B -j 16 >> $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $SECONDS s"
[ -n "${CTEST:-}" ] && { (cd $B && ctest -L gpu --output-on-failure > $L/ctest.log 2>&1); tail -4 $L/ctest.log; grep -i fail $L/ctest.log | head; }
for v in $VA $VB $VA $VB; do
  env "$VAR=$v" timeout 100 $B/bench_solvers --sizes 64,150 --extra elasticity3d:40 --reps 3 --timeout 90 > $L/solvers_$v.txt 2>&1
  echo "== $VAR=$v ($SECONDS s)"; grep -E "^(cg|bicgstab|gmres)" $L/solvers_$v.txt | head -12
done
for v in $VA $VB; do
  env "$VAR=$v" timeout 60 ncu -k regex:"ell_dot" --launch-skip 30 --launch-count 3 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed $B/solve -A poisson3d:150 --device gpu --format ell --method cg --maxiter 60 --quiet > $L/ncu_$v.txt 2>&1
  echo "== ncu $VAR=$v"; grep -E "ell_dot|duration|throughput" $L/ncu_$v.txt | head -9
done
echo "done $SECONDS s"
