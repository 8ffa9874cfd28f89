/*
 * cglike -i ITERS [-n COUNT]
 *
 * The communication of NPB CG on P = 2^k ranks (seed 001 Fig. 10): the ranks
 * form a row-major grid of nprows x npcols with npcols = 2^ceil(k/2) and
 * nprows = P / npcols.  Every iteration
 *   - exchanges partial sums along the row with the partners at distance
 *     2^s for s = 0 .. log2(npcols) - 1 (partner = rank XOR 2^s), one
 *     MPI_Sendrecv each, COUNT doubles, tag s;
 *   - exchanges with the transpose partner (NPB's exch_proc: for a square
 *     grid (rank % nprows) * nprows + rank / nprows, otherwise
 *     2 * (((rank / 2) % nprows) * nprows + (rank / 2) / nprows) + rank % 2),
 *     one MPI_Sendrecv, tag 100 (a rank may be its own partner);
 *   - one MPI_Allreduce of a dot product.
 * Payloads are checked.  The row partners depend on the rank's bits, so no
 * grid position decides them: extrapolation needs the CG plugin spec.
 *
 * Per-rank calls: Init 1, Finalize 1, Sendrecv ITERS*(log2(npcols)+1),
 * Allreduce ITERS.
 */
#include "common.h"

static int ilog2(int v)
{
    int l = 0;
    while ((1 << (l + 1)) <= v) l++;
    return l;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np, iters = 4, count = 16;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-i") && a + 1 < argc) {
            iters = parse_int(argv[++a], "iterations", 0);
        } else if (!strcmp(argv[a], "-n") && a + 1 < argc) {
            count = parse_int(argv[++a], "count", 0);
        } else {
            if (rank == 0) fprintf(stderr, "usage: cglike -i ITERS [-n COUNT]\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    const int k = ilog2(np);
    if ((1 << k) != np || count > 64) {
        if (rank == 0) fprintf(stderr, "cglike: the rank count must be a power of two\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int npcols = 1 << ((k + 1) / 2), nprows = np / npcols;
    const int exch = npcols == nprows
                         ? (rank % nprows) * nprows + rank / nprows
                         : 2 * (((rank / 2) % nprows) * nprows + (rank / 2) / nprows) + rank % 2;
    double sb[64], rb[64], dot = 0;
    for (int it = 0; it < iters; it++) {
        for (int s = 0; (1 << s) < npcols; s++) {
            const int partner = rank ^ (1 << s);
            for (int i = 0; i < count; i++) sb[i] = rank * 100.0 + it + i;
            MPI_Sendrecv(sb, count, MPI_DOUBLE, partner, s, rb, count, MPI_DOUBLE, partner, s,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < count; i++)
                CHECK(rb[i] == partner * 100.0 + it + i, "row exchange with %d", partner);
            dot += rb[0];
        }
        for (int i = 0; i < count; i++) sb[i] = rank * 7.0 + it + i;
        MPI_Sendrecv(sb, count, MPI_DOUBLE, exch, 100, rb, count, MPI_DOUBLE, exch, 100,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < count; i++)
            CHECK(rb[i] == exch * 7.0 + it + i, "transpose exchange with %d", exch);
        double s = dot * 1e-6, t;
        MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        dot = t;
    }
    if (rank == 0) printf("cglike ok\n");
    MPI_Finalize();
    return 0;
}
