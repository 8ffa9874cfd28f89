/*
 * groups ITERS
 *
 * MPI 4's communicators made of groups alone (issue 39), with no parent
 * communicator. Open MPI 4.1 has neither call (MPI_VERSION 3): there the
 * program says so and does nothing else (the manifest runs it on MPICH
 * only). Run it on an even number of ranks, 2 or more.
 *
 *  1. MPI_Comm_create_from_group of the world's ranks of this rank's
 *     parity (string tag "parity"); ITERS times an MPI_Allreduce (sum of
 *     world ranks) on it, checked; MPI_Comm_free.
 *  2. MPI_Intercomm_create_from_groups of the lower half of the world
 *     (local group of ranks below np/2) and the upper half, leaders 0,
 *     tag "halves"; ITERS times an MPI_Sendrecv (tag 9) with the rank of
 *     the same index in the other half, checked; MPI_Comm_free.
 *
 * Per-rank calls (MPICH): Init 1, Finalize 1, Comm_create_from_group 1,
 *   Intercomm_create_from_groups 1, Allreduce ITERS, Sendrecv ITERS,
 *   Comm_free 2.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const int iters = argc > 1 ? parse_int(argv[1], "ITERS", 0) : 3;
#if MPI_VERSION < 4
    (void)iters;
    if (rank == 0)
        printf("groups: MPI %d.%d has no communicators from groups: skipped\n", MPI_VERSION,
               MPI_SUBVERSION);
#else
    if (np < 2 || np % 2 != 0) {
        if (rank == 0) fprintf(stderr, "groups: run on an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)np);
    CHECK(ranks != NULL, "out of memory");

    /* 1. This rank's parity. */
    int n = 0, want = 0;
    for (int i = rank % 2; i < np; i += 2) {
        ranks[n++] = i;
        want += i;
    }
    MPI_Group parity;
    MPI_Group_incl(world, n, ranks, &parity);
    MPI_Comm pc;
    MPI_Comm_create_from_group(parity, "parity", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &pc);
    for (int it = 0; it < iters; it++) {
        int sum = -1;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, pc);
        CHECK(sum == want, "parity sum %d, expected %d", sum, want);
    }
    MPI_Comm_free(&pc);
    MPI_Group_free(&parity);

    /* 2. The two halves. */
    const int half = np / 2, lower = rank < half;
    MPI_Group mine, other;
    int range[2][3] = {{0, half - 1, 1}, {half, np - 1, 1}};
    MPI_Group_range_incl(world, 1, &range[lower ? 0 : 1], &mine);
    MPI_Group_range_incl(world, 1, &range[lower ? 1 : 0], &other);
    MPI_Comm ic;
    MPI_Intercomm_create_from_groups(mine, 0, other, 0, "halves", MPI_INFO_NULL,
                                     MPI_ERRORS_ARE_FATAL, &ic);
    int r;
    MPI_Comm_rank(ic, &r);
    for (int it = 0; it < iters; it++) {
        int out = rank * 10 + it, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, r, 9, &in, 1, MPI_INT, r, 9, ic, MPI_STATUS_IGNORE);
        const int partner = lower ? rank + half : rank - half;
        CHECK(in == partner * 10 + it, "got %d from the other half", in);
    }
    MPI_Comm_free(&ic);
    MPI_Group_free(&mine);
    MPI_Group_free(&other);
    MPI_Group_free(&world);
    free(ranks);
    if (rank == 0) printf("groups: %d ranks, %d iterations: ok\n", np, iters);
#endif
    MPI_Finalize();
    return 0;
}
