/*
 * comm_constructors ITERS
 *
 * Communicators from MPI_Comm_idup and MPI_Comm_create_group (issue 39,
 * cause 5: their communicators must be known to replay). On np >= 2
 * ranks:
 *
 *  1. MPI_Comm_idup of MPI_COMM_WORLD (request a); while it is pending,
 *     a ring exchange over the world (MPI_Sendrecv to rank+1 from rank-1,
 *     tag 1); then MPI_Wait(a) gives `wdup`.
 *  2. MPI_Comm_split of the world by parity (colour rank % 2, key rank)
 *     gives `half`; MPI_Comm_idup of `half` (request b) and of `wdup`
 *     (request c), both completed by one MPI_Waitall({b, c}), give
 *     `hdup` and `wdup2`.
 *  3. Per iteration: MPI_Allreduce (MPI_SUM of rank + iteration) over
 *     `wdup`, `wdup2` and `hdup`, and MPI_Bcast from rank 0 of `hdup`;
 *     every result is checked. The Allreduce over `hdup` sums only the
 *     ranks of one parity, so a replay that used the wrong communicator
 *     would move other bytes between other ranks.
 *  4. The lower half of the world (ranks 0 .. np/2-1; MPI_Comm_group,
 *     MPI_Group_range_incl on every rank) makes `low` by MPI_Comm_create_group
 *     (tag 5), which only its members call; per iteration one
 *     MPI_Allreduce over it (checked); MPI_Group_free on every rank.
 *  5. MPI_Comm_free of `low`, `hdup`, `wdup2`, `half` and `wdup`.
 *
 * Per-rank calls (L = np/2 lower ranks): Init 1, Finalize 1, Comm_rank 2,
 *   Comm_size 2, Comm_idup 3, Wait 1, Waitall 1, Sendrecv 1,
 *   Comm_split 1, Comm_group 1, Group_range_incl 1, Group_free 2,
 *   Allreduce 3*ITERS (+ITERS below L), Bcast ITERS,
 *   Comm_create_group 1 below L, Comm_free 4 (+1 below L).
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 2) comm_constructors ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);

    MPI_Comm wdup, half, hdup, wdup2;
    MPI_Request a, bc[2];
    MPI_Comm_idup(MPI_COMM_WORLD, &wdup, &a);
    int token = rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % np, 1, &got, 1, MPI_INT,
                 (rank + np - 1) % np, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got == (rank + np - 1) % np, "ring got %d", got);
    MPI_Wait(&a, MPI_STATUS_IGNORE);

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_idup(half, &hdup, &bc[0]);
    MPI_Comm_idup(wdup, &wdup2, &bc[1]);
    MPI_Waitall(2, bc, MPI_STATUSES_IGNORE);

    int hsize, hrank;
    MPI_Comm_size(hdup, &hsize);
    MPI_Comm_rank(hdup, &hrank);
    CHECK(hsize == (np + 1 - rank % 2) / 2, "half size %d", hsize);
    for (int it = 0; it < iters; it++) {
        const int mine = rank + it;
        int sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, wdup);
        CHECK(sum == np * (np - 1) / 2 + np * it, "world sum %d", sum);
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, wdup2);
        CHECK(sum == np * (np - 1) / 2 + np * it, "world sum %d", sum);
        /* The ranks of my parity: p, p + 2, ... below np. */
        int want = 0;
        for (int q = rank % 2; q < np; q += 2)
            want += q + it;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, hdup);
        CHECK(sum == want, "half sum %d, want %d", sum, want);
        int root_val = hrank == 0 ? 1000 + rank + it : -1;
        MPI_Bcast(&root_val, 1, MPI_INT, 0, hdup);
        CHECK(root_val == 1000 + rank % 2 + it, "bcast %d", root_val);
    }

    const int lower = np / 2;
    MPI_Group world_group, low_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int range[1][3] = {{0, lower - 1, 1}};
    MPI_Group_range_incl(world_group, 1, range, &low_group);
    MPI_Comm low = MPI_COMM_NULL;
    if (rank < lower) {
        MPI_Comm_create_group(MPI_COMM_WORLD, low_group, 5, &low);
        for (int it = 0; it < iters; it++) {
            int sum = 0, mine = rank * it;
            MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, low);
            CHECK(sum == it * lower * (lower - 1) / 2, "low sum %d", sum);
        }
        MPI_Comm_free(&low);
    }
    MPI_Group_free(&low_group);
    MPI_Group_free(&world_group);

    MPI_Comm_free(&hdup);
    MPI_Comm_free(&wdup2);
    MPI_Comm_free(&half);
    MPI_Comm_free(&wdup);
    if (rank == 0) printf("comm_constructors: %d iterations on %d ranks: ok\n", iters, np);
    MPI_Finalize();
    return 0;
}
