/*
 * p2p [ITERS]   (default ITERS = 2, needs np >= 2)
 *
 * Every point-to-point and completion family on a ring (send to the right
 * neighbour, receive from the left one).  Per iteration, 14 phases, each
 * moving one 4-int message per rank whose content is validated:
 *   1 Send/Recv (token order: rank 0 sends first)   2 Ssend/Recv (same)
 *   3 Bsend + Recv (buffer from MPI_Buffer_attach)
 *   4 Irecv, Barrier, Rsend, Wait                     5 Sendrecv
 *   6 Sendrecv_replace                                7 Irecv, Isend, Wait x2
 *   8 Irecv, Issend, Waitall                          9 Irecv, Ibsend, Waitany x2
 *  10 Irecv, Barrier, Irsend, Waitsome loop          11 Irecv, Isend, Test loops
 *  12 Irecv, Isend, Testall loop                     13 Irecv, Isend, Testany loop
 *  14 Irecv, Isend, Testsome loop
 * Finally the per-rank hashes are summed with MPI_Reduce.
 *
 * Per-rank calls: Init 1, Finalize 1, Reduce 1 and per iteration
 *   Send 1, Ssend 1, Bsend 1, Rsend 1, Recv 3, Sendrecv 1,
 *   Sendrecv_replace 1, Irecv 9, Isend 5, Issend 1, Ibsend 1, Irsend 1,
 *   Barrier 2, Wait 3, Waitall 1, Waitany 2,
 *   Waitsome >= 1, Test >= 2, Testall >= 1, Testany >= 2, Testsome >= 1.
 */
#include "common.h"

#define N 4
static int rank, np, left, right;
static uint64_t h;

static void fill(int *b, int sender, int it, int phase)
{
    for (int i = 0; i < N; i++) b[i] = sender * 100000 + it * 1000 + phase * 10 + i;
}

