#!/usr/bin/env bash
# tests/test_heat_usage.sh HEAT -- examples/heat refuses bad arguments with exit 2 and a
# message before it does any work: sizes out of range, trailing characters, a step count that
# would overflow, unknown options; an odd step count is said to be rounded up.
set -u
HEAT=$1
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
for args in "--n 32x" "--n 1" "--n 5000" "--steps 2x" "--steps 1" "--steps 9223372036854775807" \
            "--precond ilu0" "--device tpu" "--bogus"; do
  # shellcheck disable=SC2086
  run "$HEAT" --device cpu $args
  check "heat $args exits 2 (rc=$rc)" test "$rc" -eq 2
  check "... with a usage line" grep -q "^usage: heat" "$T/err"
done
run "$HEAT" --device cpu --n 8 --steps 3
check "heat --steps 3 runs (rc=$rc: $err)" test "$rc" -eq 0
check "... saying 3 is taken as 4" grep -q "note: --steps 3 is odd: 4 taken" "$T/err"
run "$HEAT" --help
check "heat --help describes --device" grep -q -- "--device D" "$T/out"
echo "test_heat_usage: $pass passed, $fail failed"
test "$fail" -eq 0
