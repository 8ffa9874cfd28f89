/*
 * selfloop N: N iterations of MPI_Irecv, MPI_Send and MPI_Wait of one
 * double to this rank itself, on one rank. Run alone (a singleton, no
 * mpirun), nothing in it waits for another process, so the instructions it
 * executes are the same from run to run: `scripts/bench.sh instructions`
 * counts them under callgrind, untraced and traced, to give the tracer's
 * cost per call in instructions, a figure that the noise of a shared
 * machine does not move.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int n = argc > 1 ? atoi(argv[1]) : 1000;
    double x = 1.0, y = 0.0;
    MPI_Request r;
    for (int i = 0; i < n; i++) {
        MPI_Irecv(&y, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &r);
        MPI_Send(&x, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    if (y != x) {
        fprintf(stderr, "selfloop: received %g, sent %g\n", y, x);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return 0;
}
