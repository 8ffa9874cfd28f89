/*
 * rma_halo [ITERS] [N]
 *
 * A 2D halo exchange written with one-sided communication: MPI_Put inside
 * MPI_Win_fence epochs, on the periodic 2D Cartesian grid of
 * MPI_Dims_create (np = 1 and prime np give grids whose second dimension
 * has extent 1: a rank is then its own left and right neighbour; along a
 * dimension of extent 2 both neighbours are one rank). Weak scaling: every
 * rank owns an N x N block of doubles (default N = 8, ITERS = 20) stored
 * with a one-cell halo in an (N+2) x (N+2) row-major array, which is the
 * window (MPI_Win_create on the Cartesian communicator, disp_unit
 * sizeof(double)).
 *
 * Each iteration: the two boundary columns are copied to contiguous
 * buffers; MPI_Win_fence(0); four MPI_Put: the top row to the up
 * neighbour's bottom halo row (target displacement (N+1)(N+2)+1), the
 * bottom row to the down neighbour's top halo row (1), both N contiguous
 * doubles, the left column to the left neighbour's right halo column
 * ((N+2)+N+1) and the right column to the right neighbour's left halo
 * column (N+2), both N MPI_DOUBLE at the origin and one MPI_Type_vector
 * (N blocks of 1, stride N+2) at the target; MPI_Win_fence(0); then every
 * halo cell is checked and the interior updated with the Jacobi-style
 * integer stencil u' = (up + down + left + right + 2u) mod 1000003, which
 * doubles hold exactly. Every rank steps a copy of the whole global field
 * (serially, (dims[0] N) x (dims[1] N) cells) alongside, so that it knows
 * its neighbours' values: every halo cell must equal the global field at
 * the wrapped global position, and the interior must equal it after the
 * last iteration. The initial field is a hash of the global position, so
 * a value put to the wrong place or rank is caught. At the end one
 * MPI_Allreduce sums the interiors, which rank 0 compares with the global
 * field's sum and prints.
 *
 * SPMD: every rank makes the same calls, at every np.
 * Per-rank calls:
 *   detailed: Init 1, Finalize 1, Cart_create 1, Comm_free 1, Allreduce 1;
 *   one-sided: Win_create 1, Win_fence 2*ITERS,
 *     Put 4*ITERS, Win_free 1;
 *   without detail: Comm_rank 1, Comm_size 1, Dims_create 1,
 *     Cart_coords 1, Cart_shift 2, Type_vector 1, Type_commit 1,
 *     Type_free 1.
 *
 * Open MPI 4.1.4 at np = 1 only: MPI_Win_create fails ("MPI_ERR_WIN:
 * invalid window") with Debian's default one-sided components (its
 * openmpi-mca-params.conf sets osc = ^ucx,pt2pt, which leaves osc rdma,
 * failing for a one-process job over btl self,vader, and osc sm, which
 * makes only MPI_Win_allocate(_shared) windows); `--mca osc sm,pt2pt`
 * (or `--mca osc pt2pt`, `--mca osc ucx`) runs it. Every np >= 2 runs
 * with the defaults, and MPICH at every np.
 */
#include "common.h"

#include <math.h>

#define MODP 1000003.0

/* The initial value of global cell (x, y): a hash, reduced mod MODP. */
static double init_val(long x, long y)
{
    return (double)(mix64(((uint64_t)x << 32) ^ (uint64_t)y) % 1000003ULL);
}

