/*
 * sleeplaw LAW ITERS BASE_US
 *
 * Synthetic scaling law: every iteration each rank sleeps t(P) microseconds
 * (nanosleep), then does an MPI_Allreduce and a ring MPI_Sendrecv.  With
 * P = number of ranks:
 *   const          t = BASE
 *   linear         t = BASE * P / 4
 *   inverse        t = BASE * 16 / P
 *   inverse_const  t = BASE * 16 / P + BASE
 *   logp           t = BASE * log2(P)
 * (computed in double precision, rounded to the nearest microsecond).
 * Rank 0 prints the law and t, never a time measurement.
 *
 * Per-rank calls: Init 1, Finalize 1, Allreduce ITERS, Sendrecv ITERS.
 */
#include "common.h"
#include <math.h>
#include <time.h>
#include <errno.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: sleeplaw const|linear|inverse|inverse_const|logp ITERS BASE_US\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *law = argv[1];
    const int iters = parse_int(argv[2], "ITERS", 0);
    const double base = parse_int(argv[3], "BASE_US", 1);
    const double P = np;
    double t;
    if (!strcmp(law, "const")) t = base;
    else if (!strcmp(law, "linear")) t = base * P / 4.0;
    else if (!strcmp(law, "inverse")) t = base * 16.0 / P;
    else if (!strcmp(law, "inverse_const")) t = base * 16.0 / P + base;
    else if (!strcmp(law, "logp")) t = base * log2(P);
    else {
        if (rank == 0) fprintf(stderr, "unknown law '%s'\n", law);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    const long t_us = lround(t);
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    long long acc = 0;
    for (int it = 0; it < iters; it++) {
        struct timespec ts = {t_us / 1000000, (t_us % 1000000) * 1000}, rem;
        while (nanosleep(&ts, &rem) != 0 && errno == EINTR) ts = rem;
        long long v = (long long)rank * 1000 + it, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        long long e = (long long)np * (np - 1) / 2 * 1000 + (long long)np * it;
        CHECK(sum == e, "allreduce %lld expected %lld", sum, e);
        int s = rank * 31 + it, r = -1;
        MPI_Sendrecv(&s, 1, MPI_INT, right, it, &r, 1, MPI_INT, left, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(r == left * 31 + it, "sendrecv got %d", r);
        acc += sum + r;
    }
    if (rank == 0) printf("sleeplaw law=%s P=%d base_us=%.0f t_us=%ld iters=%d checksum=%lld\n", law, np, base,
                          t_us, iters, acc);
    MPI_Finalize();
    return 0;
}
