/*
 * mglike -p ZxYxX -i ITERS [-x 0|1]
 *
 * An NPB MG-like communication pattern: a dominant 7-point halo exchange
 * on a 3D torus (rank = (z*Y + y)*X + x, x fastest), plus, with -x 1 (the
 * default), a minor rank-dependent pattern on top: every 4th iteration the
 * ranks with y == 0, z == 0 and x % 4 == 0 send one message to the rank two
 * cells further in x (distance 2, wrapping), which receives it.  Like MG's
 * distance-2 exchanges on a few ranks, it makes the per-rank traces differ
 * in a way that no grid position decides.  -x 0 leaves it out: the
 * dominant pattern alone, the truth that lossy extrapolation must produce.
 *
 * Each iteration: MPI_Irecv from the 6 neighbours, MPI_Isend to them (8
 * doubles each, tag = direction), one MPI_Waitall; then the minor exchange
 * (blocking MPI_Send / MPI_Recv, tag 99); every 5th iteration an
 * MPI_Allreduce.  Payloads are checked.
 *
 * Per-rank calls: Init 1, Finalize 1, Irecv = Isend = 6*ITERS, Waitall ITERS,
 * Allreduce ITERS/5, plus for leaders Send and for their partners Recv
 * ceil(ITERS/4) each when -x 1.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int dims[3] = {0, 0, 0}, iters = 8, extra = 1;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-p") && a + 1 < argc) {
            if (sscanf(argv[++a], "%dx%dx%d", &dims[0], &dims[1], &dims[2]) != 3) dims[0] = 0;
        } else if (!strcmp(argv[a], "-i") && a + 1 < argc) {
            iters = parse_int(argv[++a], "iterations", 0);
        } else if (!strcmp(argv[a], "-x") && a + 1 < argc) {
            extra = parse_int(argv[++a], "-x", 1);
        } else {
            if (rank == 0) fprintf(stderr, "usage: mglike -p ZxYxX -i ITERS [-x 0|1]\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (dims[0] * dims[1] * dims[2] != np) {
        if (rank == 0) fprintf(stderr, "mglike: -p must multiply to %d ranks\n", np);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int Z = dims[0], Y = dims[1], X = dims[2];
    const int z = rank / (Y * X), y = (rank / X) % Y, x = rank % X;
#define AT(zz, yy, xx) (((((zz) + Z) % Z) * Y + (((yy) + Y) % Y)) * X + (((xx) + X) % X))
    const int nb[6] = {AT(z - 1, y, x), AT(z + 1, y, x), AT(z, y - 1, x),
                       AT(z, y + 1, x), AT(z, y, x - 1), AT(z, y, x + 1)};
    double sbuf[6][8], rbuf[6][8];
    double acc = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Request rq[12];
        /* Receive from direction d what the neighbour sent towards us:
         * tag = the direction it travels (d ^ 1 seen from the sender). */
        for (int d = 0; d < 6; d++)
            MPI_Irecv(rbuf[d], 8, MPI_DOUBLE, nb[d], d ^ 1, MPI_COMM_WORLD, &rq[d]);
        for (int d = 0; d < 6; d++) {
            for (int k = 0; k < 8; k++) sbuf[d][k] = rank * 1000.0 + it * 10.0 + k;
            MPI_Isend(sbuf[d], 8, MPI_DOUBLE, nb[d], d, MPI_COMM_WORLD, &rq[6 + d]);
        }
        MPI_Waitall(12, rq, MPI_STATUSES_IGNORE);
        for (int d = 0; d < 6; d++)
            for (int k = 0; k < 8; k++)
                CHECK(rbuf[d][k] == nb[d] * 1000.0 + it * 10.0 + k, "halo %d from %d", d, nb[d]);
        if (extra && it % 4 == 0) {
            const int leader = y == 0 && z == 0 && x % 4 == 0;
            const int from = AT(z, y, x - 2);
            const int partner_of_leader = y == 0 && z == 0 && ((x - 2 + X) % X) % 4 == 0;
            double v = rank + it;
            if (leader) MPI_Send(&v, 1, MPI_DOUBLE, AT(z, y, x + 2), 99, MPI_COMM_WORLD);
            if (partner_of_leader) {
                double w;
                MPI_Recv(&w, 1, MPI_DOUBLE, from, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(w == from + it, "minor message from %d", from);
            }
        }
        if (it % 5 == 4) {
            double s = acc + rbuf[0][0], t;
            MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            acc = t * 1e-9;
        }
    }
    if (rank == 0) printf("mglike ok\n");
    MPI_Finalize();
    return 0;
}
