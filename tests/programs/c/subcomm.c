/*
 * subcomm [ROWSxCOLS]   (default: MPI_Dims_create(np, 2))
 *
 * Communicator and topology management on a 2D process grid
 * (rank = row*COLS + col):
 *   1. row and column communicators with MPI_Comm_split; in each an
 *      Allreduce, a Bcast and a Sendrecv ring.
 *   2. the same with MPI_Cart_create (periodic, no reorder) + 2x MPI_Cart_sub;
 *      in each an Allreduce, a Bcast and a Sendrecv_replace ring (neighbours
 *      from MPI_Cart_shift).
 *   3. MPI_Comm_dup of MPI_COMM_WORLD + Allreduce on it.
 *   4. MPI_Comm_create from the group of even world ranks + Allreduce on it
 *      (even ranks only; odd ranks get MPI_COMM_NULL).
 *   5. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) + Allreduce.
 *   6. MPI_Graph_create (ring) + neighbour query + Sendrecv.
 *   7. MPI_Dist_graph_create (each rank contributes edge r -> r+2) +
 *      neighbour query + Sendrecv.
 *   8. MPI_Dist_graph_create_adjacent (in: west,north; out: east,south on the
 *      periodic grid, weighted) + neighbour query + 2 Sendrecv.
 *   9. MPI_Comm_free of every communicator created above.
 *  10. MPI_Reduce of the per-rank hashes.
 *
 * Per-rank calls: Init 1, Finalize 1, Comm_split 2, Cart_create 1,
 *   Cart_sub 2, Comm_dup 1, Comm_create 1, Comm_split_type 1,
 *   Graph_create 1, Dist_graph_create 1, Dist_graph_create_adjacent 1,
 *   Bcast 4, Sendrecv 6, Sendrecv_replace 2, Reduce 1,
 *   Allreduce 6 (+1 on even ranks), Comm_free 10 (+1 on even ranks).
 */
#include "common.h"

static int rank, np;
static uint64_t h;

static void absorb(long v) { h = mix64(h ^ (uint64_t)v); }

/* Allreduce of world ranks, Bcast from local rank 0 and a Sendrecv (or
 * Sendrecv_replace) ring inside a row/column communicator whose members
 * are given by members[0..n-1] (world ranks in local rank order). */
