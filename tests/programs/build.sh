#!/usr/bin/env bash
# Build every rankscale MPI test program with one MPI implementation.
#
#   usage: build.sh IMPL OUTDIR      IMPL = mpich | openmpi
#
# Binaries are named after their source stem (c/stencil.c -> OUTDIR/stencil,
# fortran/coverage_f77.f -> OUTDIR/coverage_f77).  Safe to re-run: every
# binary is rebuilt and atomically replaced.
set -euo pipefail

die() { echo "build.sh: error: $*" >&2; exit 1; }

[[ $# -eq 2 ]] || die "usage: build.sh mpich|openmpi OUTDIR"
impl=$1
outdir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

case "$impl" in
  mpich | openmpi) ;;
  *) die "unknown MPI implementation '$impl' (expected mpich or openmpi)" ;;
esac
CC=mpicc.$impl
FC=mpif90.$impl
command -v "$CC" >/dev/null || die "$CC not found"
command -v "$FC" >/dev/null || die "$FC not found"

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

CFLAGS=(-O2 -g -Wall)
FFLAGS=(-O2 -g)
# Legacy-style Fortran (mpif.h / `use mpi` without interfaces for choice
# buffers) passes scalars, arrays and MPI_BOTTOM / MPI_IN_PLACE to the same
# routine.  gfortran >= 10 rejects that unless -fallow-argument-mismatch is
# given (MPICH's wrapper adds it, Open MPI's does not), and the downgraded
# diagnostics can only be silenced with -w (see the gfortran manual).
F77FLAGS=(-fallow-argument-mismatch -fallow-invalid-boz -w)

# Fortran module files (.mod) go to a scratch directory, never the source tree.
moddir=$(mktemp -d "${TMPDIR:-/tmp}/rankscale-build-mod.XXXXXX")
trap 'rm -rf "$moddir"' EXIT

build() { # build STEM COMPILER ARGS...
  local stem=$1 tmp="$outdir/.$1.tmp.$$"
  shift
  echo "  $*  -> $outdir/$stem"
  if ! "$@" -o "$tmp"; then
    rm -f "$tmp"
    die "compiling $stem with $impl failed"
  fi
  mv -f "$tmp" "$outdir/$stem"
}

echo "building rankscale test programs with $impl into $outdir"

shopt -s nullglob
csrc=("$here"/c/*.c)
[[ ${#csrc[@]} -gt 0 ]] || die "no C sources in $here/c"
for src in "${csrc[@]}"; do
  stem=$(basename "$src" .c)
  extra=()
  [[ $stem == threads ]] && extra=(-pthread)
  build "$stem" "$CC" "${CFLAGS[@]}" "${extra[@]}" "$src" -lm
done
# The large-count program once more with the `int` twins of its calls: the
# two traces must be the same (tests/interception.rs).
build large_count_int "$CC" "${CFLAGS[@]}" -DINT_TWINS "$here/c/large_count.c" -lm

# Is the mpi_f08 module usable with this implementation?
have_f08=0
cat >"$moddir/f08check.f90" <<'EOF'
program f08check
  use mpi_f08
  implicit none
  type(MPI_Comm) :: c
  c = MPI_COMM_WORLD
end program f08check
EOF
if (cd "$moddir" && "$FC" "${FFLAGS[@]}" -J "$moddir" f08check.f90 -o f08check) >/dev/null 2>&1; then
  have_f08=1
fi

fsrc=("$here"/fortran/*.f "$here"/fortran/*.f90)
[[ ${#fsrc[@]} -gt 0 ]] || die "no Fortran sources in $here/fortran"
for src in "${fsrc[@]}"; do
  name=$(basename "$src")
  stem=${name%.*}
  flags=("${FFLAGS[@]}" -J "$moddir")
  case "$stem" in
    coverage_f77 | coverage_usempi) flags+=("${F77FLAGS[@]}") ;;
    coverage_f08)
      if [[ $have_f08 -ne 1 ]]; then
        echo "  SKIPPING $stem: the mpi_f08 module is not available with $impl" >&2
        continue
      fi
      ;;
  esac
  build "$stem" "$FC" "${flags[@]}" "$src"
done

# One source, two interfaces: the calls without detail from `use mpi` and
# from `use mpi_f08` (tests/interception.rs).
build generic_f "$FC" "${FFLAGS[@]}" "${F77FLAGS[@]}" -J "$moddir" "$here/fortran/generic_f.F90"
if [[ $have_f08 -eq 1 ]]; then
  build generic_f08 "$FC" "${FFLAGS[@]}" -DF08 -J "$moddir" "$here/fortran/generic_f.F90"
else
  echo "  SKIPPING generic_f08: the mpi_f08 module is not available with $impl" >&2
fi

# Calls recorded in detail whose Fortran entry points bypass the C symbols
# (tests/interception.rs); MPI 4's among them where the MPI has them.
mpi4=()
[[ $impl == mpich ]] && mpi4=(-DMPI4)
build detail_f "$FC" "${FFLAGS[@]}" "${F77FLAGS[@]}" "${mpi4[@]}" -J "$moddir" "$here/fortran/detail_f.F90"
if [[ $have_f08 -eq 1 ]]; then
  build detail_f08 "$FC" "${FFLAGS[@]}" -DF08 "${mpi4[@]}" -J "$moddir" "$here/fortran/detail_f.F90"
else
  echo "  SKIPPING detail_f08: the mpi_f08 module is not available with $impl" >&2
fi

echo "done: $(find "$outdir" -maxdepth 1 -type f -perm -u+x | wc -l) executables in $outdir"
