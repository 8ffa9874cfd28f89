/*
 * ring ITERS
 *
 * A token (a 64-bit integer) travels ITERS times around the ring of ranks
 * with blocking MPI_Send / MPI_Recv.  Every rank adds (rank+1) to the token
 * before forwarding it, so each rank knows exactly what it must receive.
 *
 * Every lap is marked for profilers with MPI_Pcontrol(lap + 1).
 *
 * Per rank: Init 1, Pcontrol ITERS, Send ITERS, Recv ITERS, Finalize 1.
 * Needs np >= 2.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: ring ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int iters = parse_int(argv[1], "ITERS", 0);
    if (np < 2) {
        if (rank == 0) fprintf(stderr, "ring needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    const long long S = (long long)np * (np + 1) / 2; /* one full lap */
    long long token = 0;
    uint64_t hash = 0;

    for (int it = 0; it < iters; it++) {
        MPI_Pcontrol(it + 1);
        long long expect;
        if (rank == 0) {
            token += 1; /* rank 0 adds rank+1 = 1 */
            MPI_Send(&token, 1, MPI_LONG_LONG, right, it, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG_LONG, left, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            expect = (long long)(it + 1) * S;
        } else {
            MPI_Recv(&token, 1, MPI_LONG_LONG, left, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            expect = (long long)it * S + (long long)rank * (rank + 1) / 2;
            CHECK(token == expect, "iter %d: got token %lld, expected %lld", it, token, expect);
            token += rank + 1;
            MPI_Send(&token, 1, MPI_LONG_LONG, right, it, MPI_COMM_WORLD);
            expect = token;
        }
        CHECK(token == expect, "iter %d: got token %lld, expected %lld", it, token, expect);
        hash = mix64(hash ^ (uint64_t)token);
    }

    if (rank == 0)
        printf("ring np=%d iters=%d final_token=%lld hash=%016llx\n", np, iters, token,
               (unsigned long long)hash);
    MPI_Finalize();
    return 0;
}
