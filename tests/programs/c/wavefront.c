/*
 * wavefront -p PXxPY -i ITERS
 *
 * Sweep3D-like 2D wavefront on a PX x PY process grid (rank = y*PX + x,
 * x = column (west->east), y = row (north->south)).  Each iteration does
 *   sweep 1 from corner (0,0):        Recv from west and north (if they
 *                                     exist), compute, Send east and south;
 *   sweep 2 from corner (PX-1,PY-1):  Recv from east and south, compute,
 *                                     Send west and north.
 * All communication is blocking MPI_Send / MPI_Recv.  Every message carries
 * a header (sender, iteration, sweep) that the receiver validates, and at the
 * end rank 0 recomputes the whole sweep serially and compares the
 * MPI_Reduce'd hash of all ranks' state.
 *
 * Per rank and iteration: Recv = Send = number of mesh neighbours
 * (2 in a corner, 3 on an edge, 4 inside; for PX or PY == 1 fewer).
 * Plus Init 1, Reduce 1, Finalize 1.
 */
#include "common.h"
#include <unistd.h>

#define M 64    /* payload words per message */
#define HDR 3   /* header words */

static int px, py, iters = 10;

/* State update of cell (x,y); in_a / in_b are the two upstream inputs (NULL
 * when the neighbour does not exist). */
static void compute(uint64_t *state, const uint64_t *in_a, const uint64_t *in_b, int cell, int it,
                    int sweep)
{
    for (int k = 0; k < M; k++) {
        uint64_t a = in_a ? in_a[k] : 0x1111ULL * (uint64_t)(k + 1);
        uint64_t b = in_b ? in_b[k] : 0x2222ULL * (uint64_t)(k + 3);
        state[k] = mix64(state[k] * 31u + a + 3u * b + (uint64_t)cell * 1000003u + (uint64_t)it * 7u +
                         (uint64_t)sweep);
    }
}

static void init_state(uint64_t *state, int cell)
{
    for (int k = 0; k < M; k++) state[k] = mix64((uint64_t)cell * M + (uint64_t)k);
}

static uint64_t state_hash(const uint64_t *state, int cell)
{
    uint64_t h = mix64((uint64_t)cell);
    for (int k = 0; k < M; k++) h = mix64(h ^ state[k]);
    return h;
}

static void serial_reference(uint64_t *result)
{
    const int n = px * py;
    uint64_t *st = malloc(sizeof(uint64_t) * (size_t)n * M);
    if (!st) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int c = 0; c < n; c++) init_state(st + (size_t)c * M, c);
    for (int it = 0; it < iters; it++) {
        /* sweep 1: row-major order satisfies the west/north dependencies;
         * the message sent is the freshly computed state. */
        for (int y = 0; y < py; y++)
            for (int x = 0; x < px; x++) {
                int c = y * px + x;
                compute(st + (size_t)c * M, x > 0 ? st + (size_t)(c - 1) * M : NULL,
                        y > 0 ? st + (size_t)(c - px) * M : NULL, c, it, 1);
            }
        for (int y = py - 1; y >= 0; y--)
            for (int x = px - 1; x >= 0; x--) {
                int c = y * px + x;
                compute(st + (size_t)c * M, x < px - 1 ? st + (size_t)(c + 1) * M : NULL,
                        y < py - 1 ? st + (size_t)(c + px) * M : NULL, c, it, 2);
            }
    }
    uint64_t h = 0;
    for (int c = 0; c < n; c++) h += state_hash(st + (size_t)c * M, c);
    *result = h;
    free(st);
}

static void recv_msg(uint64_t *buf, int src, int tag, int it, int sweep)
{
    MPI_Recv(buf, M + HDR, MPI_UINT64_T, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(buf[0] == (uint64_t)src && buf[1] == (uint64_t)it && buf[2] == (uint64_t)sweep,
          "bad header from %d: (%llu,%llu,%llu), expected (%d,%d,%d)", src, (unsigned long long)buf[0],
          (unsigned long long)buf[1], (unsigned long long)buf[2], src, it, sweep);
}

static void send_msg(uint64_t *buf, const uint64_t *state, int me, int dst, int tag, int it, int sweep)
{
    buf[0] = (uint64_t)me;
    buf[1] = (uint64_t)it;
    buf[2] = (uint64_t)sweep;
    memcpy(buf + HDR, state, sizeof(uint64_t) * M);
    MPI_Send(buf, M + HDR, MPI_UINT64_T, dst, tag, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int opt;
    const char *pstr = NULL;
    while ((opt = getopt(argc, argv, "p:i:")) != -1) {
        if (opt == 'p') pstr = optarg;
        else if (opt == 'i') iters = parse_int(optarg, "ITERS", 0);
        else pstr = NULL, optind = argc + 1;
    }
    if (!pstr || optind != argc || sscanf(pstr, "%dx%d", &px, &py) != 2 || px < 1 || py < 1) {
        if (rank == 0) fprintf(stderr, "usage: wavefront -p PXxPY -i ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (px * py != np) {
        if (rank == 0) fprintf(stderr, "grid %dx%d does not match np=%d\n", px, py, np);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int x = rank % px, y = rank / px;
    const int west = x > 0 ? rank - 1 : -1, east = x < px - 1 ? rank + 1 : -1;
    const int north = y > 0 ? rank - px : -1, south = y < py - 1 ? rank + px : -1;
    enum { TAG_EW = 1, TAG_NS = 2, TAG_WE = 3, TAG_SN = 4 };

    uint64_t state[M], ra[M + HDR], rb[M + HDR], sb[M + HDR];
    init_state(state, rank);
    for (int it = 0; it < iters; it++) {
        /* sweep 1: from (0,0) towards (PX-1,PY-1) */
        if (west >= 0) recv_msg(ra, west, TAG_EW, it, 1);
        if (north >= 0) recv_msg(rb, north, TAG_NS, it, 1);
        compute(state, west >= 0 ? ra + HDR : NULL, north >= 0 ? rb + HDR : NULL, rank, it, 1);
        if (east >= 0) send_msg(sb, state, rank, east, TAG_EW, it, 1);
        if (south >= 0) send_msg(sb, state, rank, south, TAG_NS, it, 1);
        /* sweep 2: from (PX-1,PY-1) back towards (0,0) */
        if (east >= 0) recv_msg(ra, east, TAG_WE, it, 2);
        if (south >= 0) recv_msg(rb, south, TAG_SN, it, 2);
        compute(state, east >= 0 ? ra + HDR : NULL, south >= 0 ? rb + HDR : NULL, rank, it, 2);
        if (west >= 0) send_msg(sb, state, rank, west, TAG_WE, it, 2);
        if (north >= 0) send_msg(sb, state, rank, north, TAG_SN, it, 2);
    }
    uint64_t h = state_hash(state, rank), hsum = 0;
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        uint64_t ref;
        serial_reference(&ref);
        CHECK(ref == hsum, "hash %016llx differs from serial reference %016llx",
              (unsigned long long)hsum, (unsigned long long)ref);
        printf("wavefront grid=%dx%d iters=%d hash=%016llx verify=ok\n", px, py, iters,
               (unsigned long long)hsum);
    }
    MPI_Finalize();
    return 0;
}
