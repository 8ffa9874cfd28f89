#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, trace the
# bundled 2D stencil at 4, 16 and 64 ranks into one compressed trace file
# each, show one, replay it, check on MPICH that the trace expands to
# exactly the raw per-rank logs, extrapolate the small traces to 64 ranks
# (checked against the real 64-rank trace) and to a million, replay the
# extrapolated 64-rank trace, then trace an idle wave with the timeline,
# analyse its wait states and write the HTML report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-pci,-linuxio
rs=target/mpich/release/rankscale
out=out/demo
rm -rf "$out" && mkdir -p "$out"
for np in 4 9 16 25 64; do
  echo
  echo "=== 2D stencil, $np ranks, 1000 iterations, traced (Open MPI) ==="
  "$rs" trace -o "$out/stencil.$np.trace" -- \
    mpirun.openmpi -n "$np" --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
    --mca mpi_yield_when_idle 1 target/programs/openmpi/stencil -d 2 -s weak -n 16 -i 1000 -k 10
done
echo
echo "=== the 16-rank trace: structure ==="
"$rs" show "$out/stencil.16.trace" | cut -c1-200
echo
echo "=== the 16-rank trace: statistics and per-call-site profile ==="
"$rs" stats "$out/stencil.16.trace" | sed -n 1,24p
echo
echo "=== replay of the 16-rank trace (Open MPI), beside the application's time ==="
mpirun.openmpi -n 16 --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
  --mca mpi_yield_when_idle 1 target/openmpi/release/replay "$out/stencil.16.trace"
echo
echo "=== MPICH, 4 ranks: trace file and raw logs of the same run, compared rank by rank ==="
"$rs" trace -o "$out/stencil.4.mpich.trace" --raw "$out/stencil.4.mpich.raw" --yield-wait -- \
  mpirun.mpich -n 4 -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS self,sm \
  target/programs/mpich/stencil -d 2 -i 100 -k 10
for r in 0 1 2 3; do
  "$rs" show "$out/stencil.4.mpich.trace" --expand "$r" |
    cmp - "$out/stencil.4.mpich.raw/rank-0000$r.txt" && echo "rank $r: expansion == raw log"
done
echo
echo "=== extrapolation: topology of the 25-rank trace ==="
"$rs" topology "$out/stencil.25.trace"
echo "=== extrapolating the 4, 9, 16 and 25-rank traces to 64 ranks ==="
"$rs" extrap -o "$out/stencil.64.extrap.trace" --ranks 64 "$out"/stencil.{4,9,16,25}.trace
same=0
for r in $(seq 0 63); do
  if cmp -s <("$rs" show "$out/stencil.64.extrap.trace" --expand "$r") \
    <("$rs" show "$out/stencil.64.trace" --expand "$r"); then same=$((same + 1)); fi
done
echo "extrapolated vs real 64-rank trace: $same of 64 ranks expand to identical event sequences"
echo "=== ... and to 1,048,576 ranks (1024x1024) ==="
"$rs" extrap -o "$out/stencil.1M.extrap.trace" --ranks 1048576 "$out"/stencil.{4,9,16,25}.trace |
  sed -n '/^target/p;/^wrote/p'
"$rs" show "$out/stencil.1M.extrap.trace" | sed -n 1p
echo "=== replay of the extrapolated 64-rank trace (Open MPI), beside the real application's time ==="
"$rs" show "$out/stencil.64.trace" | sed -n '/^wall/p'
mpirun.openmpi -n 64 --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
  --mca mpi_yield_when_idle 1 target/openmpi/release/replay "$out/stencil.64.extrap.trace" | sed -n 1p
echo
echo "=== an idle wave: 16 ranks, rank 4 sleeps 30 ms once; traced with the timeline (Open MPI) ==="
"$rs" trace --timeline -o "$out/idlewave.trace" -- \
  mpirun.openmpi -n 16 --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
  --mca mpi_yield_when_idle 1 target/programs/openmpi/idlewave -t chain -i 16 -d 30
"$rs" analyze "$out/idlewave.trace" | sed -n "/^wait states/,/^critical path/p"
"$rs" report "$out/idlewave.trace" -o "$out/report.html"
echo
ls -l "$out"/*.trace
echo "demo: traces and raw logs are in $out/; the HTML report is $out/report.html"
