#!/usr/bin/env bash
# .ci/gpu_mpi.sh -- sourced by the GPU scripts: an MPI for the distributed tests on a machine
# that has none installed. An mpicc on PATH is used as it is; otherwise an MPICH wheel carried
# in .whl/ (pip download mpich, manylinux; its compiler wrappers are relocatable) is unpacked
# into /tmp/spk-mpich and handed to CMake. Sets CMAKE_EXTRA (the MPI hints, or nothing) and
# SPK_MPIEXEC (the launcher, or nothing).
CMAKE_EXTRA=${CMAKE_EXTRA:-}
SPK_MPIEXEC=$(command -v mpiexec || true)
if ! command -v mpicc >/dev/null; then
  whl=$(ls .whl/mpich-*.whl 2>/dev/null | head -1)
  if [ -n "$whl" ]; then
    rm -rf /tmp/spk-mpich && mkdir -p /tmp/spk-mpich &&
      python3 -m zipfile -e "$whl" /tmp/spk-mpich &&
      bin=$(echo /tmp/spk-mpich/mpich-*.data/data/bin) && chmod +x "$bin"/* &&
      CMAKE_EXTRA="${CMAKE_EXTRA:-} -DMPI_C_COMPILER=$bin/mpicc -DMPIEXEC_EXECUTABLE=$bin/mpiexec" &&
      SPK_MPIEXEC=$bin/mpiexec
  fi
fi
export CMAKE_EXTRA SPK_MPIEXEC
