#!/usr/bin/env bash
# Tracer overhead benchmark, one command: `scripts/bench.sh`.
#
# For each MPI implementation, in one run:
#  1. ping-pong of 8-byte messages between 2 ranks, untraced and traced
#     (default sink, default call-site depth): ns added per intercepted call
#     = (traced - untraced round trip) / 4, since a round trip is 4 calls:
#     median over 9 back-to-back pairs, with quartiles;
#  2. the 2D stencil (2 ranks, 2x1: one rank per core, so busy-polling MPI
#     is not oversubscribed), untraced and traced: overhead in percent of the
#     wall time of its iteration loop (rank 0, MPI_Wtime, without the
#     launcher's start-up): median over 15 back-to-back pairs, with quartiles.
# Absolute figures are printed beside the ratios.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ "${RANKSCALE_BENCH_NOBUILD:-}" == 1 ]] || scripts/build.sh >/dev/null
iters="${PINGPONG_ITERS:-50000}"
runs="${STENCIL_RUNS:-15}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-pci,-linuxio

launch() { # launch IMP NP TRACED PROGRAM ARGS...
  local imp=$1 np=$2 traced=$3 prog=$4
  shift 4
  local shim="$root/target/$imp/release/libpmpi_shim.so"
  if [[ $imp == mpich ]]; then
    local env=()
    [[ $traced == 1 ]] && env=(-genv LD_PRELOAD "$shim")
    mpirun.mpich -n "$np" -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS self,sm "${env[@]}" \
      "target/programs/$imp/$prog" "$@"
  else
    local env=()
    [[ $traced == 1 ]] && env=(-x "LD_PRELOAD=$shim")
    mpirun.openmpi -n "$np" --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
      "${env[@]}" "target/programs/$imp/$prog" "$@"
  fi
}

# q P: the P-quantile (0..1) of the numbers on standard input.
q() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { i = int(p * (NR - 1) + 0.5) + 1; print v[i] }'; }
# pairs_report IMP: reads "untraced traced figure" lines, one per pair, and
# prints the medians of the three columns and the quartiles of the figure.
pairs_report() {
  local lines
  lines=$(cat)
  col() { awk -v c="$1" '{ print $c }' <<<"$lines"; }
  printf '%-8s %14.1f %14.1f %12.1f %8.1f ..%6.1f\n' "$1" \
    "$(col 1 | q 0.5)" "$(col 2 | q 0.5)" "$(col 3 | q 0.5)" "$(col 3 | q 0.25)" "$(col 3 | q 0.75)"
}

# The machine's speed drifts by more than the overheads measured here, so
# every figure comes from back-to-back pairs (untraced, traced; the order
# alternates): the report gives the medians and the median of the per-pair
# differences, with its quartiles as the spread.
pair() { # pair R CMD...: runs CMD untraced and traced, prints "untraced traced"
  local r=$1 u t
  shift
  if ((r % 2)); then t=$("$@" 1); u=$("$@" 0); else u=$("$@" 0); t=$("$@" 1); fi
  echo "$u $t"
}
pingpong_ns() { launch "$1" 2 "$2" pingpong "$iters" 8 3 | awk '/roundtrip_ns/ {print $2}'; }

echo "ping-pong, 8-byte messages, 2 ranks; added ns per intercepted call = (traced - untraced round trip) / 4"
printf '%-8s %14s %14s %12s %16s\n' MPI "untraced(ns)" "traced(ns)" "ns/call" "quartiles"
for imp in mpich openmpi; do
  for ((r = 0; r < ${PINGPONG_PAIRS:-9}; r++)); do pair "$r" pingpong_ns "$imp"; done |
    awk '{ print $1, $2, ($2 - $1) / 4 }' | pairs_report "$imp"
done

echo "2D stencil, 2 ranks (2x1), time of the iteration loop; overhead = (traced - untraced) / untraced"
stencil_args=(-d 2 -p 2x1 -i "${STENCIL_ITERS:-2000}" -n "${STENCIL_N:-512}" -k 10)
loop_time() { STENCIL_TIMING=1 launch "$1" 2 "$2" stencil "${stencil_args[@]}" 2>&1 >/dev/null | awk '/^loop_s/ {print $2}'; }
printf '%-8s %14s %14s %12s %16s\n' MPI "untraced(ms)" "traced(ms)" "overhead(%)" "quartiles(%)"
for imp in mpich openmpi; do
  for ((r = 0; r < runs; r++)); do pair "$r" loop_time "$imp"; done |
    awk '{ print $1 * 1000, $2 * 1000, ($2 - $1) / $1 * 100 }' | pairs_report "$imp"
done
