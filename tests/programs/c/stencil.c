/*
 * stencil -d NDIMS [-p DIMS] [-t mesh|torus] -i ITERS [-s strong|weak]
 *         [-n N] [-k K] [-c] [-x alltoall|ialltoall|alltoallv]
 *
 *   -d NDIMS  1, 2 or 3 dimensional decomposition (default 2)
 *   -p DIMS   process grid, e.g. 4, 4x4, 2x2x2 (default: MPI_Dims_create)
 *   -t TOPO   mesh (non-periodic) or torus (periodic), default torus
 *   -i ITERS  iterations (default 10)
 *   -s MODE   strong: N is the global size per dimension, split as evenly as
 *             possible (first ranks along a dimension get one extra point);
 *             weak: N is the local size per dimension (default strong)
 *   -n N      see -s (default 64)
 *   -k K      MPI_Allreduce of the residual every K iterations (default 10,
 *             0 = never)
 *   -c        build an MPI_Cart_create communicator and take neighbours from
 *             MPI_Cart_shift.  Without -c neighbours are computed by hand
 *             (row-major rank order, last dimension fastest, like
 *             MPI_Cart_create) and MPI_COMM_WORLD is used.
 *   -x MODE   exchange the faces with one neighbourhood collective on the
 *             Cartesian communicator (implies -c) instead of point-to-point:
 *             alltoall: MPI_Neighbor_alltoall, every block as long as the
 *             largest face (padded); ialltoall: MPI_Ineighbor_alltoall and
 *             MPI_Wait; alltoallv: MPI_Neighbor_alltoallv with each face's
 *             own length. Block 2d+s goes to (comes from) the neighbour
 *             towards -d (s = 0) or +d (s = 1), the order of
 *             MPI_Cart_shift; blocks of MPI_PROC_NULL neighbours (a mesh's
 *             edges) carry nothing. Use extents >= 3 on a torus: with 2 the
 *             two neighbours of a dimension are one rank.
 *
 * Each iteration: MPI_Irecv from every existing neighbour, then MPI_Isend to
 * every existing neighbour (2*NDIMS in a torus, fewer on mesh boundaries;
 * a torus dimension of extent 1 makes the rank its own neighbour twice),
 * one MPI_Waitall over all requests, then a Jacobi update.  Messages are the
 * faces of the local block (doubles).  The tag is the direction in which the
 * message travels: 2*dim + (1 if towards +dim else 0).
 *
 * At the end the field is hashed (decomposition independent) and summed with
 * MPI_Reduce on rank 0, which recomputes the whole problem serially and
 * compares (skipped when global_points*iters > 5e7).
 *
 * Per-rank calls: Init 1, Irecv = Isend = ITERS*neighbours(rank),
 * Waitall ITERS, Allreduce (K ? ITERS/K : 0), Reduce 1, Finalize 1,
 * and with -c additionally Cart_create 1 and Comm_free 1. With -x,
 * Neighbor_alltoall, Neighbor_alltoallv or Ineighbor_alltoall and Wait
 * ITERS each in place of Irecv, Isend and Waitall.
 */
#include "common.h"
#include <unistd.h>

static int ndims = 2, torus = 1, weak = 0, iters = 10, nsize = 64, kred = 10, use_cart = 0;
static int dims[3] = {0, 0, 0};
/* -x: 0 point-to-point, 1 Neighbor_alltoall, 2 Ineighbor_alltoall,
 * 3 Neighbor_alltoallv. */
static int nbr = 0;

static void usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: stencil -d NDIMS [-p DIMS] [-t mesh|torus] -i ITERS "
                        "[-s strong|weak] [-n N] [-k K] [-c] [-x alltoall|ialltoall|alltoallv]\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static double init_value(long g0, long g1, long g2)
{
    return (double)((g0 * 73 + g1 * 151 + g2 * 283) % 1009) / 1009.0;
}

/* One Jacobi sweep over an array with one ghost layer in each dimension.
 * ext[] are the interior extents; only the first nd dimensions are active.
 * Returns the squared-difference residual. Same code for the serial check. */
static double jacobi(const double *u, double *v, const int ext[3], int nd)
{
    const long E1 = ext[1] + 2, E2 = ext[2] + 2;
    const long st[3] = {E1 * E2, E2, 1};
    const double w = 1.0 / (2.0 * nd);
    double res = 0.0;
    for (long i = 1; i <= ext[0]; i++)
        for (long j = 1; j <= ext[1]; j++)
            for (long k = 1; k <= ext[2]; k++) {
                long c = i * st[0] + j * st[1] + k;
                double s = 0.0;
                for (int d = 0; d < nd; d++) s += u[c - st[d]] + u[c + st[d]];
                v[c] = s * w;
                double diff = v[c] - u[c];
                res += diff * diff;
            }
    return res;
}

