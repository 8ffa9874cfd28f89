/*
 * longrun ITERS SLEEP_US [KILL_RANK KILL_ITER]
 *
 * A job that runs for a while, for the tests of traces that survive a dying
 * job: each iteration exchanges a value with both ring neighbours
 * (MPI_Irecv, MPI_Irecv, MPI_Send, MPI_Send, MPI_Waitall), every 8th
 * iteration sums over all ranks with MPI_Allreduce, then computes for
 * SLEEP_US microseconds (usleep).  At the end rank 0 prints the checksum of
 * every value seen.
 *
 * With KILL_RANK and KILL_ITER, rank KILL_RANK kills itself with SIGKILL at
 * the start of iteration KILL_ITER: the way a node failure or the kernel's
 * out-of-memory killer ends a rank, with no chance to clean up.
 *
 * Per rank: Init 1, Irecv 2*ITERS, Send 2*ITERS, Waitall ITERS,
 * Allreduce ceil(ITERS/8), Reduce 1, Finalize 1.  Needs np >= 2.
 */
#include "common.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 3 && argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: longrun ITERS SLEEP_US [KILL_RANK KILL_ITER]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int iters = parse_int(argv[1], "ITERS", 0);
    int sleep_us = parse_int(argv[2], "SLEEP_US", 1);
    int kill_rank = argc == 5 ? parse_int(argv[3], "KILL_RANK", 1) : -1;
    int kill_iter = argc == 5 ? parse_int(argv[4], "KILL_ITER", 1) : -1;
    if (np < 2) {
        if (rank == 0) fprintf(stderr, "longrun needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    uint64_t hash = 0;
    long long mine = rank + 1;
    for (int it = 0; it < iters; it++) {
        if (rank == kill_rank && it == kill_iter) raise(SIGKILL);
        long long from_left = 0, from_right = 0;
        MPI_Request rq[2];
        MPI_Irecv(&from_left, 1, MPI_LONG_LONG, left, 1, MPI_COMM_WORLD, &rq[0]);
        MPI_Irecv(&from_right, 1, MPI_LONG_LONG, right, 2, MPI_COMM_WORLD, &rq[1]);
        MPI_Send(&mine, 1, MPI_LONG_LONG, right, 1, MPI_COMM_WORLD);
        MPI_Send(&mine, 1, MPI_LONG_LONG, left, 2, MPI_COMM_WORLD);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        hash = mix64(hash ^ (uint64_t)from_left ^ ((uint64_t)from_right << 32));
        mine = (mine * 31 + from_left + from_right) % 1000003;
        if (it % 8 == 0) {
            long long sum = 0;
            MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            hash = mix64(hash ^ (uint64_t)sum);
        }
        usleep(sleep_us);
    }
    unsigned long long h = hash, total = 0;
    MPI_Reduce(&h, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("longrun: %d ranks, %d iterations, checksum=%016llx\n", np, iters, total);
    MPI_Finalize();
    return 0;
}
