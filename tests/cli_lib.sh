# tests/cli_lib.sh -- sourced by the command-line tests: a temporary folder T removed on exit,
# pass/fail counters, check DESCRIPTION COND..., and run CMD... which sets rc, out (stdout) and
# err (stderr).
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

check() { # check DESCRIPTION COND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}

run() { # run CMD...
  "$@" >"$T/out" 2>"$T/err"
  rc=$?
  out=$(cat "$T/out")
  err=$(cat "$T/err")
}
