/*
 * idlewave [-t ring|chain] [-i ITERS] [-w WORK_US] [-d DELAY_MS] [-r RANK]
 *          [-s ITER] [-n DOUBLES]                                  (np >= 4)
 *
 *   -t TOPO      ring: periodic 1D (default); chain: open ends (ranks 0 and
 *                np-1 have one neighbour)
 *   -i ITERS     iterations (default 60)
 *   -w WORK_US   emulated computation per iteration, nanosleep (default 1000)
 *   -d DELAY_MS  the one-off delay in milliseconds (default 20; 0 = none)
 *   -r RANK      the delayed rank R (default np/4)
 *   -s ITER      the iteration T at whose end R sleeps DELAY_MS (default 10;
 *                must be < ITERS unless -d 0)
 *   -n DOUBLES   doubles per message (default 8 = 64 bytes, eager on both
 *                MPICH and Open MPI)
 *
 * An idle wave (A. Afzal, G. Hager, G. Wellein: "Propagation and decay of
 * injected one-off delays on clusters: a case study", IEEE Cluster 2019):
 * nearest-neighbour exchange on a 1D ring or chain, bidirectional, eager
 * messages.  Each iteration:
 *   (a) nanosleep WORK_US                                  (computation)
 *   (b) MPI_Irecv from the left neighbour (tag 0) and from the right
 *       neighbour (tag 1), MPI_Isend to the right (tag 0) and to the left
 *       (tag 1) -- missing neighbours at the ends of a chain are skipped
 *   (c) MPI_Waitall on all requests of the iteration
 *   (d) validate the received data
 *   (e) iteration T, rank R only: nanosleep DELAY_MS      (the one-off delay)
 *
 * Propagation: R's messages of iteration T+1 leave DELAY_MS late, so both
 * neighbours R-1 and R+1 wait ~DELAY_MS in MPI_Waitall of iteration T+1.
 * They are then DELAY_MS late themselves, and their iteration T+2 messages
 * make R-2 and R+2 wait in T+2, and so on: the delay travels outward by one
 * rank per iteration in both directions (eager sends complete at once, so
 * the wave moves only through the receivers).  Ranks behind the front are
 * all late by the same amount and no longer wait.  In a rank x iteration
 * heatmap of MPI time the waits form a V with its tip at (R, T):
 *   ring:  ranks (R+k) mod np and (R-k) mod np wait ~DELAY_MS in iteration
 *          T+k, for k = 1 .. floor(np/2) (with np even the two fronts meet
 *          at rank R+np/2 in iteration T+np/2, which waits once, and the
 *          wave dies out);
 *   chain: rank R-k waits in iteration T+k for k = 1 .. R, rank R+k for
 *          k = 1 .. np-1-R; the fronts run off the ends and stop there.
 * R itself does not wait; no cell outside the V waits longer than the
 * noise.  E.g. np = 16, R = 4, T = 10, ring: (3,11) (5,11) (2,12) (6,12)
 * ... (12,18), i.e. the left front reaches rank 0 at iteration 14 and wraps
 * to 15 at 15, ..., 13 at 17; the right front reaches 12 at 18.
 * Iterations (one-off delay aside) take ~WORK_US.
 *
 * Measured with 16 ranks on 2 cores (README launch settings): Open MPI
 * (ob1/vader, mpi_yield_when_idle) shows exactly this V, 20.0-20.2 ms in
 * every V cell, below 4 ms everywhere else, for ring and chain.  MPICH 4.0
 * busy-polls without yielding, so 16 ranks on 2 cores spend 10-100 ms in
 * MPI in every iteration (median ~19 ms) and the default 20 ms wave is
 * lost in that noise; with -d 200 the V is visible (V cells 110-300 ms,
 * other cells at most ~140 ms).  With as many cores as ranks both should
 * look alike.
 *
 * With IDLEWAVE_TIMING set, every rank prints on stderr one line
 * "idlewave-timing RANK t_0 t_1 ... t_{ITERS-1}" with the time in ms spent
 * in (b)+(c) of each iteration (MPI time); stdout stays deterministic.
 *
 * Message values are a function of (sender, iteration, direction, index).
 * After the loop the per-rank checksums are summed with MPI_Reduce on rank
 * 0, which recomputes the sum serially and prints it.
 *
 * Per-rank calls: Init 1, Finalize 1, Reduce 1, Waitall ITERS, and
 *   ring:  Irecv = Isend = 2*ITERS on every rank;
 *   chain: Irecv = Isend = ITERS on ranks 0 and np-1, 2*ITERS on the others;
 * whatever the delay.
 */
#include "common.h"
#include <unistd.h>

static int rank, np, ring = 1;

/* Element idx of the message that `sender` sends in direction dir (0 =
 * right, 1 = left) in iteration it: an integer below 2^53. */
static double value(int sender, int it, int dir, int idx)
{
    uint64_t key = mix64(((uint64_t)sender << 32) | (uint64_t)it);
    return (double)(mix64(key ^ (((uint64_t)dir << 32) | (uint64_t)idx)) >> 11);
}

static uint64_t fold(int receiver, int dir, int idx, double v)
{
    return mix64(dbits(v) ^ mix64(((uint64_t)receiver << 34) ^ ((uint64_t)dir << 32) ^ (uint64_t)idx));
}

/* Neighbour of r on the side the message travelling in direction dir comes
 * from (dir 0: from the left, dir 1: from the right); -1 if none. */
static int source_of(int r, int dir)
{
    int s = dir == 0 ? r - 1 : r + 1;
    if (ring) return (s + np) % np;
    return s < 0 || s >= np ? -1 : s;
}

