#!/usr/bin/env bash
# tests/test_install.sh BUILD_DIR CC [SOURCE_DIR] -- what a program using libspk sees after `cmake --install`:
# into a temporary prefix, a small C program (a CG solve through the public header) is built
# and run three ways: with `pkg-config --cflags --libs spk` (the shared library), against the
# static library with `pkg-config --static` (the private libraries must be complete: OpenMP,
# and the CUDA runtime, cuBLAS, cuSPARSE and libstdc++ in a CUDA build), and as a C-only CMake project
# with find_package(spk) and spk::spk_static, then spk::spk. Each must print the converged solve.
# The shared library needs no CUDA library; in a CUDA build its backend libspk_cuda.so lies
# beside it, exporting its entry table alone; a program asking for the GPU with
# SPK_CUDA_LIBRARY naming a missing file gets SPK_ERR_NOT_COMPILED with that path in the
# message; and, where there is a GPU, the shared-library program runs on it. With SOURCE_DIR,
# spk is also built and installed with the CUDA toolkit hidden from PATH and CMake (the
# CPU-only install a laptop or CI machine gets); the program built against it runs, on the CPU,
# and, with this build's CUDA backend copied beside its libspk.so, on the GPU where there is one.
set -u
BUILD=$1
CC=${2:-cc}
SRC=${3:-}
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

# the same solve on the device named by argv[1]: "device cuda status success ..." or the error
cat >"$T/dev.c" <<'SRC'
#include <spk.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    spk_device dev = SPK_DEVICE_AUTO;
    if (argc > 1 && spk_device_parse(argv[1], &dev) != SPK_OK)
        return 2;
    spk_context *ctx = NULL;
    spk_matrix *A = NULL;
    spk_result res;
    double b[400], x[400];
    for (int i = 0; i < 400; i++)
        b[i] = 1.0;
    spk_status st = spk_context_create(&ctx, dev);
    if (st) {
        printf("status %s: %s\n", spk_status_str(st), spk_last_error(ctx));
        spk_context_destroy(ctx);
        return 1;
    }
    if (!st)
        st = spk_matrix_generate(ctx, "poisson2d:20", &A);
    if (!st)
        st = spk_solve(ctx, A, b, x, NULL, &res);
    printf("device %s status %s reason %s\n", spk_device_str(spk_context_device(ctx)),
           spk_status_str(st), st ? "-" : spk_reason_str(res.reason));
    if (!st)
        spk_result_free(&res);
    spk_matrix_destroy(A);
    spk_context_destroy(ctx);
    return st != SPK_OK;
}
SRC

LIBSPK=$(find "$P" -name 'libspk.so.*' -type f | head -1)
check "the shared library is installed" test -n "$LIBSPK"
if command -v readelf >/dev/null && [ -n "$LIBSPK" ]; then
  needed=$(readelf -d "$LIBSPK" | grep NEEDED)
  check "libspk.so needs no CUDA library ($(echo $needed | tr -s ' '))" \
    bash -c "! grep -qiE 'cuda|cublas|cusparse|stdc\+\+' <<<'$needed'"
fi
PLUGIN=$(find "$P" -name libspk_cuda.so | head -1)
if [ -f "$BUILD/libspk_cuda.so" ]; then
  check "the CUDA backend is installed beside libspk.so ($PLUGIN)" \
    test "$(dirname "$PLUGIN")" = "$(dirname "$LIBSPK")"
  if command -v nm >/dev/null && [ -n "$PLUGIN" ]; then
    syms=$(nm -D --defined-only "$PLUGIN" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort | paste -sd' ')
    check "libspk_cuda.so exports its entry table alone ($syms)" test "$syms" = "spk_cuda_plugin_entry"
  fi
