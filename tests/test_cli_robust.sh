#!/usr/bin/env bash
# tests/test_cli_robust.sh SOLVE INPUTS -- the solve command never destroys data, never runs
# away, and says every failure. Outputs: -o and --history of a regular file are written to
# NAME.tmp.PID and renamed (keeping the old file's mode), so a run that cannot write, fails,
# runs out of file space or is killed (SIGTERM removes the temporary) leaves either no file or
# the complete previous one; a read-only file is refused; a symbolic link's target, a FIFO, a
# device node (a private full device made with mknod as root) and stdout (-o /dev/stdout >> log)
# are written in place and never removed or replaced, even when the write fails. Write errors
# on stdout (a closed stdout, --json onto a full device) exit 3; --json prints a JSON error
# object when the run fails. Input: sizes that cannot fit (a 67-byte header of 2e9 rows, a -b of
# 2e9 rows, a band spec of 2^31 rows, /dev/zero) fail within a second; finite entries whose sum
# overflows, and a default b = A * ones that overflows, are named as what they are; 1e-400 and
# --rtol 0x10 are refused; -q silences --explain; a file named like a generator is read; a
# symmetric file listing both triangles gets a note. Also: a history that cannot be written
# still lets the non-convergence be said; an x holding NaN/Inf is not written (exit 1); --json
# stays valid for a non-UTF-8 file name and NaN/Inf history rows. An output that is an input
# file, or -o and --history of one name, is refused before the solve; a dangling link's target
# directory is checked before it too; an unconverged x written gets a note, and AMG on the
# default b = A * ones one that the count says little; bad options with --json print JSON.
set -u
SOLVE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")   # absolute: some cases run elsewhere
IN=$2
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

no_tmp() { ! ls -a "$1" | grep -q '\.tmp\.'; }

# A complete array file: its size line announces N rows and it holds N value lines.
complete_vector() { # complete_vector FILE N
  local n
  n=$(grep -v '^%' "$1" | wc -l)
  head -1 "$1" | grep -q '^%%MatrixMarket matrix array real general' &&
    grep -v '^%' "$1" | head -1 | grep -qx "$2 1" && test "$n" -eq $(($2 + 1))
}

A="$IN/LF10.mtx"
OLD='%%MatrixMarket matrix array real general
% an earlier solution that must survive
2 1
1
2'

# --- -o and --history into a directory that does not exist: refused before the matrix is read
# (exit 2 at once: a long solve is not run for a result that cannot be written) ----------------
t0=$(date +%s%N)
run "$SOLVE" -A poisson3d:200 --device cpu --rtol 1e-12 -o "$T/nodir/x.mtx"
t1=$(date +%s%N)
check "-o into a missing directory exits 2 (rc=$rc)" test "$rc" -eq 2
check "... before the work: $(( (t1 - t0) / 1000000 )) ms for an 8M-row solve" test $(( (t1 - t0) / 1000000 )) -lt 1000
check "-o into a missing directory says so ($err)" grep -q -- "-o $T/nodir/x.mtx: $T/nodir: no such directory" "$T/err"
check "-o into a missing directory leaves nothing" test ! -e "$T/nodir"
run "$SOLVE" -A "$A" --device cpu --history "$T/nodir/h.csv"
check "--history into a missing directory exits 2 (rc=$rc)" test "$rc" -eq 2
check "--history into a missing directory says so ($err)" grep -q -- "--history $T/nodir/h.csv: $T/nodir: no such directory" "$T/err"

# --- -o onto an existing directory: refused at once, nothing left ------------------------------
mkdir "$T/adir"
run "$SOLVE" -A "$A" --device cpu -o "$T/adir"
check "-o onto a directory exits 2 (rc=$rc)" test "$rc" -eq 2
check "-o onto a directory says so ($err)" grep -q "$T/adir is a directory" "$T/err"
check "-o onto a directory leaves the directory empty" test -z "$(ls -A "$T/adir")"
check "-o onto a directory leaves no temporary" no_tmp "$T"

