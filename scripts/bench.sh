#!/usr/bin/env bash
# Tracer overhead benchmark, one command: `scripts/bench.sh`.
#
# For each MPI implementation, in one run:
#  (`scripts/bench.sh overhead` runs parts 1 and 2 alone; with
#  SHIM_BASELINE=DIR also both against another build's shim, in pairs)
#  1. ping-pong of 8-byte messages between 2 ranks, untraced and traced
#     (default sink, default call-site depth): ns added per intercepted call
#     = (traced - untraced round trip) / 4, since a round trip is 4 calls:
#     median over 9 back-to-back pairs, with quartiles;
#  2. the 2D stencil (2 ranks, 2x1: one rank per core, so busy-polling MPI
#     is not oversubscribed), untraced and traced: overhead in percent of the
#     wall time of its iteration loop (rank 0, MPI_Wtime, without the
#     launcher's start-up): median over 15 back-to-back pairs, with quartiles;
#  3. the inter-node merge at MPI_Finalize: the weak-scaled 2D stencil
#     traced at 16, 64 and 256 ranks (Open MPI, oversubscribed) and at 16
#     ranks (MPICH, yielding waits): merge time, its share of the run's wall
#     time, trace size and compression ratio against the raw logs;
#  4. replay: seconds per replayed event with --no-compute on a long loop
#     (the trace of the stencil, 2 ranks), beside the application's time;
#  5. analysis: time of `rankscale analyze` on a 64-rank stencil with its
#     timeline (about 10^5 and 10^6 events), against the application's time;
#  6. extrapolation speed on the weak 2D stencil, to 36, 4,096 and 1,048,576
#     ranks;
#  7. NPB tracer overhead: CG, BT, LU and MG, classes S and W, at 4 and 16
#     ranks, traced against untraced in alternating pairs, NPB's own timed
#     region and the whole job (`scripts/bench.sh npb-overhead` runs this
#     part alone);
#  8. snapshots of the trace (traces that survive a dying job): NPB CG
#     class W traced with the default interval (60 s: none falls in the
#     run) against one every 0.05 s, alternating pairs; the cost per
#     snapshot (`scripts/bench.sh snapshots` runs this part alone);
#  9. NPB: the application time that extrapolation predicts for EP, FT, IS,
#     CG, LU, BT and SP at a size that is not an input (per-size binaries)
#     against real traced runs at that size, median of 3 (`scripts/bench.sh
#     npb` runs this part alone);
# 10. codegen: the benchmark `rankscale codegen` writes of NPB traces
#     against `replay` of the same trace, wall time, median of 3
#     alternating, and the C file's size against the trace's
#     (`scripts/bench.sh codegen` runs this part alone).
# 11. simulate: LogGOPS parameters measured by `rankscale calibrate`; the
#     run time `rankscale simulate` predicts against the application's
#     untraced run (benches/walltime), and against the traced run's
#     (stencils and NPB CG, LU, BT, MG, FT at 4 to 64 ranks, Open MPI,
#     median of 3, each trace's prediction the median of SIM_SEEDS=3
#     seeds, `--cores` the machine's; SIM_ACCURACY=0 skips this table,
#     SIM_ONLY=REGEX runs the rows it matches, SIM_BASELINE=PATH adds
#     another rankscale binary's predictions of the same traces, an A/B of
#     two builds in one sitting); simulation
#     speed rank by rank
#     and by class (an extrapolated stencil at 4,096 and 1,048,576 ranks);
#     the what-if sweep of L and G (NPB MG W, 16 ranks) drawn as
#     docs/img/whatif.svg
#     (`scripts/bench.sh simulate` runs this part alone).
# 12. interchange: NPB CG class W at 16 ranks traced with its timeline
#     (Open MPI); `export --otf2` against `export --perfetto` of the same
#     trace (time ratio), `import --format otf2` back, the archive's size
#     against the trace's, and whether every rank's calls came back
#     (`scripts/bench.sh interchange` runs this part alone).
# 13. analysis at scale: a pertext trace in the published SMG2000 traces'
#     form (scripts/smg_like.py: 1,024 ranks on a 16x8x8 grid, 8.1 M
#     events), `import` then `analyze`: wall and CPU time, peak RSS (from
#     /usr/bin/time -v), per event; the ratio is analyze's time against
#     import's (`scripts/bench.sh scale` runs this part alone; SCALE_RANKS
#     and SCALE_CYCLES change the size).
# 15. the published traces (issue 40): smg1024 and bt100A of the pattern-
#     detection papers, from the shared copy, imported and analysed with
#     /usr/bin/time -v (`scripts/bench.sh published` runs this part alone);
#     the ratio is analyze's wall time against import's.
# 14. MPICH's own test suite 4.0.2 (issue 39, tests/mpich_suite.rs): every
#     program of pt2pt, coll, comm, group, topo, datatype, part and init,
#     untraced, traced, `rankscale check`ed and replayed on each MPI; a
#     table per MPI and directory, then every failure with its first failing
#     stage (also in target/mpich-suite/IMP/report.md). Not part of `all`:
#     `scripts/bench.sh mpich-suite [DIR,DIR | DIR/NAME]` runs it (all eight
#     directories by default). The CI slice of it is a test of
#     scripts/test.sh.
# 16. tools A/B (`TOOLS_BASELINE=PATH scripts/bench.sh tools-ab`, not part
#     of `all`): check, analyze and simulate of this build against another
#     build's rankscale on the published smg128 and amg64, alternating
#     pairs; the ratio is this build's median time over the baseline's.
# 17. instructions (`scripts/bench.sh instructions`, not part of `all`): the
#     tracer's cost per call in instructions, which a shared machine's
#     noise does not move: benches/mpi/selfloop (Irecv, Send, Wait to
#     itself, one rank, no mpirun) under callgrind at 1,000 and 11,000
#     iterations, untraced and traced (and with SHIM_BASELINE=DIR traced
#     by that build's shim too); instructions per call = the difference
#     of the two runs / 30,000 calls; the ratio is traced against
#     untraced (and this shim against the baseline's). Under valgrind the
#     clock reads are emulated, so the traced figure is higher than on
#     the bare machine: compare builds with it, not with the ping-pong.
# 18. one-sided (`scripts/bench.sh onesided`, not part of `all`): the
#     tracer's cost per one-sided call on benches/mpi/rmaloop (MPI_Put and
#     MPI_Win_flush in a passive-target epoch): ns per call traced against
#     untraced, 2 ranks, alternating pairs; and instructions per call under
#     callgrind on one rank, untraced and traced (the ratio).
# 19. io (`scripts/bench.sh io`, not part of `all`): the tracer's cost per
#     MPI-IO call on benches/mpi/ioloop (8-byte MPI_File_write_at, and
#     MPI_File_write through the individual file pointer, each rank at its
#     own block of one file): ns per call traced against untraced, 2
#     ranks, alternating pairs; and instructions per call under callgrind
#     on one rank, untraced and traced (the ratio).
# Absolute figures are printed beside the ratios.
# The compressor's own speed (events/s) is a criterion benchmark:
#   cargo bench -p compress
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ "${RANKSCALE_BENCH_NOBUILD:-}" == 1 ]] || scripts/build.sh >/dev/null
part="${1:-all}"
iters="${PINGPONG_ITERS:-50000}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Traced runs write their trace here, not into the working directory.
export RANKSCALE_TRACE="$tmp/bench.trace"
runs="${STENCIL_RUNS:-15}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-pci,-linuxio

