#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, trace the
# bundled 2D stencil at 4, 9 and 16 ranks, and show what was recorded.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-pci,-linuxio
rs=target/mpich/release/rankscale
out=out/demo
rm -rf "$out" && mkdir -p "$out"
for np in 4 9 16; do
  echo
  echo "=== 2D stencil, $np ranks, 100 iterations, traced (Open MPI) ==="
  "$rs" trace --raw "$out/stencil.$np.raw" -- \
    mpirun.openmpi -n "$np" --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
    --mca mpi_yield_when_idle 1 target/programs/openmpi/stencil -d 2 -i 100 -k 10
  "$rs" stats "$out/stencil.$np.raw" | head -n 40
done
echo
echo "=== the same stencil at 4 ranks on MPICH, rank 0's first events ==="
"$rs" trace --raw "$out/stencil.4.mpich.raw" --yield-wait -- \
  mpirun.mpich -n 4 -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS self,sm target/programs/mpich/stencil -d 2 -i 100 -k 10
head -n 12 "$out/stencil.4.mpich.raw/rank-00000.txt"
echo
echo "demo: raw logs are in $out/"
