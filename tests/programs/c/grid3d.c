/*
 * grid3d [-o cart|xfast] [-t mesh|torus] [-c] [-g] [-i ITERS] [-k K]
 *        [-b BXxBYxBZ]
 *
 * A 3D 7-point halo exchange on the process grid MPI_Dims_create(np, 3)
 * gives, laid out the two ways applications lay it out:
 *
 *   -o cart   MPI_Cart_create over MPI_Dims_create's dims and neighbours
 *             from MPI_Cart_shift (MPI's row-major order: the last
 *             dimension varies fastest); messages on the Cartesian
 *             communicator.
 *   -o xfast  dims[0], dims[1], dims[2] are the sizes nx, ny, nz of the
 *             axes x, y, z and ranks are numbered x fastest,
 *             rank = x + nx*(y + ny*z), neighbours computed by hand;
 *             messages on MPI_COMM_WORLD.  This is the same grid as
 *             row-major nz x ny x nx: dims in the other order.
 *   -t TOPO   mesh (non-periodic, the default) or torus (periodic)
 *   -c        cube only: refuse (exit 1) unless np is n*n*n, as codes
 *             that decompose a cube into equal cubes do
 *   -g        with -o xfast, also build a Cartesian communicator over
 *             MPI_Dims_create's dims in the order it returns them (which
 *             MPI reads with the last fastest, so it does not describe
 *             the x-fastest numbering) and do the Allreduce on it
 *   -i ITERS  iterations (default 6)
 *   -k K      MPI_Allreduce every K iterations (default 3, 0 = never)
 *   -b B      the local block, BXxBYxBZ doubles along axes 0, 1, 2
 *             (default 2x3x4), so that the faces normal to each axis have
 *             their own size: a grid read in the wrong order sends the
 *             wrong counts as well as to the wrong peers
 *
 * Each iteration: MPI_Irecv from every existing neighbour (axis 0 to 2,
 * towards - then +), MPI_Isend to every existing neighbour, one
 * MPI_Waitall; the tag is the direction of travel, 2*axis + (1 towards +).
 * A face normal to axis a holds the product of the other two block sizes;
 * every value is checked on receipt.  At the end an MPI_Reduce of a
 * checksum of the received data to rank 0, which prints it.
 *
 * Per-rank calls: Init 1, Finalize 1, Irecv = Isend = ITERS*neighbours
 * (6 in a torus; on a mesh one fewer per boundary the rank lies on),
 * Waitall ITERS, Allreduce (K ? ITERS/K : 0), Reduce 1, and with -o cart
 * or -g also Cart_create 1 and Comm_free 1.
 */
#include "common.h"
#include <unistd.h>

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: grid3d [-o cart|xfast] [-t mesh|torus] [-c] [-g] [-i ITERS] "
                        "[-k K] [-b BXxBYxBZ]\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The value at index k of the face that `sender` sends in direction `dir`
 * in iteration `it`: exact in a double for every size used here. */
static double payload(int sender, int it, int dir, int k)
{
    return sender * 1000003.0 + it * 1009.0 + dir * 101.0 + k;
}