launch_bin() { # launch_bin IMP NP TRACED BINARY ARGS...: TRACED 1 preloads the shim, b the baseline's (SHIM_BASELINE), w the untraced timer (benches/walltime)
  local imp=$1 np=$2 traced=$3 bin=$4
  shift 4
  local shim="$root/target/$imp/release/libpmpi_shim.so" timer="$root/target/programs/$imp/libwalltime.so"
  if [[ $traced == b ]]; then
    shim="$SHIM_BASELINE/target/$imp/release/libpmpi_shim.so"
    traced=1
  fi
  if [[ $imp == mpich ]]; then
    local env=()
    [[ $traced == 1 ]] && env=(-genv LD_PRELOAD "$shim" -genv RANKSCALE_TRACE "$RANKSCALE_TRACE"
      -genv RANKSCALE_TIMELINE "${RANKSCALE_TIMELINE:-0}" -genv RANKSCALE_FLUSH_S "${RANKSCALE_FLUSH_S:-60}")
    [[ $traced == w ]] && env=(-genv LD_PRELOAD "$timer")
    mpirun.mpich -n "$np" -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS self,sm "${env[@]}" "$bin" "$@"
  else
    local env=()
    [[ $traced == 1 ]] && env=(-x "LD_PRELOAD=$shim" -x RANKSCALE_TRACE
      -x "RANKSCALE_TIMELINE=${RANKSCALE_TIMELINE:-0}" -x "RANKSCALE_FLUSH_S=${RANKSCALE_FLUSH_S:-60}")
    [[ $traced == w ]] && env=(-x "LD_PRELOAD=$timer")
    mpirun.openmpi -n "$np" --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
      "${env[@]}" "$bin" "$@"
  fi
}
walltime() { # walltime IMP NP BINARY ARGS...: the untraced run's rank 0 time, MPI_Init to MPI_Finalize (s)
  local imp=$1 np=$2 bin=$3
  shift 3
  launch_bin "$imp" "$np" w "$bin" "$@" 2>&1 >/dev/null | awk '/^walltime: / { print $2 }'
}
launch() { # launch IMP NP TRACED PROGRAM ARGS...: a test program of target/programs
  local imp=$1 np=$2 traced=$3 prog=$4
  shift 4
  launch_bin "$imp" "$np" "$traced" "target/programs/$imp/$prog" "$@"
}

# An awk function: med(a, n) sorts a[1..n] in place and returns its median.
awk_med='function med(a, n,   i, j, x) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
  return a[int((n + 1) / 2)] }'
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
pingpong_ns() { launch "$1" 2 "$2" pingpong "$iters" 8 3 2>/dev/null | awk '/roundtrip_ns/ {print $2}'; }

# ir IMP SHIM PROGRAM ARGS...: the instructions of a one-rank run of a
# benchmark program under callgrind (SHIM empty: untraced).
ir() {
  local imp=$1 shim=$2 prog=$3
  shift 3
  env ${shim:+LD_PRELOAD=$shim} RANKSCALE_TRACE="$tmp/ir.trace" \
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "target/programs/$imp/$prog" "$@" 2>&1 |
    awk '/Collected/ { print $4 }'
}

# ir_table PROGRAM: untraced and traced instructions per call of PROGRAM
# (ITERS REPEATS=1) on one rank, (11,000 - 1,000 iterations) / 20,000
# calls, for both MPIs, and their ratio.
ir_table() {
  local prog=$1 imp none this
  ir_per_call() { echo $(( ($(ir "$1" "$2" "$prog" 11000 1) - $(ir "$1" "$2" "$prog" 1000 1)) / 20000 )); }
  printf '%-8s %10s %10s %10s %10s\n' MPI untraced traced added ratio
  for imp in mpich openmpi; do
    none=$(ir_per_call "$imp" "")
    this=$(ir_per_call "$imp" "$root/target/$imp/release/libpmpi_shim.so")
    printf '%-8s %10s %10s %10s %10s\n' "$imp" "$none" "$this" "$((this - none))" \
      "$(awk -v a="$this" -v u="$none" 'BEGIN { printf "%.2f", a / u }')"
  done
}

if [[ $part == onesided ]]; then
  # The tracer's cost per one-sided call (issue 36): benches/mpi/rmaloop
  # (MPI_Put of 8 bytes and MPI_Win_flush, two calls an iteration, in one
  # passive-target epoch), 2 ranks, untraced and traced in alternating
  # pairs; and its instructions per call under callgrind, one rank putting
  # into its own window, as the instructions part counts them.
  rma_iters="${RMA_ITERS:-20000}"
  rmaloop_ns() { launch "$1" 2 "$2" rmaloop "$rma_iters" 3 2>/dev/null | awk '/iteration_ns/ {print $2}'; }
  echo "one-sided: rmaloop (Put + Win_flush, 2 ranks); added ns per intercepted call = (traced - untraced iteration) / 2"
  printf '%-8s %14s %14s %12s %16s\n' MPI "untraced(ns)" "traced(ns)" "ns/call" "quartiles"
  for imp in mpich openmpi; do
    for ((r = 0; r < ${PINGPONG_PAIRS:-9}; r++)); do pair "$r" rmaloop_ns "$imp"; done |
      awk '{ print $1, $2, ($2 - $1) / 2 }' | pairs_report "$imp"
  done
  if command -v valgrind >/dev/null; then
    echo "one-sided instructions per call: rmaloop on one rank under callgrind, (11,000 - 1,000 iterations) / 20,000 calls"
    ir_table rmaloop
  fi
  exit 0
fi

if [[ $part == io ]]; then
  # The tracer's cost per MPI-IO call (issue 36): benches/mpi/ioloop
  # (MPI_File_write_at of 8 bytes at the rank's block; MPI_File_write
  # through the individual pointer, whose position the tracer asks MPI
  # for, with a seek every 64 writes), 2 ranks, untraced and traced in
  # alternating pairs; and instructions per call under callgrind, one rank.
  io_iters="${IO_ITERS:-20000}"
  ioloop_ns() { launch "$1" 2 "$2" ioloop "$io_iters" 3 2>/dev/null | awk -v k="$3" '$1 == k {print $2}'; }
  for kind in write_at_ns write_ns; do
    echo "MPI-IO: ioloop ${kind%_ns} (8 bytes, 2 ranks); added ns per call = traced - untraced"
    printf '%-8s %14s %14s %12s %16s\n' MPI "untraced(ns)" "traced(ns)" "ns/call" "quartiles"
    for imp in mpich openmpi; do
      each() { ioloop_ns "$1" "$2" "$kind"; }
      for ((r = 0; r < ${PINGPONG_PAIRS:-9}; r++)); do pair "$r" each "$imp"; done |
        awk '{ print $1, $2, $2 - $1 }' | pairs_report "$imp"
    done
  done
  if command -v valgrind >/dev/null; then
    echo "MPI-IO instructions per call: ioloop on one rank under callgrind, (11,000 - 1,000 iterations) / 20,000 writes (and 157 seeks)"
    ir_table ioloop
  fi
  exit 0
fi

if [[ $part == instructions ]]; then
  command -v valgrind >/dev/null || { echo "bench: valgrind is missing (scripts/setup.sh installs it)" >&2; exit 1; }
  per_call() { echo $(( ($(ir "$1" "$2" selfloop 11000) - $(ir "$1" "$2" selfloop 1000)) / 30000 )); }
  echo "instructions per call: selfloop (Irecv, Send, Wait to itself, one rank) under callgrind, (11,000 - 1,000 iterations) / 30,000 calls"
  printf '%-8s %10s %10s %10s %14s %12s\n' MPI untraced traced added baseline-traced "this/base"
  for imp in mpich openmpi; do
    none=$(per_call "$imp" "")
    this=$(per_call "$imp" "$root/target/$imp/release/libpmpi_shim.so")
    base="-" ratio="-"
    if [[ -n ${SHIM_BASELINE:-} ]]; then
      base=$(per_call "$imp" "$SHIM_BASELINE/target/$imp/release/libpmpi_shim.so")
      ratio=$(awk -v a="$this" -v b="$base" -v u="$none" 'BEGIN { printf "%.3f", (a - u) / (b - u) }')
    fi
    printf '%-8s %10s %10s %10s %14s %12s\n' "$imp" "$none" "$this" "$((this - none))" "$base" "$ratio"
  done
  exit 0
