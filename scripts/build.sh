#!/usr/bin/env bash
# Builds rankscale for both MPI implementations (release) and the MPI test
# programs with each implementation's compiler wrappers:
#   target/mpich/release/{rankscale,libpmpi_shim.so}
#   target/openmpi/release/{rankscale,libpmpi_shim.so}
#   target/programs/{mpich,openmpi}/<program>
#   target/programs/{mpich,openmpi}/libwalltime.so (benches/walltime)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
for imp in mpich openmpi; do
  echo "build: rankscale for $imp"
  scripts/with-mpi "$imp" cargo build --release --workspace --quiet
  echo "build: test programs for $imp"
  tests/programs/build.sh "$imp" "target/programs/$imp" >/dev/null
  for src in benches/mpi/*.c; do
    "mpicc.$imp" -O2 -g -o "target/programs/$imp/$(basename "$src" .c)" "$src"
  done
  # The untraced run's timer of `scripts/bench.sh simulate`.
  "mpicc.$imp" -shared -fPIC -O2 -Wall -Werror -o "target/programs/$imp/libwalltime.so" benches/walltime/walltime.c
done