# --- a failed run leaves an existing x.mtx untouched -------------------------------------------
printf '%s\n' "$OLD" >"$T/x.mtx"
cp "$T/x.mtx" "$T/x.orig"
run "$SOLVE" -A "$A" --device cpu -b "$T/missing_b.mtx" -o "$T/x.mtx" --history "$T/h.csv"
check "missing -b exits 2 (rc=$rc)" test "$rc" -eq 2
check "missing -b is named ($err)" grep -q "missing_b.mtx" "$T/err"
check "missing -b leaves x.mtx untouched" cmp -s "$T/x.mtx" "$T/x.orig"
check "missing -b writes no history" test ! -e "$T/h.csv"
printf '%%%%MatrixMarket matrix array real general\n18 1\n1\n2\nnot-a-number\n' >"$T/bad_b.mtx"
run "$SOLVE" -A "$A" --device cpu -b "$T/bad_b.mtx" -o "$T/x.mtx"
check "malformed -b exits 2 (rc=$rc)" test "$rc" -eq 2
check "malformed -b names the line ($err)" grep -q "bad_b.mtx:5:" "$T/err"
check "malformed -b leaves x.mtx untouched" cmp -s "$T/x.mtx" "$T/x.orig"
run "$SOLVE" -A "$A" --device cpu -b "$IN/sherman1_rhs1.mtx" -o "$T/x.mtx"
check "-b of the wrong length exits 2 (rc=$rc)" test "$rc" -eq 2
check "-b of the wrong length leaves x.mtx untouched" cmp -s "$T/x.mtx" "$T/x.orig"
check "failed runs leave no temporary" no_tmp "$T"

# --- out of file space while writing (EFBIG, as ENOSPC would be) -------------------------------
# poisson2d:100 has 10^4 unknowns, about 250 KB of solution; the limit is 20 KiB.
run bash -c 'trap "" XFSZ; ulimit -f 20; exec "$@"' _ "$SOLVE" -A poisson2d:100 --device cpu \
  --maxiter 5 -o "$T/x.mtx"
check "a write past the file size limit exits 3 (rc=$rc)" test "$rc" -eq 3
check "a write past the file size limit says why ($err)" grep -q "File too large" "$T/err"
check "a write past the file size limit leaves x.mtx untouched" cmp -s "$T/x.mtx" "$T/x.orig"
run bash -c 'trap "" XFSZ; ulimit -f 1; exec "$@"' _ "$SOLVE" -A poisson2d:100 --device cpu \
  --maxiter 200 --history "$T/h.csv"
check "a history past the file size limit exits 3 (rc=$rc)" test "$rc" -eq 3
check "a history past the file size limit leaves no file" test ! -e "$T/h.csv"
check "file size failures leave no temporary" no_tmp "$T"

# --- -o through a symbolic link, into a FIFO and onto a device: written, never replaced -------
printf 'old\n' >"$T/target.mtx"
ln -s target.mtx "$T/link.mtx"
run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/link.mtx"
check "-o onto a symlink exits 0 (rc=$rc: $err)" test "$rc" -eq 0
check "-o onto a symlink keeps the link" test -L "$T/link.mtx"
check "-o onto a symlink writes its target" complete_vector "$T/target.mtx" 18
check "-o onto a symlink leaves no temporary" no_tmp "$T"
mkfifo "$T/fifo" 2>/dev/null && {
  timeout 20 cat "$T/fifo" >"$T/from_fifo" &     # a solve that replaced the FIFO never opens it
  reader=$!
  run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/fifo"
  wait "$reader"
  check "-o into a FIFO exits 0 (rc=$rc: $err)" test "$rc" -eq 0
  check "-o into a FIFO keeps the FIFO" test -p "$T/fifo"
  check "-o into a FIFO sends the whole solution" complete_vector "$T/from_fifo" 18
}
# a device node of our own (as root: mknod), never the system's /dev/null, which a solve that
# replaced its target would destroy
if mknod "$T/null" c 1 3 2>/dev/null; then
  run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/null" --history "$T/null"
  check "-o and --history onto a device node exit 0 (rc=$rc: $err)" test "$rc" -eq 0
  check "the device node is still one" test -c "$T/null"
fi