fi

if [[ $part == mpich-suite ]]; then
  status=0
  for imp in mpich openmpi; do
    # The test runs its own traced jobs: no bench trace in its environment.
    env -u RANKSCALE_TRACE RANKSCALE_TEST_MPIS="$imp" RANKSCALE_MPICH_SUITE="${2:-full}" \
      RUST_TEST_THREADS=1 scripts/with-mpi "$imp" \
      cargo test --release --quiet -p rankscale --test mpich_suite -- --nocapture || status=1
  done
  for imp in mpich openmpi; do
    if [[ -f target/mpich-suite/$imp/report.md ]]; then
      echo
      cat "target/mpich-suite/$imp/report.md"
    fi
  done
  exit "$status"
fi

if [[ $part == all || $part == overhead ]]; then

echo "ping-pong, 8-byte messages, 2 ranks; added ns per intercepted call = (traced - untraced round trip) / 4"
printf '%-8s %14s %14s %12s %16s\n' MPI "untraced(ns)" "traced(ns)" "ns/call" "quartiles"
for imp in mpich openmpi; do
  for ((r = 0; r < ${PINGPONG_PAIRS:-9}; r++)); do pair "$r" pingpong_ns "$imp"; done |
    awk '{ print $1, $2, ($2 - $1) / 4 }' | pairs_report "$imp"
done

echo "timeline (RANKSCALE_TIMELINE=1): ping-pong as above, traced without and with the timeline; added ns per call = difference / 4"
printf '%-8s %14s %14s %12s %16s\n' MPI "trace(ns)" "+timeline(ns)" "ns/call" "quartiles"
pingpong_tl() { RANKSCALE_TIMELINE=$2 launch "$1" 2 1 pingpong "$iters" 8 3 2>/dev/null | awk '/roundtrip_ns/ {print $2}'; }
for imp in mpich openmpi; do
  for ((r = 0; r < ${PINGPONG_PAIRS:-9}; r++)); do pair "$r" pingpong_tl "$imp"; done |
    awk '{ print $1, $2, ($2 - $1) / 4 }' | pairs_report "$imp"
done
tl_file="$tmp/timeline.trace"
OMPI_MCA_mpi_yield_when_idle=1 RANKSCALE_TRACE=$tl_file RANKSCALE_TIMELINE=1 launch openmpi 16 1 stencil -d 2 -p 4x4 -t torus -i 2000 >/dev/null 2>&1
echo "timeline size, Open MPI 2D torus stencil, 16 ranks, 2000 iterations:"
"$root/target/openmpi/release/rankscale" stats "$tl_file" | grep -E '^(size|timeline)'

echo "2D stencil, 2 ranks (2x1), time of the iteration loop; overhead = (traced - untraced) / untraced"
stencil_args=(-d 2 -p 2x1 -i "${STENCIL_ITERS:-2000}" -n "${STENCIL_N:-512}" -k 10)
loop_time() { STENCIL_TIMING=1 launch "$1" 2 "$2" stencil "${stencil_args[@]}" 2>&1 >/dev/null | awk '/^loop_s/ {print $2}'; }
printf '%-8s %14s %14s %12s %16s\n' MPI "untraced(ms)" "traced(ms)" "overhead(%)" "quartiles(%)"
for imp in mpich openmpi; do
  for ((r = 0; r < runs; r++)); do pair "$r" loop_time "$imp"; done |
    awk '{ print $1 * 1000, $2 * 1000, ($2 - $1) / $1 * 100 }' | pairs_report "$imp"
done

# SHIM_BASELINE=DIR: a checkout of another commit with both shims built
# (target/{mpich,openmpi}/release/libpmpi_shim.so); the same ping-pong and
# stencil traced by its shim and by this one, in alternating pairs, so
# that a change's cost per call is measured in one sitting.
if [[ -n ${SHIM_BASELINE:-} ]]; then
  ab() { # ab CMD IMP X: CMD traced by the baseline shim (X 0) or this one (X 1)
    local cmd=$1 imp=$2
    if [[ $3 == 0 ]]; then "$cmd" "$imp" b; else "$cmd" "$imp" 1; fi
  }
  echo "A/B against SHIM_BASELINE=$SHIM_BASELINE: ping-pong traced by its shim and by this one; ns per call = difference / 4"
  printf '%-8s %14s %14s %12s %16s\n' MPI "baseline(ns)" "this(ns)" "ns/call" "quartiles"
  for imp in mpich openmpi; do
    for ((r = 0; r < ${PINGPONG_PAIRS:-9}; r++)); do pair "$r" ab pingpong_ns "$imp"; done |
      awk '{ print $1, $2, ($2 - $1) / 4 }' | pairs_report "$imp"
  done
  echo "A/B against SHIM_BASELINE: 2D stencil loop traced by its shim and by this one; difference in % of the baseline"
  printf '%-8s %14s %14s %12s %16s\n' MPI "baseline(ms)" "this(ms)" "diff(%)" "quartiles(%)"
  for imp in mpich openmpi; do
    for ((r = 0; r < runs; r++)); do pair "$r" ab loop_time "$imp"; done |
      awk '{ print $1 * 1000, $2 * 1000, ($2 - $1) / $1 * 100 }' | pairs_report "$imp"
  done
fi

fi # the tracer's overhead
if [[ $part == all ]]; then

echo "inter-node merge at MPI_Finalize: weak 2D stencil (8x8 doubles per rank, ${MERGE_ITERS:-1000} iterations)"
printf '%-8s %6s %10s %10s %10s %10s %12s %12s\n' MPI ranks "merge(ms)" "wall(s)" "merge(%)" "trace(B)" "events" "ratio(raw/trace)"
merge_row() { # merge_row IMP NP
  local imp=$1 np=$2 f="$tmp/merge.$1.$2.trace" rs="$root/target/$1/release/rankscale"
  local common=(-x "LD_PRELOAD=$root/target/$imp/release/libpmpi_shim.so" -x "RANKSCALE_TRACE=$f")
  if [[ $imp == mpich ]]; then
    mpirun.mpich -n "$np" -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS self,sm \
      -genv LD_PRELOAD "$root/target/$imp/release/libpmpi_shim.so" -genv RANKSCALE_TRACE "$f" \
      -genv RANKSCALE_YIELD 1 "target/programs/$imp/stencil" -d 2 -i "${MERGE_ITERS:-1000}" -s weak -n 8 >/dev/null 2>&1
  else
    mpirun.openmpi -n "$np" --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader \
      --mca mpi_yield_when_idle 1 "${common[@]}" \
      "target/programs/$imp/stencil" -d 2 -i "${MERGE_ITERS:-1000}" -s weak -n 8 >/dev/null 2>&1
  fi
  local wall merge events ratio
  read -r wall merge < <("$rs" show "$f" | awk '/^wall/ { print $2, $7 }')
  events=$("$rs" stats "$f" | awk 'NR == 1 { print $4 }')
  ratio=$("$rs" stats "$f" | awk '/compression ratio/ { sub("x", "", $NF); print $NF }')
  printf '%-8s %6d %10.1f %10.2f %10.2f %10d %12d %12s\n' "$imp" "$np" "$merge" "$wall" \
    "$(awk -v m="$merge" -v w="$wall" 'BEGIN { print m / 10 / w }')" "$(stat -c %s "$f")" "$events" "$ratio"
}
for np in ${MERGE_RANKS:-16 64 256}; do merge_row openmpi "$np"; done
merge_row mpich 16

