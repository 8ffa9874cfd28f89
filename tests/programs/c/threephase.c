/*
 * threephase [-a SETUP_ROUNDS] [-b STENCIL_ITERS] [-c RING_ITERS] [-w WORK_US]
 *
 *   -a SETUP_ROUNDS   rounds of phase 1 (default 6)
 *   -b STENCIL_ITERS  iterations of phase 2 (default 40)
 *   -c RING_ITERS     iterations of phase 3 (default 40)
 *   -w WORK_US        emulated computation (nanosleep) at the start of every
 *                     iteration of phases 2 and 3 (default 500)
 *
 * Three clearly distinct communication phases, one after the other (for
 * phase segmentation); no marker calls between them:
 *   1 setup:   SETUP_ROUNDS x (MPI_Bcast of 4 ints from rank 0,
 *              MPI_Allreduce (sum) of one long long, MPI_Allgather of one
 *              int per rank, MPI_Barrier)
 *   2 stencil: STENCIL_ITERS x (nanosleep, 2D periodic halo exchange:
 *              MPI_Irecv x4, MPI_Isend x4, MPI_Waitall of the 8 requests);
 *              PX x PY grid from MPI_Dims_create(np, 2), row-major
 *              (rank = x*PY + y), neighbours computed by hand, tag = the
 *              direction the message travels (0 = -x, 1 = +x, 2 = -y,
 *              3 = +y) so coinciding neighbours (extent 1 or 2) are matched
 *              correctly; messages of 128 doubles
 *   3 ring:    RING_ITERS x (nanosleep, MPI_Sendrecv to rank+1 from rank-1,
 *              MPI_Sendrecv to rank-2 from rank+2, all mod np); messages of
 *              16 doubles
 * Every received value is checked against its expected value (a function
 * of sender, phase, round/iteration and index) and folded into a per-rank
 * checksum; the checksums are summed with MPI_Reduce on rank 0, which
 * recomputes the sum serially and prints it.  Works for any np >= 1.
 *
 * Per-rank calls: Init 1, Bcast a, Allreduce a, Allgather a, Barrier a,
 * Irecv 4*b, Isend 4*b, Waitall b, Sendrecv 2*c, Reduce 1, Finalize 1
 * (a = SETUP_ROUNDS, b = STENCIL_ITERS, c = RING_ITERS).
 */
#include "common.h"
#include <errno.h>
#include <time.h>
#include <unistd.h>

#define N2 128 /* doubles per phase-2 message */
#define N3 16  /* doubles per phase-3 message */
#define NB 4   /* ints per broadcast */

static int np, px, py;

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: threephase [-a SETUP_ROUNDS] [-b STENCIL_ITERS] [-c RING_ITERS] [-w WORK_US]\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The rank reached from `rank` by one step in direction dir (periodic). */
static int neighbour(int rank, int dir) { return torus_neighbour(rank, dir, px, py); }

/* Phase 1 expected values. */
static int bcast_value(int round, int k) { return 1000 * round + 7 * k + 3; }
static long long allreduce_value(int round) { return (long long)(round + 1) * np * (np + 1) / 2; }
static int allgather_value(int sender, int round) { return sender * 1000 + round; }

/* Element idx of the message `sender` sends in phase (2 or 3), iteration it,
 * slot (direction in phase 2, 0/1 for the two shifts in phase 3): an
 * integer below 2^53, so exactly representable. */
static double value(int phase, int sender, int it, int slot, int idx)
{
    uint64_t key = mix64(((uint64_t)phase << 56) ^ ((uint64_t)sender << 32) ^ (uint64_t)it);
    return (double)(mix64(key ^ (((uint64_t)slot << 32) | (uint64_t)idx)) >> 11);
}

/* Checksum contribution of one received item (order independent sum). */
static uint64_t fold(int receiver, int phase, int it, int slot, int idx, uint64_t v)
{
    uint64_t key = mix64(((uint64_t)phase << 56) ^ ((uint64_t)receiver << 32) ^ (uint64_t)it);
    return mix64(v ^ mix64(key ^ (((uint64_t)slot << 32) | (uint64_t)idx)));
}

