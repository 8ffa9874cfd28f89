/*
 * large_count
 *
 * MPI 4's large-count bindings (issue 39): every `_c` function whose `int`
 * twin rankscale records in detail, called once per rank, its result
 * checked. Built twice (tests/programs/build.sh): `large_count` calls the
 * `_c` forms with MPI_Count counts and MPI_Aint displacements, and
 * `large_count_int` (-DINT_TWINS) the same calls in their `int` forms. A
 * `_c` call is recorded as the event of its twin, so the two programs'
 * raw logs must be the same (tests/replay.rs). Open MPI 4.1 has no
 * large-count bindings (MPI_VERSION 3): there the program says so and
 * does nothing else (the manifest runs it on MPICH only).
 *
 * Run it on 3 ranks or more (on 2, a rank's left and right neighbours on
 * the ring are the same rank). Per rank, in both forms:
 *   once each: Ssend, Rsend, Bsend, Isend, Issend, Ibsend, Irsend,
 *     Sendrecv, Sendrecv_replace, Isendrecv, Isendrecv_replace, Mrecv, Imrecv,
 *     Send_init, Ssend_init,
 *     Bsend_init, Rsend_init, Recv_init, each of the 16 global collectives
 *     with a count (not Barrier) in its blocking, `I` and `_init` form,
 *     and each of the 5 neighbourhood collectives in its 3 forms;
 *   Send 4 (1 large-count, 3 int), Recv 2 (the first a wildcard),
 *   Irecv 10 (9 int for the sends' receives, 1 large-count), Mprobe 2,
 *   Barrier 6 (Rsend, the I-sends, 3 persistent ready sends, the end);
 *   Wait 64 (22 for point-to-point, 2 per collective: its `I` and its
 *     `_init` form), Start 26 and Request_free 26 (5 persistent
 *     point-to-point, 21 persistent collectives);
 *   Init 1, Finalize 1, Comm_rank 2, Comm_size 1, Buffer_attach 1,
 *   Buffer_detach 1, Cart_create 1, Comm_free 1.
 */
#include "common.h"

#if MPI_VERSION >= 4 && !defined(INT_TWINS)
#define C(f) f##_c
typedef MPI_Count cnt_t;
typedef MPI_Aint disp_t;
#else
#define C(f) f
typedef int cnt_t;
typedef int disp_t;
#endif

#define N 8     /* elements each point-to-point message carries */
#define TAG 7

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
#if MPI_VERSION < 4
    (void)argc;
    (void)argv;
    if (rank == 0) printf("large_count: MPI %d.%d has no large-count bindings: skipped\n",
                          MPI_VERSION, MPI_SUBVERSION);
#else
    CHECK(np >= 3, "needs 3 ranks or more, got %d", np);
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    const MPI_Comm w = MPI_COMM_WORLD;
    int out[N], in[N];
    for (int i = 0; i < N; i++) out[i] = rank * 100 + i;