# --- a failed write never removes what it wrote to ------------------------------------------------
# A private full device (as root: mknod c 1 7; never the system's /dev/full), a symbolic link to
# it, and a FIFO whose reader leaves after one byte (SIGPIPE ignored, so write() fails with EPIPE):
# exit 3, and the node, the link and the FIFO are all still there.
if mknod "$T/full" c 1 7 2>/dev/null; then
  run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/full"
  check "-o onto a full device exits 3 (rc=$rc)" test "$rc" -eq 3
  check "... says why ($err)" grep -q "No space left on device" "$T/err"
  check "... and the device node is still there" test -c "$T/full"
  run "$SOLVE" -A "$A" --device cpu --quiet --history "$T/full"
  check "--history onto a full device exits 3 (rc=$rc)" test "$rc" -eq 3
  check "... and the device node is still there" test -c "$T/full"
  ln -s full "$T/tofull"
  run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/tofull"
  check "-o through a link to a full device exits 3 (rc=$rc)" test "$rc" -eq 3
  check "... and the link and the node are still there" test -L "$T/tofull" -a -c "$T/full"
  "$SOLVE" -A "$A" --device cpu --json >"$T/full" 2>"$T/err"
  rc=$?
  check "--json onto a full device exits 3 (rc=$rc)" test "$rc" -eq 3
  check "... and says stdout could not be written ($(cat "$T/err"))" grep -q "cannot write to stdout: No space left on device" "$T/err"
  rm -f "$T/tofull"
else
  echo "not root or no mknod: the full-device cases are skipped"
fi
mkfifo "$T/early" 2>/dev/null && {
  (head -c 1 "$T/early" >/dev/null) &
  reader=$!
  # a dense x of 20000 entries (~440 KB): far more than the pipe holds, so the write must fail
  run bash -c 'trap "" PIPE; exec "$@"' _ "$SOLVE" -A powerlaw:20000:5 --device cpu --quiet \
    --maxiter 2 -o "$T/early"
  wait "$reader"
  check "-o into a FIFO whose reader left exits 3 (rc=$rc)" test "$rc" -eq 3
  check "... says why ($err)" grep -q "Broken pipe" "$T/err"
  check "... and the FIFO is still there" test -p "$T/early"
}

# --- a read-only file is refused; a replaced file keeps its mode; a new one gets the umask's ----
printf '%s\n' "$OLD" >"$T/ro.mtx"
chmod 0444 "$T/ro.mtx"
run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/ro.mtx"
check "-o onto a read-only file exits 2 at once (rc=$rc)" test "$rc" -eq 2
check "... says it is read-only ($err)" grep -q "read-only (mode 0444): not replaced" "$T/err"
check "... and leaves it as it was" cmp -s "$T/ro.mtx" "$T/x.orig"
check "... with its mode" test "$(stat -c %a "$T/ro.mtx")" = 444
run "$SOLVE" -A "$A" --device cpu --quiet --history "$T/ro.mtx" --maxiter 3
check "--history onto a read-only file exits 2 and leaves it (rc=$rc)" test "$rc" -eq 2 -a "$(stat -c %a "$T/ro.mtx")" = 444
ln -s ro.mtx "$T/toro"
run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/toro" --history "$T/toro" --maxiter 3
check "-o and --history through a link to a read-only file exit 2 (rc=$rc)" test "$rc" -eq 2
check "... and leave the target as it was" cmp -s "$T/ro.mtx" "$T/x.orig"
rm -f "$T/toro"
printf '%s\n' "$OLD" >"$T/m.mtx"
chmod 0600 "$T/m.mtx"
run "$SOLVE" -A "$A" --device cpu --quiet -o "$T/m.mtx"
check "-o onto a 0600 file exits 0 (rc=$rc: $err)" test "$rc" -eq 0
check "... replaces it" complete_vector "$T/m.mtx" 18
check "... and keeps its mode 0600 ($(stat -c %a "$T/m.mtx"))" test "$(stat -c %a "$T/m.mtx")" = 600
run bash -c 'umask 027; exec "$@"' _ "$SOLVE" -A "$A" --device cpu --quiet -o "$T/new.mtx"
check "a new -o file gets 0666 minus the umask ($(stat -c %a "$T/new.mtx"))" test "$(stat -c %a "$T/new.mtx")" = 640
check "mode cases leave no temporary" no_tmp "$T"

