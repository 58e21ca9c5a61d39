#!/usr/bin/env bash
# bench/experiments/ab.sh -- an experiment's A/B run: the tree without a patch ("base") against
# the tree with it ("exp"), built side by side and measured in one run on one machine, the way
# docs/benchmarks.md's "predicted / measured" entries are made.
#
# Two steps, since the machine that measures may have no git history (the device machines get
# a copy of the working tree only):
#
#   bash bench/experiments/ab.sh prepare PATCH
#       here: base/ = `git archive HEAD`, exp/ = the same with PATCH applied (by `patch -p1`,
#       which unlike `git apply` also works inside the repository's own folders), both without
#       docs/ and bench/results/; both folders go into .git/info/exclude, so they travel only
#       when named (the device tool's `carry`: base, exp).
#
#   bash bench/experiments/ab.sh run OUTDIR [--tests "T ..."] [--reps R] -- 'CMD' ['CMD' ...]
#       there: builds base/ and exp/ (Release, sm_90, the targets the commands and tests name),
#       runs each test of --tests in exp/ and, where a GPU answers, under compute-sanitizer
#       memcheck (tests separated by ';', each a program with its arguments: "test_spmv
#       --device gpu --quick; test_amg --device gpu"), then each CMD R times (default 2) per
#       tree, interleaved
#       (base, exp, base, exp: drift shows as a difference between the two runs of one tree).
#       A CMD names its program without a folder ("bench_spmv --reps 30 lame3d:48"); it runs as
#       base/build-gpu/bench_spmv ... and exp/build-gpu/bench_spmv .... OUTDIR gets three
#       files, as the device tool returns only a few: summary.txt (what ran, exit statuses,
#       the tests' last lines and memcheck's verdicts), ab.txt (every command's output, headed
#       "## base|exp run K: CMD"), and logs.tgz (the build logs and everything else).
#
# The summary goes to OUTDIR as each step ends, so a run cut off by a time limit still returns
# what it did. Exit status: 0; 1 a build, test, memcheck or command failed; 2 usage.
set -u -o pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

prepare() {
    local patch=$1
    [ -f "$patch" ] || { echo "ab.sh: no patch file $patch" >&2; exit 2; }
    patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
    for d in base exp; do
        grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >>.git/info/exclude
        rm -rf "$d" && mkdir "$d" && git archive HEAD | tar x -C "$d" || exit 1
    done
    (cd exp && patch -p1 -s <"$patch") || { echo "ab.sh: $patch does not apply to HEAD" >&2; exit 1; }
    rm -rf base/docs base/bench/results exp/docs exp/bench/results
    if diff -rq base exp >/dev/null; then
        echo "ab.sh: $patch changes nothing outside docs/ and bench/results/" >&2
        exit 1
    fi
    echo "base/ and exp/ ready ($(du -sh base | cut -f1) each); carry: base, exp"
}

run() {
    local out=$1 tests="" reps=2
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in
            --tests) tests=$2; shift 2 ;;
            --reps) reps=$2; shift 2 ;;
            *) usage ;;
        esac
    done
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || usage
    [ -d base ] && [ -d exp ] || { echo "ab.sh: no base/ or exp/: run 'ab.sh prepare PATCH' first" >&2; exit 2; }
    mkdir -p "$out" || exit 2
    out=$(cd "$out" && pwd)
    local logs
    logs=$(mktemp -d)
    local sum=$out/summary.txt ab=$out/ab.txt t0=$SECONDS status=0
    say() { echo "[$((SECONDS - t0)) s] $*" | tee -a "$sum"; }
    : >"$sum"
    : >"$ab"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$sum" 2>&1
    local -a testv=()
    local c t
    IFS=';' read -r -a testv <<<"$tests"
    local targets=""
    for c in "$@"; do targets="$targets ${c%% *}"; done
    for t in "${testv[@]}"; do t=$(echo $t); [ -n "$t" ] && targets="$targets ${t%% *}"; done
    targets=$(echo $targets | tr ' ' '\n' | sort -u | tr '\n' ' ')
    local jobs=$(( $(nproc 2>/dev/null || echo 4) / 2 ))
    [ "$jobs" -ge 1 ] || jobs=1
    for d in base exp; do
        (cd "$d" && cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
            cmake --build build-gpu -j "$jobs" --target $targets) >"$logs/build_$d.log" 2>&1 &
    done
    local fail=0
    for p in $(jobs -p); do wait "$p" || fail=1; done
    say "built base/ and exp/ (targets: $targets): $([ $fail = 0 ] && echo ok || echo FAILED)"
    if [ $fail != 0 ]; then
        tail -20 "$logs"/build_*.log >>"$sum"
        tar czf "$out/logs.tgz" -C "$logs" .
        exit 1
    fi
    for t in "${testv[@]}"; do
        t=$(echo $t)
        [ -n "$t" ] || continue
        local name=${t%% *} rc v
        exp/build-gpu/$t >"$logs/test_$name.log" 2>&1
        rc=$?
        [ $rc = 0 ] || [ $rc = 77 ] || status=1
        say "exp: $t: exit $rc, $(tail -1 "$logs/test_$name.log")"
        if [ $rc = 0 ] && command -v compute-sanitizer >/dev/null && nvidia-smi >/dev/null 2>&1; then
            compute-sanitizer --tool memcheck exp/build-gpu/$t >"$logs/memcheck_$name.log" 2>&1
            rc=$?
            v=$(grep -h "ERROR SUMMARY" "$logs/memcheck_$name.log" | tail -1)
            case $v in *" 0 errors"*) ;; *) status=1 ;; esac
            say "exp: memcheck $t: exit $rc, ${v:-no summary}"
        fi
    done
    for ((k = 1; k <= reps; k++)); do
        for c in "$@"; do
            for d in base exp; do
                echo "## $d run $k: $c" >>"$ab"
                (eval "$d/build-gpu/$c") >>"$ab" 2>&1
                local rc=$?
                [ $rc = 0 ] || status=1
                say "$d run $k: $c: exit $rc"
            done
        done
    done
    tar czf "$out/logs.tgz" -C "$logs" .
    say "done: exit $status"
    exit $status
}

case ${1:-} in
    prepare) [ $# -eq 2 ] || usage; prepare "$2" ;;
    run) [ $# -ge 2 ] || usage; shift; run "$@" ;;
    *) usage ;;
esac
