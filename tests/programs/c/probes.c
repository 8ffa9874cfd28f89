/*
 * probes [ITERS]   (default ITERS = 3)
 *
 * Every rank sends to its right neighbour and receives from its left
 * neighbour (np = 1 talks to itself).  Per iteration four patterns, each with
 * a message of rank/iteration-dependent length that the receiver learns from
 * the probe (MPI_Get_count) before allocating the buffer:
 *   1. MPI_Isend; MPI_Probe (MPI_ANY_SOURCE) + MPI_Recv; MPI_Wait(send)
 *   2. MPI_Isend; MPI_Iprobe polling loop + MPI_Recv; MPI_Wait(send)
 *   3. MPI_Isend; MPI_Mprobe (MPI_ANY_TAG) + MPI_Mrecv; MPI_Wait(send)
 *   4. MPI_Isend; MPI_Improbe polling loop + MPI_Imrecv + MPI_Wait;
 *      MPI_Wait(send)
 * At the end the per-rank hashes are summed with MPI_Reduce.
 *
 * Per-rank calls: Init 1, Finalize 1, Reduce 1 and per iteration
 *   Isend 4, Wait 5, Probe 1, Recv 2, Mprobe 1, Mrecv 1, Imrecv 1,
 *   Iprobe >= 1, Improbe >= 1 (polling loops).
 */
#include "common.h"

static int rank, np;

static int msg_len(int sender, int it, int pattern) { return 1 + (sender * 5 + it * 3 + pattern) % 11; }
static int val(int sender, int it, int pattern, int i) { return sender * 100000 + it * 1000 + pattern * 100 + i; }

static uint64_t check_msg(const int *buf, int n, int sender, int it, int pattern)
{
    uint64_t h = 0;
    CHECK(n == msg_len(sender, it, pattern), "pattern %d: count %d, expected %d", pattern, n,
          msg_len(sender, it, pattern));
    for (int i = 0; i < n; i++) {
        CHECK(buf[i] == val(sender, it, pattern, i), "pattern %d: element %d = %d", pattern, i, buf[i]);
        h = mix64(h ^ (uint64_t)buf[i]);
    }
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc > 2) {
        if (rank == 0) fprintf(stderr, "usage: probes [ITERS]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = argc == 2 ? parse_int(argv[1], "ITERS", 0) : 3;
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    const MPI_Comm comm = MPI_COMM_WORLD;
    uint64_t h = 0;
    int sbuf[16];

    for (int it = 0; it < iters; it++) {
        for (int p = 1; p <= 4; p++) {
            const int n = msg_len(rank, it, p), tag = 10 + p;
            for (int i = 0; i < n; i++) sbuf[i] = val(rank, it, p, i);
            MPI_Request sreq;
            MPI_Isend(sbuf, n, MPI_INT, right, tag, comm, &sreq);

            MPI_Status st;
            int count, *rbuf;
            if (p == 1) {
                MPI_Probe(MPI_ANY_SOURCE, tag, comm, &st);
                CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "probe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
                MPI_Get_count(&st, MPI_INT, &count);
                rbuf = malloc(sizeof(int) * (size_t)(count + 1));
                MPI_Recv(rbuf, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, comm, MPI_STATUS_IGNORE);
            } else if (p == 2) {
                int flag = 0;
                while (!flag) MPI_Iprobe(left, tag, comm, &flag, &st);
                CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "iprobe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
                MPI_Get_count(&st, MPI_INT, &count);
                rbuf = malloc(sizeof(int) * (size_t)(count + 1));
                MPI_Recv(rbuf, count, MPI_INT, left, tag, comm, &st);
            } else if (p == 3) {
                MPI_Message msg;
                MPI_Mprobe(left, MPI_ANY_TAG, comm, &msg, &st);
                CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "mprobe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
                MPI_Get_count(&st, MPI_INT, &count);
                rbuf = malloc(sizeof(int) * (size_t)(count + 1));
                MPI_Mrecv(rbuf, count, MPI_INT, &msg, &st);
                CHECK(msg == MPI_MESSAGE_NULL, "message handle not reset by MPI_Mrecv");
            } else {
                MPI_Message msg;
                int flag = 0;
                while (!flag) MPI_Improbe(left, tag, comm, &flag, &msg, &st);
                CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "improbe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
                MPI_Get_count(&st, MPI_INT, &count);
                rbuf = malloc(sizeof(int) * (size_t)(count + 1));
                MPI_Request rreq;
                MPI_Imrecv(rbuf, count, MPI_INT, &msg, &rreq);
                MPI_Wait(&rreq, &st);
                CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "imrecv status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
            }
            MPI_Get_count(&st, MPI_INT, &count);
            h = mix64(h ^ check_msg(rbuf, count, left, it, p));
            free(rbuf);
            MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        }
    }
    uint64_t hsum = 0;
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
    if (rank == 0) printf("probes np=%d iters=%d hash=%016llx verify=ok\n", np, iters, (unsigned long long)hsum);
    MPI_Finalize();
    return 0;
}
