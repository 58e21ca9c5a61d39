#!/usr/bin/env bash
# bench/solve_loop.sh BUILD OUT [DEVICE] -- the solve loop as a user meets it, on one device
# (default gpu): how the hopeless solves end (the stopping tests), the GMRES(30) counts that
# depend on rounding, and what a one-shot solve costs cold against warm. Writes OUT/*.txt and
# prints the tables; docs/benchmarks.md and docs/solvers.md quote them.
#   hopeless.txt  BiCGStab, GMRES(30) and --method auto with the default options on bayer10,
#                 adder_dcop_05, cavity14, mahindas, sherman3: reason, iterations, wall time
#   gmres.txt     GMRES(30) on orsirr_1: no preconditioner, Jacobi, and restart 60
#   cold.txt      bench_cold (a fresh process each): CG, BiCGStab, GMRES(30) on poisson3d:34
#                 and GMRES on cage8; the first solve against the third; with the CUDA
#                 runtime's lazy loading (its default) and with CUDA_MODULE_LOADING=EAGER
set -u -o pipefail
B=$1; OUT=$2; DEV=${3:-gpu}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IN=$ROOT/inputs
mkdir -p "$OUT"

line() {   # line LABEL JSONFILE SECONDS
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
label, path, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    r = json.load(open(path))
    print("%-34s %-26s %7d its  %8.2f s  true rel %.2e" % (label, r.get("reason"), r.get("iterations", -1),
          secs, r.get("true_rel") or float("nan")))
except Exception as e:
    print("%-34s (no result: %s)" % (label, e))
EOF
}

{
    for m in bayer10 adder_dcop_05 cavity14 mahindas sherman3; do
        for meth in bicgstab gmres auto; do
            t0=$(date +%s%N)
            timeout 300 "$B/solve" -A "$IN/$m.mtx" --device "$DEV" --method $meth --json \
                > "$OUT/h_${m}_$meth.json" 2>/dev/null
            t1=$(date +%s%N)
            line "$m $meth" "$OUT/h_${m}_$meth.json" "$(( (t1 - t0) / 1000000 ))e-3"
        done
    done
} | tee "$OUT/hopeless.txt"

{
    for args in "--precond none" "--precond jacobi" "--precond none --restart 60"; do
        t0=$(date +%s%N)
        timeout 120 "$B/solve" -A "$IN/orsirr_1.mtx" --device "$DEV" --method gmres $args --json \
            > "$OUT/g.json" 2>/dev/null
        t1=$(date +%s%N)
        line "orsirr_1 gmres $args" "$OUT/g.json" "$(( (t1 - t0) / 1000000 ))e-3"
    done
} | tee "$OUT/gmres.txt"

{
    for mode in lazy eager; do
        for c in "poisson3d:34 cg none" "poisson3d:34 bicgstab none" "poisson3d:34 gmres none" \
                 "$IN/cage8.mtx gmres auto" "$IN/cage8.mtx cg none"; do
            set -- $c
            env $([ $mode = eager ] && echo CUDA_MODULE_LOADING=EAGER) \
                "$B/bench_cold" -A "$1" --method "$2" --precond "$3" --device "$DEV" 2>&1 |
                python3 -c "
import json, sys
r = json.loads(sys.stdin.read())
print('%-5s %-14s %-9s %-6s ctx %6.1f ms  create %6.1f ms  solve cold %7.2f ms  warm %7.2f ms  us/it cold %7.1f warm %7.1f  cold/warm %.2f' % (
    '$mode', r['matrix'].split('/')[-1], r['method'], r['precond'], 1e3*r['context_s'], 1e3*r['create_s'],
    1e3*r['solve_s'][0], 1e3*r['solve_s'][2], r['us_per_iter'][0], r['us_per_iter'][2], r['cold_over_warm']))
" || echo "$mode $c: failed"
        done
    done
} | tee "$OUT/cold.txt"