# --- -o /dev/stdout is written through stdout: a redirected file is appended to, not replaced ---
printf 'an earlier line of the log\n' >"$T/log.txt"
"$SOLVE" -A "$A" --device cpu --quiet -o /dev/stdout >>"$T/log.txt" 2>"$T/err"
rc=$?
check "-o /dev/stdout >> log exits 0 (rc=$rc: $(cat "$T/err"))" test "$rc" -eq 0
check "... keeps the log's earlier contents" test "$(head -1 "$T/log.txt")" = "an earlier line of the log"
tail -n +2 "$T/log.txt" >"$T/from_log"
check "... and appends the whole solution" complete_vector "$T/from_log" 18
check "... as the same file (no rename)" no_tmp "$T"
"$SOLVE" -A "$A" --device cpu --quiet -o /dev/stdout 2>"$T/err" | cat >"$T/from_pipe"
check "-o /dev/stdout into a pipe sends the whole solution" complete_vector "$T/from_pipe" 18

# --- stdout that cannot be written: exit 3, and nothing else gets the summary ---------------------
"$SOLVE" -A "$A" --device cpu -o "$T/xc.mtx" >&- 2>"$T/err"
rc=$?
check "a closed stdout exits 3 (rc=$rc)" test "$rc" -eq 3
check "... says so ($(cat "$T/err"))" grep -q "cannot write to stdout" "$T/err"
check "... and the solution file holds the solution only" complete_vector "$T/xc.mtx" 18
"$SOLVE" -A "$A" --device cpu --json >&- 2>"$T/err"
rc=$?
check "--json with a closed stdout exits 3 (rc=$rc)" test "$rc" -eq 3

# --- --json: a failed run prints a JSON error object ---------------------------------------------
json_ok() { # json_ok FILE PYTHON-EXPR: the file is one JSON object d and the expression holds
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert eval(sys.argv[2]), d' "$1" "$2" 2>"$T/py"
}
if command -v python3 >/dev/null; then
  run "$SOLVE" -A "$T/nothere.mtx" --device cpu --json
  check "--json with a missing matrix exits 2 (rc=$rc)" test "$rc" -eq 2
  json_ok "$T/out" 'd["exit"] == 2 and d["status"] == "input/output error" and "nothere.mtx" in d["error"]'
  check "... and prints the error as JSON ($(cat "$T/py"))" test $? -eq 0
  run "$SOLVE" -A "$IN/well1033.mtx" --device cpu --json
  json_ok "$T/out" 'd["exit"] == 2 and "square" in d["error"]'
  check "--json with a non-square matrix prints the error as JSON (rc=$rc $(cat "$T/py"))" test $? -eq 0 -a "$rc" -eq 2
  run "$SOLVE" -A "$A" --device cpu --json -o "$T/nodir/x.mtx"
  json_ok "$T/out" 'd["exit"] == 2 and "no such directory" in d["error"]'
  check "--json with an -o that cannot be written: the error as JSON (rc=$rc $(cat "$T/py"))" test $? -eq 0 -a "$rc" -eq 2
fi

# --- an output that is an input, or two outputs of one name, is refused before the solve ---------
cp "$IN/LF10.mtx" "$T/in.mtx"
cp "$T/in.mtx" "$T/in.orig"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o "$T/in.mtx"
check "-o onto the -A file exits 2 (rc=$rc)" test "$rc" -eq 2
check "... says so ($err)" grep -q "is the file given to -A" "$T/err"
check "... and the matrix is intact" cmp -s "$T/in.mtx" "$T/in.orig"
ln -sf in.mtx "$T/in_link"
run "$SOLVE" -A "$T/in.mtx" --device cpu --history "$T/in_link"
check "--history onto a link to the -A file exits 2 (rc=$rc)" test "$rc" -eq 2
check "... and the matrix is intact" cmp -s "$T/in.mtx" "$T/in.orig"
printf '%%%%MatrixMarket matrix array real general\n18 1\n' >"$T/b.mtx"
for i in $(seq 18); do echo 1 >>"$T/b.mtx"; done
cp "$T/b.mtx" "$T/b.orig"
run "$SOLVE" -A "$T/in.mtx" -b "$T/b.mtx" --device cpu -o "$T/./b.mtx"
check "-o onto the -b file exits 2 and leaves it (rc=$rc)" test "$rc" -eq 2 -a -z "$(cmp "$T/b.mtx" "$T/b.orig")"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o "$T/same.out" --history "$T/./same.out"
check "-o and --history of one (new) name exit 2 (rc=$rc)" test "$rc" -eq 2
check "... saying one would replace the other" grep -q "one would replace the other" "$T/err"
check "... and create nothing" test ! -e "$T/same.out"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o /dev/null --history /dev/null
check "-o and --history both /dev/null are fine (rc=$rc: $err)" test "$rc" -eq 0
"$SOLVE" -A "$T/in.mtx" --device cpu -o /dev/stdout --history /dev/stdout >"$T/both.txt" 2>"$T/err"
rc=$?
check "-o and --history both /dev/stdout into a file are fine (rc=$rc)" test "$rc" -eq 0
check "... and both land there" grep -q "^iteration,cycle" "$T/both.txt"

