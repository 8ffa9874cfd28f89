#!/usr/bin/env bash
# Tracer overhead benchmark, one command: `scripts/bench.sh`.
#
# For each MPI implementation, in one run:
#  1. ping-pong of 8-byte messages between 2 ranks, untraced and traced
#     (default sink, default call-site depth): ns added per intercepted call
#     = (traced - untraced round trip) / 4, since a round trip is 4 calls;
#  2. the 2D stencil (2 ranks, 2x1: one rank per core, so busy-polling MPI
#     is not oversubscribed), untraced and traced, alternating runs:
#     wall-time overhead in percent (best of N).
# Absolute figures are printed beside the ratios.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ "${RANKSCALE_BENCH_NOBUILD:-}" == 1 ]] || scripts/build.sh >/dev/null
iters="${PINGPONG_ITERS:-200000}"
runs="${STENCIL_RUNS:-5}"
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

now() { date +%s.%N; }

printf '%-8s %14s %14s %12s\n' MPI "untraced(ns)" "traced(ns)" "ns/call"
for imp in mpich openmpi; do
  u=$(launch "$imp" 2 0 pingpong "$iters" 8 5 | awk '/roundtrip_ns/ {print $2}')
  t=$(launch "$imp" 2 1 pingpong "$iters" 8 5 | awk '/roundtrip_ns/ {print $2}')
  printf '%-8s %14s %14s %12s\n' "$imp" "$u" "$t" "$(awk -v u="$u" -v t="$t" 'BEGIN {printf "%.0f", (t - u) / 4}')"
done

echo
stencil_args=(-d 2 -p 2x1 -i "${STENCIL_ITERS:-8000}" -n "${STENCIL_N:-512}" -k 10)
printf '%-8s %14s %14s %12s\n' MPI "untraced(s)" "traced(s)" "overhead"
for imp in mpich openmpi; do
  bu=1e9 bt=1e9
  for ((r = 0; r < runs; r++)); do
    s=$(now); launch "$imp" 2 0 stencil "${stencil_args[@]}" >/dev/null; e=$(now)
    bu=$(awk -v a="$bu" -v b="$(awk -v s="$s" -v e="$e" 'BEGIN{print e-s}')" 'BEGIN{print (b<a)?b:a}')
    s=$(now); launch "$imp" 2 1 stencil "${stencil_args[@]}" >/dev/null; e=$(now)
    bt=$(awk -v a="$bt" -v b="$(awk -v s="$s" -v e="$e" 'BEGIN{print e-s}')" 'BEGIN{print (b<a)?b:a}')
  done
  printf '%-8s %14.3f %14.3f %11.1f%%\n' "$imp" "$bu" "$bt" "$(awk -v u="$bu" -v t="$bt" 'BEGIN {print (t - u) / u * 100}')"
done
