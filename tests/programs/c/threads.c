/*
 * threads [ITERS]   (default ITERS = 5)
 *
 * MPI_Init_thread(MPI_THREAD_MULTIPLE) (aborts with a clear message if the
 * library provides less).  The main thread creates 4 communicators with
 * MPI_Comm_dup; 4 pthreads then each run ITERS iterations of
 *   a ring MPI_Sendrecv, an MPI_Allreduce, and an MPI_Isend/MPI_Irecv pair
 *   completed by one MPI_Waitall
 * on their own communicator, concurrently.  After joining, the main thread
 * frees the communicators and sums the per-rank hashes with MPI_Reduce.
 *
 * Per-rank calls: Init_thread 1, Finalize 1, Comm_dup 4, Comm_free 4,
 *   Reduce 1, and 4*ITERS each of Sendrecv, Allreduce, Isend, Irecv, Waitall.
 */
#include "common.h"
#include <pthread.h>

#define NT 4
static int rank, np, iters = 5;
static MPI_Comm comms[NT];
static uint64_t thash[NT];

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    const MPI_Comm comm = comms[t];
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    uint64_t h = 0;
    for (int it = 0; it < iters; it++) {
        int s = rank * 10000 + t * 1000 + it, r = -1;
        MPI_Sendrecv(&s, 1, MPI_INT, right, it, &r, 1, MPI_INT, left, it, comm, MPI_STATUS_IGNORE);
        CHECK(r == left * 10000 + t * 1000 + it, "thread %d: sendrecv got %d", t, r);
        int v = rank + t * it, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comm);
        CHECK(sum == np * (np - 1) / 2 + np * t * it, "thread %d: allreduce got %d", t, sum);
        int sb[3] = {rank, t, it}, rb[3] = {-1, -1, -1};
        MPI_Request rq[2];
        MPI_Irecv(rb, 3, MPI_INT, right, 100 + it, comm, &rq[0]);
        MPI_Isend(sb, 3, MPI_INT, left, 100 + it, comm, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(rb[0] == right && rb[1] == t && rb[2] == it, "thread %d: isend/irecv got %d,%d,%d", t, rb[0], rb[1], rb[2]);
        h = mix64(h ^ (uint64_t)(r + sum + rb[0] + rb[1] + rb[2]));
    }
    thash[t] = h;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "threads: MPI_THREAD_MULTIPLE not provided (got %d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc > 2) {
        if (rank == 0) fprintf(stderr, "usage: threads [ITERS]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc == 2) iters = parse_int(argv[1], "ITERS", 0);
    for (int t = 0; t < NT; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) MPI_Comm_free(&comms[t]);
    uint64_t h = 0, hsum = 0;
    for (int t = 0; t < NT; t++) h = mix64(h ^ thash[t]);
    MPI_Reduce(&h, &hsum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("threads np=%d nthreads=%d iters=%d hash=%016llx verify=ok\n", np, NT, iters,
                          (unsigned long long)hsum);
    MPI_Finalize();
    return 0;
}
