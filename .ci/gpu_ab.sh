#!/usr/bin/env bash
# A/B of the ELL spmv_dot grid (SPK_ELL_DOT=wave|grid) after the unrolled last-block loads
set -uo pipefail
OUT=$1; L=$OUT/ab; mkdir -p $L; B=build-gpu
nvidia-smi --query-gpu=name,driver_version --format=csv > $L/gpu.txt
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPK_BUILD_BENCH=ON > $L/build.log 2>&1 && cmake --build $B -j 16 >> $L/build.log 2>&1 || { tail -30 $L/build.log; exit 1; }
echo "built $SECONDS s"
[ -n "${CTEST:-}" ] && { (cd $B && ctest -L gpu --output-on-failure > $L/ctest.log 2>&1); tail -4 $L/ctest.log; grep -i fail $L/ctest.log | head; }
echo "ctest $SECONDS s"
for v in wave grid wave grid; do
  SPK_ELL_DOT=$v timeout 100 $B/bench_solvers --sizes 32,64,150 --extra elasticity3d:40 --reps 3 --timeout 90 > $L/solvers_$v.txt 2>&1
  echo "== $v ($SECONDS s)"; grep -E "^(cg|bicgstab|gmres)" $L/solvers_$v.txt | head -12
done
for v in wave grid; do
  SPK_ELL_DOT=$v timeout 60 ncu -k regex:"ell_dot|cg_r|cg_xp|bicg" --launch-skip 30 --launch-count 9 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed $B/solve -A poisson3d:150 --device gpu --format ell --method cg --maxiter 60 --quiet > $L/ncu_$v.txt 2>&1
  echo "== ncu $v"; grep -E "ell_dot|duration|throughput" $L/ncu_$v.txt | head -9
done
echo "done $SECONDS s"
