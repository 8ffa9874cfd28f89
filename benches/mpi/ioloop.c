/* MPI-IO calls in a loop: the tracer's cost per call on an I/O-heavy
 * program (issue 36).
 *
 *   ioloop ITERS REPEATS
 *
 * Every rank opens one scratch file ($TMPDIR, else /tmp; deleted on
 * close) on MPI_COMM_WORLD and writes 8 bytes ITERS times, first with
 * MPI_File_write_at at its own offset (an explicit offset: the tracer
 * records it as it is), then with MPI_File_write through its individual
 * file pointer (the tracer asks MPI for the pointer's position before each
 * call), seeking back to its block every 64 writes (a call in 64 more).
 * Prints, from rank 0, the best (minimum over REPEATS) time of one call
 * of each loop in ns. One rank alone needs no launcher, for the
 * instruction count under callgrind. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  int repeats = argc > 2 ? atoi(argv[2]) : 3;
  long long pid = getpid();
  MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  char path[512];
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/rankscale-ioloop-%lld.dat", tmp && *tmp ? tmp : "/tmp", pid);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                    MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
    fprintf(stderr, "ioloop: cannot open %s\n", path);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const MPI_Offset block = 64 * 8;
  const MPI_Offset mine = rank * block;
  double value = 1.0, best_at = 1e30, best_ptr = 1e30;
  for (int r = 0; r < repeats; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
      MPI_File_write_at(fh, mine + (i % 64) * 8, &value, 1, MPI_DOUBLE, MPI_STATUS_IGNORE);
    double t = (MPI_Wtime() - t0) / (double)iters;
    if (t < best_at) best_at = t;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
      if (i % 64 == 0) MPI_File_seek(fh, mine, MPI_SEEK_SET);
      MPI_File_write(fh, &value, 1, MPI_DOUBLE, MPI_STATUS_IGNORE);
    }
    t = (MPI_Wtime() - t0) / (double)iters;
    if (t < best_ptr) best_ptr = t;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("write_at_ns %.1f\nwrite_ns %.1f\n", best_at * 1e9, best_ptr * 1e9);
  MPI_File_close(&fh);
  MPI_Finalize();
  return 0;
}