# --- a dangling link as -o: its target's directory is checked before the solve ---------------------
ln -sf nodir/x.mtx "$T/dangling"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o "$T/dangling"
check "-o onto a link into a missing directory exits 2 before the solve (rc=$rc)" test "$rc" -eq 2
check "... naming the directory ($err)" grep -q "nodir: no such directory" "$T/err"
ln -sf dangling "$T/dangling_chain"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o "$T/dangling_chain"
check "-o onto a link to that link exits 2 before the solve (rc=$rc: $err)" test "$rc" -eq 2
ln -sf loop "$T/loop"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o "$T/loop"
check "-o onto a link loop exits 2 before the solve (rc=$rc: $err)" grep -q "Too many levels of symbolic links" "$T/err"
ln -sf newx.mtx "$T/dangling2"
run "$SOLVE" -A "$T/in.mtx" --device cpu -o "$T/dangling2"
check "-o onto a link to a new file writes it (rc=$rc: $err)" test "$rc" -eq 0 -a -L "$T/dangling2" -a -s "$T/newx.mtx"

# --- an unconverged x written is said to be one; AMG on b = A * ones gets its note where a cycle
#     or two solve it (the smoother's weight P's) --------------------------------------------------
run "$SOLVE" -A "$IN/bayer10.mtx" --device cpu --method bicgstab -o "$T/xdiv.mtx"
check "a diverged solve exits 1 (rc=$rc)" test "$rc" -eq 1
check "... and notes that the x written is the last iterate ($err)" grep -q "xdiv.mtx holds x as the solve left it (the last iterate), not a converged solution" "$T/err"
run "$SOLVE" -A poisson3d:12 --device cpu --precond amg --amg-omega 1.3333333333333333
check "AMG with the smoother's weight P's on the default b converges (rc=$rc)" test "$rc" -eq 0
check "... with the note that b = A * ones says little" grep -q "note: x = ones (b = A \* ones) lies in the span of AMG's near-null space" "$T/err"
run "$SOLVE" -A poisson3d:12 --device cpu --precond amg
check "with the default weight it takes more than 2 iterations" \
  grep -qE "^result +CONVERGED_RTOL after ([3-9]|[1-9][0-9]+) iterations" "$T/out"
check "... and gets no note ($err)" test -z "$(grep 'lies in the span' "$T/err")"
printf '%%%%MatrixMarket matrix array real general\n1728 1\n' >"$T/b12.mtx"
for i in $(seq 1728); do echo $((i % 7)) >>"$T/b12.mtx"; done
run "$SOLVE" -A poisson3d:12 --device cpu --precond amg -b "$T/b12.mtx"
check "... and none with a -b (rc=$rc)" test "$rc" -eq 0 -a -z "$(grep 'near-null' "$T/err")"

# --- bad options with --json: the error as JSON too; an --opt=value form says how to write it ----
if command -v python3 >/dev/null; then
  run "$SOLVE" --json -A "$A" --rtol -1
  json_ok "$T/out" 'd["exit"] == 2 and "--rtol" in d["error"]'
  check "--json with a bad --rtol prints the error as JSON (rc=$rc $(cat "$T/py"))" test $? -eq 0 -a "$rc" -eq 2
  run "$SOLVE" --json --bogus
  json_ok "$T/out" 'd["exit"] == 2 and "--bogus" in d["error"]'
  check "--json with an unknown option prints the error as JSON (rc=$rc $(cat "$T/py"))" test $? -eq 0 -a "$rc" -eq 2
  run "$SOLVE" --json
  json_ok "$T/out" 'd["exit"] == 2 and "-A" in d["error"]'
  check "--json without -A prints the error as JSON (rc=$rc $(cat "$T/py"))" test $? -eq 0 -a "$rc" -eq 2