static uint64_t point_hash(double val, long g0, long g1, long g2, const long G[3])
{
    uint64_t gidx = ((uint64_t)g0 * (uint64_t)G[1] + (uint64_t)g1) * (uint64_t)G[2] + (uint64_t)g2;
    return mix64(dbits(val) ^ mix64(gidx));
}

/* Serial reference on the whole global domain. */
static uint64_t serial_reference(const long G[3])
{
    int ext[3] = {(int)G[0], (int)G[1], (int)G[2]};
    const long E0 = G[0] + 2, E1 = G[1] + 2, E2 = G[2] + 2;
    const long st[3] = {E1 * E2, E2, 1};
    double *u = calloc((size_t)(E0 * E1 * E2), sizeof(double));
    double *v = calloc((size_t)(E0 * E1 * E2), sizeof(double));
    if (!u || !v) MPI_Abort(MPI_COMM_WORLD, 3);
    for (long i = 1; i <= G[0]; i++)
        for (long j = 1; j <= G[1]; j++)
            for (long k = 1; k <= G[2]; k++)
                u[i * st[0] + j * st[1] + k] = init_value(i - 1, j - 1, k - 1);
    for (int it = 0; it < iters; it++) {
        if (torus) {
            /* periodic ghost layers (whole planes, only faces are read) */
            for (int d = 0; d < ndims; d++) {
                long E[3] = {E0, E1, E2};
                for (long a = 0; a < E[(d + 1) % 3]; a++)
                    for (long b = 0; b < E[(d + 2) % 3]; b++) {
                        long idx[3];
                        idx[(d + 1) % 3] = a;
                        idx[(d + 2) % 3] = b;
                        idx[d] = 0;
                        long lo = idx[0] * st[0] + idx[1] * st[1] + idx[2];
                        idx[d] = G[d] + 1;
                        long hi = idx[0] * st[0] + idx[1] * st[1] + idx[2];
                        u[lo] = u[lo + G[d] * st[d]];
                        u[hi] = u[hi - G[d] * st[d]];
                    }
            }
        }
        jacobi(u, v, ext, ndims);
        double *t = u; u = v; v = t;
    }
    uint64_t h = 0;
    for (long i = 1; i <= G[0]; i++)
        for (long j = 1; j <= G[1]; j++)
            for (long k = 1; k <= G[2]; k++)
                h += point_hash(u[i * st[0] + j * st[1] + k], i - 1, j - 1, k - 1, G);
    free(u);
    free(v);
    return h;
}

