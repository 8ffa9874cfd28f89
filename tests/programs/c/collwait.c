/*
 * collwait [-r RANK] [-d DELAY_MS] [-i ITERS] [-m delay|none]     (np >= 3)
 *
 *   -r RANK      the delayed rank R (default 1; 1 <= R < np: R = 0 is
 *                refused because rank 0 is the root of MPI_Reduce and
 *                MPI_Gather, which must be early)
 *   -d DELAY_MS  the delay D in milliseconds (default 40, 0 allowed)
 *   -i ITERS     iterations (default 3)
 *   -m MODE      delay (default): ranks sleep D before each collective as
 *                below; none: the same calls without any sleep
 *
 * Wait states in collective operations with a delayed rank R.  Each
 * iteration makes these calls, in this order, with nothing between them but
 * the sleeps of D (sleep_us):
 *   (a) R sleeps D; MPI_Barrier                       -> Wait at Barrier
 *   (b) R sleeps D; MPI_Allreduce (2 ints, sum)       -> Wait at N x N
 *       R sleeps D; MPI_Allgather (2 ints per rank)   -> Wait at N x N
 *       R sleeps D; MPI_Alltoall (2 ints per pair)    -> Wait at N x N
 *   (c) R sleeps D; MPI_Bcast, root R (4 ints)        -> Late Broadcast
 *   (d) every rank but 0 sleeps D; MPI_Reduce, root 0 (2 ints, sum)
 *                                                     -> Early Reduce
 *   (e) R sleeps D; MPI_Scatter, root R (2 ints)      -> Late Broadcast
 *       every rank but 0 sleeps D; MPI_Gather, root 0 (2 ints)
 *                                                     -> Early Reduce
 * Early Reduce (Scalasca) is the root's wait until the FIRST contributor
 * enters, before which no data can arrive, so all contributors are late in
 * (d) and (e).  All messages are at most 8 bytes per peer, far below both
 * MPIs' eager limits.  Every rank checks every result it receives (values
 * are a hash of (operation, iteration, sender, receiver, index)); rank 0
 * prints a hash of the data it received.
 *
 * Expected waits (the rest of each call is the operation's own short
 * cost).  Take t = 0 when R starts its sleep of (a).  The late rank enters
 * the k-th collective of the iteration at k*D, everybody else at (k-1)*D:
 * a non-root leaves MPI_Reduce / MPI_Gather as soon as its contribution is
 * sent (eager) and a non-root of MPI_Bcast / MPI_Scatter when its data
 * arrives, so nobody runs ahead.
 *
 *   call (late rank enters at)      who waits about D        metric
 *   Barrier (1D)                    every rank but R          Wait at Barrier
 *   Allreduce, Allgather, Alltoall  every rank but R          Wait at N x N
 *   Bcast (5D), root R              every rank but R          Late Broadcast
 *   Reduce (6D), root 0             rank 0                    Early Reduce
 *   Scatter (7D), root R            every rank but R          Late Broadcast
 *   Gather (8D), root 0             rank 0                    Early Reduce
 *
 * In iteration 0 the Barrier also absorbs the skew of MPI_Init.  An
 * iteration takes about 8 D, and with -m none all waits are ~0.  A rank
 * between a contributor and root 0 in the reduction / gather tree may also
 * wait briefly inside MPI_Reduce / MPI_Gather for its children; that is
 * inside the operation, not an Early Reduce.
 *
 * MPICH busy-polls without yielding, so with more ranks than cores every
 * blocking collective also contains scheduling delays of the spinning
 * peers (0..40 ms per call measured with -m none on 2 cores); Open MPI with
 * mpi_yield_when_idle matches the table within 0.5 ms.
 *
 * With COLLWAIT_TIMING set, every rank prints on stderr one line per call:
 * "collwait-timing RANK ITER CALL enter_s dur_ms", enter_s from
 * CLOCK_MONOTONIC; stdout stays deterministic.
 *
 * Per-rank calls: Init 1, Finalize 1 and ITERS each of Barrier, Allreduce,
 * Allgather, Alltoall, Bcast, Reduce, Scatter, Gather, whatever the mode.
 */
#include "common.h"
#include <unistd.h>

enum { C_BARRIER, C_ALLREDUCE, C_ALLGATHER, C_ALLTOALL, C_BCAST, C_REDUCE, C_SCATTER, C_GATHER, NCALLS };
static const char *const call_names[NCALLS] = {"Barrier", "Allreduce", "Allgather", "Alltoall",
                                               "Bcast",   "Reduce",    "Scatter",   "Gather"};

