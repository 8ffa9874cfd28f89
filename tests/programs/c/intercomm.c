/*
 * intercomm ITERS
 *
 * Two groups joined by an inter-communicator (np >= 2): the world split
 * into a lower half (colour 0: ranks 0 .. np/2-1) and an upper half
 * (colour 1), MPI_Intercomm_create between them (local leader 0, remote
 * leaders world ranks np/2 and 0 in MPI_COMM_WORLD, tag 7), a duplicate
 * of it, and MPI_Intercomm_merge of it (the upper half high).
 *
 * Per iteration, over the inter-communicator: every rank r of a group
 * whose partner r exists in the other group (r < the smaller group's
 * size) exchanges with it by MPI_Sendrecv (tag 1); then every rank k of
 * the lower group sends to rank 0 of the upper group (tag 2 + k), which
 * receives them with MPI_ANY_SOURCE and each tag in turn (MPI_Recv, the
 * lower group's size times: a wildcard whose outcome is not a race);
 * over the duplicate, rank 0 of each group sends to rank 0
 * of the other with MPI_Isend, MPI_Irecv and MPI_Waitall (tag 3); over
 * the merged communicator one MPI_Allreduce; over the inter-communicator
 * an MPI_Bcast from the lower group's rank 0 (root MPI_ROOT there,
 * MPI_PROC_NULL on the rest of its group, 0 on the upper group) and an
 * MPI_Allreduce (each group gets the sum of the other's) and an
 * MPI_Reduce_scatter of L*U elements, the other group's reduction
 * scattered over each group in equal parts (its count list is the local
 * group's: shorter than the remote group on the smaller side); over two
 * inter-communicators made of the inter-communicator, MPI_Comm_split by
 * the parity of r (key r) and MPI_Comm_create of each group without its
 * rank 0, each rank exchanges with the rank of its own index in the other
 * group, if there is one, by MPI_Sendrecv (tags 4 and 5). The data is
 * checked.
 *
 * Per-rank calls (lower group of size L = np/2, upper U = np - L,
 * P = min(L, U); r the rank in its group):
 *   Init 1, Finalize 1, Comm_split 2, Comm_create 1, Intercomm_create 1,
 *   Comm_dup 1, Intercomm_merge 1, Comm_free 5 (6 if r > 0 and both groups
 *   have 2 ranks or more), Allreduce 2*ITERS, Bcast ITERS,
 *   Reduce_scatter ITERS,
 *   Sendrecv ITERS if r < P, ITERS more if the split's other group has
 *   a rank of index r / 2, ITERS more if r > 0 and r < P;
 *   Send ITERS on the lower group, Recv L*ITERS on upper rank 0,
 *   Isend = Irecv = Waitall = ITERS on rank 0 of each group.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 2) intercomm ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    const int lower = np / 2, upper = np - lower;
    const int colour = rank < lower ? 0 : 1;
    MPI_Comm local, inter, dup, merged;
    MPI_Comm_split(MPI_COMM_WORLD, colour, rank, &local);
    int r;
    MPI_Comm_rank(local, &r);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, colour == 0 ? lower : 0, 7, &inter);
    int remote;
    MPI_Comm_remote_size(inter, &remote);
    CHECK(remote == (colour == 0 ? upper : lower), "remote size %d", remote);
    MPI_Comm_dup(inter, &dup);
    MPI_Intercomm_merge(inter, colour, &merged);
    int mr;
    MPI_Comm_rank(merged, &mr);
    CHECK(mr == rank, "merged rank %d of world rank %d", mr, rank);
    const int pairs = lower < upper ? lower : upper;
    long long total = 0;
    for (int it = 0; it < iters; it++) {
        if (r < pairs) {
            int out = 1000 * colour + 10 * r + it, in = -1;
            MPI_Sendrecv(&out, 1, MPI_INT, r, 1, &in, 1, MPI_INT, r, 1, inter,
                         MPI_STATUS_IGNORE);
            CHECK(in == 1000 * (1 - colour) + 10 * r + it, "exchange got %d", in);
        }
        if (colour == 0) {
            int out = r * 100 + it;
            MPI_Send(&out, 1, MPI_INT, 0, 2 + r, inter);
        } else if (r == 0) {
            int seen = 0;
            for (int k = 0; k < lower; k++) {
                int in;
                MPI_Status st;
                MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 2 + k, inter, &st);
                CHECK(st.MPI_SOURCE == k && in == k * 100 + it, "from %d got %d", st.MPI_SOURCE,
                      in);
                seen |= 1 << st.MPI_SOURCE;
            }
            CHECK(seen == (1 << lower) - 1, "sources seen %x", seen);
        }
        if (r == 0) {
            int out = colour + it, in = -1;
            MPI_Request req[2];
            MPI_Irecv(&in, 1, MPI_INT, 0, 3, dup, &req[0]);
            MPI_Isend(&out, 1, MPI_INT, 0, 3, dup, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            CHECK(in == 1 - colour + it, "dup got %d", in);
        }
        long long mine = rank + it, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, merged);
        CHECK(sum == (long long)np * (np - 1) / 2 + (long long)np * it, "sum %lld", sum);
        total += sum;
        int root = colour == 1 ? 0 : (r == 0 ? MPI_ROOT : MPI_PROC_NULL);
        int b = colour == 0 && r == 0 ? 77 + it : -1;
        MPI_Bcast(&b, 1, MPI_INT, root, inter);
        CHECK(colour == 0 ? b == (r == 0 ? 77 + it : -1) : b == 77 + it, "bcast got %d", b);
        long long other = 0, mine_g = colour + 1;
        MPI_Allreduce(&mine_g, &other, 1, MPI_LONG_LONG, MPI_SUM, inter);
        CHECK(other == (colour == 0 ? 2LL * upper : 1LL * lower), "inter sum %lld", other);
        /* Element j of every rank's vector is rank + j; each group gets
         * the other's sum, rank r of it the r-th part. */
        const int total = lower * upper, mine_n = colour == 0 ? lower : upper;
        const int part = total / mine_n;
        int *counts = malloc(sizeof(int) * (size_t)mine_n);
        long long *vec = malloc(sizeof(long long) * (size_t)total);
        long long *got = malloc(sizeof(long long) * (size_t)part);
        CHECK(counts && vec && got, "out of memory");
        for (int i = 0; i < mine_n; i++)
            counts[i] = part;
        for (int j = 0; j < total; j++)
            vec[j] = rank + j;
        MPI_Reduce_scatter(vec, got, counts, MPI_LONG_LONG, MPI_SUM, inter);
        const long long lower_sum = (long long)lower * (lower - 1) / 2;
        const long long upper_sum = (long long)np * (np - 1) / 2 - lower_sum;
        const long long osum = colour == 0 ? upper_sum : lower_sum;
        const int on = colour == 0 ? upper : lower;
        for (int k = 0; k < part; k++) {
            const long long want = osum + (long long)on * (r * part + k);
            CHECK(got[k] == want, "reduce_scatter got %lld, expected %lld", got[k], want);
        }
        free(counts);
        free(vec);
        free(got);
    }
    /* Inter-communicators made of the inter-communicator. */
    MPI_Comm split, created;
    MPI_Comm_split(inter, r % 2, r, &split);
    MPI_Group g, g0;
    MPI_Comm_group(inter, &g);
    const int zero = 0;
    MPI_Group_excl(g, 1, &zero, &g0);
    MPI_Comm_create(inter, g0, &created);
    MPI_Group_free(&g0);
    MPI_Group_free(&g);
    const MPI_Comm made[2] = {split, created};
    for (int it = 0; it < iters; it++) {
        for (int m = 0; m < 2; m++) {
            if (made[m] == MPI_COMM_NULL)
                continue;
            int mr2, rs;
            MPI_Comm_rank(made[m], &mr2);
            MPI_Comm_remote_size(made[m], &rs);
            if (mr2 < rs) {
                int out = 100 * m + 10 * colour + it, in = -1;
                MPI_Sendrecv(&out, 1, MPI_INT, mr2, 4 + m, &in, 1, MPI_INT, mr2, 4 + m, made[m],
                             MPI_STATUS_IGNORE);
                CHECK(in == 100 * m + 10 * (1 - colour) + it, "made %d got %d", m, in);
            }
        }
    }
    if (created != MPI_COMM_NULL)
        MPI_Comm_free(&created);
    if (split != MPI_COMM_NULL)
        MPI_Comm_free(&split);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    if (rank == 0) printf("intercomm: %d ranks, %d iterations, total %lld\n", np, iters, total);
    MPI_Finalize();
    return 0;
}