#define EXPECT_FROM(src)                                                       \
    for (int i = 0; i < N; i++) CHECK(in[i] == (src) * 100 + i, "in[%d]=%d", i, in[i])

    /* Blocking sends around the ring, each received by the left neighbour;
     * the first receive is a wildcard. */
    MPI_Status st;
    if (rank % 2 == 0) {
        C(MPI_Send)(out, (cnt_t)N, MPI_INT, right, TAG, w);
        C(MPI_Recv)(in, (cnt_t)N, MPI_INT, MPI_ANY_SOURCE, TAG, w, &st);
    } else {
        C(MPI_Recv)(in, (cnt_t)N, MPI_INT, MPI_ANY_SOURCE, TAG, w, &st);
        C(MPI_Send)(out, (cnt_t)N, MPI_INT, right, TAG, w);
    }
    CHECK(st.MPI_SOURCE == left, "source %d", st.MPI_SOURCE);
    EXPECT_FROM(left);
    MPI_Request rq[4];
    MPI_Irecv(in, N, MPI_INT, left, TAG + 1, w, &rq[0]);
    C(MPI_Ssend)(out, (cnt_t)N, MPI_INT, right, TAG + 1, w);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    EXPECT_FROM(left);
    /* Rsend: the receive is posted before a barrier. */
    MPI_Irecv(in, N, MPI_INT, left, TAG + 2, w, &rq[0]);
    MPI_Barrier(w);
    C(MPI_Rsend)(out, (cnt_t)N, MPI_INT, right, TAG + 2, w);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    EXPECT_FROM(left);
    int bsize = 8 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc((size_t)bsize);
    MPI_Buffer_attach(bbuf, bsize);
    C(MPI_Bsend)(out, (cnt_t)N, MPI_INT, right, TAG + 3, w);
    C(MPI_Recv)(in, (cnt_t)N, MPI_INT, left, TAG + 3, w, MPI_STATUS_IGNORE);
    EXPECT_FROM(left);

    /* Nonblocking sends, each with an int Irecv on the other side. */
    MPI_Request s4[4], r4[4];
    int in4[4][N];
    MPI_Irecv(in4[0], N, MPI_INT, left, TAG + 4, w, &r4[0]);
    MPI_Irecv(in4[1], N, MPI_INT, left, TAG + 5, w, &r4[1]);
    MPI_Irecv(in4[2], N, MPI_INT, left, TAG + 6, w, &r4[2]);
    MPI_Irecv(in4[3], N, MPI_INT, left, TAG + 7, w, &r4[3]);
    MPI_Barrier(w);
    C(MPI_Isend)(out, (cnt_t)N, MPI_INT, right, TAG + 4, w, &s4[0]);
    C(MPI_Issend)(out, (cnt_t)N, MPI_INT, right, TAG + 5, w, &s4[1]);
    C(MPI_Ibsend)(out, (cnt_t)N, MPI_INT, right, TAG + 6, w, &s4[2]);
    C(MPI_Irsend)(out, (cnt_t)N, MPI_INT, right, TAG + 7, w, &s4[3]);
    for (int k = 0; k < 4; k++) {
        MPI_Wait(&s4[k], MPI_STATUS_IGNORE);
        MPI_Wait(&r4[k], MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++) CHECK(in4[k][i] == left * 100 + i, "I-send %d", k);
    }
    /* A large-count Irecv from an int send. */
    C(MPI_Irecv)(in, (cnt_t)N, MPI_INT, left, TAG + 8, w, &rq[0]);
    MPI_Send(out, N, MPI_INT, right, TAG + 8, w);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    EXPECT_FROM(left);

    /* Sendrecv and Sendrecv_replace around the ring. */
    C(MPI_Sendrecv)(out, (cnt_t)N, MPI_INT, right, TAG + 9, in, (cnt_t)N, MPI_INT, left, TAG + 9,
                    w, MPI_STATUS_IGNORE);
    EXPECT_FROM(left);
    memcpy(in, out, sizeof in);
    C(MPI_Sendrecv_replace)(in, (cnt_t)N, MPI_INT, right, TAG + 10, left, TAG + 10, w,
                            MPI_STATUS_IGNORE);
    EXPECT_FROM(left);

    /* MPI 4's nonblocking Isendrecv and Isendrecv_replace around the
     * ring. Named peers only: MPICH 4.0.2 leaves the status of an
     * Isendrecv request unset (source 0, tag 0 whatever the message), so a
     * wildcard's match is unknown, and an Isendrecv with MPI_PROC_NULL
     * peers crashes inside it (ucp_tag_send_nbx). */
    C(MPI_Isendrecv)(out, (cnt_t)N, MPI_INT, right, TAG + 17, in, (cnt_t)N, MPI_INT, left,
                     TAG + 17, w, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    EXPECT_FROM(left);
    memcpy(in, out, sizeof in);
    C(MPI_Isendrecv_replace)(in, (cnt_t)N, MPI_INT, right, TAG + 19, left, TAG + 19, w, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    EXPECT_FROM(left);

    /* Matched probes and their receives. */
    MPI_Message msg;
    MPI_Send(out, N, MPI_INT, right, TAG + 11, w);
    MPI_Mprobe(left, TAG + 11, w, &msg, MPI_STATUS_IGNORE);
    C(MPI_Mrecv)(in, (cnt_t)N, MPI_INT, &msg, MPI_STATUS_IGNORE);
    EXPECT_FROM(left);
    MPI_Send(out, N, MPI_INT, right, TAG + 12, w);
    MPI_Mprobe(left, TAG + 12, w, &msg, MPI_STATUS_IGNORE);
    C(MPI_Imrecv)(in, (cnt_t)N, MPI_INT, &msg, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    EXPECT_FROM(left);

    /* Persistent sends, each started once against a persistent receive
     * (Rsend_init's receive is started before a barrier). */
    MPI_Request ps[4], pr;
    C(MPI_Send_init)(out, (cnt_t)N, MPI_INT, right, TAG + 13, w, &ps[0]);
    C(MPI_Ssend_init)(out, (cnt_t)N, MPI_INT, right, TAG + 14, w, &ps[1]);
    C(MPI_Bsend_init)(out, (cnt_t)N, MPI_INT, right, TAG + 15, w, &ps[2]);
    C(MPI_Rsend_init)(out, (cnt_t)N, MPI_INT, right, TAG + 16, w, &ps[3]);
    C(MPI_Recv_init)(in, (cnt_t)N, MPI_INT, left, TAG + 13, w, &pr);
    MPI_Start(&pr);
    MPI_Start(&ps[0]);
    MPI_Wait(&ps[0], MPI_STATUS_IGNORE);
    MPI_Wait(&pr, MPI_STATUS_IGNORE);
    EXPECT_FROM(left);
    for (int k = 1; k < 4; k++) {
        MPI_Irecv(in, N, MPI_INT, left, TAG + 13 + k, w, &rq[0]);
        MPI_Barrier(w);
        MPI_Start(&ps[k]);
        MPI_Wait(&ps[k], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        EXPECT_FROM(left);
    }
    for (int k = 0; k < 4; k++) MPI_Request_free(&ps[k]);
    MPI_Request_free(&pr);
    void *detached;
    int dsize;
    MPI_Buffer_detach(&detached, &dsize);
    free(bbuf);

    /* Collectives: every one with a count, blocking, nonblocking and
     * persistent, over buffers of np blocks of 2 ints. */
    const int B = 2;
    int *sb = malloc(sizeof(int) * (size_t)(B * np)), *rb = malloc(sizeof(int) * (size_t)(B * np));
    cnt_t *cnts = malloc(sizeof(cnt_t) * (size_t)np);
    disp_t *dsp = malloc(sizeof(disp_t) * (size_t)np);
    MPI_Datatype *tys = malloc(sizeof(MPI_Datatype) * (size_t)np);
    for (int k = 0; k < np; k++) {
        cnts[k] = B;
        dsp[k] = (disp_t)(B * k);
        tys[k] = MPI_INT;
    }
    disp_t *wdsp = malloc(sizeof(disp_t) * (size_t)np);
    for (int k = 0; k < np; k++) wdsp[k] = (disp_t)(B * k * (int)sizeof(int));
    int sum_ranks = np * (np - 1) / 2;
    /* Each collective three times: blocking, `I` plus Wait, `_init` plus
     * Start, Wait and Request_free (form 0, 1, 2). */
    MPI_Request q;
#define FORMS(blocking, nonblocking, persistent, check)                          \
    for (int form = 0; form < 3; form++) {                                     \
        for (int i = 0; i < B * np; i++) sb[i] = rank + i, rb[i] = -1;         \
        if (form == 0) {                                                       \
            blocking;                                                          \
        } else if (form == 1) {                                                \
            nonblocking;                                                       \
            MPI_Wait(&q, MPI_STATUS_IGNORE);                                   \
        } else {                                                               \
            persistent;                                                        \
            MPI_Start(&q);                                                     \
            MPI_Wait(&q, MPI_STATUS_IGNORE);                                   \
            MPI_Request_free(&q);                                              \
        }                                                                      \
        check;                                                                 \
    }
    MPI_Info ni = MPI_INFO_NULL;
    FORMS(C(MPI_Bcast)(sb, (cnt_t)B, MPI_INT, 0, w),
          C(MPI_Ibcast)(sb, (cnt_t)B, MPI_INT, 0, w, &q),
          C(MPI_Bcast_init)(sb, (cnt_t)B, MPI_INT, 0, w, ni, &q),
          CHECK(sb[1] == 1, "Bcast"));
    FORMS(C(MPI_Reduce)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, np - 1, w),
          C(MPI_Ireduce)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, np - 1, w, &q),
          C(MPI_Reduce_init)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, np - 1, w, ni, &q),
          CHECK(rank != np - 1 || rb[0] == sum_ranks, "Reduce"));
    FORMS(C(MPI_Allreduce)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w),
          C(MPI_Iallreduce)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, &q),
          C(MPI_Allreduce_init)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, ni, &q),
          CHECK(rb[0] == sum_ranks, "Allreduce"));
    FORMS(C(MPI_Scan)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w),
          C(MPI_Iscan)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, &q),
          C(MPI_Scan_init)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, ni, &q),
          CHECK(rb[0] == rank * (rank + 1) / 2, "Scan"));
    FORMS(C(MPI_Exscan)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w),
          C(MPI_Iexscan)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, &q),
          C(MPI_Exscan_init)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, ni, &q),
          CHECK(rank == 0 || rb[0] == rank * (rank - 1) / 2, "Exscan"));
    FORMS(C(MPI_Gather)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, 0, w),
          C(MPI_Igather)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, 0, w, &q),
          C(MPI_Gather_init)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, 0, w, ni, &q),
          CHECK(rank != 0 || rb[B * (np - 1)] == np - 1, "Gather"));
    FORMS(C(MPI_Gatherv)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, 1, w),
          C(MPI_Igatherv)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, 1, w, &q),
          C(MPI_Gatherv_init)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, 1, w, ni, &q),
          CHECK(rank != 1 || rb[B * (np - 1)] == np - 1, "Gatherv"));
    FORMS(C(MPI_Scatter)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, 0, w),
          C(MPI_Iscatter)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, 0, w, &q),
          C(MPI_Scatter_init)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, 0, w, ni, &q),
          CHECK(rb[0] == B * rank, "Scatter"));
    FORMS(C(MPI_Scatterv)(sb, cnts, dsp, MPI_INT, rb, (cnt_t)B, MPI_INT, 1, w),
          C(MPI_Iscatterv)(sb, cnts, dsp, MPI_INT, rb, (cnt_t)B, MPI_INT, 1, w, &q),
          C(MPI_Scatterv_init)(sb, cnts, dsp, MPI_INT, rb, (cnt_t)B, MPI_INT, 1, w, ni, &q),
          CHECK(rb[0] == 1 + B * rank, "Scatterv"));
    FORMS(C(MPI_Allgather)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, w),
          C(MPI_Iallgather)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, w, &q),
          C(MPI_Allgather_init)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, w, ni, &q),
          CHECK(rb[B * right] == right, "Allgather"));
    FORMS(C(MPI_Allgatherv)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, w),
          C(MPI_Iallgatherv)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, w, &q),
          C(MPI_Allgatherv_init)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, w, ni, &q),
          CHECK(rb[B * right] == right, "Allgatherv"));
    FORMS(C(MPI_Alltoall)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, w),
          C(MPI_Ialltoall)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, w, &q),
          C(MPI_Alltoall_init)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, w, ni, &q),
          CHECK(rb[B * left] == left + B * rank, "Alltoall"));
    FORMS(C(MPI_Alltoallv)(sb, cnts, dsp, MPI_INT, rb, cnts, dsp, MPI_INT, w),
          C(MPI_Ialltoallv)(sb, cnts, dsp, MPI_INT, rb, cnts, dsp, MPI_INT, w, &q),
          C(MPI_Alltoallv_init)(sb, cnts, dsp, MPI_INT, rb, cnts, dsp, MPI_INT, w, ni, &q),
          CHECK(rb[B * left] == left + B * rank, "Alltoallv"));
    FORMS(C(MPI_Alltoallw)(sb, cnts, wdsp, tys, rb, cnts, wdsp, tys, w),
          C(MPI_Ialltoallw)(sb, cnts, wdsp, tys, rb, cnts, wdsp, tys, w, &q),
          C(MPI_Alltoallw_init)(sb, cnts, wdsp, tys, rb, cnts, wdsp, tys, w, ni, &q),
          CHECK(rb[B * left] == left + B * rank, "Alltoallw"));
    FORMS(C(MPI_Reduce_scatter)(sb, rb, cnts, MPI_INT, MPI_SUM, w),
          C(MPI_Ireduce_scatter)(sb, rb, cnts, MPI_INT, MPI_SUM, w, &q),
          C(MPI_Reduce_scatter_init)(sb, rb, cnts, MPI_INT, MPI_SUM, w, ni, &q),
          CHECK(rb[0] == sum_ranks + np * B * rank, "Reduce_scatter"));
    FORMS(C(MPI_Reduce_scatter_block)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w),
          C(MPI_Ireduce_scatter_block)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, &q),
          C(MPI_Reduce_scatter_block_init)(sb, rb, (cnt_t)B, MPI_INT, MPI_SUM, w, ni, &q),
          CHECK(rb[0] == sum_ranks + np * B * rank, "Reduce_scatter_block"));

    /* Neighbourhood collectives on a periodic ring: 2 neighbours, the
     * left one first. */
    MPI_Comm ring;
    int dims[1] = {np}, periods[1] = {1};
    MPI_Cart_create(w, 1, dims, periods, 0, &ring);
    int rrank;
    MPI_Comm_rank(ring, &rrank);
    CHECK(rrank == rank, "ring rank %d", rrank);
    MPI_Aint nwd[2] = {0, (MPI_Aint)(B * sizeof(int))};
    MPI_Datatype nty[2] = {MPI_INT, MPI_INT};
    FORMS(C(MPI_Neighbor_allgather)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, ring),
          C(MPI_Ineighbor_allgather)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, ring, &q),
          C(MPI_Neighbor_allgather_init)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, ring, ni,
                                         &q),
          CHECK(rb[0] == left && rb[B] == right, "Neighbor_allgather"));
    FORMS(C(MPI_Neighbor_allgatherv)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, ring),
          C(MPI_Ineighbor_allgatherv)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, ring, &q),
          C(MPI_Neighbor_allgatherv_init)(sb, (cnt_t)B, MPI_INT, rb, cnts, dsp, MPI_INT, ring, ni,
                                          &q),
          CHECK(rb[0] == left && rb[B] == right, "Neighbor_allgatherv"));
    FORMS(C(MPI_Neighbor_alltoall)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, ring),
          C(MPI_Ineighbor_alltoall)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, ring, &q),
          C(MPI_Neighbor_alltoall_init)(sb, (cnt_t)B, MPI_INT, rb, (cnt_t)B, MPI_INT, ring, ni,
                                        &q),
          CHECK(rb[0] == left + B && rb[B] == right, "Neighbor_alltoall"));
    FORMS(C(MPI_Neighbor_alltoallv)(sb, cnts, dsp, MPI_INT, rb, cnts, dsp, MPI_INT, ring),
          C(MPI_Ineighbor_alltoallv)(sb, cnts, dsp, MPI_INT, rb, cnts, dsp, MPI_INT, ring, &q),
          C(MPI_Neighbor_alltoallv_init)(sb, cnts, dsp, MPI_INT, rb, cnts, dsp, MPI_INT, ring, ni,
                                         &q),
          CHECK(rb[0] == left + B && rb[B] == right, "Neighbor_alltoallv"));
    FORMS(C(MPI_Neighbor_alltoallw)(sb, cnts, nwd, nty, rb, cnts, nwd, nty, ring),
          C(MPI_Ineighbor_alltoallw)(sb, cnts, nwd, nty, rb, cnts, nwd, nty, ring, &q),
          C(MPI_Neighbor_alltoallw_init)(sb, cnts, nwd, nty, rb, cnts, nwd, nty, ring, ni, &q),
          CHECK(rb[0] == left + B && rb[B] == right, "Neighbor_alltoallw"));
    MPI_Comm_free(&ring);
    free(sb);
    free(rb);
    free(cnts);
    free(dsp);
    free(wdsp);
    free(tys);
    MPI_Barrier(w);
    if (rank == 0) printf("large_count: %s forms: all results right\n",
                          sizeof(cnt_t) == sizeof(int) ? "int" : "large-count");
#endif
    MPI_Finalize();
    return 0;
}