static int rank, np;
static const MPI_Comm comm = MPI_COMM_WORLD;

/* Element i of what `from` contributes for `to` in call op of iteration it:
 * a 16-bit value, so that sums over ranks fit an int. */
static int val(int op, int it, int from, int to, int i)
{
    uint64_t k = ((uint64_t)op << 56) ^ ((uint64_t)it << 40) ^ ((uint64_t)from << 24) ^ ((uint64_t)to << 8) ^
                 (uint64_t)i;
    return (int)(mix64(k) & 0xffff);
}

static uint64_t hash;
static void absorb(int v) { hash = mix64(hash ^ (uint64_t)(uint32_t)v); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(void)
{
    if (rank == 0) fprintf(stderr, "usage: collwait [-r RANK] [-d DELAY_MS] [-i ITERS] [-m delay|none]   (np >= 3)\n");
    abort_config();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);

    int drank = 1, delay_ms = 40, iters = 3, delay_mode = 1, opt;
    while ((opt = getopt(argc, argv, "r:d:i:m:")) != -1) {
        switch (opt) {
        case 'r': drank = parse_int(optarg, "RANK", 1); break;
        case 'd': delay_ms = parse_int(optarg, "DELAY_MS", 1); break;
        case 'i': iters = parse_int(optarg, "ITERS", 1); break;
        case 'm':
            if (!strcmp(optarg, "delay")) delay_mode = 1;
            else if (!strcmp(optarg, "none")) delay_mode = 0;
            else usage();
            break;
        default: usage();
        }
    }
    if (optind != argc) usage();
    if (np < 3) {
        if (rank == 0) fprintf(stderr, "collwait: needs at least 3 processes, got %d\n", np);
        abort_config();
    }
    if (drank == 0 || drank >= np) {
        if (rank == 0)
            fprintf(stderr,
                    "collwait: the delayed rank must be in 1..%d (got %d); rank 0 is the early root of "
                    "MPI_Reduce and MPI_Gather and cannot be the delayed rank\n",
                    np - 1, drank);
        abort_config();
    }

    const int delayed = delay_mode && rank == drank;
    const long d_us = 1000L * delay_ms;
    int *sbuf = malloc(sizeof(int) * 2 * (size_t)np), *rbuf = malloc(sizeof(int) * 2 * (size_t)np);
    double *tlog = malloc(sizeof(double) * 2 * NCALLS * (size_t)iters);
    if (!sbuf || !rbuf || !tlog) MPI_Abort(comm, 3);
    int bc[4], red[2], sc[2];

/* The rank sleeps D when `sleeps`, then the call is made and timed. */
#define CALL_WHEN(sleeps, op, stmt)                           \
    do {                                                      \
        if (sleeps) sleep_us(d_us);                           \
        double t0_ = now_s();                                 \
        stmt;                                                 \
        tlog[2 * (NCALLS * it + (op))] = t0_;                 \
        tlog[2 * (NCALLS * it + (op)) + 1] = now_s() - t0_;  \
    } while (0)
/* R sleeps D before the call. */
#define CALL(op, stmt) CALL_WHEN(delayed, op, stmt)
    /* Every non-root sleeps D before Reduce and Gather (root 0 is early). */
    const int contributor_late = delay_mode && rank != 0;

    for (int it = 0; it < iters; it++) {
        /* (a) */
        CALL(C_BARRIER, MPI_Barrier(comm));

        /* (b) */
        for (int i = 0; i < 2; i++) sbuf[i] = val(C_ALLREDUCE, it, rank, 0, i);
        CALL(C_ALLREDUCE, MPI_Allreduce(sbuf, rbuf, 2, MPI_INT, MPI_SUM, comm));
        for (int i = 0; i < 2; i++) {
            int e = 0;
            for (int r = 0; r < np; r++) e += val(C_ALLREDUCE, it, r, 0, i);
            CHECK(rbuf[i] == e, "iteration %d Allreduce[%d] = %d, expected %d", it, i, rbuf[i], e);
            absorb(rbuf[i]);
        }

        for (int i = 0; i < 2; i++) sbuf[i] = val(C_ALLGATHER, it, rank, 0, i);
        CALL(C_ALLGATHER, MPI_Allgather(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, comm));
        for (int r = 0; r < np; r++)
            for (int i = 0; i < 2; i++) {
                int e = val(C_ALLGATHER, it, r, 0, i);
                CHECK(rbuf[2 * r + i] == e, "iteration %d Allgather from %d [%d] = %d, expected %d", it, r, i,
                      rbuf[2 * r + i], e);
                absorb(rbuf[2 * r + i]);
            }

        for (int r = 0; r < np; r++)
            for (int i = 0; i < 2; i++) sbuf[2 * r + i] = val(C_ALLTOALL, it, rank, r, i);
        CALL(C_ALLTOALL, MPI_Alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, comm));
        for (int r = 0; r < np; r++)
            for (int i = 0; i < 2; i++) {
                int e = val(C_ALLTOALL, it, r, rank, i);
                CHECK(rbuf[2 * r + i] == e, "iteration %d Alltoall from %d [%d] = %d, expected %d", it, r, i,
                      rbuf[2 * r + i], e);
                absorb(rbuf[2 * r + i]);
            }

        /* (c) */
        for (int i = 0; i < 4; i++) bc[i] = rank == drank ? val(C_BCAST, it, drank, 0, i) : -1;
        CALL(C_BCAST, MPI_Bcast(bc, 4, MPI_INT, drank, comm));
        for (int i = 0; i < 4; i++) {
            int e = val(C_BCAST, it, drank, 0, i);
            CHECK(bc[i] == e, "iteration %d Bcast[%d] = %d, expected %d", it, i, bc[i], e);
            absorb(bc[i]);
        }

        /* (d) */
        for (int i = 0; i < 2; i++) {
            sbuf[i] = val(C_REDUCE, it, rank, 0, i);
            red[i] = -1;
        }
        CALL_WHEN(contributor_late, C_REDUCE, MPI_Reduce(sbuf, red, 2, MPI_INT, MPI_SUM, 0, comm));
        if (rank == 0)
            for (int i = 0; i < 2; i++) {
                int e = 0;
                for (int r = 0; r < np; r++) e += val(C_REDUCE, it, r, 0, i);
                CHECK(red[i] == e, "iteration %d Reduce[%d] = %d, expected %d", it, i, red[i], e);
                absorb(red[i]);
            }

        /* (e) */
        if (rank == drank)
            for (int r = 0; r < np; r++)
                for (int i = 0; i < 2; i++) sbuf[2 * r + i] = val(C_SCATTER, it, drank, r, i);
        sc[0] = sc[1] = -1;
        CALL(C_SCATTER, MPI_Scatter(sbuf, 2, MPI_INT, sc, 2, MPI_INT, drank, comm));
        for (int i = 0; i < 2; i++) {
            int e = val(C_SCATTER, it, drank, rank, i);
            CHECK(sc[i] == e, "iteration %d Scatter[%d] = %d, expected %d", it, i, sc[i], e);
            absorb(sc[i]);
        }

        for (int i = 0; i < 2; i++) sbuf[i] = val(C_GATHER, it, rank, 0, i);
        CALL_WHEN(contributor_late, C_GATHER, MPI_Gather(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, 0, comm));
        if (rank == 0)
            for (int r = 0; r < np; r++)
                for (int i = 0; i < 2; i++) {
                    int e = val(C_GATHER, it, r, 0, i);
                    CHECK(rbuf[2 * r + i] == e, "iteration %d Gather from %d [%d] = %d, expected %d", it, r, i,
                          rbuf[2 * r + i], e);
                    absorb(rbuf[2 * r + i]);
                }
    }

    if (getenv("COLLWAIT_TIMING")) {
        for (int it = 0; it < iters; it++)
            for (int op = 0; op < NCALLS; op++)
                fprintf(stderr, "collwait-timing %d %d %s %.6f %.3f\n", rank, it, call_names[op],
                        tlog[2 * (NCALLS * it + op)], 1e3 * tlog[2 * (NCALLS * it + op) + 1]);
    }

    if (rank == 0) {
        printf("collwait np=%d iters=%d rank=%d mode=%s", np, iters, drank, delay_mode ? "delay" : "none");
        if (delay_mode) printf(" delay_ms=%d", delay_ms);
        printf("\nchecksum=%016llx verify=ok\n", (unsigned long long)hash);
    }
    free(sbuf);
    free(rbuf);
    free(tlog);
    MPI_Finalize();
    return 0;
}