fi
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

  run "$CC" "$T/dev.c" -o "$T/dev_shared" $(pkg-config --cflags --libs spk)
  check "pkg-config: the device program links (rc=$rc: $err)" test "$rc" -eq 0
  SPK_CUDA_LIBRARY="$T/nowhere/libspk_cuda.so" run "$T/dev_shared" gpu
  check "SPK_CUDA_LIBRARY naming no file: NOT_COMPILED naming it ($out)" \
    bash -c "grep -q 'not in this build or installation' <<<'$out' && grep -qF '$T/nowhere/libspk_cuda.so' <<<'$out'"
  run "$T/dev_shared" auto
  check "the shared-library program solves on the device AUTO picks ($out)" \
    bash -c "grep -qE '^device (cpu|cuda) status success reason CONVERGED_RTOL$' <<<'$out'"
  if [ -n "$PLUGIN" ] && nvidia-smi -L >/dev/null 2>&1; then
    run "$T/dev_shared" gpu
    check "where there is a GPU, the shared-library program runs on it ($out)" \
      test "$out" = "device cuda status success reason CONVERGED_RTOL"
  fi
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
sed -i 's/spk::spk_static/spk::spk/' "$T/cons/CMakeLists.txt"
rm -rf "$T/cons/b"
run cmake -S "$T/cons" -B "$T/cons/b" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC"
run cmake --build "$T/cons/b"
check "find_package(spk): spk::spk links (rc=$rc: $(tail -5 "$T/out"))" test "$rc" -eq 0
run "$T/cons/b/app"
check "... and the program solves ($out)" test "$out" = "$want"

# find_package(spk) where CMake finds no CUDA toolkit: spk::spk needs none
rm -rf "$T/cons/b"
run cmake -S "$T/cons" -B "$T/cons/b" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
check "find_package(spk) without a CUDA toolkit configures (rc=$rc: $(tail -3 "$T/err"))" test "$rc" -eq 0
run cmake --build "$T/cons/b"
run "$T/cons/b/app"
check "... links spk::spk and solves ($out)" test "$out" = "$want"

if [ -n "$SRC" ] && command -v pkg-config >/dev/null; then
  # PATH without the CUDA toolkit, and CMake told to look for none
  nocuda=$(tr ':' '\n' <<<"$PATH" | grep -viE 'cuda' | paste -sd:)
  Q="$T/cpu-prefix"
  run env PATH="$nocuda" CUDACXX= cmake -S "$SRC" -B "$T/cpu-build" -DCMAKE_C_COMPILER="$CC" \
      -DSPK_ENABLE_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DSPK_BUILD_TESTS=OFF \
      -DSPK_BUILD_BENCH=OFF
  check "a CPU-only spk configures with the CUDA toolkit hidden (rc=$rc)" test "$rc" -eq 0
  run env PATH="$nocuda" cmake --build "$T/cpu-build" -j 2 --target spk spk_static solve
  check "... builds (rc=$rc: $(tail -3 "$T/out"))" test "$rc" -eq 0
  run env PATH="$nocuda" cmake --install "$T/cpu-build" --prefix "$Q"
  check "... installs (rc=$rc)" test "$rc" -eq 0
  QLIB=$(dirname "$(find "$Q" -name 'libspk.so.*' -type f | head -1)")
  run "$CC" "$T/dev.c" -o "$T/dev_cpu_install" $(PKG_CONFIG_PATH="$QLIB/pkgconfig" pkg-config --cflags --libs spk)
  check "a program builds against the CPU-only install (rc=$rc: $err)" test "$rc" -eq 0
  run "$T/dev_cpu_install" auto
  check "... and solves ($out)" bash -c "grep -qE '^device (cpu|cuda) status success' <<<'$out'"
  run "$T/dev_cpu_install" gpu
  check "... asked for the GPU without a backend: NOT_COMPILED naming where it looked ($out)" \
    bash -c "grep -q 'not in this build or installation' <<<'$out' && grep -qF '$QLIB' <<<'$out'"
  if [ -f "$BUILD/libspk_cuda.so" ]; then
    cp "$BUILD/libspk_cuda.so" "$QLIB/"
    if nvidia-smi -L >/dev/null 2>&1; then
      run "$T/dev_cpu_install" gpu
      check "... with this build's CUDA backend beside it, it runs on the GPU ($out)" \
        test "$out" = "device cuda status success reason CONVERGED_RTOL"
    fi
  fi
fi

echo "test_install: $pass passed, $fail failed"
test "$fail" -eq 0