static void check(const int *b, int it, int phase)
{
    for (int i = 0; i < N; i++) {
        int e = left * 100000 + it * 1000 + phase * 10 + i;
        CHECK(b[i] == e, "phase %d: element %d = %d, expected %d", phase, i, b[i], e);
        h = mix64(h ^ (uint64_t)b[i]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc > 2 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: p2p [ITERS]  (np >= 2)\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = argc == 2 ? parse_int(argv[1], "ITERS", 0) : 2;
    const MPI_Comm comm = MPI_COMM_WORLD;
    left = (rank + np - 1) % np;
    right = (rank + 1) % np;

    int bsize = 16 * (int)(N * sizeof(int) + MPI_BSEND_OVERHEAD) + 4096;
    char *bbuf = malloc((size_t)bsize);
    MPI_Buffer_attach(bbuf, bsize);

    int s[N], r[N], s2[N];
    MPI_Request rq[2];
    MPI_Status st[2];
    int idx[2];
    for (int it = 0; it < iters; it++) {
        int ph = 0;
        /* 1: Send / Recv in token order */
        fill(s, rank, it, ++ph);
        if (rank == 0) {
            MPI_Send(s, N, MPI_INT, right, ph, comm);
            MPI_Recv(r, N, MPI_INT, left, ph, comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(r, N, MPI_INT, left, ph, comm, MPI_STATUS_IGNORE);
            MPI_Send(s, N, MPI_INT, right, ph, comm);
        }
        check(r, it, ph);

        /* 2: Ssend / Recv in token order */
        fill(s, rank, it, ++ph);
        if (rank == 0) {
            MPI_Ssend(s, N, MPI_INT, right, ph, comm);
            MPI_Recv(r, N, MPI_INT, left, ph, comm, &st[0]);
        } else {
            MPI_Recv(r, N, MPI_INT, left, ph, comm, &st[0]);
            MPI_Ssend(s, N, MPI_INT, right, ph, comm);
        }
        CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == ph, "recv status");
        check(r, it, ph);

        /* 3: Bsend / Recv */
        fill(s, rank, it, ++ph);
        MPI_Bsend(s, N, MPI_INT, right, ph, comm);
        MPI_Recv(r, N, MPI_INT, left, ph, comm, MPI_STATUS_IGNORE);
        check(r, it, ph);

        /* 4: Rsend, made safe by pre-posting the receive before a barrier */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Barrier(comm);
        MPI_Rsend(s, N, MPI_INT, right, ph, comm);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        check(r, it, ph);

        /* 5: Sendrecv */
        fill(s, rank, it, ++ph);
        MPI_Sendrecv(s, N, MPI_INT, right, ph, r, N, MPI_INT, left, ph, comm, MPI_STATUS_IGNORE);
        check(r, it, ph);

        /* 6: Sendrecv_replace */
        fill(r, rank, it, ++ph);
        MPI_Sendrecv_replace(r, N, MPI_INT, right, ph, left, ph, comm, &st[0]);
        CHECK(st[0].MPI_SOURCE == left, "sendrecv_replace status source %d", st[0].MPI_SOURCE);
        check(r, it, ph);

        /* 7: Irecv / Isend / Wait x2 */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Isend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[0], &st[0]);
        CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == ph, "wait status");
        check(r, it, ph);

        /* 8: Irecv / Issend / Waitall */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Issend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        check(r, it, ph);

        /* 9: Irecv / Ibsend / Waitany x2 */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Ibsend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        MPI_Waitany(2, rq, &idx[0], &st[0]);
        MPI_Waitany(2, rq, &idx[1], &st[1]);
        CHECK(((idx[0] == 0 && idx[1] == 1) || (idx[0] == 1 && idx[1] == 0)), "waitany indices %d %d", idx[0], idx[1]);
        CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "waitany left active requests");
        check(r, it, ph);

        /* 10: Irecv / Barrier / Irsend / Waitsome loop */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Barrier(comm);
        MPI_Irsend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        for (int done = 0; done < 2;) {
            int out;
            MPI_Waitsome(2, rq, &out, idx, st);
            CHECK(out >= 1 && out <= 2, "waitsome outcount %d", out);
            done += out;
        }
        check(r, it, ph);

        /* 11: Irecv / Isend / Test loops */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Isend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        for (int flag = 0; !flag;) MPI_Test(&rq[0], &flag, &st[0]);
        CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == ph, "test status");
        for (int flag = 0; !flag;) MPI_Test(&rq[1], &flag, MPI_STATUS_IGNORE);
        check(r, it, ph);

        /* 12: Irecv / Isend / Testall loop */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Isend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        for (int flag = 0; !flag;) MPI_Testall(2, rq, &flag, st);
        CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == ph, "testall status");
        check(r, it, ph);

        /* 13: Irecv / Isend / Testany loop */
        fill(s, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Isend(s, N, MPI_INT, right, ph, comm, &rq[1]);
        for (int done = 0; done < 2;) {
            int flag, index;
            MPI_Testany(2, rq, &index, &flag, &st[0]);
            CHECK(!(flag && index == MPI_UNDEFINED), "testany: no active request after %d completions", done);
            if (flag) done++;
        }
        check(r, it, ph);

        /* 14: Irecv / Isend / Testsome loop (second send buffer, untouched) */
        fill(s2, rank, it, ++ph);
        MPI_Irecv(r, N, MPI_INT, left, ph, comm, &rq[0]);
        MPI_Isend(s2, N, MPI_INT, right, ph, comm, &rq[1]);
        for (int done = 0; done < 2;) {
            int out;
            MPI_Testsome(2, rq, &out, idx, MPI_STATUSES_IGNORE);
            CHECK(out != MPI_UNDEFINED, "testsome: no active request after %d completions", done);
            done += out;
        }
        check(r, it, ph);
    }

    void *det;
    int detsize;
    MPI_Buffer_detach(&det, &detsize);
    CHECK(det == bbuf && detsize == bsize, "buffer detach");
    free(bbuf);
    uint64_t hsum = 0;
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
    if (rank == 0) printf("p2p np=%d iters=%d hash=%016llx verify=ok\n", np, iters, (unsigned long long)hsum);
    MPI_Finalize();
    return 0;
}
