/*
 * persistent_coll ITERS
 *
 * MPI 4 persistent collectives (issue 39): every `_init` form, global and
 * neighbourhood, started ITERS times and checked each time. Open MPI 4.1
 * has none of them (MPI_VERSION 3): there the program says so and does
 * nothing else (the manifest runs it on MPICH only).
 *
 *  1. The values every collective sends are set once (MPICH 4.0.2's
 *     Gather_init reads its send buffer at the init, not at each start).
 *  2. Each of the 17 global collectives' `_init` forms on the world
 *     (Barrier, Bcast root 0, Reduce root np-1, Allreduce, Scan, Exscan,
 *     Gather root 0, Gatherv root 1, Scatter root 0, Scatterv root 1,
 *     Allgather, Allgatherv, Alltoall, Alltoallv, Alltoallw,
 *     Reduce_scatter, Reduce_scatter_block) in turn: init, ITERS times
 *     MPI_Start and MPI_Wait (Scatter once: MPICH 4.0.2 fails its second
 *     start), MPI_Request_free.
 *  3. The same for the 5 neighbourhood ones on a periodic 1D Cartesian
 *     communicator, with MPI_Startall and MPI_Waitall; MPI_Comm_free.
 *  4. Every result is checked (run it on 3 ranks or more).
 *
 * Per-rank calls (MPICH): Init 1, Finalize 1, Comm_rank 1, Comm_size 1,
 *   Cart_create 1, Comm_free 1, each of the 22 `_init` forms 1,
 *   Start 16*ITERS+1, Wait 16*ITERS+1, Startall 5*ITERS, Waitall 5*ITERS,
 *   Request_free 22.
 */
#include "common.h"

/* Initialises one persistent collective into `r`, starts it `iters`
 * times (MPI_Start, MPI_Wait) and frees it. */
#define RUN(init)                                                              \
    do {                                                                       \
        MPI_Request r;                                                         \
        init;                                                                  \
        for (int i_ = 0; i_ < iters; i_++) {                                   \
            MPI_Start(&r);                                                     \
            MPI_Wait(&r, MPI_STATUS_IGNORE);                                   \
        }                                                                      \
        MPI_Request_free(&r);                                                  \
    } while (0)
/* The same started once: MPICH 4.0.2 fails a second start of a persistent
 * MPI_Scatter ("Invalid communicator"; its own p_scatter starts each
 * once). */
#define RUN_ONCE(init)                                                         \
    do {                                                                       \
        MPI_Request r;                                                         \
        init;                                                                  \
        MPI_Start(&r);                                                         \
        MPI_Wait(&r, MPI_STATUS_IGNORE);                                       \
        MPI_Request_free(&r);                                                  \
    } while (0)
