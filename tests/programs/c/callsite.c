/* Call-site signature test program (see tests/callsite.rs).
 *
 *   callsite ITERS
 *
 * Each iteration calls MPI_Barrier from line A, from line B, and twice
 * through helper(), from two different lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void helper(void) {
  MPI_Barrier(MPI_COMM_WORLD);
  __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int iters = argc > 1 ? atoi(argv[1]) : 4;
  for (int i = 0; i < iters; i++) {
    MPI_Barrier(MPI_COMM_WORLD); /* line A */
    MPI_Barrier(MPI_COMM_WORLD); /* line B */
    helper();                    /* caller 1 */
    helper();                    /* caller 2 */
  }
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("callsite done\n");
  MPI_Finalize();
  return 0;
}
