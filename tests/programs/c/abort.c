/* MPI_Abort test program (see tests/robustness.rs).
 *
 *   abort CODE
 *
 * Every rank makes one Barrier; then rank 0 prints a line and calls
 * MPI_Abort(MPI_COMM_WORLD, CODE) while the others wait in a second
 * Barrier. The job's exit code is MPI's, traced or not. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int code = argc > 1 ? atoi(argv[1]) : 3;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("aborting with %d\n", code);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
