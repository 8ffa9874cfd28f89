/*
 * comm_callback ITERS
 *
 * A communicator freed inside another MPI call (issue 39, cause 4): an
 * attribute delete function frees a second communicator while
 * MPI_Comm_free frees the first. Those calls are the program's own and
 * must be in its trace; left out, the freed handle stayed registered and
 * the next communicator with the same handle inherited its id.
 *
 *  1. MPI_Comm_dup of the world gives `outer` and `inner`;
 *     MPI_Comm_create_keyval with a delete function that frees the
 *     communicator its attribute points to; MPI_Comm_set_attr on `outer`
 *     pointing at `inner`.
 *  2. Per iteration: MPI_Allreduce (MPI_SUM of rank + iteration) over
 *     `inner`, checked.
 *  3. MPI_Comm_free(&outer): the delete function calls
 *     MPI_Comm_free(&inner) inside it.
 *  4. MPI_Comm_dup of the world gives `again` (MPI may hand out the freed
 *     handle again); per iteration one MPI_Allreduce over it, checked;
 *     MPI_Comm_free(&again); MPI_Comm_free_keyval.
 *
 * Per-rank calls: Init 1, Finalize 1, Comm_rank 1, Comm_size 1,
 *   Comm_dup 3, Comm_create_keyval 1, Comm_set_attr 1, Comm_free 3,
 *   Comm_free_keyval 1, Allreduce 2*ITERS.
 */
#include "common.h"

static int deleted;

static int free_inner(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    MPI_Comm *inner = attr;
    deleted++;
    return MPI_Comm_free(inner);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP comm_callback ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    const int base = np * (np - 1) / 2;

    MPI_Comm outer, inner, again;
    MPI_Comm_dup(MPI_COMM_WORLD, &outer);
    MPI_Comm_dup(MPI_COMM_WORLD, &inner);
    int key;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_inner, &key, NULL);
    MPI_Comm_set_attr(outer, key, &inner);
    for (int it = 0; it < iters; it++) {
        int mine = rank + it, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, inner);
        CHECK(sum == base + np * it, "inner sum %d", sum);
    }
    MPI_Comm_free(&outer);
    CHECK(deleted == 1 && inner == MPI_COMM_NULL, "the delete function ran %d times", deleted);

    MPI_Comm_dup(MPI_COMM_WORLD, &again);
    for (int it = 0; it < iters; it++) {
        int mine = rank * it, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, again);
        CHECK(sum == base * it, "again sum %d", sum);
    }
    MPI_Comm_free(&again);
    MPI_Comm_free_keyval(&key);
    if (rank == 0) printf("comm_callback: %d iterations on %d ranks: ok\n", iters, np);
    MPI_Finalize();
    return 0;
}
