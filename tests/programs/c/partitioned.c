/*
 * partitioned ITERS
 *
 * MPI 4 partitioned point-to-point (issue 39) on a ring: every rank sends
 * its buffer to the next rank in SPART partitions and receives the
 * previous rank's in RPART partitions (the two sides cut the same 48
 * doubles differently), ITERS times. Open MPI 4.1 has no partitioned
 * communication (MPI_VERSION 3): there the program says so and does
 * nothing else (the manifest runs it on MPICH only).
 *
 *  1. A duplicate of the world by MPI_Comm_idup_with_info (MPI 4), with
 *     MPI_Wait. On it, MPI_Psend_init to rank+1 (SPART=4 partitions of
 *     12 doubles, tag 5) and MPI_Precv_init from rank-1 (RPART=3
 *     partitions of 16 doubles, tag 5), once.
 *  2. Each iteration: an ordinary MPI_Sendrecv of one int on the same
 *     communicator, peers and tag (partitioned messages must not match
 *     it), MPI_Startall of both requests, then the partitions made ready
 *     in one of three ways by iteration modulo 3: MPI_Pready of each in
 *     reverse order; MPI_Pready_range of all; MPI_Pready_list of
 *     {2, 0, 3, 1}. The receiver polls MPI_Parrived on each of its
 *     partitions until it arrived and checks it, then MPI_Waitall.
 *  3. MPI_Request_free of both; MPI_Comm_free of the duplicate.
 *
 * Per-rank calls (MPICH): Init 1, Finalize 1, Comm_idup_with_info 1,
 *   Wait 1, Comm_free 1, Psend_init 1, Precv_init 1,
 *   Sendrecv ITERS, Startall ITERS, Waitall ITERS, Request_free 2,
 *   Pready 4 * ceil(ITERS/3), Pready_range ceil((ITERS-1)/3),
 *   Pready_list ceil((ITERS-2)/3), Parrived at least 3 * ITERS.
 */
#include "common.h"

#define SPART 4
#define RPART 3
#define TOTAL 48

/* The value of element `i` of rank `r`'s buffer at iteration `it`. */
static inline double val(int r, int it, int i) { return r * 1000.0 + it * 100.0 + i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const int iters = argc > 1 ? parse_int(argv[1], "ITERS", 0) : 6;
#if MPI_VERSION < 4
    (void)iters;
    if (rank == 0)
        printf("partitioned: MPI %d.%d has no partitioned communication: skipped\n", MPI_VERSION,
               MPI_SUBVERSION);
#else
    const int next = (rank + 1) % np, prev = (rank + np - 1) % np;
    double sbuf[TOTAL], rbuf[TOTAL];
    MPI_Request r[2];
    MPI_Comm comm;
    MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &comm, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Psend_init(sbuf, SPART, TOTAL / SPART, MPI_DOUBLE, next, 5, comm, MPI_INFO_NULL, &r[0]);
    MPI_Precv_init(rbuf, RPART, TOTAL / RPART, MPI_DOUBLE, prev, 5, comm, MPI_INFO_NULL, &r[1]);
    for (int it = 0; it < iters; it++) {
        int out = rank * 10 + it, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, next, 5, &in, 1, MPI_INT, prev, 5, comm, MPI_STATUS_IGNORE);
        CHECK(in == prev * 10 + it, "ordinary message %d at iteration %d", in, it);
        for (int i = 0; i < TOTAL; i++) {
            sbuf[i] = val(rank, it, i);
            rbuf[i] = -1.0;
        }
        MPI_Startall(2, r);
        if (it % 3 == 0) {
            for (int p = SPART - 1; p >= 0; p--)
                MPI_Pready(p, r[0]);
        } else if (it % 3 == 1) {
            MPI_Pready_range(0, SPART - 1, r[0]);
        } else {
            int list[SPART] = {2, 0, 3, 1};
            MPI_Pready_list(SPART, list, r[0]);
        }
        for (int p = 0; p < RPART; p++) {
            int flag = 0;
            while (!flag)
                MPI_Parrived(r[1], p, &flag);
            for (int i = p * (TOTAL / RPART); i < (p + 1) * (TOTAL / RPART); i++)
                CHECK(rbuf[i] == val(prev, it, i), "element %d is %g at iteration %d", i, rbuf[i],
                      it);
        }
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    MPI_Comm_free(&comm);
    if (rank == 0) printf("partitioned: %d iterations on %d ranks: ok\n", iters, np);
#endif
    MPI_Finalize();
    return 0;
}
