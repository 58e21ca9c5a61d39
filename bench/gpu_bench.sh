#!/usr/bin/env bash
# bench/gpu_bench.sh -- the whole GPU benchmark in one command, for a machine that is lent for
# minutes: build (sm_90) into build-gpu, run bench_spmv and bench_solvers, keep every output in
# OUTDIR, print the tables last.
#
#   bash bench/gpu_bench.sh OUTDIR
#
# OUTDIR receives <date>-<gpu>-{spmv,solvers}.{json,csv,txt} (the names bench/run.sh uses, so
# they can be copied into bench/results/ and turned into docs/benchmarks.md with
# `python3 bench/write_benchmarks.py`), build.log, nvidia-smi.txt, and, when python3 is there,
# a preview of the regenerated docs (OUTDIR/preview/benchmarks.md, OUTDIR/preview/img/).
# build-gpu is reused when present. Only the two benchmark targets are built (no tests).
# Limits: the build 200 s, bench_spmv 180 s, bench_solvers 120 s (and each program's own
# per-phase watchdog): at most ~8.5 min even when something hangs, typically 3-4 min.
#
# Exit status: 0; 1 a benchmark failed or printed FAIL; 2 usage; 3 the build failed; 77 no GPU.
set -u -o pipefail

[ $# -eq 1 ] || { echo "usage: bash bench/gpu_bench.sh OUTDIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$1
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
BUILD=$ROOT/build-gpu
JOBS=$(nproc 2>/dev/null || echo 8)
T0=$SECONDS
status=0

elapsed() { echo "[gpu_bench $((SECONDS - T0)) s] $*"; }

( nvidia-smi; nvidia-smi -q -d CLOCK,MEMORY 2>/dev/null | head -60 ) > "$OUT/nvidia-smi.txt" 2>&1
elapsed "building into $BUILD with $JOBS jobs (log: $OUT/build.log)"
if ! timeout 200 bash -c "cmake -S '$ROOT' -B '$BUILD' -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DCMAKE_BUILD_TYPE=Release -DSPK_BUILD_TESTS=OFF -DSPK_BUILD_BENCH=ON &&
        cmake --build '$BUILD' -j $JOBS --target bench_spmv bench_solvers" > "$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    echo "gpu_bench: the build failed (full log: $OUT/build.log)" >&2
    exit 3
fi
elapsed "built"

name=$("$BUILD/bench_spmv" --probe 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
    echo "gpu_bench: no usable GPU (bench_spmv --probe exit $rc): $name" >&2
    exit $([ $rc -eq 77 ] && echo 77 || echo 3)
fi
gpu=$(printf '%s' "${name%% (*}" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/-*$//')
base=$OUT/$(date +%F)-$gpu
elapsed "$name; results: $base-*"

timeout 180 "$BUILD/bench_spmv" --inputs "$ROOT/inputs" --out "$base-spmv.json" \
    --out "$base-spmv.csv" > "$base-spmv.txt" 2> "$OUT/spmv.stderr"
rc=$?
[ $rc -eq 0 ] || { echo "gpu_bench: bench_spmv exited $rc"; cat "$OUT/spmv.stderr"; status=1; }
elapsed "bench_spmv done (exit $rc)"

timeout 120 "$BUILD/bench_solvers" --timeout 100 --out "$base-solvers.json" --out "$base-solvers.csv" \
    > "$base-solvers.txt" 2> "$OUT/solvers.stderr"
rc=$?
[ $rc -eq 0 ] || { echo "gpu_bench: bench_solvers exited $rc"; cat "$OUT/solvers.stderr"; status=1; }
elapsed "bench_solvers done (exit $rc)"

if command -v python3 >/dev/null 2>&1 && [ -f "$base-spmv.json" -o -f "$base-solvers.json" ]; then
    mkdir -p "$OUT/preview"
    cp "$ROOT/docs/benchmarks.md" "$OUT/preview/benchmarks.md"
    args=()
    [ -f "$base-spmv.json" ] && args+=(--spmv "$base-spmv.json")
    [ -f "$base-solvers.json" ] && args+=(--solvers "$base-solvers.json")
    python3 "$ROOT/bench/write_benchmarks.py" "${args[@]}" --doc "$OUT/preview/benchmarks.md" \
        --img "$OUT/preview/img" > "$OUT/preview.log" 2>&1 || echo "gpu_bench: preview failed (see preview.log)"
fi

# The tables, last: the six generated SpMV matrices in full, then both summaries.
echo
echo "==================== SpMV ($base-spmv.txt) ===================="
awk '/^== (poisson|elasticity|powerlaw|lame3d)/,/^      |^auto: .*did not run/' "$base-spmv.txt" 2>/dev/null
sed -n '/^== summary/,$p' "$base-spmv.txt" 2>/dev/null
echo
echo "==================== solvers ($base-solvers.txt) ===================="
sed -n '/^== /,$p' "$base-solvers.txt" 2>/dev/null | grep -v '^$'
elapsed "done, exit $status"
exit $status
