#!/usr/bin/env bash
# .ci/gpu_amg.sh OUT -- the AMG round on the GPU machine, in one call: .ci/gpu_check.sh (build,
# ctest -L gpu, solves in every format, compute-sanitizer; SAN_TOOLS and SAN_ONLY pass through,
# default memcheck of the amg, vec and krylov tests and one solve), then bench_amg: AMG-CG
# against Jacobi-CG side by side (setup, refresh, solve, iterations) on the issue's problems,
# the refinement studies, jump3d, lame3d with rigid-body modes, examples/heat.c's matrix and the
# SPD matrices of inputs/; then the GPU build's set (@dev, --resident). Logs and JSON land in OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; mkdir -p "$OUT"
SAN_ONLY=${SAN_ONLY:-"amg vec krylov solve"} SAN_TOOLS=${SAN_TOOLS:-memcheck} \
  timeout ${CHECK_TIMEOUT:-330} bash .ci/gpu_check.sh "$OUT/check" > "$OUT/check.txt" 2>&1
echo "gpu_check rc=$?"
grep -E "tests passed|Failed|FAILED|rc=|^ok|FAIL|us/it|===" "$OUT/check.txt" | tail -40
cmake --build build-gpu -j 16 --target bench_amg heat > "$OUT/bench_build.log" 2>&1 || tail -20 "$OUT/bench_build.log"
build-gpu/heat --n 400 --write-matrix "$OUT/heat400.mtx" > /dev/null 2>&1
SPD="bcsstk09 bcsstk13 nos6 nos5 bcsstk03 1138_bus LF10 Trefethen_2000 Journals"
timeout ${AMG_TIMEOUT:-240} build-gpu/bench_amg --device gpu --json "$OUT/amg.json" \
  ${AMG_SPECS:-poisson3d:50 poisson3d:64 poisson3d:100 poisson3d:150 jump3d:64 lame3d:16@rbm \
  lame3d:24@rbm lame3d:48@rbm "$OUT/heat400.mtx" $(for m in $SPD; do echo inputs/$m.mtx; done)} \
  > "$OUT/amg.txt" 2>&1
echo "bench_amg rc=$?"
grep -E "^\S+ +[0-9]+ \|" "$OUT/amg.txt"
# the hierarchy built on the GPU, b and x on the device (docs/amg.md, "What the setup left on
# the host"): setup, setup again, refresh and solve against Jacobi-CG
timeout ${AMG_DEV_TIMEOUT:-240} build-gpu/bench_amg --device gpu --resident --json "$OUT/amg-dev.json" \
  ${AMG_DEV_SPECS:-poisson3d:100@dev poisson3d:150@dev poisson3d:200@dev jump3d:100@dev \
  lame3d:32@rbm@dev lame3d:48@rbm@dev lame3d:64@rbm@dev} > "$OUT/amg-dev.txt" 2>&1
echo "bench_amg (GPU build) rc=$?"
grep -E "^\S+ +[0-9]+ \|" "$OUT/amg-dev.txt"
rm -f "$OUT/heat400.mtx"
