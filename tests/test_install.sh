#!/usr/bin/env bash
# tests/test_install.sh BUILD_DIR CC -- what a program using libspk sees after `cmake --install`:
# into a temporary prefix, a small C program (a CG solve through the public header) is built
# and run three ways: with `pkg-config --cflags --libs spk` (the shared library), against the
# static library with `pkg-config --static` (the private libraries must be complete: OpenMP,
# and the CUDA runtime, cuBLAS and libstdc++ in a CUDA build), and as a C-only CMake project
# with find_package(spk) and spk::spk_static. Each must print the converged solve.
set -u
BUILD=$1
CC=${2:-cc}
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

P="$T/prefix"
cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1
check "cmake --install into a temporary prefix (rc=$?)" test -f "$P/include/spk.h"
PC=$(dirname "$(find "$P" -name spk.pc | head -1)")
check "the pkg-config file is installed" test -n "$PC"

cat >"$T/app.c" <<'SRC'
#include <spk.h>
#include <stdio.h>
int main(void)
{
    spk_context *ctx = NULL;
    spk_matrix *A = NULL;
    spk_result res;
    double b[400], x[400];
    for (int i = 0; i < 400; i++)
        b[i] = 1.0;
    spk_status st = spk_context_create(&ctx, SPK_DEVICE_CPU);
    if (!st)
        st = spk_matrix_generate(ctx, "poisson2d:20", &A);
    if (!st)
        st = spk_solve(ctx, A, b, x, NULL, &res);
    printf("status %s reason %s\n", spk_status_str(st), st ? "-" : spk_reason_str(res.reason));
    if (!st)
        spk_result_free(&res);
    spk_matrix_destroy(A);
    spk_context_destroy(ctx);
    return st != SPK_OK;
}
SRC
want="status success reason CONVERGED_RTOL"

if command -v pkg-config >/dev/null; then
  export PKG_CONFIG_PATH="$PC"
  run "$CC" "$T/app.c" -o "$T/app_shared" $(pkg-config --cflags --libs spk)
  check "pkg-config: the shared library links (rc=$rc: $err)" test "$rc" -eq 0
  run "$T/app_shared"
  check "pkg-config: the program solves ($out)" test "$out" = "$want"
  lib=$(find "$P" -name libspk.a | head -1)
  run "$CC" "$T/app.c" -o "$T/app_static" $(pkg-config --cflags spk) "$lib" \
      $(pkg-config --static --libs-only-L spk) \
      $(pkg-config --static --libs-only-l --libs-only-other spk | sed 's/-lspk\b//')
  check "pkg-config --static: the static library links (rc=$rc: $err)" test "$rc" -eq 0
  run "$T/app_static"
  check "pkg-config --static: the program solves ($out)" test "$out" = "$want"
fi

mkdir -p "$T/cons"
cp "$T/app.c" "$T/cons/app.c"
cat >"$T/cons/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(cons C)
find_package(spk REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE spk::spk_static)
CM
run cmake -S "$T/cons" -B "$T/cons/b" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC"
check "find_package(spk) in a C-only project configures (rc=$rc: $(tail -3 "$T/err"))" test "$rc" -eq 0
run cmake --build "$T/cons/b"
check "... and links spk::spk_static (rc=$rc: $(tail -5 "$T/out"))" test "$rc" -eq 0
run "$T/cons/b/app"
check "... and the program solves ($out)" test "$out" = "$want"

echo "test_install: $pass passed, $fail failed"
test "$fail" -eq 0
