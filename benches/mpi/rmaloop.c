/* One-sided calls in a loop: the tracer's cost per call on an RMA-heavy
 * program (issue 36).
 *
 *   rmaloop ITERS REPEATS
 *
 * Rank 0 puts 8 bytes into the window of rank 1 (of itself when it runs
 * alone) and flushes, ITERS times, inside one passive-target epoch
 * (MPI_Win_lock_all ... MPI_Win_unlock_all) on a window made by
 * MPI_Win_allocate; the other ranks wait in a barrier. Each iteration is
 * two MPI calls (MPI_Put, MPI_Win_flush), so `scripts/bench.sh onesided`
 * divides the traced-minus-untraced time of an iteration by two. Prints,
 * from rank 0, the best (minimum over REPEATS) time of one iteration in
 * ns. One rank alone needs no launcher, for the instruction count under
 * callgrind. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  int repeats = argc > 2 ? atoi(argv[2]) : 3;
  double *base = NULL, value = 1.0;
  MPI_Win win;
  MPI_Win_allocate(8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  const int target = np > 1 ? 1 : 0;
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      MPI_Win_lock_all(0, win);
      double t0 = MPI_Wtime();
      for (long i = 0; i < iters; i++) {
        MPI_Put(&value, 1, MPI_DOUBLE, target, 0, 1, MPI_DOUBLE, win);
        MPI_Win_flush(target, win);
      }
      double t = (MPI_Wtime() - t0) / (double)iters;
      MPI_Win_unlock_all(win);
      if (t < best) best = t;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("iteration_ns %.1f\n", best * 1e9);
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
