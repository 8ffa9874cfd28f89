/*
 * procnull ITERS
 *
 * MPI_PROC_NULL peers and cancelled receives (np >= 2), whose statuses
 * carry no match: per iteration MPI_Recv from MPI_PROC_NULL with
 * MPI_ANY_TAG, MPI_Irecv from MPI_PROC_NULL with MPI_ANY_TAG and its
 * MPI_Wait, MPI_Probe and MPI_Mprobe from MPI_PROC_NULL (and MPI_Mrecv of
 * the MPI_MESSAGE_NO_PROC it returns), MPI_Sendrecv with both peers
 * MPI_PROC_NULL, MPI_Send to MPI_PROC_NULL; then a wildcard MPI_Irecv
 * (any source, tag 77) that nothing matches is cancelled (MPI_Cancel,
 * MPI_Wait, MPI_Test_cancelled must say so), and after an MPI_Barrier a
 * ring exchange on tag 77 (MPI_Send to the right, MPI_Recv from any
 * source) shows the cancelled receive took no message.
 *
 * Per-rank calls: Init 1, Finalize 1, and per iteration Recv 2, Irecv 2,
 *   Wait 2, Probe 1, Mprobe 1, Mrecv 1, Sendrecv 1, Send 2, Barrier 1;
 *   without detail Comm_rank 1, Comm_size 1, and per iteration Cancel 1,
 *   Test_cancelled 1; Reduce 1.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 2) procnull ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    const MPI_Comm comm = MPI_COMM_WORLD;
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    long long sum = 0;
    for (int it = 0; it < iters; it++) {
        int x = -1, y = -1;
        MPI_Status st;
        MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm, &st);
        if (st.MPI_SOURCE != MPI_PROC_NULL || st.MPI_TAG != MPI_ANY_TAG) {
            fprintf(stderr, "rank %d: a receive from MPI_PROC_NULL returned source %d tag %d\n", rank,
                    st.MPI_SOURCE, st.MPI_TAG);
            MPI_Abort(comm, 2);
        }
        MPI_Request r;
        MPI_Irecv(&y, 1, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm, &r);
        /* (MPICH 4.0.2 returns source 0 and tag 0 here, untraced too: the
         * status of this wait is not checked.) */
        MPI_Wait(&r, &st);
        MPI_Probe(MPI_PROC_NULL, MPI_ANY_TAG, comm, &st);
        MPI_Message msg;
        MPI_Mprobe(MPI_PROC_NULL, 5, comm, &msg, &st);
        MPI_Mrecv(&y, 1, MPI_INT, &msg, &st);
        MPI_Sendrecv(&x, 1, MPI_INT, MPI_PROC_NULL, 3, &y, 1, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm,
                     &st);
        MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 4, comm);

        /* A wildcard receive that nothing matches, cancelled. */
        int z = -1;
        MPI_Irecv(&z, 1, MPI_INT, MPI_ANY_SOURCE, 77, comm, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        int cancelled = 0;
        MPI_Test_cancelled(&st, &cancelled);
        if (!cancelled) {
            fprintf(stderr, "rank %d: the receive was not cancelled\n", rank);
            MPI_Abort(comm, 3);
        }
        MPI_Barrier(comm);
        int token = rank * 100 + it, got = -1;
        MPI_Send(&token, 1, MPI_INT, right, 77, comm);
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 77, comm, &st);
        if (got != left * 100 + it || st.MPI_SOURCE != left) {
            fprintf(stderr, "rank %d: got %d from %d, want %d from %d\n", rank, got, st.MPI_SOURCE,
                    left * 100 + it, left);
            MPI_Abort(comm, 4);
        }
        sum += got;
    }
    long long total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, comm);
    if (rank == 0) printf("procnull: np=%d iters=%d total=%lld\n", np, iters, total);
    MPI_Finalize();
    return 0;
}
