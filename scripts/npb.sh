#!/usr/bin/env bash
# Builds NAS Parallel Benchmarks 3.3-MPI binaries the way NPB is meant to be
# built: one executable per benchmark, class and rank count, because NPB
# compiles the rank count into the program (npbparams.h). Tests and
# benchmarks extrapolate traces of such per-size builds.
#
#   scripts/npb.sh IMP BENCH CLASS N [N ...]
#     IMP    mpich | openmpi
#     BENCH  bt sp lu cg mg ft is ep
#     CLASS  S W A B
#   -> target/npb/IMP/bin/BENCH.CLASS.N   (e.g. target/npb/openmpi/bin/cg.S.16)
#
# The source is ../shared/third-party/NPB3.3-MPI.tar.gz, unpacked once per
# implementation into target/npb/IMP/src. A binary newer than the tarball is
# not rebuilt. NPB's Makefiles race under -j, and a stale npbparams.h of
# another size is silently reused, so each size is built alone from a clean
# benchmark directory. Exit status: 0 built (or up to date), 1 a build
# failed, 2 bad arguments, 3 the tarball is missing (tests then skip).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() {
  echo "usage: scripts/npb.sh mpich|openmpi bt|sp|lu|cg|mg|ft|is|ep S|W|A|B N [N ...]" >&2
  exit 2
}
[[ $# -ge 4 ]] || usage
imp=$1 bench=$2 class=$3
shift 3
case "$imp" in mpich | openmpi) ;; *) usage ;; esac
case "$bench" in bt | sp | lu | cg | mg | ft | is | ep) ;; *) usage ;; esac
case "$class" in S | W | A | B) ;; *) usage ;; esac
for n in "$@"; do [[ $n =~ ^[1-9][0-9]*$ ]] || usage; done

tarball="$root/../shared/third-party/NPB3.3-MPI.tar.gz"
if [[ ! -f $tarball ]]; then
  echo "npb: ../shared/third-party/NPB3.3-MPI.tar.gz not found; NPB tests skipped" >&2
  exit 3
fi

base="$root/target/npb/$imp"
mkdir -p "$base/bin"
exec 9>"$base/.lock"
flock 9

src="$base/src"
if [[ ! -f $src/.unpacked || $tarball -nt $src/.unpacked ]]; then
  rm -rf "$src"
  mkdir -p "$src"
  tar xzf "$tarball" -C "$src" --strip-components=1
  touch "$src/.unpacked"
fi
if [[ $imp == openmpi ]]; then
  fflags="-O2 -g -fallow-argument-mismatch -fallow-invalid-boz"
else
  fflags="-O2 -g"
fi
cat >"$src/config/make.def" <<EOF
MPIF77 = mpif90.$imp
FLINK = \$(MPIF77)
FMPI_LIB =
FMPI_INC =
FFLAGS = $fflags
FLINKFLAGS = -O2 -g
MPICC = mpicc.$imp
CLINK = \$(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = -O2 -g
CLINKFLAGS = -O2 -g
CC = cc -g
BINDIR = ../bin
RAND = randi8
EOF

BENCH=${bench^^}
for n in "$@"; do
  out="$base/bin/$bench.$class.$n"
  if [[ -x $out && $out -nt $tarball ]]; then
    continue
  fi
  start=$(date +%s%N)
  rm -f "$src"/*/npbparams.h "$src/sys/setparams" "$src/bin/$bench.$class.$n"
  make -C "$src/$BENCH" clean >/dev/null 2>&1 || true
  log="$base/build.$bench.$class.$n.log"
  if ! make -C "$src" -j1 MAKEFLAGS= "$BENCH" CLASS="$class" NPROCS="$n" >"$log" 2>&1 ||
    [[ ! -x $src/bin/$bench.$class.$n ]]; then
    echo "npb: building $bench.$class.$n with $imp failed:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  mv -f "$src/bin/$bench.$class.$n" "$out"
  ms=$((($(date +%s%N) - start) / 1000000))
  printf 'npb: built %s (%d.%01d s)\n' "${out#"$root"/}" $((ms / 1000)) $((ms % 1000 / 100))
done