echo "replay: cost per replayed event (--no-compute) on the 2D stencil, 2 ranks (2x1), ${REPLAY_ITERS:-20000} iterations"
printf '%-8s %12s %12s %14s %12s\n' MPI "events/rank" "app(s)" "replay(s)" "us/event"
for imp in mpich openmpi; do
  f="$tmp/replay.$imp.trace"
  RANKSCALE_TRACE="$f" launch "$imp" 2 1 stencil -d 2 -p 2x1 -i "${REPLAY_ITERS:-20000}" -n 8 -k 10 >/dev/null 2>&1
  rs="$root/target/$imp/release/rankscale"
  events=$("$rs" stats "$f" | awk 'NR == 1 { print $4 / 2 }')
  app=$("$rs" show "$f" | awk '/^wall/ { print $2 }')
  if [[ $imp == mpich ]]; then
    out=$(mpirun.mpich -n 2 -genv MPIR_CVAR_NOLOCAL 1 -genv UCX_TLS self,sm "target/$imp/release/replay" --no-compute "$f")
  else
    out=$(mpirun.openmpi -n 2 --bind-to none --mca pml ob1 --mca btl self,vader "target/$imp/release/replay" --no-compute "$f")
  fi
  secs=$(awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "s") { print $(i - 1); exit } }' <<<"$out")
  printf '%-8s %12d %12.3f %14.3f %12.3f\n' "$imp" "$events" "$app" "$secs" "$(awk -v s="$secs" -v e="$events" 'BEGIN { print s / e * 1e6 }')"
done

echo "analysis: rankscale analyze on the 2D stencil with its timeline, 64 ranks (Open MPI, 8x8 torus); ratio = analysis / application wall time"
printf '%-8s %8s %12s %12s %12s %12s %8s\n' MPI ranks events "app(s)" "analyze(s)" "us/event" ratio
for it in ${ANALYZE_ITERS:-175 1750}; do
  f="$tmp/analyze.$it.trace"
  OMPI_MCA_mpi_yield_when_idle=1 RANKSCALE_TRACE="$f" RANKSCALE_TIMELINE=1 launch openmpi 64 1 stencil -d 2 -i "$it" -k 0 >/dev/null 2>&1
  rs="$root/target/openmpi/release/rankscale"
  app=$("$rs" show "$f" | awk '/^wall/ { print $2 }')
  t0=$(date +%s.%N)
  events=$("$rs" analyze "$f" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
  t1=$(date +%s.%N)
  awk -v a="$app" -v t0="$t0" -v t1="$t1" -v e="$events" 'BEGIN { s = t1 - t0;
    printf "%-8s %8d %12d %12.3f %12.3f %12.3f %8.3f\n", "openmpi", 64, e, a, s, s / e * 1e6, s / a }'
done

echo "extrapolation: weak 2D mesh stencil traced at 4, 9, 16, 25 ranks (Open MPI), extrapolated to N ranks; ratio = time(N) / time(36)"
printf '%-10s %10s %12s %10s %14s %10s\n' N "time(s)" "ratio(time)" "out(B)" "inputs(B,max)" "events"
ins=()
for g in 2 3 4 5; do
  f="$tmp/extrap.$((g * g)).trace"
  RANKSCALE_TRACE="$f" OMPI_MCA_mpi_yield_when_idle=1 launch openmpi $((g * g)) 1 stencil -d 2 -p "${g}x${g}" -t mesh -s weak -n 8 -i 100 -k 10 >/dev/null 2>&1
  ins+=("$f")
done
rs="$root/target/openmpi/release/rankscale"
maxin=$(stat -c %s "${ins[@]}" | sort -n | tail -1)
base=""
for n in 36 4096 1048576; do
  t0=$(date +%s.%N)
  "$rs" extrap -o "$tmp/extrap.out.$n.trace" --ranks "$n" "${ins[@]}" >/dev/null
  t1=$(date +%s.%N)
  s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
  base=${base:-$s}
  events=$("$rs" show "$tmp/extrap.out.$n.trace" | awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "events,") print $(i - 1) }')
  printf '%-10d %10.3f %12.2f %10d %14d %10s\n' "$n" "$s" "$(awk -v s="$s" -v b="$base" 'BEGIN { print s / b }')" \
    "$(stat -c %s "$tmp/extrap.out.$n.trace")" "$maxin" "$events"
done

fi # the parts before NPB

