#!/usr/bin/env bash
# .ci/gpu_ab_tree.sh OUT BASE -- the working tree (B) against another source tree (A, the
# directory BASE, e.g. `git archive <commit> | tar -x -C BASE`) on the GPU machine, in one run:
# both built for sm_90 side by side; bench_solvers of each interleaved A B A B (no
# preconditioner, the benchmark's own setting); then CG, BiCGStab and GMRES(30) with Jacobi
# through `solve` on poisson3d:150 and elasticity3d:40, A B A B, per iteration from --json.
# CTEST=1 also runs ctest -L gpu of B (its test targets are built then). Logs in OUT/ab.
# SIZES (default 16,32,64,100,150) and EXTRA (elasticity3d:40) pass to bench_solvers.
set -uo pipefail
OUT=$1; BASE=$2; L=$OUT/ab; mkdir -p "$L"
cd "$(dirname "$0")/.."
A=$BASE/build-gpu; B=build-gpu
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/gpu.txt"
cfg="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPK_BUILD_BENCH=ON"
targets="bench_solvers solve"
[ -n "${CTEST:-}" ] && targets=""                       # everything: the tests too
( cmake -S "$BASE" -B "$A" $cfg && cmake --build "$A" -j 8 --target bench_solvers solve ) \
    > "$L/build_a.log" 2>&1 &
( cmake -S . -B $B $cfg && cmake --build $B -j 8 ${targets:+--target $targets} ) > "$L/build_b.log" 2>&1
rc_b=$?
wait $!; rc_a=$?
[ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] || { tail -30 "$L/build_a.log" "$L/build_b.log"; exit 1; }
echo "built ($SECONDS s)"
if [ -n "${CTEST:-}" ]; then
    (cd $B && ctest -L gpu --output-on-failure > "$L/ctest.log" 2>&1)
    grep -E "tests passed|Failed|\*\*\*Fail" "$L/ctest.log"; echo "ctest ($SECONDS s)"
fi
for t in A B A B; do
    exe=$([ $t = A ] && echo "$A" || echo "$B")/bench_solvers
    timeout 150 "$exe" --sizes "${SIZES:-16,32,64,100,150}" --extra "${EXTRA:-elasticity3d:40}" \
        --reps 5 --timeout 140 > "$L/solvers_$t$SECONDS.txt" 2>&1
    echo "== bench_solvers $t ($SECONDS s)"; grep -E "^(cg|bicgstab|gmres)" "$L"/solvers_$t$SECONDS.txt
done
for t in A B A B; do
    exe=$([ $t = A ] && echo "$A" || echo "$B")/solve
    for m in poisson3d:150 elasticity3d:40; do
        for meth in cg bicgstab gmres; do
            timeout 60 "$exe" -A $m --device gpu --method $meth --precond jacobi --maxiter 300 --json 2>/dev/null |
                python3 -c "import json,sys; r=json.load(sys.stdin); print('$t %-16s %-9s jacobi %5d its %8.2f us/it %s' % ('$m', '$meth', r['iterations'], 1e6*r['per_iter_s'], r['reason']))"
        done
    done
done | tee "$L/jacobi.txt"
echo "done ($SECONDS s)"