/* Serial recomputation of rank r's checksum from the expected values. */
static uint64_t expected_checksum(int r, int a, int b, int c)
{
    uint64_t h = 0;
    for (int round = 0; round < a; round++) {
        for (int k = 0; k < NB; k++) h += fold(r, 1, round, 0, k, (uint64_t)bcast_value(round, k));
        h += fold(r, 1, round, 1, 0, (uint64_t)allreduce_value(round));
        for (int i = 0; i < np; i++) h += fold(r, 1, round, 2, i, (uint64_t)allgather_value(i, round));
    }
    for (int it = 0; it < b; it++)
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < N2; i++) h += fold(r, 2, it, d, i, dbits(value(2, neighbour(r, d ^ 1), it, d, i)));
    const int from[2] = {(r + np - 1) % np, (r + 2) % np};
    for (int it = 0; it < c; it++)
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < N3; i++) h += fold(r, 3, it, s, i, dbits(value(3, from[s], it, s, i)));
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    int a = 6, b = 40, c = 40, work_us = 500, opt;
    while ((opt = getopt(argc, argv, "a:b:c:w:")) != -1) {
        switch (opt) {
        case 'a': a = parse_int(optarg, "SETUP_ROUNDS", 1); break;
        case 'b': b = parse_int(optarg, "STENCIL_ITERS", 1); break;
        case 'c': c = parse_int(optarg, "RING_ITERS", 1); break;
        case 'w': work_us = parse_int(optarg, "WORK_US", 1); break;
        default: usage(rank);
        }
    }
    if (optind != argc) usage(rank);

    int dims[2] = {0, 0};
    MPI_Dims_create(np, 2, dims);
    px = dims[0];
    py = dims[1];
    const MPI_Comm comm = MPI_COMM_WORLD;
    uint64_t h = 0, hsum = 0;

    /* Phase 1: setup with collectives. */
    int *gath = malloc(sizeof(int) * (size_t)np);
    if (!gath) MPI_Abort(comm, 3);
    for (int round = 0; round < a; round++) {
        int bc[NB];
        for (int k = 0; k < NB; k++) bc[k] = rank == 0 ? bcast_value(round, k) : -1;
        MPI_Bcast(bc, NB, MPI_INT, 0, comm);
        for (int k = 0; k < NB; k++) {
            CHECK(bc[k] == bcast_value(round, k), "round %d: bcast[%d] = %d, expected %d", round, k, bc[k],
                  bcast_value(round, k));
            h += fold(rank, 1, round, 0, k, (uint64_t)bc[k]);
        }
        long long mine = (long long)(rank + 1) * (round + 1), sum = -1;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, comm);
        CHECK(sum == allreduce_value(round), "round %d: allreduce %lld, expected %lld", round, sum,
              allreduce_value(round));
        h += fold(rank, 1, round, 1, 0, (uint64_t)sum);
        int g = allgather_value(rank, round);
        for (int i = 0; i < np; i++) gath[i] = -1;
        MPI_Allgather(&g, 1, MPI_INT, gath, 1, MPI_INT, comm);
        for (int i = 0; i < np; i++) {
            CHECK(gath[i] == allgather_value(i, round), "round %d: allgather[%d] = %d, expected %d", round, i,
                  gath[i], allgather_value(i, round));
            h += fold(rank, 1, round, 2, i, (uint64_t)gath[i]);
        }
        MPI_Barrier(comm);
    }
    free(gath);

    /* Phase 2: 2D torus halo exchange. */
    int nb[4];
    for (int d = 0; d < 4; d++) nb[d] = neighbour(rank, d);
    static double sbuf[4][N2], rbuf[4][N2];
    MPI_Request reqs[8];
    for (int it = 0; it < b; it++) {
        sleep_us(work_us);
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < N2; i++) sbuf[d][i] = value(2, rank, it, d, i);
        /* the message travelling in direction d comes from the opposite neighbour */
        for (int d = 0; d < 4; d++) MPI_Irecv(rbuf[d], N2, MPI_DOUBLE, nb[d ^ 1], d, comm, &reqs[d]);
        for (int d = 0; d < 4; d++) MPI_Isend(sbuf[d], N2, MPI_DOUBLE, nb[d], d, comm, &reqs[4 + d]);
        MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE);
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < N2; i++) {
                double e = value(2, nb[d ^ 1], it, d, i);
                CHECK(rbuf[d][i] == e, "stencil iteration %d direction %d element %d: %.17g, expected %.17g", it,
                      d, i, rbuf[d][i], e);
                h += fold(rank, 2, it, d, i, dbits(rbuf[d][i]));
            }
    }

    /* Phase 3: ring shifts by +1 and by -2. */
    const int to[2] = {(rank + 1) % np, ((rank - 2) % np + np) % np};
    const int from[2] = {(rank + np - 1) % np, (rank + 2) % np};
    double s3[N3], r3[N3];
    for (int it = 0; it < c; it++) {
        sleep_us(work_us);
        for (int s = 0; s < 2; s++) {
            for (int i = 0; i < N3; i++) {
                s3[i] = value(3, rank, it, s, i);
                r3[i] = -1.0;
            }
            MPI_Sendrecv(s3, N3, MPI_DOUBLE, to[s], 10 + s, r3, N3, MPI_DOUBLE, from[s], 10 + s, comm,
                         MPI_STATUS_IGNORE);
            for (int i = 0; i < N3; i++) {
                double e = value(3, from[s], it, s, i);
                CHECK(r3[i] == e, "ring iteration %d shift %d element %d: %.17g, expected %.17g", it, s, i, r3[i],
                      e);
                h += fold(rank, 3, it, s, i, dbits(r3[i]));
            }
        }
    }

    MPI_Reduce(&h, &hsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm);
    if (rank == 0) {
        uint64_t ref = 0;
        for (int r = 0; r < np; r++) ref += expected_checksum(r, a, b, c);
        CHECK(ref == hsum, "checksum %016llx differs from serial recomputation %016llx", (unsigned long long)hsum,
              (unsigned long long)ref);
        printf("threephase np=%d dims=%dx%d setup=%d stencil=%d ring=%d work_us=%d\n", np, px, py, a, b, c,
               work_us);
        printf("checksum=%016llx verify=ok\n", (unsigned long long)hsum);
    }
    MPI_Finalize();
    return 0;
}
