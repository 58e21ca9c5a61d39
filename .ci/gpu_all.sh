#!/usr/bin/env bash
# .ci/gpu_all.sh OUT -- everything a lent GPU machine is asked for, in one call: the GPU check
# (.ci/gpu_check.sh: build, ctest -L gpu, every format on poisson3d:150, compute-sanitizer), the
# benchmarks (bench/gpu_bench.sh) and the 1M-unknown update+solve figure of the heat example.
# All logs are packed into OUT/gpu_all.tgz (the device tool returns at most 8 files).
set -u
OUT=$1
W=$OUT/work
mkdir -p "$W/check" "$W/bench"
cd "$(dirname "$0")/.."
T0=$SECONDS
bash .ci/gpu_check.sh "$W/check" > "$W/check.txt" 2>&1
echo "gpu_check rc=$? ($((SECONDS - T0)) s)" | tee -a "$W/summary.txt"
bash bench/gpu_bench.sh "$W/bench" > "$W/bench.txt" 2>&1
echo "gpu_bench rc=$? ($((SECONDS - T0)) s)" | tee -a "$W/summary.txt"
timeout 120 build-gpu/heat --device gpu --n 1000 --steps 4 > "$W/heat1000.txt" 2>&1
echo "heat n=1000 rc=$? ($((SECONDS - T0)) s)" | tee -a "$W/summary.txt"
tar czf "$OUT/gpu_all.tgz" -C "$W" .
cp "$W/summary.txt" "$OUT/"
echo "===== check"; grep -vE "^\s*$" "$W/check.txt" | tail -40
echo "===== heat"; tail -8 "$W/heat1000.txt"
echo "===== bench"; tail -90 "$W/bench.txt"
