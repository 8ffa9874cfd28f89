/*
 * persistent ITERS
 *
 * Persistent requests on a ring (np = 1 talks to itself): created once with
 *   MPI_Recv_init (from left, tag 1), MPI_Recv_init (from right, tag 2),
 *   MPI_Send_init (to right, tag 1), MPI_Ssend_init (to left, tag 2);
 * each iteration refills the send buffers, starts the two receives with one
 * MPI_Startall, the two sends with two MPI_Start calls, completes all four
 * with one MPI_Waitall and validates the received data; at the end the four
 * requests are released with MPI_Request_free and the per-rank hashes are
 * summed with MPI_Reduce.
 *
 * Per-rank calls: Init 1, Finalize 1, Recv_init 2, Send_init 1,
 *   Ssend_init 1, Request_free 4, Reduce 1, and per iteration Startall 1,
 *   Start 2, Waitall 1.
 */
#include "common.h"

#define N 8

static int val(int sender, int dir, int it, int i) { return sender * 1000000 + dir * 100000 + it * 100 + i; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: persistent ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    const MPI_Comm comm = MPI_COMM_WORLD;
    int from_left[N], from_right[N], to_right[N], to_left[N];
    MPI_Request req[4];
    MPI_Status st[4];

    MPI_Recv_init(from_left, N, MPI_INT, left, 1, comm, &req[0]);
    MPI_Recv_init(from_right, N, MPI_INT, right, 2, comm, &req[1]);
    MPI_Send_init(to_right, N, MPI_INT, right, 1, comm, &req[2]);
    MPI_Ssend_init(to_left, N, MPI_INT, left, 2, comm, &req[3]);

    uint64_t h = 0;
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < N; i++) {
            to_right[i] = val(rank, 1, it, i);
            to_left[i] = val(rank, 2, it, i);
            from_left[i] = from_right[i] = -1;
        }
        MPI_Startall(2, req);
        MPI_Start(&req[2]);
        MPI_Start(&req[3]);
        MPI_Waitall(4, req, st);
        CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 1, "status of receive from left");
        CHECK(st[1].MPI_SOURCE == right && st[1].MPI_TAG == 2, "status of receive from right");
        CHECK(req[0] != MPI_REQUEST_NULL, "persistent request was freed by MPI_Waitall");
        for (int i = 0; i < N; i++) {
            CHECK(from_left[i] == val(left, 1, it, i), "iter %d: from_left[%d] = %d", it, i, from_left[i]);
            CHECK(from_right[i] == val(right, 2, it, i), "iter %d: from_right[%d] = %d", it, i, from_right[i]);
            h = mix64(h ^ (uint64_t)from_left[i]);
            h = mix64(h ^ (uint64_t)from_right[i]);
        }
    }
    for (int k = 0; k < 4; k++) {
        MPI_Request_free(&req[k]);
        CHECK(req[k] == MPI_REQUEST_NULL, "request_free did not reset the handle");
    }
    uint64_t hsum = 0;
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
    if (rank == 0) printf("persistent np=%d iters=%d hash=%016llx verify=ok\n", np, iters, (unsigned long long)hsum);
    MPI_Finalize();
    return 0;
}