static void line_checks(MPI_Comm comm, const int *members, int n, int replace, MPI_Comm cart1d)
{
    int lr, ls;
    MPI_Comm_rank(comm, &lr);
    MPI_Comm_size(comm, &ls);
    CHECK(ls == n && members[lr] == rank, "line communicator layout (size %d, local rank %d)", ls, lr);
    int sum = 0, esum = 0;
    for (int i = 0; i < n; i++) esum += members[i];
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == esum, "line allreduce %d expected %d", sum, esum);
    absorb(sum);
    int b = lr == 0 ? rank * 3 + 1 : -1;
    MPI_Bcast(&b, 1, MPI_INT, 0, comm);
    CHECK(b == members[0] * 3 + 1, "line bcast %d", b);
    absorb(b);
    int left = (lr + n - 1) % n, right = (lr + 1) % n;
    if (cart1d != MPI_COMM_NULL) {
        int src, dst;
        MPI_Cart_shift(cart1d, 0, 1, &src, &dst);
        CHECK(src == left && dst == right, "cart_shift %d/%d expected %d/%d", src, dst, left, right);
    }
    int v = rank * 10 + 7, got = -1;
    if (replace) {
        got = v;
        MPI_Sendrecv_replace(&got, 1, MPI_INT, right, 5, left, 5, comm, MPI_STATUS_IGNORE);
    } else {
        MPI_Sendrecv(&v, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, comm, MPI_STATUS_IGNORE);
    }
    CHECK(got == members[left] * 10 + 7, "line ring got %d", got);
    absorb(got);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int dims[2] = {0, 0};
    if (argc > 2 || (argc == 2 && (sscanf(argv[1], "%dx%d", &dims[0], &dims[1]) != 2 || dims[0] < 1 ||
                                   dims[1] < 1 || dims[0] * dims[1] != np))) {
        if (rank == 0) fprintf(stderr, "usage: subcomm [ROWSxCOLS]  (ROWS*COLS == np)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc == 1) MPI_Dims_create(np, 2, dims);
    const int R = dims[0], C = dims[1], row = rank / C, col = rank % C;
    int *rowm = malloc(sizeof(int) * (size_t)C), *colm = malloc(sizeof(int) * (size_t)R);
    for (int c = 0; c < C; c++) rowm[c] = row * C + c;
    for (int r = 0; r < R; r++) colm[r] = r * C + col;

    /* 1. Comm_split */
    MPI_Comm rowcomm, colcomm;
    MPI_Comm_split(MPI_COMM_WORLD, row, col, &rowcomm);
    MPI_Comm_split(MPI_COMM_WORLD, col, row, &colcomm);
    line_checks(rowcomm, rowm, C, 0, MPI_COMM_NULL);
    line_checks(colcomm, colm, R, 0, MPI_COMM_NULL);

    /* 2. Cart_create + Cart_sub */
    MPI_Comm cart, crow, ccol;
    int periods[2] = {1, 1}, cc[2];
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, cc);
    CHECK(cc[0] == row && cc[1] == col, "cart coords (%d,%d)", cc[0], cc[1]);
    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    MPI_Cart_sub(cart, keep_row, &crow);
    MPI_Cart_sub(cart, keep_col, &ccol);
    line_checks(crow, rowm, C, 1, crow);
    line_checks(ccol, colm, R, 1, ccol);

    /* 3. Comm_dup */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int one = 1, cnt = 0;
    MPI_Allreduce(&one, &cnt, 1, MPI_INT, MPI_SUM, dup);
    CHECK(cnt == np, "dup allreduce %d", cnt);
    absorb(cnt);

    /* 4. Comm_create from the even ranks */
    MPI_Group wgroup, egroup;
    MPI_Comm even;
    int neven = (np + 1) / 2;
    int *evens = malloc(sizeof(int) * (size_t)neven);
    for (int i = 0; i < neven; i++) evens[i] = 2 * i;
    MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    MPI_Group_incl(wgroup, neven, evens, &egroup);
    MPI_Comm_create(MPI_COMM_WORLD, egroup, &even);
    if (rank % 2 == 0) {
        CHECK(even != MPI_COMM_NULL, "even rank got MPI_COMM_NULL");
        int er, s = 0;
        MPI_Comm_rank(even, &er);
        CHECK(er == rank / 2, "even comm rank %d", er);
        MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, even);
        CHECK(s == neven * (neven - 1), "even allreduce %d", s);
        absorb(s);
    } else {
        CHECK(even == MPI_COMM_NULL, "odd rank got a communicator");
    }
    MPI_Group_free(&egroup);
    MPI_Group_free(&wgroup);

    /* 5. Comm_split_type(SHARED) */
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
    int shsize, shcnt = 0;
    MPI_Comm_size(shm, &shsize);
    MPI_Allreduce(&one, &shcnt, 1, MPI_INT, MPI_SUM, shm);
    CHECK(shcnt == shsize, "shared allreduce %d size %d", shcnt, shsize);

    /* 6. Graph_create: ring */
    int *index = malloc(sizeof(int) * (size_t)np), *edges = malloc(sizeof(int) * 2 * (size_t)np), ne = 0;
    for (int i = 0; i < np; i++) {
        int l = (i + np - 1) % np, r = (i + 1) % np;
        if (l != i) edges[ne++] = l;
        if (r != i && r != l) edges[ne++] = r;
        index[i] = ne;
    }
    MPI_Comm graph;
    MPI_Graph_create(MPI_COMM_WORLD, np, index, edges, 0, &graph);
    int gnn, gnb[2];
    MPI_Graph_neighbors_count(graph, rank, &gnn);
    CHECK(gnn == index[rank] - (rank ? index[rank - 1] : 0), "graph neighbours count %d", gnn);
    MPI_Graph_neighbors(graph, rank, 2, gnb);
    for (int i = 0; i < gnn; i++)
        CHECK(gnb[i] == edges[(rank ? index[rank - 1] : 0) + i], "graph neighbour %d = %d", i, gnb[i]);
    {
        int l = (rank + np - 1) % np, r = (rank + 1) % np, v = rank * 11 + 1, got = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, r, 6, &got, 1, MPI_INT, l, 6, graph, MPI_STATUS_IGNORE);
        CHECK(got == l * 11 + 1, "graph sendrecv got %d", got);
        absorb(got);
    }

    /* 7. Dist_graph_create: edge r -> r+2 contributed by r */
    MPI_Comm dg;
    int src1 = rank, deg1 = 1, dst1 = (rank + 2) % np;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &src1, &deg1, &dst1, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    {
        int indeg, outdeg, weighted, s, d;
        MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
        CHECK(indeg == 1 && outdeg == 1 && !weighted, "dist graph degrees %d/%d/%d", indeg, outdeg, weighted);
        MPI_Dist_graph_neighbors(dg, 1, &s, MPI_UNWEIGHTED, 1, &d, MPI_UNWEIGHTED);
        CHECK(s == ((rank - 2) % np + np) % np && d == dst1, "dist graph neighbours %d/%d", s, d);
        int v = rank * 13 + 2, got = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, d, 7, &got, 1, MPI_INT, s, 7, dg, MPI_STATUS_IGNORE);
        CHECK(got == s * 13 + 2, "dist graph sendrecv got %d", got);
        absorb(got);
    }

    /* 8. Dist_graph_create_adjacent on the periodic grid */
    MPI_Comm dga;
    {
        int west = row * C + (col + C - 1) % C, east = row * C + (col + 1) % C;
        int north = ((row + R - 1) % R) * C + col, south = ((row + 1) % R) * C + col;
        int srcs[2] = {west, north}, sw[2] = {1, 2}, dsts[2] = {east, south}, dw[2] = {1, 2};
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 0, &dga);
        int indeg, outdeg, weighted, s[2], d[2], w1[2], w2[2];
        MPI_Dist_graph_neighbors_count(dga, &indeg, &outdeg, &weighted);
        CHECK(indeg == 2 && outdeg == 2 && weighted, "adjacent degrees %d/%d/%d", indeg, outdeg, weighted);
        MPI_Dist_graph_neighbors(dga, 2, s, w1, 2, d, w2);
        CHECK(s[0] == west && s[1] == north && d[0] == east && d[1] == south && w1[0] == 1 && w1[1] == 2 &&
                  w2[0] == 1 && w2[1] == 2,
              "adjacent neighbours");
        for (int k = 0; k < 2; k++) {
            int v = rank * 17 + k, got = -1;
            MPI_Sendrecv(&v, 1, MPI_INT, dsts[k], 8 + k, &got, 1, MPI_INT, srcs[k], 8 + k, dga, MPI_STATUS_IGNORE);
            CHECK(got == srcs[k] * 17 + k, "adjacent sendrecv %d got %d", k, got);
            absorb(got);
        }
    }

    /* 9. free everything */
    MPI_Comm_free(&rowcomm);
    MPI_Comm_free(&colcomm);
    MPI_Comm_free(&crow);
    MPI_Comm_free(&ccol);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&dup);
    if (even != MPI_COMM_NULL) MPI_Comm_free(&even);
    MPI_Comm_free(&shm);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&dg);
    MPI_Comm_free(&dga);

    uint64_t hsum = 0;
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("subcomm np=%d grid=%dx%d hash=%016llx verify=ok\n", np, R, C, (unsigned long long)hsum);
    free(rowm); free(colm); free(evens); free(index); free(edges);
    MPI_Finalize();
    return 0;
}
