/*
 * latestencil [-i ITERS] [-m none|sender|receiver] [-r RANK] [-t ITER]
 *             [-d DELAY_MS] [-w WORK_US] [-n DOUBLES] [-s ssend|send]
 *
 *   -i ITERS     iterations (default 20)
 *   -m MODE      none: no delay; sender: rank RANK sleeps DELAY_MS after
 *                posting its receives and before its sends in iteration
 *                ITER; receiver: rank RANK sleeps DELAY_MS before posting
 *                its receives in iteration ITER (default none)
 *   -r RANK      the delayed rank (default 4; must be < np unless -m none)
 *   -t ITER      the delayed iteration, 0-based (default 10; must be < ITERS
 *                unless -m none)
 *   -d DELAY_MS  the delay in milliseconds (default 60)
 *   -w WORK_US   emulated computation per iteration, nanosleep (default 2000)
 *   -n DOUBLES   doubles per message (default 256)
 *   -s SEND      ssend: the sends are MPI_Ssend (default); send: MPI_Send
 *                (eager for small messages, see below)
 *
 * 2D periodic halo exchange on a PX x PY grid from MPI_Dims_create(np, 2),
 * row-major (rank = x*PY + y), neighbours computed by hand (no
 * Cart_create); any np >= 1 works, including extents 1 and 2 where a
 * neighbour repeats or is the rank itself.  The tag is the direction in
 * which the message travels (0 = -x, 1 = +x, 2 = -y, 3 = +y), so the four
 * messages are matched correctly even when neighbours coincide.
 *
 * Each iteration, in this order:
 *   (a) nanosleep WORK_US                    (computation)
 *   (b) receiver mode, rank RANK, iteration ITER: nanosleep DELAY_MS
 *   (c) MPI_Irecv from each of the 4 neighbours
 *   (d) sender mode, rank RANK, iteration ITER: nanosleep DELAY_MS
 *   (e) MPI_Ssend (MPI_Send with -s send) to each of the 4 neighbours,
 *       directions 0..3 in this order
 *   (f) MPI_Waitall on the 4 receive requests
 *   (g) validate every received value and fold it into a checksum.
 * No collectives inside the loop.
 *
 * Receiver mode: the 4 neighbours block in MPI_Ssend to RANK for about
 * DELAY_MS because RANK posts its receives late (late receiver); the ranks
 * two steps away then wait in MPI_Waitall for the neighbours' messages.
 * Sender mode: RANK's messages leave DELAY_MS late (late sender).  But
 * without asynchronous progress (MPICH and Open MPI by default) the
 * neighbours' MPI_Ssend to RANK cannot complete while RANK sleeps either:
 * the synchronous-send acknowledgement needs RANK to enter MPI.  So with
 * -s ssend the neighbours wait in MPI_Ssend to RANK in both modes; only the
 * posting time of RANK's MPI_Irecv (before or after the delay) differs.
 * With -s send and small messages (eager protocol) the neighbours' sends
 * to RANK complete at once and in sender mode they wait in MPI_Waitall for
 * RANK's messages, the textbook late sender; in receiver mode eager sends
 * hide the late receiver.  Measured: MPICH 4.0 completes MPI_Send at once
 * for 16 and 256 doubles; Open MPI 4.1 (ob1, vader) only up to 256 bytes
 * (32 doubles), larger MPI_Sends also wait until RANK enters MPI.  Hence
 * `-s send -n 16` for a late sender that looks the same on both.
 *
 * With LATESTENCIL_TIMING set, rank 0 prints the time of the iteration
 * loop on stderr (stdout stays deterministic).
 *
 * Message values are a function of (sender, iteration, direction, index).
 * After the loop the checksums are summed with MPI_Reduce on rank 0, which
 * recomputes the sum serially (skipped when np*ITERS*4*DOUBLES > 5e7) and
 * prints it; the checksum line does not depend on timing or the mode.
 *
 * Per-rank calls: Init 1, Irecv 4*ITERS, Ssend 4*ITERS (with -s send:
 * Send 4*ITERS instead), Waitall ITERS, Reduce 1, Finalize 1, whatever the
 * mode.
 */
#include "common.h"
#include <errno.h>
#include <time.h>
#include <unistd.h>

enum { MODE_NONE, MODE_SENDER, MODE_RECEIVER };
static const char *const mode_names[] = {"none", "sender", "receiver"};

static int px, py;

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: latestencil [-i ITERS] [-m none|sender|receiver] [-r RANK] "
                        "[-t ITER] [-d DELAY_MS] [-w WORK_US] [-n DOUBLES] [-s ssend|send]\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The rank reached from `rank` by one step in direction dir (periodic). */
static int neighbour(int rank, int dir) { return torus_neighbour(rank, dir, px, py); }

/* Element idx of the message that `sender` sends in direction dir in
 * iteration it: an integer below 2^53, so exactly representable. */
static double value(int sender, int it, int dir, int idx)
{
    uint64_t key = mix64(((uint64_t)sender << 32) | (uint64_t)it);
    return (double)(mix64(key ^ (((uint64_t)dir << 32) | (uint64_t)idx)) >> 11);
}