/* One step of the stencil on the periodic gx x gy global field. */
static void global_step(const double *g, double *h, long gx, long gy)
{
    for (long x = 0; x < gx; x++)
        for (long y = 0; y < gy; y++) {
            double s = g[((x + gx - 1) % gx) * gy + y] + g[((x + 1) % gx) * gy + y] +
                       g[x * gy + (y + gy - 1) % gy] + g[x * gy + (y + 1) % gy] +
                       2.0 * g[x * gy + y];
            h[x * gy + y] = fmod(s, MODP);
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc > 3) {
        if (rank == 0) fprintf(stderr, "usage: rma_halo [ITERS] [N]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = argc > 1 ? parse_int(argv[1], "ITERS", 0) : 20;
    const int n = argc > 2 ? parse_int(argv[2], "N", 0) : 8;
    CHECK(n >= 1 && n <= 4096, "N = %d out of range 1..4096", n);
    const int w = n + 2; /* row length of the local array */

    int dims[2] = {0, 0}, periods[2] = {1, 1}, coords[2];
    MPI_Dims_create(np, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, coords);
    int up, down, left, right;
    MPI_Cart_shift(cart, 0, 1, &up, &down);
    MPI_Cart_shift(cart, 1, 1, &left, &right);

    /* The global field, replicated on every rank as the reference. */
    const long gx = (long)dims[0] * n, gy = (long)dims[1] * n;
    const long x0 = (long)coords[0] * n, y0 = (long)coords[1] * n; /* first interior cell */
    double *g = malloc((size_t)(gx * gy) * sizeof *g);
    double *h = malloc((size_t)(gx * gy) * sizeof *h);
    double *a = malloc((size_t)w * w * sizeof *a);
    double *b = malloc((size_t)n * n * sizeof *b);
    double *colbuf = malloc(2 * (size_t)n * sizeof *colbuf); /* left, right column */
    CHECK(g && h && a && b && colbuf, "out of memory");
    for (long x = 0; x < gx; x++)
        for (long y = 0; y < gy; y++) g[x * gy + y] = init_val(x, y);
    for (int k = 0; k < w * w; k++) a[k] = -1.0;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++) a[i * w + j] = g[(x0 + i - 1) * gy + (y0 + j - 1)];

    MPI_Datatype column;
    MPI_Type_vector(n, 1, w, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    MPI_Win win;
    MPI_Win_create(a, (MPI_Aint)w * w * (MPI_Aint)sizeof(double), sizeof(double), MPI_INFO_NULL,
                   cart, &win);

    for (int it = 0; it < iters; it++) {
        for (int i = 1; i <= n; i++) {
            colbuf[i - 1] = a[i * w + 1];     /* left column */
            colbuf[n + i - 1] = a[i * w + n]; /* right column */
        }
        MPI_Win_fence(0, win);
        MPI_Put(&a[1 * w + 1], n, MPI_DOUBLE, up, (MPI_Aint)(n + 1) * w + 1, n, MPI_DOUBLE, win);
        MPI_Put(&a[n * w + 1], n, MPI_DOUBLE, down, 1, n, MPI_DOUBLE, win);
        MPI_Put(&colbuf[0], n, MPI_DOUBLE, left, (MPI_Aint)w + n + 1, 1, column, win);
        MPI_Put(&colbuf[n], n, MPI_DOUBLE, right, (MPI_Aint)w, 1, column, win);
        MPI_Win_fence(0, win);

        /* Every halo cell holds the global field at its wrapped position. */
        for (int k = 1; k <= n; k++) {
            const long xt = (x0 + gx - 1) % gx, xb = (x0 + n) % gx; /* halo rows */
            const long yl = (y0 + gy - 1) % gy, yr = (y0 + n) % gy; /* halo columns */
            const long xk = x0 + k - 1, yk = y0 + k - 1;
            CHECK(a[k] == g[xt * gy + yk], "iteration %d: top halo %d is %.0f, want %.0f", it, k,
                  a[k], g[xt * gy + yk]);
            CHECK(a[(n + 1) * w + k] == g[xb * gy + yk],
                  "iteration %d: bottom halo %d is %.0f, want %.0f", it, k, a[(n + 1) * w + k],
                  g[xb * gy + yk]);
            CHECK(a[k * w] == g[xk * gy + yl], "iteration %d: left halo %d is %.0f, want %.0f", it,
                  k, a[k * w], g[xk * gy + yl]);
            CHECK(a[k * w + n + 1] == g[xk * gy + yr],
                  "iteration %d: right halo %d is %.0f, want %.0f", it, k, a[k * w + n + 1],
                  g[xk * gy + yr]);
        }
        /* The Jacobi-style update of the interior, from the halo. */
        for (int i = 1; i <= n; i++)
            for (int j = 1; j <= n; j++) {
                double s = a[(i - 1) * w + j] + a[(i + 1) * w + j] + a[i * w + j - 1] +
                           a[i * w + j + 1] + 2.0 * a[i * w + j];
                b[(i - 1) * n + (j - 1)] = fmod(s, MODP);
            }
        for (int i = 1; i <= n; i++)
            for (int j = 1; j <= n; j++) a[i * w + j] = b[(i - 1) * n + (j - 1)];
        global_step(g, h, gx, gy);
        double *t = g;
        g = h;
        h = t;
    }

    long long local = 0, total = 0, want = 0;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++) {
            const double v = g[(x0 + i - 1) * gy + (y0 + j - 1)];
            CHECK(a[i * w + j] == v, "cell (%d,%d) is %.0f after %d iterations, want %.0f", i, j,
                  a[i * w + j], iters, v);
            local += (long long)a[i * w + j];
        }
    MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, cart);
    for (long k = 0; k < gx * gy; k++) want += (long long)g[k];
    CHECK(total == want, "sum of the field %lld, want %lld", total, want);

    MPI_Win_free(&win);
    MPI_Type_free(&column);
    MPI_Comm_free(&cart);
    if (rank == 0)
        printf("rma_halo: %dx%d grid, %dx%d block, %d iterations, sum %lld ok\n", dims[0], dims[1],
               n, n, iters, total);
    free(g);
    free(h);
    free(a);
    free(b);
    free(colbuf);
    MPI_Finalize();
    return 0;
}
