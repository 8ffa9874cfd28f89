/*
 * pscw_ring [ITERS [WORK_US]]                                     (np >= 2)
 *
 *   ITERS     iterations (default 40)
 *   WORK_US   computation per iteration, nanosleep (default 2000)
 *
 * A ring of general active-target (PSCW) epochs whose exposure epochs end
 * in an MPI_Win_test loop: the pattern of a code that overlaps its halo's
 * completion with polling. Each iteration, every rank
 *   (a) sleeps WORK_US                                     (computation)
 *   (b) MPI_Win_post to its left neighbour, MPI_Win_start to its right one
 *   (c) MPI_Put of 1000 * iteration + rank into the right's w[0]
 *   (d) MPI_Win_complete
 *   (e) MPI_Win_test until it comes back true, 50 us apart (the first one
 *       at once, so that it usually finds the left's completion not yet
 *       arrived and comes back false)
 *   (f) checks that w[0] holds 1000 * iteration + left
 *
 * Which first tests miss is the run's timing: on 2 cores some ranks' do in
 * most iterations, rarely every rank's in the same one. Where every rank's
 * did, after its own Win_complete, the holds with which replay and codegen
 * force those outcomes (each origin's Win_complete waits for its target's
 * last false test) form a cycle around the ring; the tests rewrite a trace
 * so (tests/common: every_test_missed_once).
 *
 * Per rank: Win_create 1, Win_post ITERS, Win_start ITERS, Put ITERS,
 * Win_complete ITERS, Win_test >= ITERS, Win_free 1.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    long work = argc > 2 ? atol(argv[2]) : 2000;
    if (argc > 3 || np < 2 || iters < 1 || work < 0) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 2) pscw_ring [ITERS [WORK_US]]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    /* 16 bytes: with a window of 8 bytes or less MPICH 4.0.2 (ch4:ucx) has
     * not delivered the Put when the epoch ends (untraced, Win_wait too). */
    int w[4] = {-1, -1, -1, -1};
    MPI_Win win;
    MPI_Win_create(w, (MPI_Aint)sizeof w, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Group world_group, gleft, gright;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &left, &gleft);
    MPI_Group_incl(world_group, 1, &right, &gright);
    long tests = 0;
    for (int it = 0; it < iters; it++) {
        sleep_us(work);
        int put = 1000 * it + rank;
        MPI_Win_post(gleft, 0, win);
        MPI_Win_start(gright, 0, win);
        MPI_Put(&put, 1, MPI_INT, right, 0, 1, MPI_INT, win);
        MPI_Win_complete(win);
        int flag = 0;
        for (;;) {
            MPI_Win_test(win, &flag);
            tests++;
            if (flag) break;
            sleep_us(50);
        }
        CHECK(w[0] == 1000 * it + left, "iteration %d: put delivered %d", it, w[0]);
    }
    MPI_Group_free(&gleft);
    MPI_Group_free(&gright);
    MPI_Group_free(&world_group);
    MPI_Win_free(&win);
    if (rank == 0) printf("pscw_ring: %d ranks, %d iterations, %ld Win_test on rank 0\n", np, iters, tests);
    MPI_Finalize();
    return 0;
}