static uint64_t fold(int receiver, int dir, int idx, double v)
{
    return mix64(dbits(v) ^ mix64(((uint64_t)receiver << 34) ^ ((uint64_t)dir << 32) ^ (uint64_t)idx));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    int iters = 20, mode = MODE_NONE, drank = 4, diter = 10, delay_ms = 60, work_us = 2000, n = 256;
    int ssend = 1, opt;
    while ((opt = getopt(argc, argv, "i:m:r:t:d:w:n:s:")) != -1) {
        switch (opt) {
        case 'i': iters = parse_int(optarg, "ITERS", 0); break;
        case 'm':
            if (!strcmp(optarg, "none")) mode = MODE_NONE;
            else if (!strcmp(optarg, "sender")) mode = MODE_SENDER;
            else if (!strcmp(optarg, "receiver")) mode = MODE_RECEIVER;
            else usage(rank);
            break;
        case 'r': drank = parse_int(optarg, "RANK", 1); break;
        case 't': diter = parse_int(optarg, "ITER", 1); break;
        case 'd': delay_ms = parse_int(optarg, "DELAY_MS", 1); break;
        case 'w': work_us = parse_int(optarg, "WORK_US", 1); break;
        case 'n': n = parse_int(optarg, "DOUBLES", 0); break;
        case 's':
            if (!strcmp(optarg, "ssend")) ssend = 1;
            else if (!strcmp(optarg, "send")) ssend = 0;
            else usage(rank);
            break;
        default: usage(rank);
        }
    }
    if (optind != argc) usage(rank);
    if (mode != MODE_NONE && (drank >= np || diter >= iters)) {
        if (rank == 0)
            fprintf(stderr, "delayed rank %d / iteration %d out of range (np=%d, iters=%d)\n", drank, diter,
                    np, iters);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    int dims[2] = {0, 0};
    MPI_Dims_create(np, 2, dims);
    px = dims[0];
    py = dims[1];
    int nb[4];
    for (int d = 0; d < 4; d++) nb[d] = neighbour(rank, d);
    const int delayed = mode != MODE_NONE && rank == drank;

    double *sbuf[4], *rbuf[4];
    for (int d = 0; d < 4; d++) {
        sbuf[d] = malloc(sizeof(double) * (size_t)n);
        rbuf[d] = malloc(sizeof(double) * (size_t)n);
        if (!sbuf[d] || !rbuf[d]) MPI_Abort(MPI_COMM_WORLD, 3);
    }

    MPI_Request reqs[4];
    uint64_t h = 0, hsum = 0;
    double t_loop = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        sleep_us(work_us);
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < n; i++) sbuf[d][i] = value(rank, it, d, i);
        if (delayed && mode == MODE_RECEIVER && it == diter) sleep_us(1000L * delay_ms);
        /* the message travelling in direction d comes from the opposite neighbour */
        for (int d = 0; d < 4; d++)
            MPI_Irecv(rbuf[d], n, MPI_DOUBLE, nb[d ^ 1], d, MPI_COMM_WORLD, &reqs[d]);
        if (delayed && mode == MODE_SENDER && it == diter) sleep_us(1000L * delay_ms);
        for (int d = 0; d < 4; d++) {
            if (ssend) MPI_Ssend(sbuf[d], n, MPI_DOUBLE, nb[d], d, MPI_COMM_WORLD);
            else MPI_Send(sbuf[d], n, MPI_DOUBLE, nb[d], d, MPI_COMM_WORLD);
        }
        MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < n; i++) {
                double e = value(nb[d ^ 1], it, d, i);
                CHECK(rbuf[d][i] == e, "iteration %d direction %d element %d: %.17g, expected %.17g", it, d,
                      i, rbuf[d][i], e);
                h += fold(rank, d, i, rbuf[d][i]);
            }
    }
    /* For timing experiments: the iteration loop alone (rank 0), on stderr
     * so that stdout stays deterministic. */
    if (getenv("LATESTENCIL_TIMING") && rank == 0) fprintf(stderr, "loop_s %.6f\n", MPI_Wtime() - t_loop);
    MPI_Reduce(&h, &hsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        printf("latestencil dims=%dx%d iters=%d n=%d work_us=%d send=%s mode=%s", px, py, iters, n, work_us,
               ssend ? "ssend" : "send", mode_names[mode]);
        if (mode != MODE_NONE) printf(" rank=%d iter=%d delay_ms=%d", drank, diter, delay_ms);
        printf("\n");
        const char *verdict = "skipped";
        if ((double)np * iters * 4 * n <= 5e7) {
            uint64_t ref = 0;
            for (int r = 0; r < np; r++)
                for (int it = 0; it < iters; it++)
                    for (int d = 0; d < 4; d++) {
                        int from = neighbour(r, d ^ 1);
                        for (int i = 0; i < n; i++) ref += fold(r, d, i, value(from, it, d, i));
                    }
            CHECK(ref == hsum, "checksum %016llx differs from serial recomputation %016llx",
                  (unsigned long long)hsum, (unsigned long long)ref);
            verdict = "ok";
        }
        printf("checksum=%016llx verify=%s\n", (unsigned long long)hsum, verdict);
    }

    for (int d = 0; d < 4; d++) {
        free(sbuf[d]);
        free(rbuf[d]);
    }
    MPI_Finalize();
    return 0;
}