fi
run "$SOLVE" -A "$A" --rtol=1e-3
check "--rtol=1e-3 exits 2 saying to give the value apart (rc=$rc: $err)" grep -q "give the value apart: --rtol 1e-3" "$T/err"
run "$SOLVE" -A "$A" --json=1
check "--json=1 exits 2 without a hint to split it (rc=$rc: $err)" test "$rc" -eq 2 -a -z "$(grep 'apart' "$T/err")"
run "$SOLVE" -A "$A" --history --json --bogus
check "--json as another option's value is not --json: no JSON on stdout (rc=$rc)" test "$rc" -eq 2 -a ! -s "$T/out"
run "$SOLVE" -A poisson4d:5
check "an unknown generator exits 2 (rc=$rc)" test "$rc" -eq 2
check "... saying it is neither a file nor a generator ($err)" grep -q "no such file, and not a generator spec" "$T/err"

# --- sizes that cannot fit fail at once ------------------------------------------------------------
fast() { awk -v a="$1" -v b="$EPOCHREALTIME" -v s="$2" 'BEGIN { exit !(b - a < s) }'; }
printf '%%%%MatrixMarket matrix coordinate real general\n2000000000 1 1\n1 1 1\n' >"$T/huge.mtx"
t0=$EPOCHREALTIME
run env SPK_HOST_MEMORY=4e9 timeout 60 "$SOLVE" -A "$T/huge.mtx" --device cpu
check "a 67-byte header of 2e9 rows exits 3 (rc=$rc: $err)" test "$rc" -eq 3
check "... within a second" fast "$t0" 1
check "... saying what it needs ($err)" grep -q "huge.mtx:2: a 2000000000 x 1 matrix of 1 stored entries needs 32 GB, more than the 4 GB that SPK_HOST_MEMORY allows" "$T/err"
t0=$EPOCHREALTIME
run timeout 60 "$SOLVE" -A "$A" --device cpu -b "$T/huge.mtx"
check "a -b of 2e9 rows exits 2 (rc=$rc)" test "$rc" -eq 2
check "... within a second, at its size line ($err)" fast "$t0" 1
check "... saying which length was wanted" grep -q "huge.mtx:2: expected a vector of 18 entries" "$T/err"
t0=$EPOCHREALTIME
run timeout 60 "$SOLVE" -A "$A" --device cpu --x0 "$T/huge.mtx"
check "an --x0 of 2e9 rows exits 2 within a second (rc=$rc)" test "$rc" -eq 2 -a -n "$(fast "$t0" 1 && echo y)"
t0=$EPOCHREALTIME
run env SPK_HOST_MEMORY=4e9 timeout 60 "$SOLVE" -A band:2147483647:1:1 --device cpu
check "band:2147483647:1:1 exits 3 within a second (rc=$rc: $err)" test "$rc" -eq 3 -a -n "$(fast "$t0" 1 && echo y)"
t0=$EPOCHREALTIME
run timeout 60 "$SOLVE" -A /dev/zero --device cpu
check "-A /dev/zero exits 2 within a second (rc=$rc)" test "$rc" -eq 2 -a -n "$(fast "$t0" 1 && echo y)"
check "... as a file with no banner ($err)" grep -q "/dev/zero:1: expected banner" "$T/err"

# --- the matrix, not b, is named when finite entries sum past the largest double ------------------
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1e308\n2 2 1\n1 1 1e308\n' >"$T/dup.mtx"
run "$SOLVE" -A "$T/dup.mtx" --device cpu
check "duplicates summing to Inf exit 2 (rc=$rc)" test "$rc" -eq 2
check "... and name the matrix entry ($err)" grep -q "dup.mtx: a(1,1) = inf: the sum of its 2 entries overflows" "$T/err"
check "... not a b the user never gave" test -z "$(grep 'b\[' "$T/err")"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1e308\n1 2 1e308\n2 2 1\n' >"$T/rowsum.mtx"
run "$SOLVE" -A "$T/rowsum.mtx" --device cpu
check "a row sum that overflows (b = A * ones) exits 2 (rc=$rc)" test "$rc" -eq 2
check "... and names the product A * ones and the row ($err)" grep -q "b = A \* ones: b(1) = inf: row 1 of the matrix sums past the largest double" "$T/err"
check "... not b[1]" test -z "$(grep 'b\[' "$T/err")"

