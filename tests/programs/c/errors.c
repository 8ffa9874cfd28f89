/*
 * errors ITERS
 *
 * Calls that return an error under MPI_ERRORS_RETURN (issue 39, cause 6):
 * they did nothing, so the trace records them as errors (with their
 * class), `check` passes over them and replay does not issue them. Left
 * as if they succeeded, a failed MPI_Comm_free of MPI_COMM_SELF was
 * replayed and aborted the replay, and a failed send was a message never
 * received.
 *
 *  1. MPI_Comm_set_errhandler(MPI_ERRORS_RETURN) on the world and on
 *     MPI_COMM_SELF (errors of no object go to one of them, depending on
 *     the MPI version).
 *  2. Per iteration, each call checked to fail with its class:
 *     MPI_Comm_free of a copy of MPI_COMM_SELF (MPI_ERR_COMM),
 *     MPI_Comm_dup of MPI_COMM_NULL (MPI_ERR_COMM),
 *     MPI_Send to rank np + 5 (MPI_ERR_RANK),
 *     MPI_Irecv from rank np + 5 (MPI_ERR_RANK),
 *     MPI_Allreduce with MPI_OP_NULL (MPI_ERR_OP);
 *     then the same calls done right: MPI_Comm_dup of the world, a ring
 *     MPI_Sendrecv and an MPI_Allreduce on the duplicate (checked), and
 *     MPI_Comm_free of it.
 *
 * Per-rank calls: Init 1, Finalize 1, Comm_rank 1, Comm_size 1,
 *   Comm_set_errhandler 2, Error_class 5*ITERS, Comm_free 2*ITERS,
 *   Comm_dup 2*ITERS, Send ITERS, Irecv ITERS, Allreduce 2*ITERS,
 *   Sendrecv ITERS.
 */
#include "common.h"

/* Checks that a call failed with the error class `want`. */
static void failed(int rc, int want, const char *what)
{
    int class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &class);
    CHECK(rc != MPI_SUCCESS && class == want, "%s returned %d (class %d), not class %d", what,
          rc, class, want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP errors ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    const int nobody = np + 5;
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;

    for (int it = 0; it < iters; it++) {
        MPI_Comm self = MPI_COMM_SELF, dup = MPI_COMM_NULL;
        failed(MPI_Comm_free(&self), MPI_ERR_COMM, "MPI_Comm_free(MPI_COMM_SELF)");
        failed(MPI_Comm_dup(MPI_COMM_NULL, &dup), MPI_ERR_COMM, "MPI_Comm_dup(MPI_COMM_NULL)");
        int x = rank, y = -1;
        failed(MPI_Send(&x, 1, MPI_INT, nobody, 7, MPI_COMM_WORLD), MPI_ERR_RANK,
               "MPI_Send to no rank");
        MPI_Request req = MPI_REQUEST_NULL;
        failed(MPI_Irecv(&y, 1, MPI_INT, nobody, 7, MPI_COMM_WORLD, &req), MPI_ERR_RANK,
               "MPI_Irecv from no rank");
        failed(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP,
               "MPI_Allreduce with MPI_OP_NULL");

        MPI_Comm c;
        CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c) == MPI_SUCCESS, "MPI_Comm_dup failed");
        int got = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, right, it, &got, 1, MPI_INT, left, it, c, MPI_STATUS_IGNORE);
        CHECK(got == left, "received %d from %d", got, left);
        int sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, c);
        CHECK(sum == np * (np - 1) / 2, "sum %d", sum);
        CHECK(MPI_Comm_free(&c) == MPI_SUCCESS, "MPI_Comm_free failed");
    }
    if (rank == 0) printf("errors: %d iterations on %d ranks: ok\n", iters, np);
    MPI_Finalize();
    return 0;
}
