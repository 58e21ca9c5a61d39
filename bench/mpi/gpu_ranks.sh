#!/usr/bin/env bash
# bench/mpi/gpu_ranks.sh BUILD OUTDIR -- GPU ranks on the GPUs of one host: CG + Jacobi on
# poisson3d:150 (b = A 1) alone (`solve --device gpu`), then under mpirun on 1 and 2 ranks
# (ranks share a GPU where they outnumber them), and bench_mpi --device gpu (random b, the
# time in MPI apart from the computation) on 1 and 2 ranks. Writes OUTDIR/p150_*.json,
# OUTDIR/bench_mpi_np*.txt and OUTDIR/bench_mpi_gpu.json; prints one line per solve.
set -u
B=${1:?usage: gpu_ranks.sh BUILD OUTDIR}
W=${2:?usage: gpu_ranks.sh BUILD OUTDIR}
mkdir -p "$W"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
P="-A poisson3d:150 --method cg --precond jacobi --device gpu --json"
status=0
"$B/solve" $P >"$W/p150_lone.json" 2>&1 || status=1
for np in 1 2; do
  timeout 120 mpirun -n $np "$B/solve" $P >"$W/p150_np$np.json" 2>&1 || status=1
done
rm -f "$W/bench_mpi_gpu.json"
for np in 1 2; do
  timeout 120 mpirun -n $np "$B/bench_mpi" --device gpu --json "$W/bench_mpi_gpu.json" \
    poisson3d:150 >"$W/bench_mpi_np$np.txt" 2>&1 || status=1
done
for f in "$W"/p150_lone.json "$W"/p150_np1.json "$W"/p150_np2.json; do
  python3 -c "import json; r=json.load(open('$f')); m=r.get('mpi', {}); print('%-15s %s %d its  true_rel %.2e  %7.1f us/it  halo %s values, %.4f s in halo waits, %.4f s in %s reductions' % ('$(basename "$f" .json)', r['reason'], r['iterations'], r['true_rel'], 1e6 * r['per_iter_s'], m.get('halo_values', 0), m.get('halo_s', 0), m.get('reduce_s', 0), m.get('reductions', 0)))" || status=1
done
cat "$W"/bench_mpi_np1.txt; tail -1 "$W"/bench_mpi_np2.txt
exit $status