/* RUN with MPI_Startall and MPI_Waitall. */
#define RUN_ALL(init)                                                          \
    do {                                                                       \
        MPI_Request r;                                                         \
        init;                                                                  \
        for (int i_ = 0; i_ < iters; i_++) {                                   \
            MPI_Startall(1, &r);                                               \
            MPI_Waitall(1, &r, MPI_STATUSES_IGNORE);                           \
        }                                                                      \
        MPI_Request_free(&r);                                                  \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP persistent_coll ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
#if MPI_VERSION < 4
    (void)iters;
    if (rank == 0) printf("persistent_coll: MPI %d.%d has no persistent collectives: skipped\n",
                          MPI_VERSION, MPI_SUBVERSION);
#else
    /* The values sent: the same at every start (see below). */
    const int it = 1;
    const int v = rank + it;
    const MPI_Comm w = MPI_COMM_WORLD;
    const MPI_Info ni = MPI_INFO_NULL;
    /* Scalars and per-rank arrays of the global collectives. */
    int bar_dummy = 0, bc = 0, red_s = 0, red_r = 0, ar_s = 0, ar_r = 0, sc_s = 0, sc_r = 0,
        ex_s = 0, ex_r = 0, ga_s = 0, gv_s[2] = {0, 0}, scat_r = 0, sv_r[2] = {0, 0}, ag_s = 0,
        agv_s[2] = {0, 0}, rsb_r = 0, rs_r = 0;
    (void)bar_dummy;
    int *ga_r = calloc(np, sizeof(int)), *gv_r = calloc(2 * np, sizeof(int));
    int *scat_s = calloc(np, sizeof(int)), *sv_s = calloc(2 * np, sizeof(int));
    int *ag_r = calloc(np, sizeof(int)), *agv_r = calloc(2 * np, sizeof(int));
    int *a2a_s = calloc(np, sizeof(int)), *a2a_r = calloc(np, sizeof(int));
    int *a2av_s = calloc(np, sizeof(int)), *a2av_r = calloc(np, sizeof(int));
    int *a2aw_s = calloc(np, sizeof(int)), *a2aw_r = calloc(np, sizeof(int));
    int *rs_s = calloc(np, sizeof(int)), *rsb_s = calloc(np, sizeof(int));
    int *ones = calloc(np, sizeof(int)), *twos = calloc(np, sizeof(int));
    int *displs = calloc(np, sizeof(int)), *displs2 = calloc(np, sizeof(int));
    int *bdispls = calloc(np, sizeof(int));
    MPI_Datatype *ints = calloc(np, sizeof(MPI_Datatype));
    for (int i = 0; i < np; i++) {
        ones[i] = 1;
        twos[i] = 2;
        displs[i] = i;
        displs2[i] = 2 * i;
        bdispls[i] = i * (int)sizeof(int);
        ints[i] = MPI_INT;
    }
    /* MPICH 4.0.2 reads some send buffers at the init (Gather_init):
     * the values the collectives send are set before it, once. */
    bc = rank == 0 ? 100 + it : -1;
    red_s = ar_s = sc_s = ex_s = ga_s = ag_s = v;
    gv_s[0] = agv_s[0] = v;
    gv_s[1] = agv_s[1] = -v;
    for (int i = 0; i < np; i++) {
        scat_s[i] = 10 * i + it;
        sv_s[2 * i] = i + it;
        sv_s[2 * i + 1] = -(i + it);
        a2a_s[i] = a2av_s[i] = a2aw_s[i] = 1000 * rank + i + it;
        rs_s[i] = rsb_s[i] = i + it;
    }
    RUN(MPI_Barrier_init(w, ni, &r));
    RUN(MPI_Bcast_init(&bc, 1, MPI_INT, 0, w, ni, &r));
    RUN(MPI_Reduce_init(&red_s, &red_r, 1, MPI_INT, MPI_SUM, np - 1, w, ni, &r));
    RUN(MPI_Allreduce_init(&ar_s, &ar_r, 1, MPI_INT, MPI_MAX, w, ni, &r));
    RUN(MPI_Scan_init(&sc_s, &sc_r, 1, MPI_INT, MPI_SUM, w, ni, &r));
    RUN(MPI_Exscan_init(&ex_s, &ex_r, 1, MPI_INT, MPI_SUM, w, ni, &r));
    RUN(MPI_Gather_init(&ga_s, 1, MPI_INT, ga_r, 1, MPI_INT, 0, w, ni, &r));
    RUN(MPI_Gatherv_init(gv_s, 2, MPI_INT, gv_r, twos, displs2, MPI_INT, 1 % np, w, ni, &r));
    RUN_ONCE(MPI_Scatter_init(scat_s, 1, MPI_INT, &scat_r, 1, MPI_INT, 0, w, ni, &r));
    RUN(MPI_Scatterv_init(sv_s, twos, displs2, MPI_INT, sv_r, 2, MPI_INT, 1 % np, w, ni, &r));
    RUN(MPI_Allgather_init(&ag_s, 1, MPI_INT, ag_r, 1, MPI_INT, w, ni, &r));
    RUN(MPI_Allgatherv_init(agv_s, 2, MPI_INT, agv_r, twos, displs2, MPI_INT, w, ni, &r));
    RUN(MPI_Alltoall_init(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, w, ni, &r));
    RUN(MPI_Alltoallv_init(a2av_s, ones, displs, MPI_INT, a2av_r, ones, displs, MPI_INT, w, ni, &r));
    RUN(MPI_Alltoallw_init(a2aw_s, ones, bdispls, ints, a2aw_r, ones, bdispls, ints, w, ni, &r));
    RUN(MPI_Reduce_scatter_init(rs_s, &rs_r, ones, MPI_INT, MPI_SUM, w, ni, &r));
    RUN(MPI_Reduce_scatter_block_init(rsb_s, &rsb_r, 1, MPI_INT, MPI_SUM, w, ni, &r));

    /* A periodic ring: neighbours left and right (distinct from 3 ranks
     * on; at 2 the two blocks from one neighbour may cross). */
    MPI_Comm ring;
    int dims[1] = {np}, periods[1] = {1};
    MPI_Cart_create(w, 1, dims, periods, 0, &ring);
    int n_s[2] = {0, 0}, n_r[2] = {0, 0}, nv_r[2] = {0, 0}, na_r[2] = {0, 0}, nav_r[2] = {0, 0},
        naw_r[2] = {0, 0}, nav_s[2] = {0, 0}, naw_s[2] = {0, 0};
    int c1[2] = {1, 1}, d1[2] = {0, 1};
    MPI_Aint ad[2] = {0, sizeof(int)};
    MPI_Datatype t2[2] = {MPI_INT, MPI_INT};
    n_s[0] = v;
    nav_s[0] = naw_s[0] = 10 * v;     /* to the left neighbour */
    nav_s[1] = naw_s[1] = 10 * v + 1; /* to the right one */
    RUN_ALL(MPI_Neighbor_allgather_init(n_s, 1, MPI_INT, n_r, 1, MPI_INT, ring, ni, &r));
    RUN_ALL(MPI_Neighbor_allgatherv_init(n_s, 1, MPI_INT, nv_r, c1, d1, MPI_INT, ring, ni, &r));
    RUN_ALL(MPI_Neighbor_alltoall_init(nav_s, 1, MPI_INT, na_r, 1, MPI_INT, ring, ni, &r));
    RUN_ALL(MPI_Neighbor_alltoallv_init(nav_s, c1, d1, MPI_INT, nav_r, c1, d1, MPI_INT, ring, ni, &r));
    RUN_ALL(MPI_Neighbor_alltoallw_init(naw_s, c1, ad, t2, naw_r, c1, ad, t2, ring, ni, &r));
    const int left = (rank + np - 1) % np, right = (rank + 1) % np;

    /* The results of the last start of each. */
    const int sum = np * (np - 1) / 2 + np * it;
    CHECK(bc == 100 + it, "bcast %d", bc);
    CHECK(rank != np - 1 || red_r == sum, "reduce %d", red_r);
    CHECK(ar_r == np - 1 + it, "allreduce %d", ar_r);
    CHECK(sc_r == rank * (rank + 1) / 2 + (rank + 1) * it, "scan %d", sc_r);
    CHECK(rank == 0 || ex_r == rank * (rank - 1) / 2 + rank * it, "exscan %d", ex_r);
    CHECK(scat_r == 10 * rank + it, "scatter %d", scat_r);
    CHECK(sv_r[0] == rank + it && sv_r[1] == -(rank + it), "scatterv %d %d", sv_r[0], sv_r[1]);
    CHECK(rs_r == np * (rank + it), "reduce_scatter %d", rs_r);
    CHECK(rsb_r == np * (rank + it), "reduce_scatter_block %d", rsb_r);
    for (int i = 0; i < np; i++) {
        CHECK(rank != 0 || ga_r[i] == i + it, "gather[%d] %d", i, ga_r[i]);
        CHECK(rank != 1 % np || (gv_r[2 * i] == i + it && gv_r[2 * i + 1] == -(i + it)),
              "gatherv[%d]", i);
        CHECK(ag_r[i] == i + it, "allgather[%d] %d", i, ag_r[i]);
        CHECK(agv_r[2 * i] == i + it && agv_r[2 * i + 1] == -(i + it), "allgatherv[%d]", i);
        const int want = 1000 * i + rank + it;
        CHECK(a2a_r[i] == want && a2av_r[i] == want && a2aw_r[i] == want,
              "alltoall[%d] %d %d %d", i, a2a_r[i], a2av_r[i], a2aw_r[i]);
    }

    const int vl = left + it, vr = right + it;
    CHECK(n_r[0] == vl && n_r[1] == vr, "neighbor_allgather %d %d", n_r[0], n_r[1]);
    CHECK(nv_r[0] == vl && nv_r[1] == vr, "neighbor_allgatherv %d %d", nv_r[0], nv_r[1]);
    /* From the left neighbour its block for the right, and back. */
    CHECK(na_r[0] == 10 * vl + 1 && na_r[1] == 10 * vr, "neighbor_alltoall %d %d", na_r[0],
          na_r[1]);
    CHECK(nav_r[0] == 10 * vl + 1 && nav_r[1] == 10 * vr, "neighbor_alltoallv");
    CHECK(naw_r[0] == 10 * vl + 1 && naw_r[1] == 10 * vr, "neighbor_alltoallw");
    MPI_Comm_free(&ring);
    free(ga_r), free(gv_r), free(scat_s), free(sv_s), free(ag_r), free(agv_r);
    free(a2a_s), free(a2a_r), free(a2av_s), free(a2av_r), free(a2aw_s), free(a2aw_r);
    free(rs_s), free(rsb_s), free(ones), free(twos), free(displs), free(displs2), free(bdispls);
    free(ints);
    if (rank == 0) printf("persistent_coll: %d iterations on %d ranks: ok\n", iters, np);
#endif
    MPI_Finalize();
    return 0;
}
