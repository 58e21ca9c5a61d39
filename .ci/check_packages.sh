#!/usr/bin/env bash
# .ci/check_packages.sh [BUILD] -- the packages `cpack` makes from a build (default build/):
# the .debs (libspk, libspk-dev, spk-solve, libspk-cuda in a CUDA build and libspk-mpi in an
# MPI one) and the .tar.gz;
# the .debs installed with dpkg -i, spk-solve run on a shipped matrix, a program built against
# libspk-dev with pkg-config, the installed libspk.so checked to need no CUDA library, then
# everything removed again with dpkg -r. Needs root (dpkg); a machine without dpkg skips.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
command -v dpkg >/dev/null || { echo "check_packages: no dpkg here: skipped"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "check_packages: dpkg -i needs root: skipped"; exit 0; }
(cd "$B" && rm -f ./*.deb ./*.tar.gz && cpack -G DEB >/dev/null && cpack -G TGZ >/dev/null)
tar -tzf "$B"/spk-*.tar.gz | grep 'bin/spk-solve$' >/dev/null
pkgs=(libspk spk-solve libspk-dev)
[ -n "$(ls "$B"/libspk-cuda_*.deb 2>/dev/null)" ] && pkgs+=(libspk-cuda)
[ -n "$(ls "$B"/libspk-mpi_*.deb 2>/dev/null)" ] && pkgs+=(libspk-mpi)
debs=()
for p in "${pkgs[@]}"; do debs+=("$(ls "$B/${p}_"*.deb)"); done
for p in "${pkgs[@]}"; do
  ! dpkg -s "$p" >/dev/null 2>&1 || { echo "check_packages: $p is installed already: left alone"; exit 1; }
done
cleanup() { dpkg -r "${pkgs[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
dpkg -i "${debs[@]}"
spk-solve -A inputs/bcsstk09.mtx --method cg --precond jacobi -q
echo "spk-solve: converged (exit 0)"
if [[ " ${pkgs[*]} " == *" libspk-mpi "* ]] && command -v mpiexec >/dev/null; then
  OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 mpiexec -n 2 spk-solve -A inputs/bcsstk09.mtx \
    --method cg --precond jacobi -q
  echo "mpiexec -n 2 spk-solve: converged (exit 0)"
fi
lib=$(dpkg -L libspk | grep 'libspk\.so\.[0-9.]*$' | sort | tail -1)
if readelf -d "$lib" | grep NEEDED | grep -qiE 'cuda|cublas|cusparse'; then
  echo "check_packages: $lib needs a CUDA library"; exit 1
fi
if command -v pkg-config >/dev/null && command -v cc >/dev/null; then
  T=$(mktemp -d)
  printf '#include <spk.h>\n#include <stdio.h>\nint main(void) { printf("libspk-dev: spk %%s, CUDA support %%d\\n", SPK_VERSION_STRING, spk_has_cuda()); return 0; }\n' >"$T/v.c"
  cc "$T/v.c" -o "$T/v" $(pkg-config --cflags --libs spk)
  "$T/v"
  rm -rf "$T"
fi
dpkg -r "${pkgs[@]}" >/dev/null
trap - EXIT
! command -v spk-solve >/dev/null
echo "check_packages: ${pkgs[*]} installed, ran and removed"
