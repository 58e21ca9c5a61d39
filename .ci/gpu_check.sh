#!/usr/bin/env bash
# .ci/gpu_check.sh -- what a GPU machine runs before a CUDA change lands (CI has no GPU):
# build for the GPU, run the gpu-labelled tests, solve poisson3d:150 with every format,
# and run compute-sanitizer memcheck and racecheck over every gpu test executable and one solve.
# Usage: bash .ci/gpu_check.sh [LOGDIR]   (logs land in LOGDIR, default ./gpu-logs)
# SAN_TIMEOUT (default 480): seconds allowed to each sanitizer run (a timeout fails the check);
# SAN_JOBS (default 8): sanitizer runs side by side on the GPU (1: one at a time).
# SKIP_TESTS=1: build and sanitize only (a second call on a machine whose tests already ran).
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${1:-gpu-logs}
mkdir -p "$LOG"
B=build-gpu
. .ci/gpu_mpi.sh   # an MPI for the distributed tests, where the machine has one or a wheel came
status=0
step() { echo "=== $*"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$LOG/gpu.txt"
step build
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 ${CMAKE_EXTRA:-} >"$LOG/build.log" 2>&1 &&
  cmake --build $B -j 16 --target solve heat spk_cuda $( (echo test_robust_gpu; cd $B && cmake --build . --target help | grep -oE "test_[a-z0-9_]+" | grep -v util) | sort -u) >>"$LOG/build.log" 2>&1 || { tail -50 "$LOG/build.log"; exit 1; }

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  step "ctest -L gpu"
  (cd $B && ctest -L gpu --output-on-failure 2>&1) | tee "$LOG/ctest_gpu.log" | tail -40
  grep -q "100% tests passed" "$LOG/ctest_gpu.log" || status=1

  step "install: libspk.so with its CUDA backend loaded by dlopen, from the full install and beside a CPU-only one"
  (cd $B && ctest -R '^install$' --output-on-failure 2>&1) | tee "$LOG/ctest_install.log" | tail -15
  grep -q "100% tests passed" "$LOG/ctest_install.log" || status=1

  step "solve poisson3d:150 --device gpu, every format"
  for f in auto coo csr ell hyb jds; do
    $B/solve -A poisson3d:150 --device gpu --format $f --method cg --json >"$LOG/solve_$f.json" 2>&1
    rc=$?
    python3 -c "import json,sys; r=json.load(open('$LOG/solve_$f.json')); print('%-4s rc=$rc %-16s %5d its true_rel %.2e  %7.1f us/it  fmt %s' % ('$f', r['reason'], r['iterations'], r['true_rel'], 1e6*r['per_iter_s'], r['format']))" || { echo "$f: rc=$rc"; cat "$LOG/solve_$f.json" | tail -5; }
    [ $rc -eq 0 ] || echo "FAILED: solve --format $f exit $rc"
  done | tee "$LOG/solve_formats.txt"
  grep -q "^FAILED" "$LOG/solve_formats.txt" && status=1     # the loop ran in a subshell
fi

command -v compute-sanitizer >/dev/null || PATH=$PATH:/usr/local/cuda/bin
if command -v compute-sanitizer >/dev/null; then
  # Every gpu test executable, heat and one solve, each under memcheck and under racecheck
  # (shared-memory hazards, every report). Tests with long cases run with --quick (fewer or
  # smaller cases: racecheck of the whole test_solvers takes more than 120 s, of test_api more
  # than 450 s, as GMRES's tile kernel fills shared memory; test_robust_gpu --quick injects
  # every 16th allocation and does not fill the GPU). The exit status is the
  # test's own (no --error-exitcode): the sanitizer's verdict is read from its summary. A run
  # fails on a nonzero status (124/137: timeout), a missing summary, any racecheck hazard, or
  # more memcheck errors than "Program hit cudaErrorMemoryAllocation" reports: test_vec and
  # test_robust_gpu ask for more device memory than the GPU has on purpose, and the sanitizer
  # reports each refused cudaMalloc as an API error. Logs: $LOG/<tool>_<name>.log.
  step "compute-sanitizer memcheck and racecheck"
  SAN_TIMEOUT=${SAN_TIMEOUT:-480}
  SAN_JOBS=${SAN_JOBS:-8}
  # SAN_ONLY="vec solvers": only those runs (a re-check after a change to them)
  SAN_RUNS=(
    "spmv:test_spmv --device gpu"
    "solvers:test_solvers --device gpu --quick"
    "krylov:test_krylov --device gpu --quick"
    "api:test_api --device gpu --quick --part main"
    "api_threads:test_api --device gpu --quick --part threads"
    "vec:test_vec --device gpu"
    "amg:test_amg --device gpu"
    "mixed:test_mixed --device gpu"
    "pc:test_pc --device gpu"
    "ilu:test_ilu --device gpu --quick"
    "robust_gpu:test_robust_gpu --device gpu --quick"
    "heat:heat --device gpu --n 16"
    "solve:solve -A poisson3d:30 --device gpu --format hyb --method cg --quiet"
  )
  san() {   # san TOOL NAME EXE ARGS...: one run; writes TOOL_NAME.log and TOOL_NAME.rc
    local tool=$1 name=$2 exe=$3 t0=$SECONDS extra=()
    shift 3
    local more=()
    if [ "$tool" = racecheck ]; then
      extra=(--racecheck-report all)
      # racecheck makes every launch slower: test_robust_gpu injects every 64th allocation
      # (429 s on the H200 with all eight runs side by side; at every 256th no device
      # allocation is reached, which the test counts as a failure)
      [ "$name" = robust_gpu ] && more=(--stride 64)
    fi
    timeout -k 10 "$SAN_TIMEOUT" compute-sanitizer --tool "$tool" ${extra[@]+"${extra[@]}"} \
      "$B/$exe" "$@" ${more[@]+"${more[@]}"} >"$LOG/${tool}_$name.log" 2>&1
    echo "$? $((SECONDS - t0))" >"$LOG/${tool}_$name.rc"
  }
  san_verdict() {   # san_verdict TOOL LOG RC: "ok ..." or "FAIL ..."
    local tool=$1 f=$2 rc=$3 errs oom
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL (timeout after ${SAN_TIMEOUT} s)"; return; fi
    [ "$rc" = 0 ] || { echo "FAIL (exit status $rc)"; return; }
    errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$f" | tail -1)
    oom=$(grep -c "Program hit cudaErrorMemoryAllocation" "$f")
    if [ $tool = racecheck ]; then
      grep -qF "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" "$f" ||
        { echo "FAIL (racecheck hazards, or no summary)"; return; }
    elif [ -z "$errs" ]; then echo "FAIL (no ERROR SUMMARY)"; return
    fi
    [ "${errs:-0}" -le "$oom" ] || { echo "FAIL ($errs errors)"; return; }
    [ "$oom" -gt 0 ] && echo "ok ($oom deliberate out-of-memory API reports)" || echo ok
  }
  # RACE_SKIP="name ..." leaves runs out of racecheck; SAN_TOOLS=racecheck runs one tool only.
  # Racecheck times on the H200: the whole test_api more than 450 s alone (GMRES's tile kernel
  # fills shared memory, and racecheck instruments every access); with SAN_JOBS=8 racecheck
  # alone is ~8 minutes, so the long racecheck runs start first. test_krylov --quick: 254 s
  # alone; test_api --quick runs past 480 s alone, so it runs in two halves: --part main (all
  # but the two-thread test; 270 s) and --part threads (that test alone; 9 s). Within one 600 s
  # call, RACE_SKIP=" api api_threads krylov robust_gpu " and then SAN_TOOLS=racecheck
  # SAN_ONLY="api ..." split the work in parts.
  RACE_SKIP=${RACE_SKIP-""}
  SAN_TOOLS=${SAN_TOOLS:-racecheck memcheck}   # the long racecheck runs first
  for tool in $SAN_TOOLS; do
    for r in "${SAN_RUNS[@]}"; do
      [ $tool = racecheck ] && [[ "$RACE_SKIP" == *" ${r%%:*} "* ]] && continue
      [ -n "${SAN_ONLY:-}" ] && [[ " $SAN_ONLY " != *" ${r%%:*} "* ]] && continue
      while [ "$(jobs -rp | wc -l)" -ge "$SAN_JOBS" ]; do wait -n; done
      san "$tool" "${r%%:*}" ${r#*:} &
    done
  done
  wait
  : >"$LOG/sanitizer.txt"
  for tool in $SAN_TOOLS; do
    for r in "${SAN_RUNS[@]}"; do
      [ $tool = racecheck ] && [[ "$RACE_SKIP" == *" ${r%%:*} "* ]] && continue
      [ -n "${SAN_ONLY:-}" ] && [[ " $SAN_ONLY " != *" ${r%%:*} "* ]] && continue
      f="$LOG/${tool}_${r%%:*}"
      rc=x secs=?
      [ -f "$f.rc" ] && read -r rc secs <"$f.rc"
      verdict=$(san_verdict $tool "$f.log" "$rc")
      case $verdict in ok*) ;; *) status=1 ;; esac
      summary=$(grep -hE "(ERROR|RACECHECK) SUMMARY" "$f.log" 2>/dev/null | sed 's/^=* *//' | paste -sd';' -)
      printf '%-9s %-10s %4ss  %s | %s\n' "$tool" "${r%%:*}" "$secs" "${summary:-no summary line}" \
        "$verdict" | tee -a "$LOG/sanitizer.txt"
    done
  done
else
  echo "compute-sanitizer not found: the sanitizer check did not run" | tee "$LOG/sanitizer.txt"
  status=1
fi
exit $status