if [[ $part == all || $part == npb-overhead ]]; then
# NPB's own timed region ("Time in seconds", without start-up and
# MPI_Finalize) and the whole job's wall time (mpirun to exit, the merge at
# MPI_Finalize included), untraced and traced, in back-to-back pairs whose
# order alternates; the ratio is the median of the per-pair ratios, with
# their range.
echo "NPB tracer overhead: Open MPI (mpi_yield_when_idle 1) on $(nproc) cores, ${NPB_PAIRS:-5} pairs; ratio = traced / untraced (median, range)"
printf '%-8s %6s %12s %12s %8s %16s %10s %16s
' bench ranks "timed(s)" "traced(s)" ratio range "wall" "wall range"
npb_run() { # npb_run BINARY NP TRACED: prints "timed-seconds wall-seconds"
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$(cd "$tmp" && OMPI_MCA_mpi_yield_when_idle=1 launch_bin openmpi "$2" "$3" "$1" 2>/dev/null)
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" '/Time in seconds/ { t = $NF } END { print t, b - a }' <<<"$out"
}
for bc in ${NPB_BENCHES:-cg.S cg.W bt.S bt.W lu.S lu.W mg.S mg.W}; do
  b=${bc%.*} class=${bc#*.}
  if ! scripts/npb.sh openmpi "$b" "$class" 4 16 >/dev/null 2>&1; then
    echo "$bc: NPB not available, skipped"
    continue
  fi
  for np in 4 16; do
    bin="$root/target/npb/openmpi/bin/$b.$class.$np"
    for ((r = 0; r < ${NPB_PAIRS:-5}; r++)); do pair "$r" npb_run "$bin" "$np"; done | awk -v name="$bc" -v np="$np" '
      { u[NR] = $1; t[NR] = $3; r[NR] = $3 / $1; w[NR] = $4 / $2 }
      '"$awk_med"'
      END { n = NR; mu = med(u, n); mt = med(t, n); mr = med(r, n); lo = r[1]; hi = r[n]; mw = med(w, n)
        printf "%-8s %6d %12.3f %12.3f %8.3f %7.3f..%-7.3f %10.3f %7.3f..%-7.3f\n", name, np, mu, mt, mr, lo, hi, mw, w[1], w[n] }'
  done
done
fi

if [[ $part == all || $part == snapshots ]]; then
echo "snapshots: NPB CG class W, Open MPI, traced with RANKSCALE_FLUSH_S=60 (default; none in the run) against 0.05 (20 per second), ${NPB_PAIRS:-5} pairs"
printf '%-8s %6s %12s %12s %8s %16s %18s
' bench ranks "60s(s)" "0.05s(s)" ratio range "ms per snapshot"
snap_run() { # snap_run BINARY NP FREQUENT: NPB's timed seconds, snapshots every 60 s (0) or 0.05 s (1)
  local every=60
  (($3)) && every=0.05
  (cd "$tmp" && RANKSCALE_FLUSH_S=$every OMPI_MCA_mpi_yield_when_idle=1 launch_bin openmpi "$2" 1 "$1" 2>/dev/null) |
    awk '/Time in seconds/ { print $NF }'
}
if scripts/npb.sh openmpi cg W 4 16 >/dev/null 2>&1; then
  for np in 4 16; do
    bin="$root/target/npb/openmpi/bin/cg.W.$np"
    for ((r = 0; r < ${NPB_PAIRS:-5}; r++)); do pair "$r" snap_run "$bin" "$np"; done | awk -v np="$np" '
      { d[NR] = $1; f[NR] = $2; r[NR] = $2 / $1 }
      '"$awk_med"'
      END { n = NR; md = med(d, n); mf = med(f, n); mr = med(r, n)
        # Each rank writes about mf / 0.05 snapshots during the timed region.
        printf "%-8s %6d %12.3f %12.3f %8.3f %7.3f..%-7.3f %18.3f\n", "cg.W", np, md, mf, mr, r[1], r[n], (mf - md) / (mf / 0.05) * 1000 }'
  done
else
  echo "cg.W: NPB not available, skipped"
fi
fi

if [[ $part == all || $part == codegen ]]; then
# The benchmark `rankscale codegen` writes of a trace against `replay` of
# the same trace: both issue the trace's calls and sleep its computation;
# the time each reports (rank 0, MPI_Init to MPI_Finalize), alternating,
# median of 3 each; the C file's size against the trace's.
echo "codegen: generated benchmark against replay of the same trace (NPB class W, CG class A, Open MPI, mpi_yield_when_idle 1), median of 3 alternating"
printf '%-8s %6s %10s %10s %10s %8s %8s %10s %8s\n' bench ranks "app(s)" "replay(s)" "bench(s)" "b/replay" "b/app" "C bytes" "trace"
rs="$root/target/openmpi/release/rankscale"
cg_run() { # cg_run TRACE NP BENCH-BINARY WHICH: seconds from MPI_Init to MPI_Finalize (rank 0) of replay (0) or the benchmark (1), as each reports it
  if (($4)); then
    OMPI_MCA_mpi_yield_when_idle=1 launch_bin openmpi "$2" 0 "$3" 2>/dev/null | awk '/^bench:/ { print $4 }'
  else
    OMPI_MCA_mpi_yield_when_idle=1 launch_bin openmpi "$2" 0 "$root/target/openmpi/release/replay" "$1" 2>/dev/null |
      awk '/^replay of/ && !done { for (i = 1; i <= NF; i++) if ($(i + 1) == "s") { print $i; done = 1; break } }'
  fi
}
# CG class A: class W's runs take 0.09 s, where one scheduling hiccup on
# two cores moved a pair's ratio from 0.70 to 1.37 (five pairs, 2026-12-02;
# class A 0.94 to 1.00).
for bcn in cg.A.4 lu.W.4 mg.W.4 bt.W.4 ft.W.4 is.W.4; do
  b=${bcn%%.*} rest=${bcn#*.} class=${rest%%.*} np=${rest#*.}
  if ! scripts/npb.sh openmpi "$b" "$class" "$np" >/dev/null 2>&1; then
    echo "$bcn: NPB not available, skipped"
    continue
  fi
  f="$tmp/cg.$bcn.trace"
  (cd "$tmp" && RANKSCALE_TRACE="$f" OMPI_MCA_mpi_yield_when_idle=1 \
    launch_bin openmpi "$np" 1 "$root/target/npb/openmpi/bin/$bcn" >/dev/null 2>&1)
  "$rs" codegen "$f" -o "$tmp/$bcn.c" 2>/dev/null
  mpicc.openmpi -O2 -Wall -Werror -o "$tmp/$bcn.bench" "$tmp/$bcn.c" -lm
  csize=$(stat -c %s "$tmp/$bcn.c") tsize=$(stat -c %s "$f")
  app=$("$rs" show "$f" | awk '/^wall/ { print $2 }')
  for r in 1 2 3; do pair "$r" cg_run "$f" "$np" "$tmp/$bcn.bench"; done | awk -v name="$bcn" -v np="$np" -v c="$csize" -v t="$tsize" -v app="$app" '
    { u[NR] = $1; t2[NR] = $2 }
    '"$awk_med"'
    END { n = NR; mu = med(u, n); mt = med(t2, n)
      printf "%-8s %6d %10.3f %10.3f %10.3f %8.3f %8.3f %10d %8d\n", name, np, app, mu, mt, mt / mu, mt / app, c, t }'
done
fi

if [[ $part == all || $part == simulate ]]; then
rs="$root/target/openmpi/release/rankscale"
cores=$(nproc)
params="$tmp/loggops.toml"
echo "simulate: LogGOPS parameters of this machine (Open MPI, 2 ranks, shared memory)"
# Calibrated as the runs it predicts go: yielding while idle (busy-polling
# Open MPI measured L = 32 to 37 ns here, yielding 203 to 228 ns).
OMPI_MCA_mpi_yield_when_idle=1 "$rs" calibrate -o "$params" -- mpirun.openmpi -n 2 --bind-to none --mca pml ob1 --mca btl self,vader 2>/dev/null
echo "simulate: predicted against measured run time (rank 0, MPI_Init to MPI_Finalize), Open MPI, mpi_yield_when_idle 1, median of 3;"
echo "  each trace's prediction the median over ${SIM_SEEDS:-3} seeds (simulate --seeds)"
echo "  'untraced' is the application alone (benches/walltime), the target; 'traced' its traced run, which the tracer's"
echo "  cost per call lengthens at many ranks per core; CPU-bound codes with --cores $cores"
# SIM_SEEDS=N (3): each trace is simulated with N seeds and the run of the
# median is taken (`simulate --seeds`), so that a few long computations
# drawn at one seed's places do not decide a row.
# SIM_ONLY=REGEX: only the rows whose "name ranks" match (for example
# 'cg\.W|lu' or 'stencil 2D').
# SIM_BASELINE=PATH: another rankscale binary simulates the same traces
# too (an A/B of two builds in one sitting: its prediction and its error
# against the untraced run in two more columns).
printf '%-22s %6s %11s %11s %13s %10s %10s %8s' program ranks "untraced(s)" "traced(s)" "predicted(s)" "err untr %" "err trac %" "sim(s)"
[[ -n ${SIM_BASELINE:-} ]] && printf ' %13s %10s' "baseline(s)" "err base %"
printf '\n'

sim_row() { # sim_row NAME NP CORES BINARY ARGS...: three untraced and traced runs, alternating, each trace simulated (CORES 0: one per rank)
  local name=$1 np=$2 c=$3 bin=$4
  shift 4
  [[ -n ${SIM_ONLY:-} && ! "$name $np" =~ $SIM_ONLY ]] && return 0
  local pool=()
  # A baseline built before `--seeds` can still simulate with SIM_SEEDS=1.
  ((${SIM_SEEDS:-3} > 1)) && pool=(--seeds "${SIM_SEEDS:-3}")
  ((c > 0)) && pool+=(--cores "$c")
  for r in 1 2 3; do
    local f="$tmp/sim.$r.trace" u
    u=$(cd "$tmp" && OMPI_MCA_mpi_yield_when_idle=1 walltime openmpi "$np" "$bin" "$@") || u=""
    if [[ -z $u ]]; then
      echo "$name: the untraced run printed no time (is target/programs/openmpi/libwalltime.so built?)" >&2
      return 0
    fi
    if ! (cd "$tmp" && RANKSCALE_TRACE="$f" OMPI_MCA_mpi_yield_when_idle=1 launch_bin openmpi "$np" 1 "$bin" "$@" >/dev/null 2>&1); then
      echo "$name: the traced run failed" >&2
      return 0
    fi
    local b=0
    if [[ -n ${SIM_BASELINE:-} ]]; then
      b=$("$SIM_BASELINE" simulate "$f" --params "$params" "${pool[@]}" --json 2>/dev/null | awk '/^  "rank0_ns"/ { gsub(/,/, ""); print $2 / 1e9 }')
      [[ -n $b ]] || echo "$name: $SIM_BASELINE simulated nothing (a build without --seeds wants SIM_SEEDS=1)" >&2
    fi
    "$rs" simulate "$f" --params "$params" "${pool[@]}" --json 2>/dev/null |
      awk -v u="$u" -v b="${b:-0}" '/^  "rank0_ns"/ { gsub(/,/, ""); p = $2 } /^  "traced_ns"/ { gsub(/,/, ""); t = $2 } /^  "elapsed_s"/ { gsub(/,/, ""); e = $2 } END { print u, t / 1e9, p / 1e9, e, b }'
  done | awk -v name="$name" -v np="$np" -v ab="${SIM_BASELINE:+1}" "$awk_med"'
    { u[NR] = $1; t[NR] = $2; p[NR] = $3; e[NR] = $4; b[NR] = $5 }
    END { n = NR; if (n == 0) { printf "%-22s %6d   (no runs)\n", name, np; exit }
      mu = med(u, n); mt = med(t, n); mp = med(p, n); me = med(e, n); mb = med(b, n)
      printf "%-22s %6d %11.3f %11.3f %13.3f %+10.1f %+10.1f %8.3f", name, np, mu, mt, mp, 100 * (mp - mu) / mu, 100 * (mp - mt) / mt, me
      if (ab) printf " %13.3f %+10.1f", mb, 100 * (mb - mu) / mu
      printf "\n" }'
}
npb_sim_rows() { # npb_sim_rows BENCH.CLASS.NP...: a sim_row for each NPB program that builds
  local bcn b rest class np
  for bcn in "$@"; do
    b=${bcn%%.*} rest=${bcn#*.} class=${rest%%.*} np=${rest#*.}
    # sim_row's own SIM_ONLY test, made before the build it would waste.
    [[ -n ${SIM_ONLY:-} && ! "NPB $bcn $np" =~ $SIM_ONLY ]] && continue
    if ! scripts/npb.sh openmpi "$b" "$class" "$np" >/dev/null 2>&1; then
      echo "$bcn: NPB not available, skipped"
      continue
    fi
    sim_row "NPB $bcn" "$np" "$cores" "$root/target/npb/openmpi/bin/$bcn"
  done
}
if [[ "${SIM_ACCURACY:-1}" == 1 ]]; then
# Sleeping takes no core: the halo exchange with sleeps needs no core
# pool; the CPU-bound codes share the machine's cores.
for np in 4 16 64; do
  RANKSCALE_TIMELINE=1 sim_row "latestencil (sleeps)" "$np" 0 "$root/target/programs/openmpi/latestencil" -i 60 -m sender -r 1 -t 20
done
# A core per rank: the machine the LogGOPS model describes, with no
# operating system sharing cores between ranks. CG and MG run class A and
# the stencil 2,000 iterations: their class W runs and 400 iterations took
# 0.01 to 0.35 s, and one sitting's scheduling moved them by 15 to 20 %
# against the next (CG W at 4 ranks, untraced: 0.096 s in one sitting,
# 0.204 s in another of the same day).
sim_row "stencil 2D 2x1" 2 "$cores" "$root/target/programs/openmpi/stencil" -d 2 -p 2x1 -t mesh -i 2000 -k 10 -s weak -n 64
npb_sim_rows cg.A.2 lu.W.2 mg.A.2 ft.A.2
sim_row "stencil 2D 2x2" 4 "$cores" "$root/target/programs/openmpi/stencil" -d 2 -p 2x2 -t mesh -i 2000 -k 10 -s weak -n 64
sim_row "stencil 2D 4x4" 16 "$cores" "$root/target/programs/openmpi/stencil" -d 2 -p 4x4 -t mesh -i 2000 -k 10 -s weak -n 64
sim_row "stencil 2D 8x8" 64 "$cores" "$root/target/programs/openmpi/stencil" -d 2 -p 8x8 -t mesh -i 2000 -k 10 -s weak -n 64
npb_sim_rows cg.W.4 cg.W.16 cg.W.64 cg.A.4 cg.A.16 cg.A.64 lu.W.4 lu.W.16 lu.W.64 bt.W.4 bt.W.16 bt.W.64 mg.W.4 mg.W.16 mg.W.64 mg.A.4 mg.A.16 mg.A.64 ft.A.4 ft.A.16 ft.A.64
fi
echo "simulate: speed (an extrapolated weak 2D stencil; events simulated per second)"
for g in 2x2 3x3 4x4 5x5; do
  n=$((${g%x*} * ${g#*x}))
  RANKSCALE_TRACE="$tmp/st.$n.trace" launch openmpi "$n" 1 stencil -d 2 -p "$g" -t mesh -i 200 -k 3 -s weak -n 64 >/dev/null 2>&1
done
printf '%-10s %-8s %14s %14s %10s %10s\n' ranks mode "events run" "simulated" "time(s)" "Mev/s"
for target in 4096 1048576; do
  "$rs" extrap -o "$tmp/st.x.trace" --ranks "$target" "$tmp"/st.{4,9,16,25}.trace >/dev/null 2>&1
  modes="classes"
  [[ $target == 4096 ]] && modes="ranks classes"
  for m in $modes; do
    /usr/bin/time -f "%M" -o "$tmp/rss" "$rs" simulate "$tmp/st.x.trace" --mode "$m" --json 2>/dev/null | awk -v r="$target" -v m="$m" '
      /^  "events"/ { gsub(/,/, ""); e = $2 } /^  "simulated_events"/ { gsub(/,/, ""); s = $2 }
      /^  "elapsed_s"/ { gsub(/,/, ""); t = $2 } /^  "mode"/ { sub(/^  "mode": "/, ""); sub(/",$/, ""); md = $0 }
      END { printf "%-10d %-8s %14d %14d %10.3f %10.2f   %s\n", r, m, e, s, t, s / t / 1e6, md }'
    echo "           peak memory $(($(cat "$tmp/rss") / 1024)) MB"
  done
done
# What if the network were different: NPB MG class W at 16 ranks (one
# core per rank, computation as traced) predicted as L and G vary, drawn
# as an SVG.
scripts/npb.sh openmpi mg W 16 >/dev/null 2>&1
wf="$tmp/whatif.trace"
(cd "$tmp" && RANKSCALE_TRACE="$wf" OMPI_MCA_mpi_yield_when_idle=1 launch_bin openmpi 16 1 "$root/target/npb/openmpi/bin/mg.W.16" >/dev/null 2>&1)
echo "simulate: what-if, NPB MG class W at 16 ranks: predicted time (ms) by latency L (columns) and bandwidth 1/G (rows)"
lats="100 300 1000 3000 10000 30000 100000"
printf '%-12s' "1/G \\ L(ns)"; for l in $lats; do printf '%10s' "$l"; done; echo
csv="$tmp/whatif.csv"
: >"$csv"
for gbs in 100 10 1 0.1; do
  G=$(awk -v b="$gbs" 'BEGIN { print 1 / b }')
  printf '%-12s' "${gbs} GB/s"
  for l in $lats; do
    t=$("$rs" simulate "$wf" --params "$params" --L "$l" --G "$G" --json 2>/dev/null |
      awk '/^  "time_ns"/ && !done { gsub(/,/, ""); print $2 / 1e6; done = 1 }')
    printf '%10.2f' "$t"
    echo "$gbs $l $t" >>"$csv"
  done
  echo
done
mkdir -p docs/img
awk -v W=640 -v H=400 '
  { g[NR] = $1; l[NR] = $2; t[NR] = $3; if ($3 > tmax) tmax = $3; if (tmin == "" || $3 < tmin) tmin = $3 }
  END {
    x0 = 70; y0 = 30; pw = W - 200; ph = H - 90
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    printf "<text x=\"%d\" y=\"18\" font-size=\"14\">NPB MG class W, 16 ranks: predicted time as the network changes (rankscale simulate)</text>\n", x0
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", x0, y0 + ph, x0 + pw, y0 + ph
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", x0, y0, x0, y0 + ph
    lmin = log(100); lmax = log(100000); ymax = tmax * 1.05
    for (e = 2; e <= 5; e++) { v = 10 ^ e; x = x0 + (log(v) - lmin) / (lmax - lmin) * pw
      printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, y0 + ph + 16, v }
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">latency L (ns, log scale)</text>\n", x0 + pw / 2, y0 + ph + 34
    for (k = 0; k <= 4; k++) { v = ymax * k / 4; y = y0 + ph - v / ymax * ph
      printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", x0 - 6, y + 4, v
      printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, y, x0 + pw, y }
    printf "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">predicted time (ms)</text>\n", y0 + ph / 2, y0 + ph / 2
    # Curves that coincide (a latency-bound run at high bandwidths) must
    # stay visible: each is drawn narrower than the one before it, over
    # it, with its points marked.
    split("#1f77b4 #ff7f0e #2ca02c #d62728", col, " ")
    split("7 4.5 2.5 1.5", wid, " ")
    c = 0; prev = ""; pts = ""
    for (i = 1; i <= NR; i++) {
      if (g[i] != prev) { if (prev != "") printf "\"/>\n%s", pts; c++; prev = g[i]; pts = ""
        printf "<text x=\"%d\" y=\"%d\" fill=\"%s\">1/G = %s GB/s</text>\n", x0 + pw + 12, y0 + 20 * c, col[c], g[i]
        printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", col[c], wid[c] }
      x = x0 + (log(l[i]) - lmin) / (lmax - lmin) * pw; y = y0 + ph - t[i] / ymax * ph
      pts = pts sprintf("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n", x, y, wid[c] / 2 + 1.5, col[c])
      printf "%.1f,%.1f ", x, y }
    printf "\"/>\n%s</svg>\n", pts }' "$csv" >docs/img/whatif.svg
echo "simulate: drew docs/img/whatif.svg"
fi

if [[ $part == all || $part == interchange ]]; then
if scripts/npb.sh openmpi cg W 16 >/dev/null 2>&1; then
  rs="$root/target/openmpi/release/rankscale"
  (cd "$tmp" && RANKSCALE_TIMELINE=1 OMPI_MCA_mpi_yield_when_idle=1 \
    launch_bin openmpi 16 1 "$root/target/npb/openmpi/bin/cg.W.16" >/dev/null 2>&1)
  trace="$tmp/cg.trace"
  mv "$RANKSCALE_TRACE" "$trace"
  secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'; }
  rm -rf "$tmp/cg.otf2"
  t_otf2=$(secs "$rs" export "$trace" --otf2 -o "$tmp/cg.otf2")
  t_perfetto=$(secs "$rs" export "$trace" --perfetto -o "$tmp/cg.json")
  t_import=$(secs "$rs" import --format otf2 "$tmp/cg.otf2" -o "$tmp/cg.back.trace")
  same=yes
  for r in $(seq 0 15); do
    cmp -s <("$rs" show "$trace" --expand "$r") <("$rs" show "$tmp/cg.back.trace" --expand "$r") || same=no
  done
  calls=$("$rs" stats "$trace" | awk 'NR == 1 { print $4 }')
  echo "interchange: NPB CG W, 16 ranks, Open MPI, $calls calls, traced with the timeline"
  printf '%-22s %10s %12s %10s\n' what "time(s)" "size(B)" "ratio"
  tb=$(stat -c %s "$trace"); ab=$(du -sb "$tmp/cg.otf2" | cut -f1); jb=$(stat -c %s "$tmp/cg.json")
  printf '%-22s %10s %12s %10s\n' "trace" "" "$tb" ""
  printf '%-22s %10.3f %12s %10.2f\n' "export --otf2" "$t_otf2" "$ab" "$(awk -v a="$t_otf2" -v b="$t_perfetto" 'BEGIN { print a / b }')"
  printf '%-22s %10.3f %12s %10s\n' "export --perfetto" "$t_perfetto" "$jb" "1.00"
  printf '%-22s %10.3f %12s %10s\n' "import --format otf2" "$t_import" "" ""
  echo "interchange: every rank's calls back from the archive: $same; ratio = time against the Perfetto export"
else
  echo "interchange: NPB not available, skipped"
fi
fi

# timed CMD...: runs CMD under /usr/bin/time -v; prints "wall cpu rss_kB".
timed() {
  /usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '
    /Elapsed/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 }
    END { print w, u + s, m }'
}
# row NAME WALL CPU RSS_KB RATIO: one line of the import/analyze tables
# ($events events).
row() { awk -v n="$1" -v w="$2" -v c="$3" -v m="$4" -v e="$events" -v r="$5" \
  'BEGIN { printf "%-10s %9.2f %9.2f %10.0f %11.2f %11.0f %10s\n", n, w, c, m / 1024, w * 1e6 / e, m * 1024 / e, r }'; }
# import_and_analyze PERTEXT-DIR: the import, analyze and both rows.
import_and_analyze() {
  read -r iw ic im < <(timed "$rs" import --format pertext "$1" -o "$tmp/pub.trace")
  read -r aw ac am < <(timed "$rs" analyze "$tmp/pub.trace")
  events=$("$rs" stats "$tmp/pub.trace" | awk 'NR == 1 { print $4 }')
  printf '%-10s %9s %9s %10s %11s %11s %10s\n' step "wall(s)" "cpu(s)" "rss(MB)" "us/event" "B/event" "ratio"
  row import "$iw" "$ic" "$im" ""
  row analyze "$aw" "$ac" "$am" "$(awk -v a="$aw" -v b="$iw" 'BEGIN { printf "%.2f", a / b }')"
  row both "$(awk -v a="$aw" -v b="$iw" 'BEGIN { print a + b }')" "$(awk -v a="$ac" -v b="$ic" 'BEGIN { print a + b }')" \
    "$(( am > im ? am : im ))" ""
  rm -f "$tmp/pub.trace"
}

if [[ $part == all || $part == published ]]; then
  # The published traces of the pattern-detection papers at their full
  # size (issue 40): smg1024 (7.3 M events, target 30 s and 2 GB for import
  # and analyze together) and bt100A (2.4 M events, target 10 s).
  rs="$root/target/openmpi/release/rankscale"
  shared="$root/../shared/third-party/hpc-mpi-traces"
  for set in smg1024 bt100A; do
    if [[ ! -f $shared/$set.tar.xz ]]; then
      echo "published $set: $shared/$set.tar.xz not found, skipped"
      continue
    fi
    tar xf "$shared/$set.tar.xz" -C "$tmp" "traces/$set"
    echo "published trace $set: import and analyze, $(nproc) cores"
    import_and_analyze "$tmp/traces/$set"
    rm -rf "$tmp/traces/$set"
  done
fi

if [[ $part == all || $part == scale ]]; then
  rs="$root/target/openmpi/release/rankscale"
  ranks=${SCALE_RANKS:-1024}
  python3 scripts/smg_like.py "$tmp/smg" "$ranks" "${SCALE_CYCLES:-90}"
  read -r iw ic im < <(timed "$rs" import --format pertext "$tmp/smg" -o "$tmp/smg.trace")
  read -r aw ac am < <(timed "$rs" analyze "$tmp/smg.trace")
  events=$("$rs" stats "$tmp/smg.trace" | awk 'NR == 1 { print $4 }')
  echo "analysis at scale: SMG2000-shaped pertext trace, $ranks ranks, $events events, $(nproc) cores"
  printf '%-10s %9s %9s %10s %11s %11s %10s
' step "wall(s)" "cpu(s)" "rss(MB)" "us/event" "B/event" "ratio"
  row import "$iw" "$ic" "$im" ""
  row analyze "$aw" "$ac" "$am" "$(awk -v a="$aw" -v b="$iw" 'BEGIN { printf "%.2f", a / b }')"
  row both "$(awk -v a="$aw" -v b="$iw" 'BEGIN { print a + b }')" "$(awk -v a="$ac" -v b="$ic" 'BEGIN { print a + b }')" \
    "$(( am > im ? am : im ))" ""
  echo "analysis at scale: us/event and B/event are wall time and peak RSS over the events; ratio = analyze's wall time against import's"
  rm -rf "$tmp/smg" "$tmp/smg.trace"
fi

if [[ $part == tools-ab ]]; then
  # The trace-reading tools of this build against another build's
  # (TOOLS_BASELINE=PATH to its rankscale binary), in alternating pairs on
  # the same inputs: the published smg128 and amg64 traces (imported once
  # by the baseline, whose format this build reads too: a trace imported
  # by a newer build may be a version the baseline refuses, and its run
  # would time an error). check, analyze and simulate (rank by rank) are the
  # users of the matching engine; the ratio is this build's median wall
  # time over the baseline's, medians of TOOLS_PAIRS (default 5) pairs.
  base="${TOOLS_BASELINE:?tools-ab needs TOOLS_BASELINE=PATH, another build of rankscale}"
  rs="$root/target/openmpi/release/rankscale"
  shared="$root/../shared/third-party/hpc-mpi-traces"
  pairs="${TOOLS_PAIRS:-5}"
  med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'; }
  echo "tools A/B: this build against $base, median of $pairs alternating pairs, $(nproc) cores"
  printf '%-10s %-9s %12s %12s %8s\n' trace tool "base(s)" "this(s)" ratio
  for set in smg128 amg64; do
    [[ -f $shared/$set.tar.xz ]] || { echo "$set: not found, skipped"; continue; }
    tar xf "$shared/$set.tar.xz" -C "$tmp" "traces/$set"
    "$base" import --format pertext "$tmp/traces/$set" -o "$tmp/$set.trace" >/dev/null
    # Both must read it: a failing tool would be timed as a fast one.
    for bin in "$base" "$rs"; do
      "$bin" stats "$tmp/$set.trace" >/dev/null 2>&1 || { echo "$set: $bin cannot read it" >&2; exit 1; }
    done
    for tool in check analyze simulate; do
      args=("$tool" "$tmp/$set.trace")
      [[ $tool == simulate ]] && args+=(--mode ranks --seed 7)
      b=(); t=()
      for ((i = 0; i < pairs; i++)); do
        if ((i % 2 == 0)); then
          b+=("$(secs "$base" "${args[@]}")"); t+=("$(secs "$rs" "${args[@]}")")
        else
          t+=("$(secs "$rs" "${args[@]}")"); b+=("$(secs "$base" "${args[@]}")")
        fi
      done
      mb=$(printf '%s\n' "${b[@]}" | med); mt=$(printf '%s\n' "${t[@]}" | med)
      printf '%-10s %-9s %12s %12s %8s\n' "$set" "$tool" "$mb" "$mt" "$(awk -v a="$mt" -v b="$mb" 'BEGIN { printf "%.3f", a / b }')"
    done
    rm -rf "$tmp/traces/$set" "$tmp/$set.trace"
  done
  exit 0
fi

[[ $part == all || $part == npb ]] || exit 0
echo "NPB: predicted application time at the target (extrapolated from the inputs) against real traced runs there; Open MPI, median of 3"
printf '%-8s %-14s %7s %14s %12s %10s %20s %9s\n' bench inputs target "predicted(s)" "real(s)" "error(%)" "range(s)" "in range"
rs="$root/target/openmpi/release/rankscale"
wall() { "$rs" show "$1" | awk '/^wall/ { print $2 }'; }
npb_timing() { # npb_timing BENCH CLASS "INPUTS" TARGET INPUT-FILE-TEXT EXTRAP-OPTIONS...
  local b=$1 class=$2 inputs=$3 target=$4 input=$5
  shift 5
  # shellcheck disable=SC2086
  if ! scripts/npb.sh openmpi "$b" "$class" $inputs "$target" >/dev/null; then
    echo "$b: NPB not available, skipped"
    return
  fi
  # The benchmark's input file (a custom size), read from the run's
  # directory.
  local cwd="$tmp/npb.$b.run"
  mkdir -p "$cwd"
  [[ -n $input ]] && printf '%b' "$input" >"$cwd/input$b.data"
  local pred=() real=() low=() high=() ins n f rep out
  for rep in 1 2 3; do
    ins=()
    for n in $inputs $target; do
      f="$tmp/npb.$b.$n.$rep.trace"
      (cd "$cwd" && RANKSCALE_TRACE="$f" OMPI_MCA_mpi_yield_when_idle=1 \
        launch_bin openmpi "$n" 1 "$root/target/npb/openmpi/bin/$b.$class.$n" >/dev/null 2>&1)
      if [[ $n == "$target" ]]; then real+=("$(wall "$f")"); else ins+=("$f"); fi
    done
    out=$("$rs" extrap -o "$tmp/npb.$b.x.$rep.trace" --ranks "$target" "$@" "${ins[@]}" 2>/dev/null)
    pred+=("$(wall "$tmp/npb.$b.x.$rep.trace")")
    # The range of the laws fitted with one input left out.
    low+=("$(awk '/one input left out give/ { print $(NF-3) }' <<<"$out")")
    high+=("$(awk '/one input left out give/ { print $(NF-1) }' <<<"$out")")
  done
  local p r lo hi
  p=$(printf '%s\n' "${pred[@]}" | q 0.5)
  r=$(printf '%s\n' "${real[@]}" | q 0.5)
  lo=$(printf '%s\n' "${low[@]}" | q 0.5)
  hi=$(printf '%s\n' "${high[@]}" | q 0.5)
  printf '%-8s %-14s %7d %14.3f %12.3f %10.1f %20s %9s\n' "$b.$class" "${inputs// /,}" "$target" "$p" "$r" \
    "$(awk -v p="$p" -v r="$r" 'BEGIN { print (p - r) / r * 100 }')" "$lo-$hi" \
    "$(awk -v l="$lo" -v h="$hi" -v r="$r" 'BEGIN { print (l <= r && r <= h) ? "yes" : "no" }')"
}
npb_timing ep S "4 8 16" 32 ""
npb_timing ft S "4 8 16" 32 ""
npb_timing is S "4 8 16" 32 "" --lossy
npb_timing cg S "4 8 16 32" 64 "" --plugin extrap/specs/npb-cg.toml
# LU: class A's grid, 2 SSOR iterations (inputlu.data: two comment lines
# before each value); BT and SP: 5 steps on class A's 64^3 grid, from
# inputs whose cells differ in size (3x3, 5x5, 6x6 ranks) to 7x7.
npb_timing lu A "4 8 16 32 64" 128 \
  "c\nc\n1 2\nc\nc\n2\nc\nc\n2.0e+00\nc\nc\n1.2\nc\nc\n1.0e-08 1.0e-08 1.0e-08 1.0e-08 1.0e-08\nc\nc\n64 64 64\n"
npb_timing bt A "9 25 36" 49 "5\n0.0008\n64 64 64\n" --plugin extrap/specs/npb-bt.toml --plugin-param n=64
npb_timing sp A "9 25 36" 49 "5\n0.0015\n64 64 64\n" --plugin extrap/specs/npb-sp.toml --plugin-param n=64