# --- SIGTERM while the solution is written: the temporary is removed ------------------------------
printf '%s\n' "$OLD" >"$T/xt.mtx"
"$SOLVE" -A poisson3d:100 --device cpu --maxiter 1 --quiet -o "$T/xt.mtx" 2>/dev/null &
pid=$!
while kill -0 "$pid" 2>/dev/null && ! compgen -G "$T/xt.mtx.tmp.*" >/dev/null; do :; done
had_tmp=$(compgen -G "$T/xt.mtx.tmp.*" >/dev/null && echo yes)
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
check "the write was under way when SIGTERM came" test "$had_tmp" = yes
check "SIGTERM mid-write kills the run (rc=$rc)" test "$rc" -eq 143
check "... leaves no temporary" no_tmp "$T"
check "... and the old x.mtx" cmp -s "$T/xt.mtx" "$T/x.orig"

# --- the smaller promises -----------------------------------------------------------------------------
run "$SOLVE" -A "$A" --device cpu --rtol 0x10
check "--rtol 0x10 (a hexadecimal float) exits 2 (rc=$rc: $err)" test "$rc" -eq 2
check "... asking for a decimal number" grep -q "decimal number" "$T/err"
run "$SOLVE" -A "$A" --device cpu -q --explain
check "-q --explain: quiet wins, stdout stays empty (rc=$rc: $out)" test "$rc" -eq 0 -a ! -s "$T/out"
cp "$A" "$T/poisson2d:3"
(cd "$T" && "$SOLVE" -A poisson2d:3 --device cpu >out 2>err)
check "a file named like a generator spec is read ($(head -1 "$T/out"))" grep -q "poisson2d:3: 18 x 18" "$T/out"
rm -f "$T/poisson2d:3"
(cd "$T" && "$SOLVE" -A poisson2d:3 --device cpu >out 2>err)
check "... and without the file the spec is generated ($(head -1 "$T/out"))" grep -q "poisson2d:3: 9 x 9" "$T/out"
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 1e-400\n' >"$T/tiny.mtx"
run "$SOLVE" -A "$T/tiny.mtx" --device cpu
check "1e-400 (nonzero, closer to 0 than any double) exits 2 (rc=$rc)" test "$rc" -eq 2
check "... naming the line and the value ($err)" grep -q "tiny.mtx:4: expected a value a double can hold .*found '1e-400'" "$T/err"
printf '%%%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n1 1 4\n2 1 1\n1 2 1\n2 2 4\n' >"$T/both.mtx"
run "$SOLVE" -A "$T/both.mtx" --device cpu
check "a symmetric file with both triangles solves (rc=$rc)" test "$rc" -eq 0
check "... with a note that they were summed ($err)" grep -q "note: .*both.mtx lists 1 off-diagonal position in both triangles" "$T/err"
run "$SOLVE" -A "$T/both.mtx" --device cpu --explain
check "... which --explain counts" grep -q "1 positions listed in both triangles" "$T/out"
run "$SOLVE" -A "$T/both.mtx" --device cpu -q
check "... and -q silences" test ! -s "$T/err"

# --- a history that cannot be written does not hide the non-convergence (a write that fails
# after the solve: a private full device, as root) -------------------------------------------
if mknod "$T/full2" c 1 7 2>/dev/null; then
  run "$SOLVE" -A "$A" --device cpu --quiet --maxiter 2 --history "$T/full2"
  check "--history onto a full device after a failed solve exits 3 (rc=$rc)" test "$rc" -eq 3
  check "... and still says the solve did not converge ($err)" grep -q "did not converge" "$T/err"
  rm -f "$T/full2"
fi

