/*
 * generic ITERS
 *
 * Calls that rankscale records without detail (one-sided, MPI-IO,
 * datatypes, groups, info objects, queries) beside neighbourhood
 * collectives (recorded in detail since issue 39),
 * next to the persistent buffered and ready sends, on a ring (np >= 2).
 *
 * Per iteration: MPI_Start of the ready-send's receive (from left, tag 2),
 * MPI_Barrier (every such receive is posted before any ready send starts),
 * MPI_Startall of the buffered send (to right, tag 1), its receive (from
 * left, tag 1) and the ready send (to right, tag 2), and MPI_Waitall of all
 * four; the data is checked.
 *
 * Per-rank calls:
 *   detailed: Init 1, Finalize 1, Bsend_init 1, Rsend_init 1, Recv_init 2,
 *     Start ITERS, Startall ITERS, Barrier ITERS, Waitall ITERS,
 *     Request_free 4, Cart_create 1, Comm_dup_with_info 1, Comm_free 2,
 *     Wait 1, Bcast 1, Reduce 1, Neighbor_alltoall 1,
 *     Ineighbor_allgather 1, Win_create 1, Win_fence 2, Put 1, Win_free 1;
 *   without detail: Comm_rank 1, Comm_size 1, Buffer_attach 1,
 *     Buffer_detach 1, Type_vector 1, Type_commit 1, Type_size 1,
 *     Type_free 1, Dims_create 1, File_open 1, File_write_at_all 1, File_close 1, Comm_group 1,
 *     Group_size 1, Group_free 1, Info_create 1, Info_set 1, Info_free 1.
 * MPI_Wtime is called once and not recorded (allow-listed).
 */
#include "common.h"

#include <unistd.h>

#define N 8

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 2) generic ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    const MPI_Comm comm = MPI_COMM_WORLD;
    double t0 = MPI_Wtime();
    long long hash = 0;

    /* Persistent buffered and ready sends. */
    int bsize = (int)(N * sizeof(int)) + MPI_BSEND_OVERHEAD;
    char *bbuf = malloc((size_t)bsize);
    MPI_Buffer_attach(bbuf, bsize);
    int out_b[N], out_r[N], in_b[N], in_r[N];
    MPI_Request req[4];
    MPI_Bsend_init(out_b, N, MPI_INT, right, 1, comm, &req[0]);
    MPI_Recv_init(in_b, N, MPI_INT, left, 1, comm, &req[1]);
    MPI_Rsend_init(out_r, N, MPI_INT, right, 2, comm, &req[2]);
    MPI_Recv_init(in_r, N, MPI_INT, left, 2, comm, &req[3]);
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < N; i++) {
            out_b[i] = rank * 1000 + it * 10 + i;
            out_r[i] = -out_b[i];
        }
        MPI_Start(&req[3]);
        MPI_Barrier(comm);
        MPI_Startall(3, req);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++) {
            if (in_b[i] != left * 1000 + it * 10 + i || in_r[i] != -in_b[i]) {
                fprintf(stderr, "rank %d: wrong data at %d in iteration %d\n", rank, i, it);
                MPI_Abort(comm, 2);
            }
            hash += in_b[i];
        }
    }
    for (int i = 0; i < 4; i++) MPI_Request_free(&req[i]);
    void *detached;
    int dsize;
    MPI_Buffer_detach(&detached, &dsize);
    free(bbuf);

    /* A derived datatype: every other int of 2*N. */
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int tsize;
    MPI_Type_size(every_other, &tsize);
    hash += tsize;
    MPI_Type_free(&every_other);

    /* Neighbourhood collectives on a periodic ring. */
    int dims[1] = {0}, periods[1] = {1};
    MPI_Dims_create(np, 1, dims);
    MPI_Comm ring;
    MPI_Cart_create(comm, 1, dims, periods, 0, &ring);
    int nsend[2] = {rank, rank}, nrecv[2] = {-1, -1};
    MPI_Neighbor_alltoall(nsend, 1, MPI_INT, nrecv, 1, MPI_INT, ring);
    hash += nrecv[0] + nrecv[1];
    int gathered[2] = {-1, -1};
    MPI_Request nreq;
    MPI_Ineighbor_allgather(&rank, 1, MPI_INT, gathered, 1, MPI_INT, ring, &nreq);
    MPI_Wait(&nreq, MPI_STATUS_IGNORE);
    if (gathered[0] != left || gathered[1] != right) {
        fprintf(stderr, "rank %d: neighbours %d %d, want %d %d\n", rank, gathered[0], gathered[1],
                left, right);
        MPI_Abort(comm, 3);
    }
    MPI_Comm_free(&ring);
    /* A duplicate of the world with (no) info: MPI 3's MPI_Comm_dup_with_info,
     * recorded in detail like MPI_Comm_dup; freed at once. */
    MPI_Comm dupi;
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &dupi);
    MPI_Comm_free(&dupi);

    /* One-sided: each rank puts N doubles into its right neighbour's window. */
    double win_mem[N], put[N];
    for (int i = 0; i < N; i++) {
        win_mem[i] = 0;
        put[i] = rank + i;
    }
    MPI_Win win;
    MPI_Win_create(win_mem, (MPI_Aint)sizeof win_mem, sizeof(double), MPI_INFO_NULL, comm, &win);
    MPI_Win_fence(0, win);
    MPI_Put(put, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; i++) {
        if (win_mem[i] != left + i) {
            fprintf(stderr, "rank %d: window holds %g at %d, want %d\n", rank, win_mem[i], i, left + i);
            MPI_Abort(comm, 4);
        }
    }
    MPI_Win_free(&win);

    /* MPI-IO: every rank writes N ints at its own offset of one file, which
     * is deleted when it is closed. Rank 0 names it. */
    long long pid = getpid();
    MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm);
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/rankscale-generic-%lld.dat", tmp && *tmp ? tmp : "/tmp", pid);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "access_style", "write_once");
    MPI_File fh;
    if (MPI_File_open(comm, path, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE, info,
                      &fh) != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot open %s\n", rank, path);
        MPI_Abort(comm, 5);
    }
    int data[N];
    for (int i = 0; i < N; i++) data[i] = rank * N + i;
    MPI_File_write_at_all(fh, (MPI_Offset)rank * N * (MPI_Offset)sizeof(int), data, N, MPI_INT,
                          MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Info_free(&info);

    /* Groups. */
    MPI_Group g;
    MPI_Comm_group(comm, &g);
    int gsize;
    MPI_Group_size(g, &gsize);
    hash += gsize;
    MPI_Group_free(&g);

    long long total = 0;
    MPI_Reduce(&hash, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, comm);
    if (rank == 0) printf("generic: np=%d iters=%d hash=%lld ok=%d\n", np, iters, total, MPI_Wtime() >= t0);
    MPI_Finalize();
    return 0;
}
