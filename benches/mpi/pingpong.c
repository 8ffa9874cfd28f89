/* Ping-pong latency of small messages between ranks 0 and 1.
 *
 *   pingpong ITERS BYTES REPEATS
 *
 * Prints, from rank 0, the best (minimum over REPEATS) time of one round
 * trip in ns. Each round trip is four MPI calls (Send and Recv on each
 * rank), so `rankscale`'s benchmark divides the traced-minus-untraced
 * difference by four to get the cost added per intercepted call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  int bytes = argc > 2 ? atoi(argv[2]) : 8;
  int repeats = argc > 3 ? atoi(argv[3]) : 5;
  char *buf = calloc((size_t)bytes + 1, 1);
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
      if (rank == 0) {
        MPI_Send(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      }
    }
    double t = (MPI_Wtime() - t0) / (double)iters;
    if (t < best) best = t;
  }
  if (rank == 0) printf("roundtrip_ns %.1f\n", best * 1e9);
  free(buf);
  MPI_Finalize();
  return 0;
}