/* Neighbour that r sends to in direction dir (0: right, 1: left); -1 if none. */
static int dest_of(int r, int dir) { return source_of(r, dir ^ 1); }

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: idlewave [-t ring|chain] [-i ITERS] [-w WORK_US] [-d DELAY_MS] [-r RANK] "
                        "[-s ITER] [-n DOUBLES]   (np >= 4)\n");
    abort_config();
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    int iters = 60, work_us = 1000, delay_ms = 20, drank = -1, diter = 10, n = 8, opt;
    while ((opt = getopt(argc, argv, "t:i:w:d:r:s:n:")) != -1) {
        switch (opt) {
        case 't':
            if (!strcmp(optarg, "ring")) ring = 1;
            else if (!strcmp(optarg, "chain")) ring = 0;
            else usage();
            break;
        case 'i': iters = parse_int(optarg, "ITERS", 0); break;
        case 'w': work_us = parse_int(optarg, "WORK_US", 1); break;
        case 'd': delay_ms = parse_int(optarg, "DELAY_MS", 1); break;
        case 'r': drank = parse_int(optarg, "RANK", 1); break;
        case 's': diter = parse_int(optarg, "ITER", 1); break;
        case 'n': n = parse_int(optarg, "DOUBLES", 0); break;
        default: usage();
        }
    }
    if (optind != argc) usage();
    if (np < 4) {
        if (rank == 0) fprintf(stderr, "idlewave: needs at least 4 processes, got %d\n", np);
        abort_config();
    }
    if (drank < 0) drank = np / 4;
    if (delay_ms > 0 && (drank >= np || diter >= iters)) {
        if (rank == 0)
            fprintf(stderr, "idlewave: delayed rank %d / iteration %d out of range (np=%d, iters=%d)\n", drank,
                    diter, np, iters);
        abort_config();
    }

    double *sbuf[2], *rbuf[2];
    for (int d = 0; d < 2; d++) {
        sbuf[d] = malloc(sizeof(double) * (size_t)(n + 1));
        rbuf[d] = malloc(sizeof(double) * (size_t)(n + 1));
        if (!sbuf[d] || !rbuf[d]) MPI_Abort(MPI_COMM_WORLD, 3);
    }
    double *mpi_time = calloc((size_t)iters + 1, sizeof(double));
    if (!mpi_time) MPI_Abort(MPI_COMM_WORLD, 3);

    uint64_t h = 0, hsum = 0;
    for (int it = 0; it < iters; it++) {
        sleep_us(work_us);
        for (int d = 0; d < 2; d++)
            for (int i = 0; i < n; i++) sbuf[d][i] = value(rank, it, d, i);

        MPI_Request reqs[4];
        int nreq = 0;
        double t0 = MPI_Wtime();
        for (int d = 0; d < 2; d++)
            if (source_of(rank, d) >= 0)
                MPI_Irecv(rbuf[d], n, MPI_DOUBLE, source_of(rank, d), d, MPI_COMM_WORLD, &reqs[nreq++]);
        for (int d = 0; d < 2; d++)
            if (dest_of(rank, d) >= 0)
                MPI_Isend(sbuf[d], n, MPI_DOUBLE, dest_of(rank, d), d, MPI_COMM_WORLD, &reqs[nreq++]);
        MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
        mpi_time[it] = MPI_Wtime() - t0;

        for (int d = 0; d < 2; d++) {
            int from = source_of(rank, d);
            if (from < 0) continue;
            for (int i = 0; i < n; i++) {
                double e = value(from, it, d, i);
                CHECK(rbuf[d][i] == e, "iteration %d direction %d element %d: %.17g, expected %.17g", it, d, i,
                      rbuf[d][i], e);
                h += fold(rank, d, i, rbuf[d][i]);
            }
        }
        if (delay_ms > 0 && rank == drank && it == diter) sleep_us(1000L * delay_ms);
    }

    if (getenv("IDLEWAVE_TIMING")) {
        size_t cap = 64 + 12 * (size_t)iters, len;
        char *line = malloc(cap);
        if (!line) MPI_Abort(MPI_COMM_WORLD, 3);
        len = (size_t)snprintf(line, cap, "idlewave-timing %d", rank);
        for (int it = 0; it < iters && len < cap; it++)
            len += (size_t)snprintf(line + len, cap - len, " %.3f", 1e3 * mpi_time[it]);
        fprintf(stderr, "%s\n", line);
        free(line);
    }
    MPI_Reduce(&h, &hsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        printf("idlewave np=%d topology=%s iters=%d work_us=%d n=%d", np, ring ? "ring" : "chain", iters, work_us, n);
        if (delay_ms > 0) printf(" rank=%d iter=%d delay_ms=%d", drank, diter, delay_ms);
        printf("\n");
        uint64_t ref = 0;
        for (int r = 0; r < np; r++)
            for (int it = 0; it < iters; it++)
                for (int d = 0; d < 2; d++) {
                    int from = source_of(r, d);
                    if (from < 0) continue;
                    for (int i = 0; i < n; i++) ref += fold(r, d, i, value(from, it, d, i));
                }
        CHECK(ref == hsum, "checksum %016llx differs from serial recomputation %016llx", (unsigned long long)hsum,
              (unsigned long long)ref);
        printf("checksum=%016llx verify=ok\n", (unsigned long long)hsum);
    }
    for (int d = 0; d < 2; d++) {
        free(sbuf[d]);
        free(rbuf[d]);
    }
    free(mpi_time);
    MPI_Finalize();
    return 0;
}
