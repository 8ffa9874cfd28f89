/* Call sites across rebuilds (see tests/callsite.rs).
 *
 *   rebuild ITERS
 *
 * Built several times from this one file, as NPB builds one binary per
 * rank count: NPROCS changes array sizes and loop bounds the compiler
 * unrolls, and PAD changes how much code sits before and inside main,
 * without moving any line. The calls' code addresses differ between the
 * builds; their source lines do not, and neither must their call-site
 * signatures. Not built by build.sh: the test compiles it itself. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NPROCS
#define NPROCS 4
#endif
#ifndef PAD
#define PAD 1
#endif

static double grid[NPROCS * 64];

/* Neighbouring code whose size follows PAD: it moves main. */
__attribute__((noinline)) static double pad(double x) { for (int i = 0; i < PAD * 7; i++) { x = x * 1.0001 + (double)(i % (PAD + 2)); grid[i % (NPROCS * 64)] += x; } return x; }

/* Called from two lines; small enough for -O2 to inline. */
static inline void exchange(int rank, int size, double *v) {
  MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (size > 1) MPI_Sendrecv_replace(v, 1, MPI_DOUBLE, (rank + 1) % size, 7, (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 3;
  double v = rank;
  for (int it = 0; it < iters; it++) {
    for (int i = 0; i < NPROCS * 64; i++) grid[i] += pad(v + i * (PAD % 3));
    exchange(rank, size, &v);
    MPI_Barrier(MPI_COMM_WORLD); if (PAD > 1) v += pad(grid[it % NPROCS]);
    exchange(rank, size, &v);
  }
  MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("rebuild done %g\n", grid[0] > 0 ? 1.0 : 0.0);
  MPI_Finalize();
  return 0;
}
