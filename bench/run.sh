#!/usr/bin/env bash
# bench/run.sh -- `make bench`: run the GPU benchmarks of a build and regenerate the GPU sections
# of docs/benchmarks.md from their results.
#
#   bash bench/run.sh BUILD [--cpu]
#
# 1. bench_spmv (every spk format and cuSPARSE on the six generated matrices and inputs/) and
#    bench_solvers (CG, BiCGStab, GMRES(30) per iteration, textbook cuSPARSE + cuBLAS CG) write
#    bench/results/<date>-<gpu>-{spmv,solvers}.{json,csv,txt}. Without CUDA in the build, or
#    without a usable GPU (bench_spmv --probe exits 77), they are skipped with a message.
#    Then bench/select_sweep.py (the GPU format choice over 51 generated matrices, ~3 minutes on
#    an H200) writes bench/results/<date>-<gpu>-selsweep.{json,txt,md}; docs/selection.md
#    quotes it (edited by hand).
# 2. bench/write_benchmarks.py rewrites the text between the <!-- gpu-...:begin/end --> markers
#    of docs/benchmarks.md from the newest results, and the plot docs/img/cg_per_iteration.png.
#    Every other section of the file (Matrix Market reader, CPU) is left as it is.
# 3. With --cpu, also bench/cpu_cg_vs_scipy.py (CPU CG against SciPy's cg on poisson3d:64,
#    once against SciPy's csr_matrix and once against its dia_matrix), results in
#    bench/results/<date>-cpu-<host>-cg-vs-scipy-{csr,dia}.json, and bench_dia_cpu (DIA against
#    CSR SpMV, the data of the CPU rule) in <date>-cpu-<host>-dia-vs-csr-spmv.txt, and
#    bench_mixed (each fp64 SpMV row of CSR and of the automatic format against its fp32 twin,
#    CG in double and mixed in both formats) in
#    <date>-cpu-<host>-mixed.txt, and bench_mpi (distributed CG on 1 and 2 ranks, a build with
#    MPI) in <date>-cpu-<host>-mpi.{txt,json}; their tables
#    are printed for the CPU sections, which are edited by hand (they record the machine and its
#    load).
#
# Exit status: 0, or 1 when a benchmark failed or reported a FAIL line (the docs are still
# regenerated from whatever completed).
set -u -o pipefail

usage() { echo "usage: bash bench/run.sh BUILD [--cpu]" >&2; exit 2; }
[ $# -ge 1 ] || usage
BUILD=$1
shift
CPU=0
for a in "$@"; do
    case $a in
        --cpu) CPU=1 ;;
        *) usage ;;
    esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RESULTS=$ROOT/bench/results
mkdir -p "$RESULTS"
DATE=$(date +%F)
status=0

# Each benchmark gets a wall-clock limit on top of its own per-matrix watchdog.
BENCH_TIMEOUT=${BENCH_TIMEOUT:-900}

run_gpu() {
    local spmv=$BUILD/bench_spmv solvers=$BUILD/bench_solvers
    if [ ! -x "$spmv" ] || [ ! -x "$solvers" ]; then
        echo "run.sh: $BUILD has no bench_spmv / bench_solvers (a build without CUDA):" \
             "skipping the GPU benchmarks"
        return 0
    fi
    local name rc
    name=$("$spmv" --probe 2>&1)
    rc=$?
    if [ $rc -eq 77 ]; then
        echo "run.sh: no usable GPU, skipping the GPU benchmarks ($name)"
        return 0
    elif [ $rc -ne 0 ]; then
        echo "run.sh: bench_spmv --probe failed (exit $rc): $name" >&2
        status=1
        return 0
    fi
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L
    # "NVIDIA H200 (cc 9.0, 132 SMs, 140 GiB)" -> nvidia-h200
    local gpu
    gpu=$(printf '%s' "${name%% (*}" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/-*$//')
    local base=$RESULTS/$DATE-$gpu
    echo "run.sh: $name -> $base-{spmv,solvers}.{json,csv,txt}"

    timeout "$BENCH_TIMEOUT" "$spmv" --inputs "$ROOT/inputs" --out "$base-spmv.json" \
        --out "$base-spmv.csv" | tee "$base-spmv.txt"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { echo "run.sh: bench_spmv exited $rc" >&2; status=1; }

    timeout "$BENCH_TIMEOUT" "$solvers" --out "$base-solvers.json" --out "$base-solvers.csv" \
        | tee "$base-solvers.txt"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { echo "run.sh: bench_solvers exited $rc" >&2; status=1; }

    timeout "$BENCH_TIMEOUT" python3 "$ROOT/bench/select_sweep.py" --build "$BUILD" --out "$RESULTS"
    rc=$?
    [ "$rc" -eq 0 ] || { echo "run.sh: select_sweep.py exited $rc" >&2; status=1; }
}

run_gpu

if [ $CPU -eq 1 ]; then
    host=$(hostname -s 2>/dev/null || echo host)
    python3 "$ROOT/bench/cpu_cg_vs_scipy.py" --build "$BUILD" --markdown \
        --json "$RESULTS/$DATE-cpu-$host-cg-vs-scipy-csr.json" || { echo "run.sh: cpu_cg_vs_scipy.py failed" >&2; status=1; }
    # the same against SciPy's own dia_matrix (spk picks DIA for this matrix on the CPU)
    python3 "$ROOT/bench/cpu_cg_vs_scipy.py" --build "$BUILD" --markdown --settings default \
        --scipy-format dia --json "$RESULTS/$DATE-cpu-$host-cg-vs-scipy-dia.json" ||
        { echo "run.sh: cpu_cg_vs_scipy.py --scipy-format dia failed" >&2; status=1; }
    if [ -x "$BUILD/bench_dia_cpu" ]; then
        "$BUILD/bench_dia_cpu" | tee "$RESULTS/$DATE-cpu-$host-dia-vs-csr-spmv.txt" ||
            { echo "run.sh: bench_dia_cpu failed" >&2; status=1; }
    fi
    if [ -x "$BUILD/bench_mixed" ]; then
        (cd "$ROOT" && "$BUILD/bench_mixed") | tee "$RESULTS/$DATE-cpu-$host-mixed.txt" ||
            { echo "run.sh: bench_mixed failed" >&2; status=1; }
    fi
    # the distributed CG on 1 and 2 CPU ranks of one core each (a build with MPI)
    if [ -x "$BUILD/bench_mpi" ] && command -v mpiexec >/dev/null; then
        for np in 1 2; do
            OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                mpiexec -n "$np" --bind-to core "$BUILD/bench_mpi" \
                --json "$RESULTS/$DATE-cpu-$host-mpi.json" poisson3d:100 ||
                { echo "run.sh: bench_mpi on $np ranks failed" >&2; status=1; }
        done | tee "$RESULTS/$DATE-cpu-$host-mpi.txt"
    fi
fi

if compgen -G "$RESULTS/*-spmv.json" >/dev/null || compgen -G "$RESULTS/*-solvers.json" >/dev/null; then
    python3 "$ROOT/bench/write_benchmarks.py" --results "$RESULTS" --doc "$ROOT/docs/benchmarks.md" \
        --img "$ROOT/docs/img" || { echo "run.sh: write_benchmarks.py failed" >&2; status=1; }
else
    echo "run.sh: no GPU results in $RESULTS yet: docs/benchmarks.md left as it is"
fi
exit $status
