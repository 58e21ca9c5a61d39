#!/usr/bin/env bash
# .ci/gpu_diag.sh -- CG residual histories of one matrix on the CPU and on the GPU in every
# format, and the first iteration where they part (relative difference > 1e-6).
#   bash .ci/gpu_diag.sh BUILD MATRIX [extra solve options]
B=$1; M=$2; shift 2
T=$(mktemp -d)
$B/solve -A "$M" --method cg --device cpu --format csr --history $T/cpu.csv --quiet "$@" >/dev/null 2>&1
for f in csr ell coo; do
  $B/solve -A "$M" --method cg --device gpu --format $f --history $T/gpu_$f.csv --quiet "$@" >/dev/null 2>&1
  python3 - $T/cpu.csv $T/gpu_$f.csv $f <<'PY'
import csv, sys
a = [r for r in csv.DictReader(open(sys.argv[1]))]
b = [r for r in csv.DictReader(open(sys.argv[2]))]
k = 'rnorm' if 'rnorm' in a[0] else list(a[0].keys())[2]
first = None
for i, (x, y) in enumerate(zip(a, b)):
    u, v = float(x[k]), float(y[k])
    if abs(u - v) > 1e-6 * max(abs(u), abs(v), 1e-300):
        first = i; break
print(sys.argv[3], 'cpu its', len(a) - 1, 'gpu its', len(b) - 1, 'first parting at', first,
      'values', [(a[i][k], b[i][k]) for i in range(first, min(first + 3, len(a), len(b)))] if first is not None else '')
PY
done