/* The x-fastest rank at (x, y, z), or MPI_PROC_NULL past a mesh's edge. */
static int xfast_rank(int c[3], const int n[3], int torus)
{
    for (int a = 0; a < 3; a++) {
        if (c[a] < 0 || c[a] >= n[a]) {
            if (!torus) return MPI_PROC_NULL;
            c[a] = (c[a] + n[a]) % n[a];
        }
    }
    return c[0] + n[0] * (c[1] + n[1] * c[2]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int xfast = 0, torus = 0, cube = 0, cart_too = 0, iters = 6, kred = 3;
    int blk[3] = {2, 3, 4};
    int opt;
    while ((opt = getopt(argc, argv, "o:t:cgi:k:b:")) != -1) {
        switch (opt) {
        case 'o':
            if (!strcmp(optarg, "cart")) xfast = 0;
            else if (!strcmp(optarg, "xfast")) xfast = 1;
            else usage(rank);
            break;
        case 't':
            if (!strcmp(optarg, "mesh")) torus = 0;
            else if (!strcmp(optarg, "torus")) torus = 1;
            else usage(rank);
            break;
        case 'c': cube = 1; break;
        case 'g': cart_too = 1; break;
        case 'i': iters = parse_int(optarg, "ITERS", 1); break;
        case 'k': kred = parse_int(optarg, "K", 1); break;
        case 'b':
            if (sscanf(optarg, "%dx%dx%d", &blk[0], &blk[1], &blk[2]) != 3 || blk[0] < 1 ||
                blk[1] < 1 || blk[2] < 1)
                usage(rank);
            break;
        default: usage(rank);
        }
    }
    if (optind != argc || (cart_too && !xfast)) usage(rank);
    if (cube) {
        int n = 1;
        while (n * n * n < np) n++;
        if (n * n * n != np) {
            if (rank == 0)
                fprintf(stderr, "grid3d -c runs on cubes only (8, 27, 64, 125, ...), not %d ranks\n",
                        np);
            abort_config();
        }
    }
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(np, 3, dims);

    /* nb[a][s]: the neighbour towards -axis a (s = 0) or +axis a (s = 1). */
    int nb[3][2];
    MPI_Comm comm = MPI_COMM_WORLD, cart = MPI_COMM_NULL;
    const int periods[3] = {torus, torus, torus};
    if (!xfast || cart_too) MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    if (!xfast) {
        comm = cart;
        for (int a = 0; a < 3; a++) MPI_Cart_shift(cart, a, 1, &nb[a][0], &nb[a][1]);
    } else {
        const int at[3] = {rank % dims[0], (rank / dims[0]) % dims[1], rank / (dims[0] * dims[1])};
        for (int a = 0; a < 3; a++)
            for (int s = 0; s < 2; s++) {
                int c[3] = {at[0], at[1], at[2]};
                c[a] += s ? 1 : -1;
                nb[a][s] = xfast_rank(c, dims, torus);
            }
    }

    int face[3], maxface = 0;
    for (int a = 0; a < 3; a++) {
        face[a] = blk[(a + 1) % 3] * blk[(a + 2) % 3];
        if (face[a] > maxface) maxface = face[a];
    }
    double *sbuf = malloc(sizeof(double) * 6 * (size_t)maxface);
    double *rbuf = malloc(sizeof(double) * 6 * (size_t)maxface);
    if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 3);
    uint64_t sum = 0;
    double acc = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Request rq[12];
        int nr = 0;
        /* From the neighbour towards -a comes what travels towards +a. */
        for (int a = 0; a < 3; a++)
            for (int s = 0; s < 2; s++)
                if (nb[a][s] != MPI_PROC_NULL)
                    MPI_Irecv(rbuf + (2 * a + s) * maxface, face[a], MPI_DOUBLE, nb[a][s],
                              2 * a + (1 - s), comm, &rq[nr++]);
        for (int a = 0; a < 3; a++)
            for (int s = 0; s < 2; s++) {
                if (nb[a][s] == MPI_PROC_NULL) continue;
                double *b = sbuf + (2 * a + s) * maxface;
                for (int k = 0; k < face[a]; k++) b[k] = payload(rank, it, 2 * a + s, k);
                MPI_Isend(b, face[a], MPI_DOUBLE, nb[a][s], 2 * a + s, comm, &rq[nr++]);
            }
        MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
        for (int a = 0; a < 3; a++)
            for (int s = 0; s < 2; s++) {
                if (nb[a][s] == MPI_PROC_NULL) continue;
                const double *b = rbuf + (2 * a + s) * maxface;
                for (int k = 0; k < face[a]; k++) {
                    double want = payload(nb[a][s], it, 2 * a + (1 - s), k);
                    CHECK(b[k] == want, "face %d from %d: %g, want %g", 2 * a + s, nb[a][s], b[k],
                          want);
                    sum += mix64(dbits(b[k]));
                }
            }
        if (kred && it % kred == kred - 1) {
            double s = acc + (double)(sum % 1000), t;
            MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, cart_too ? cart : comm);
            acc = t * 1e-9;
        }
    }
    uint64_t total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("grid3d %s %dx%dx%d %s: checksum %016llx\n", xfast ? "xfast" : "cart", dims[0],
               dims[1], dims[2], torus ? "torus" : "mesh", (unsigned long long)total);
    if (cart != MPI_COMM_NULL) MPI_Comm_free(&cart);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