/* Copy a face (layer `layer` in dimension d) between the array and a buffer. */
static void face_copy(double *u, const int L[3], int d, long layer, double *buf, int pack)
{
    const long E1 = L[1] + 2, E2 = L[2] + 2;
    const long st[3] = {E1 * E2, E2, 1};
    const int d1 = (d + 1) % 3, d2 = (d + 2) % 3;
    long n = 0;
    for (long a = 1; a <= L[d1]; a++)
        for (long b = 1; b <= L[d2]; b++) {
            long c = layer * st[d] + a * st[d1] + b * st[d2];
            if (pack) buf[n++] = u[c];
            else u[c] = buf[n++];
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    const char *pstr = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "d:p:t:i:s:n:k:cx:")) != -1) {
        switch (opt) {
        case 'd': ndims = parse_int(optarg, "NDIMS", 0); break;
        case 'p': pstr = optarg; break;
        case 't':
            if (!strcmp(optarg, "mesh")) torus = 0;
            else if (!strcmp(optarg, "torus")) torus = 1;
            else usage(rank);
            break;
        case 'i': iters = parse_int(optarg, "ITERS", 1); break;
        case 's':
            if (!strcmp(optarg, "strong")) weak = 0;
            else if (!strcmp(optarg, "weak")) weak = 1;
            else usage(rank);
            break;
        case 'n': nsize = parse_int(optarg, "N", 0); break;
        case 'k': kred = parse_int(optarg, "K", 1); break;
        case 'c': use_cart = 1; break;
        case 'x':
            if (!strcmp(optarg, "alltoall")) nbr = 1;
            else if (!strcmp(optarg, "ialltoall")) nbr = 2;
            else if (!strcmp(optarg, "alltoallv")) nbr = 3;
            else usage(rank);
            use_cart = 1;
            break;
        default: usage(rank);
        }
    }
    if (optind != argc || ndims < 1 || ndims > 3) usage(rank);

    if (pstr) {
        int nd = 0;
        const char *s = pstr;
        while (*s) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s || v < 1 || nd >= 3) usage(rank);
            dims[nd++] = (int)v;
            s = end;
            if (*s == 'x') s++;
            else if (*s) usage(rank);
        }
        if (nd != ndims) usage(rank);
    } else {
        MPI_Dims_create(np, ndims, dims);
    }
    int prod = 1;
    for (int d = 0; d < ndims; d++) prod *= dims[d];
    if (prod != np) {
        if (rank == 0) fprintf(stderr, "process grid has %d ranks but np=%d\n", prod, np);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int d = ndims; d < 3; d++) dims[d] = 1;

    /* Coordinates: row-major, last dimension varies fastest. */
    int coords[3] = {0, 0, 0};
    for (int d = ndims - 1, r = rank; d >= 0; d--) {
        coords[d] = r % dims[d];
        r /= dims[d];
    }
    /* nb[d][0] = neighbour towards -d, nb[d][1] = towards +d */
    int nb[3][2];
    MPI_Comm comm = MPI_COMM_WORLD;
    if (use_cart) {
        int periods[3] = {torus, torus, torus}, cc[3];
        MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &comm);
        int crank;
        MPI_Comm_rank(comm, &crank);
        CHECK(crank == rank, "cart rank %d != world rank %d", crank, rank);
        MPI_Cart_coords(comm, rank, ndims, cc);
        for (int d = 0; d < ndims; d++) {
            CHECK(cc[d] == coords[d], "cart coords differ in dim %d", d);
            MPI_Cart_shift(comm, d, 1, &nb[d][0], &nb[d][1]);
        }
    } else {
        for (int d = 0; d < ndims; d++)
            for (int s = 0; s < 2; s++) {
                int c[3] = {coords[0], coords[1], coords[2]};
                c[d] += s ? 1 : -1;
                if (c[d] < 0 || c[d] >= dims[d]) {
                    if (!torus) { nb[d][s] = MPI_PROC_NULL; continue; }
                    c[d] = (c[d] + dims[d]) % dims[d];
                }
                nb[d][s] = (c[0] * dims[1] + c[1]) * dims[2] + c[2];
            }
    }

    /* Local block. */
    int L[3];
    long off[3], G[3];
    for (int d = 0; d < 3; d++) {
        if (d >= ndims) { L[d] = 1; off[d] = 0; G[d] = 1; continue; }
        if (weak) {
            L[d] = nsize;
            off[d] = (long)coords[d] * nsize;
            G[d] = (long)nsize * dims[d];
        } else {
            if (nsize < dims[d]) {
                if (rank == 0) fprintf(stderr, "N=%d smaller than process grid extent %d\n", nsize, dims[d]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            int q = nsize / dims[d], rem = nsize % dims[d];
            L[d] = q + (coords[d] < rem ? 1 : 0);
            off[d] = (long)coords[d] * q + (coords[d] < rem ? coords[d] : rem);
            G[d] = nsize;
        }
    }
    const long E1 = L[1] + 2, E2 = L[2] + 2, ntot = (L[0] + 2) * E1 * E2;
    const long st[3] = {E1 * E2, E2, 1};
    double *u = calloc((size_t)ntot, sizeof(double));
    double *v = calloc((size_t)ntot, sizeof(double));
    double *sbuf[3][2], *rbuf[3][2];
    int fsz[3];
    for (int d = 0; d < 3; d++) {
        fsz[d] = L[(d + 1) % 3] * L[(d + 2) % 3];
        for (int s = 0; s < 2; s++) {
            sbuf[d][s] = malloc(sizeof(double) * (size_t)fsz[d]);
            rbuf[d][s] = malloc(sizeof(double) * (size_t)fsz[d]);
        }
    }
    if (!u || !v) MPI_Abort(MPI_COMM_WORLD, 3);
    for (long i = 1; i <= L[0]; i++)
        for (long j = 1; j <= L[1]; j++)
            for (long k = 1; k <= L[2]; k++)
                u[i * st[0] + j * st[1] + k] =
                    init_value(off[0] + i - 1, off[1] + j - 1, off[2] + k - 1);

    /* Neighbourhood exchange: 2*ndims blocks of `blk` doubles (the largest
     * face) for -x alltoall, of the face's own length for alltoallv. */
    int blk = 0, ncnt[6], ndsp[6];
    for (int d = 0; d < ndims; d++) blk = fsz[d] > blk ? fsz[d] : blk;
    for (int d = 0, at = 0; d < ndims; d++)
        for (int s = 0; s < 2; s++) {
            ncnt[2 * d + s] = nbr == 3 ? fsz[d] : blk;
            ndsp[2 * d + s] = at;
            at += ncnt[2 * d + s];
        }
    double *nsend = malloc(sizeof(double) * (size_t)(2 * ndims * blk + 1));
    double *nrecv = malloc(sizeof(double) * (size_t)(2 * ndims * blk + 1));
    if (!nsend || !nrecv) MPI_Abort(MPI_COMM_WORLD, 3);

    MPI_Request reqs[12];
    double residual = -1.0;
    double t_loop = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        if (nbr) {
            for (int d = 0; d < ndims; d++)
                for (int s = 0; s < 2; s++)
                    face_copy(u, L, d, s ? L[d] : 1, nsend + ndsp[2 * d + s], 1);
            if (nbr == 1) {
                MPI_Neighbor_alltoall(nsend, blk, MPI_DOUBLE, nrecv, blk, MPI_DOUBLE, comm);
            } else if (nbr == 2) {
                MPI_Request r;
                MPI_Ineighbor_alltoall(nsend, blk, MPI_DOUBLE, nrecv, blk, MPI_DOUBLE, comm, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_alltoallv(nsend, ncnt, ndsp, MPI_DOUBLE, nrecv, ncnt, ndsp,
                                       MPI_DOUBLE, comm);
            }
            /* Block 2d+s came from the neighbour towards -d (s = 0), whose
             * +d face fills the low ghost layer, or +d (s = 1). */
            for (int d = 0; d < ndims; d++)
                for (int s = 0; s < 2; s++)
                    if (nb[d][s] != MPI_PROC_NULL)
                        face_copy(u, L, d, s ? L[d] + 1 : 0, nrecv + ndsp[2 * d + s], 0);
        } else {
            int nreq = 0;
            for (int d = 0; d < ndims; d++)
                for (int s = 0; s < 2; s++)
                    if (nb[d][s] != MPI_PROC_NULL)
                        /* from the -d neighbour comes a message travelling +d */
                        MPI_Irecv(rbuf[d][s], fsz[d], MPI_DOUBLE, nb[d][s], 2 * d + (s ? 0 : 1), comm,
                                  &reqs[nreq++]);
            for (int d = 0; d < ndims; d++)
                for (int s = 0; s < 2; s++)
                    if (nb[d][s] != MPI_PROC_NULL) {
                        face_copy(u, L, d, s ? L[d] : 1, sbuf[d][s], 1);
                        MPI_Isend(sbuf[d][s], fsz[d], MPI_DOUBLE, nb[d][s], 2 * d + s, comm, &reqs[nreq++]);
                    }
            MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
            for (int d = 0; d < ndims; d++)
                for (int s = 0; s < 2; s++)
                    if (nb[d][s] != MPI_PROC_NULL) face_copy(u, L, d, s ? L[d] + 1 : 0, rbuf[d][s], 0);
        }

        double res = jacobi(u, v, L, ndims);
        double *t = u; u = v; v = t;
        if (kred > 0 && (it + 1) % kred == 0) {
            MPI_Allreduce(&res, &residual, 1, MPI_DOUBLE, MPI_SUM, comm);
            CHECK(residual >= res, "allreduced residual %g smaller than local %g", residual, res);
        }
    }
    /* For scripts/bench.sh: the time of the iteration loop alone (rank 0),
     * on stderr so that stdout stays deterministic. */
    if (getenv("STENCIL_TIMING") && rank == 0)
        fprintf(stderr, "loop_s %.6f\n", MPI_Wtime() - t_loop);

    uint64_t h = 0, hsum = 0;
    for (long i = 1; i <= L[0]; i++)
        for (long j = 1; j <= L[1]; j++)
            for (long k = 1; k <= L[2]; k++)
                h += point_hash(u[i * st[0] + j * st[1] + k], off[0] + i - 1, off[1] + j - 1,
                                off[2] + k - 1, G);
    MPI_Reduce(&h, &hsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm);

    if (rank == 0) {
        printf("stencil ndims=%d dims=", ndims);
        for (int d = 0; d < ndims; d++) printf(d ? "x%d" : "%d", dims[d]);
        printf(" topo=%s scaling=%s n=%d global=", torus ? "torus" : "mesh", weak ? "weak" : "strong", nsize);
        for (int d = 0; d < ndims; d++) printf(d ? "x%ld" : "%ld", G[d]);
        printf(" iters=%d k=%d cart=%d\n", iters, kred, use_cart);
        if (residual >= 0) printf("residual=%.6e\n", residual);
        else printf("residual=none\n");
        const char *verdict = "skipped";
        if ((double)G[0] * G[1] * G[2] * iters <= 5e7) {
            uint64_t ref = serial_reference(G);
            CHECK(ref == hsum, "hash %016llx differs from serial reference %016llx",
                  (unsigned long long)hsum, (unsigned long long)ref);
            verdict = "ok";
        }
        printf("hash=%016llx verify=%s\n", (unsigned long long)hsum, verdict);
    }

    for (int d = 0; d < 3; d++)
        for (int s = 0; s < 2; s++) { free(sbuf[d][s]); free(rbuf[d][s]); }
    free(u);
    free(v);
    if (use_cart) MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
