#!/usr/bin/env bash
# bench/gpu_fp32.sh -- the fp32-values measurements of docs/benchmarks.md ("H200: fp32 values")
# in one call, for a GPU machine lent for minutes: build (sm_90) into build-gpu, then
#   - bench_spmv --fp32 on the stencils and lame3d:48, with ELL's rows per thread as the rule
#     has them and forced to 2 and to 4 (SPK_ELL_ROWS);
#   - bench_amg: Jacobi-CG and AMG-CG in double, in mixed (@mixed) and with AMG's cycle in fp32
#     values (@fp32), poisson3d:50-200 and lame3d:48 with rigid-body modes;
#   - solve -A poisson3d:150 --method cg in double, auto and mixed (what auto chose, and why);
#   - CG + block-Jacobi(3) in double and mixed on lame3d:48 and elasticity3d:60.
#
#   bash bench/gpu_fp32.sh OUTDIR
#
# OUTDIR receives spmv-fp32{,-rows2,-rows4}.txt, amg-mixed.{txt,json}, solve-precision.txt,
# bjacobi-mixed.txt and build.log. About 4 minutes on an H200 after the build.
# Exit status: 0; 1 a program failed; 2 usage; 3 the build failed.
set -u -o pipefail
[ $# -eq 1 ] || { echo "usage: bash bench/gpu_fp32.sh OUTDIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$1
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
B=$ROOT/build-gpu
status=0
if ! timeout 300 bash -c "cmake -S '$ROOT' -B '$B' -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_BUILD_TYPE=Release -DSPK_BUILD_BENCH=ON &&
        cmake --build '$B' -j $(nproc 2>/dev/null || echo 8) --target bench_spmv bench_amg solve spk_cuda" \
        > "$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    exit 3
fi
M="poisson3d:150 poisson3d27:100 elasticity3d:60 lame3d:48"
run() { local f=$1; shift; "$@" > "$OUT/$f" 2>&1 || { echo "FAILED: $* (see $OUT/$f)"; status=1; }; }
run spmv-fp32.txt timeout 120 "$B/bench_spmv" --fp32 --reps 30 $M
run spmv-fp32-rows2.txt env SPK_ELL_ROWS=2 timeout 120 "$B/bench_spmv" --fp32 --reps 30 $M
run spmv-fp32-rows4.txt env SPK_ELL_ROWS=4 timeout 120 "$B/bench_spmv" --fp32 --reps 30 $M
grep -hE "^== |^fp32" "$OUT"/spmv-fp32*.txt
run amg-mixed.txt timeout 300 "$B/bench_amg" --device gpu --json "$OUT/amg-mixed.json" \
    poisson3d:50 poisson3d:50@mixed poisson3d:100 poisson3d:100@mixed poisson3d:150 \
    poisson3d:150@mixed poisson3d:150@fp32 poisson3d:200 poisson3d:200@mixed lame3d:48@rbm \
    lame3d:48@rbm@mixed lame3d:48@rbm@fp32
grep -v "^  " "$OUT/amg-mixed.txt"
line() {   # line LABEL SOLVE-ARGS...: one solve, its JSON summarised on a line
    local label=$1; shift
    "$B/solve" "$@" --json > "$OUT/last.json" 2>&1 || { echo "FAILED: solve $*"; status=1; }
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], r['precision'], r['iterations'], '%.4f s solve, %.4f s setup, true_rel %.2e' % (r['solve_s'], r['setup_s'], r['true_rel']), r['precision_choice'], '|', r['precision_reason'])" "$OUT/last.json" "$label"
}
for p in double auto mixed; do
    line "poisson3d:150 cg $p" -A poisson3d:150 --device gpu --method cg --precision $p
done | tee "$OUT/solve-precision.txt"
for m in lame3d:48 elasticity3d:60; do
    for p in double mixed; do
        line "$m cg+bjacobi(3) $p" -A $m --device gpu --method cg --precond bjacobi --block-size 3 --precision $p
    done
done | tee "$OUT/bjacobi-mixed.txt"
rm -f "$OUT/last.json"
exit $status