# --- x with NaN/Inf is not written (exit 1: the solve diverged), and says why --------------------
printf '%%%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1e-300\n2 2 1e-300\n' >"$T/sing.mtx"
printf '%%%%MatrixMarket matrix array real general\n2 1\n1e10\n1\n' >"$T/sing_b.mtx"
run "$SOLVE" -A "$T/sing.mtx" -b "$T/sing_b.mtx" --method cg --device cpu --quiet -o "$T/xs.mtx"
check "a solve whose x overflows exits 1 (rc=$rc)" test "$rc" -eq 1
check "... is not reported converged ($err)" grep -q "DIVERGED_NANORINF" "$T/err"
check "... and the hint says to scale the system ($err)" grep -q "scaled towards entries of order 1" "$T/err"
check "... and x is not written, with a message" test ! -e "$T/xs.mtx" -a -n "$(grep 'not writing' "$T/err")"

# --- --json stays valid JSON for a file name that is not UTF-8, and for NaN/Inf history rows ----
cp "$A" "$T/"$'\xff'"name.mtx"
run "$SOLVE" -A "$T/"$'\xff'"name.mtx" --device cpu --json
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$T/out" 2>"$T/py"
  check "--json with a non-UTF-8 file name is valid UTF-8 JSON ($(cat "$T/py"))" test $? -eq 0
  run "$SOLVE" -A "$T/sing.mtx" -b "$T/sing_b.mtx" --method cg --device cpu --json --history "$T/hj.csv"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert all(h["rnorm"] is None or h["rnorm"] >= 0 for h in d["history"])' "$T/out" 2>"$T/py"
  check "--json history rows: null, never a negative norm, for NaN/Inf ($(cat "$T/py"))" test $? -eq 0
fi

# --- SIGKILL mid-solve: no output, the old x.mtx intact -----------------------------------------
"$SOLVE" -A poisson3d:80 --device cpu --method cg --rtol 0 --maxiter 100000 --monitor-every 1 \
  -o "$T/x.mtx" --history "$T/h.csv" >/dev/null 2>"$T/mon" &
pid=$!
for _ in $(seq 200); do            # until the first iterations are printed (at most 20 s)
  grep -q "it " "$T/mon" 2>/dev/null && break
  sleep 0.1
done
sleep 0.5
check "the solve is still running when killed" kill -0 "$pid"
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
check "it had started iterating" grep -q "it " "$T/mon"
check "SIGKILL mid-solve leaves x.mtx untouched" cmp -s "$T/x.mtx" "$T/x.orig"
check "SIGKILL mid-solve writes no history" test ! -e "$T/h.csv"
check "SIGKILL mid-solve leaves no temporary" no_tmp "$T"

# --- SIGKILL while the solution is being written ------------------------------------------------
# poisson3d:60 (216000 unknowns, 5 MB of solution) after one iteration: writing is a good part
# of the run. A complete run is timed first; kills land at fractions of that time. Whenever the
# kill lands, x.mtx is the old file or the complete new one; a leftover can only be the
# temporary x.mtx.tmp.PID (SIGKILL leaves no chance to remove it).
N=216000
big=(-A poisson3d:60 --device cpu --maxiter 1 --quiet -o "$T/x.mtx")
t0=$EPOCHREALTIME
"$SOLVE" "${big[@]}" 2>/dev/null
rc=$?
t1=$EPOCHREALTIME
check "the complete run exits 1 (maxiter) (rc=$rc)" test "$rc" -eq 1
check "the complete run writes a complete x.mtx" complete_vector "$T/x.mtx" "$N"
full=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
seen=""
for frac in 0.5 0.7 0.8 0.9 0.95 0.98; do
  cp "$T/x.orig" "$T/x.mtx"
  "$SOLVE" "${big[@]}" 2>/dev/null &
  pid=$!
  sleep "$(awk -v f="$frac" -v t="$full" 'BEGIN { printf "%.3f", f * t }')"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if cmp -s "$T/x.mtx" "$T/x.orig"; then
    state=old
  elif complete_vector "$T/x.mtx" "$N"; then
    state=new
  else
    state=partial
  fi
  ls "$T" | grep -q 'x\.mtx\.tmp\.' && state="$state+tmp"
  seen="$seen $frac:$state"
  check "SIGKILL at $frac of ${full}s: x.mtx is the old or the complete new file ($state)" \
    test "${state%+tmp}" != partial
  rm -f "$T"/x.mtx.tmp.*
done
echo "kills during the write (fraction of ${full}s: what x.mtx was):$seen"

echo "test_cli_robust: $pass passed, $fail failed"
test "$fail" -eq 0
