#!/usr/bin/env bash
# Installs what rankscale needs on a Debian 12 machine, only when missing:
# MPICH and Open MPI (runtime, headers, compiler wrappers), gfortran, libclang
# (for bindgen), pkg-config, Chromium (the HTML report's rendering test), and
# the OTF2 library with its tools and Python bindings (OTF2 export and import,
# checked with otf2-print and an archive written by OTF2's Python writer),
# and valgrind (the instruction counts of `scripts/bench.sh instructions`).
# Needs root (or sudo) for apt-get.
set -euo pipefail

need=()
for cmd in mpicc.mpich mpif90.mpich mpirun.mpich mpicc.openmpi mpif90.openmpi mpirun.openmpi gfortran pkg-config chromium otf2-print valgrind; do
  command -v "$cmd" >/dev/null 2>&1 || need+=("$cmd")
done
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang)
[[ -f /usr/include/otf2/otf2.h ]] || need+=(libotf2)
/usr/bin/python3 -c 'import otf2' >/dev/null 2>&1 || need+=(python3-otf2)
if ((${#need[@]})); then
  echo "setup: missing ${need[*]}; installing from Debian"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    mpich libmpich-dev openmpi-bin libopenmpi-dev gfortran libclang-dev pkg-config chromium \
    libotf2-trace-dev otf2-tools python3-otf2 valgrind >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: error: no Rust toolchain (cargo) on PATH; install Rust 1.85 or newer" >&2
  exit 1
fi
echo "setup: MPICH $(mpichversion 2>/dev/null | sed -n 's/MPICH Version:[[:space:]]*//p'), Open MPI $(ompi_info --version 2>/dev/null | sed -n 's/.*v\([0-9.]*\).*/\1/p' | head -1), $(cargo --version)"
