/*
 * rma_ops
 *
 * Every one-sided call, once or a few times, each result checked (np >= 2,
 * even or odd). right = rank+1, left = rank-1 (mod np); all data are ints.
 *
 *  A. Active target, fence: MPI_Win_create over 8 ints w[] (w[6] =
 *     100 rank + 6, w[7] = 100 rank + 7, w[2] = 1000, others 0).
 *     MPI_Win_fence(0); MPI_Put of 10 rank + 1 to right's w[0];
 *     MPI_Accumulate (MPI_SUM) of rank + 1 to rank 0's w[1]; MPI_Get of
 *     left's w[7]; MPI_Get_accumulate (MPI_SUM) of rank to right's w[2],
 *     fetching its old value; MPI_Win_fence(MPI_MODE_NOSUCCEED). Checked:
 *     w[0] = 10 left + 1, rank 0's w[1] = np(np+1)/2, the get read
 *     100 left + 7, the fetch read 1000, w[2] = 1000 + left.
 *  B. Generalized active target (PSCW) on the same window, twice, with
 *     groups of one rank built from the world group (MPI_Comm_group,
 *     MPI_Group_incl of {left} and of {right}): each rank exposes its
 *     window to left and accesses right's. Round 1: MPI_Win_post,
 *     MPI_Win_start, MPI_Put of 10 rank + 2 to right's w[3], MPI_Get of
 *     right's w[6], MPI_Win_complete, MPI_Win_wait; checked w[3] =
 *     10 left + 2 and the get 100 right + 6. Round 2: post, start,
 *     MPI_Get of right's w[3] (10 rank + 2, put there in round 1),
 *     MPI_Accumulate (MPI_SUM) of rank + 1 to right's w[4], complete, and
 *     MPI_Win_test in a loop, 200 us apart, until the exposure epoch has
 *     ended (>= 1 calls, the only count that depends on timing; MPICH,
 *     whose origins progress only inside MPI calls, often takes tens to
 *     hundreds); checked w[4] =
 *     left + 1. MPI_Group_free of the three groups; MPI_Win_free.
 *  C. Passive target: MPI_Win_allocate of 8 ints m[].
 *     MPI_Win_lock_all(0); local stores (m[2] = -1, m[3] = 100 rank + 3,
 *     m[6] = 100 rank + 6, others 0); MPI_Win_sync; MPI_Barrier. Then:
 *     MPI_Accumulate (MPI_SUM) of rank to rank 0's m[0];
 *     MPI_Fetch_and_op (MPI_SUM) of 1 on rank 0's m[1] (a ticket);
 *     MPI_Win_flush(0); MPI_Compare_and_swap of rank for -1 on rank 0's
 *     m[2]; MPI_Win_flush_local(0); MPI_Rput of 10 rank + 4 to right's
 *     m[4] + MPI_Wait; MPI_Rget of left's m[3] + MPI_Wait; MPI_Raccumulate
 *     (MPI_SUM) of rank + 1 to rank 0's m[5] and MPI_Rget_accumulate
 *     (MPI_SUM) of rank + 1 to right's m[6], fetching its old value, both
 *     completed by one MPI_Waitall; MPI_Win_flush_local_all;
 *     MPI_Win_flush_all; MPI_Win_unlock_all. Checked: the Rget read
 *     100 left + 3, the fetch 100 right + 6; one MPI_Allgather of the
 *     tickets (a permutation of 0..np-1) and one MPI_Allreduce (MPI_SUM)
 *     of (CAS succeeded, winner's rank + 1): exactly one CAS saw -1 and
 *     every other one saw the winner. MPI_Barrier. Mutual exclusion:
 *     MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0), MPI_Get of rank 0's m[7],
 *     MPI_Win_flush(0), MPI_Put of that + 1, MPI_Win_unlock(0).
 *     MPI_Barrier. MPI_Win_lock(MPI_LOCK_SHARED, right), MPI_Get of
 *     right's m[4] (10 rank + 4), MPI_Win_unlock; MPI_Win_lock(
 *     MPI_LOCK_SHARED, rank) around local loads checking m[4] =
 *     10 left + 4, m[6] = 100 rank + 6 + left + 1, and on rank 0 m[0] =
 *     np(np-1)/2, m[1] = np, m[2] = the CAS winner, m[5] = np(np+1)/2,
 *     m[7] = np; MPI_Win_unlock. MPI_Win_free.
 *  D. Shared memory: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (with
 *     MPI_Comm_rank and MPI_Comm_size of it), MPI_Win_allocate_shared of
 *     2 ints per rank, MPI_Win_shared_query of the next rank of the node
 *     (itself if alone); MPI_Win_lock_all(MPI_MODE_NOCHECK); own slot
 *     stored; MPI_Win_sync; MPI_Barrier on the node communicator;
 *     MPI_Win_sync; the neighbour's slot loaded through the queried
 *     pointer and checked; MPI_Win_unlock_all; MPI_Win_free; MPI_Comm_free.
 *     (MPICH with MPIR_CVAR_NOLOCAL=1, the launch setting of these tests,
 *     puts every rank on a node of its own; Open MPI puts all on one.)
 *  E. Dynamic: MPI_Win_create_dynamic; MPI_Win_attach of 4 ints
 *     d[i] = 100 rank + i, and of BIG ints (128 KiB: more than replay's
 *     64 KiB landing region, so replay aims at the attached memory);
 *     MPI_Get_address of both, MPI_Allgather of the addresses (2
 *     MPI_AINT per rank); MPI_Win_fence(0); MPI_Put of 10 rank + 9 to
 *     right's d[1], MPI_Get of left's d[2], and MPI_Put of PUT_BIG ints
 *     7 rank + i to right's big[4 + i] (target displacement address +
 *     offset); MPI_Win_fence(MPI_MODE_NOSUCCEED); checked d[1] =
 *     10 left + 9, the get 100 left + 2, big[4 + i] = 7 left + i;
 *     MPI_Win_detach of both; MPI_Win_free.
 *
 * SPMD: every rank makes the same calls.
 * Per-rank calls:
 *   detailed: Init 1, Finalize 1, Barrier 4 (3 world, 1 node),
 *     Allgather 2, Allreduce 1, Comm_split_type 1, Comm_free 1, Wait 2,
 *     Waitall 1;
 *   one-sided: Win_create 1, Win_allocate 1,
 *     Win_allocate_shared 1, Win_create_dynamic 1, Win_free 4,
 *     Win_shared_query 1, Win_attach 2, Win_detach 2, Win_fence 4,
 *     Win_post 2, Win_start 2, Win_complete 2, Win_wait 1, Win_test >= 1,
 *     Win_lock 3, Win_unlock 3, Win_lock_all 2, Win_unlock_all 2,
 *     Win_flush 2, Win_flush_all 1, Win_flush_local 1,
 *     Win_flush_local_all 1, Win_sync 3, Put 5, Get 6, Accumulate 3,
 *     Get_accumulate 1, Fetch_and_op 1, Compare_and_swap 1, Rput 1,
 *     Rget 1, Raccumulate 1, Rget_accumulate 1;
 *   without detail: Comm_rank 2, Comm_size 2, Comm_group 1, Group_incl 2,
 *     Group_free 3, Get_address 2.
 *
 * Open MPI 4.1.4 passes with Debian's default one-sided components (osc =
 * ^ucx,pt2pt in openmpi-mca-params.conf, leaving osc rdma, and osc sm for
 * the shared window) and with `--mca osc sm,pt2pt`; `--mca osc pt2pt` or
 * `--mca osc ucx` alone fail in MPI_Win_allocate_shared, which only osc sm
 * provides. MPICH 4.0.2 passes.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 1 || np < 2) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 2) rma_ops\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const MPI_Comm world = MPI_COMM_WORLD;
    const int right = (rank + 1) % np, left = (rank + np - 1) % np;
    const int one = 1, rank1 = rank + 1;

    /* ---- A. MPI_Win_create, fence ---- */
    int w[8] = {0, 0, 1000, 0, 0, 0, 100 * rank + 6, 100 * rank + 7};
    MPI_Win win;
    MPI_Win_create(w, (MPI_Aint)sizeof w, sizeof(int), MPI_INFO_NULL, world, &win);
    int put = 10 * rank + 1, got = -1, fetched = -1;
    MPI_Win_fence(0, win);
    MPI_Put(&put, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Accumulate(&rank1, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win);
    MPI_Get(&got, 1, MPI_INT, left, 7, 1, MPI_INT, win);
    MPI_Get_accumulate(&rank, 1, MPI_INT, &fetched, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(w[0] == 10 * left + 1, "fence: put delivered %d", w[0]);
    CHECK(rank != 0 || w[1] == np * (np + 1) / 2, "fence: accumulated %d", w[1]);
    CHECK(got == 100 * left + 7, "fence: get read %d", got);
    CHECK(fetched == 1000, "fence: get_accumulate fetched %d", fetched);
    CHECK(w[2] == 1000 + left, "fence: get_accumulate left %d", w[2]);

    /* ---- B. PSCW, on the same window ---- */
    MPI_Group world_group, gleft, gright;
    MPI_Comm_group(world, &world_group);
    MPI_Group_incl(world_group, 1, &left, &gleft);
    MPI_Group_incl(world_group, 1, &right, &gright);
    put = 10 * rank + 2;
    got = -1;
    MPI_Win_post(gleft, 0, win);
    MPI_Win_start(gright, 0, win);
    MPI_Put(&put, 1, MPI_INT, right, 3, 1, MPI_INT, win);
    MPI_Get(&got, 1, MPI_INT, right, 6, 1, MPI_INT, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    CHECK(w[3] == 10 * left + 2, "pscw: put delivered %d", w[3]);
    CHECK(got == 100 * right + 6, "pscw: get read %d", got);
    got = -1;
    MPI_Win_post(gleft, 0, win);
    MPI_Win_start(gright, 0, win);
    MPI_Get(&got, 1, MPI_INT, right, 3, 1, MPI_INT, win);
    MPI_Accumulate(&rank1, 1, MPI_INT, right, 4, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_complete(win);
    int flag = 0;
    for (;;) {
        MPI_Win_test(win, &flag);
        if (flag) break;
        sleep_us(200); /* fewer calls to record while the origin works */
    }
    CHECK(got == 10 * rank + 2, "pscw: second get read %d", got);
    CHECK(w[4] == left + 1, "pscw: accumulated %d", w[4]);
    MPI_Group_free(&gleft);
    MPI_Group_free(&gright);
    MPI_Group_free(&world_group);
    MPI_Win_free(&win);

    /* ---- C. MPI_Win_allocate, passive target ---- */
    int *m = NULL;
    MPI_Win_allocate(8 * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, world, &m, &win);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < 8; i++) m[i] = 0;
    m[2] = -1;
    m[3] = 100 * rank + 3;
    m[6] = 100 * rank + 6;
    MPI_Win_sync(win);
    MPI_Barrier(world);
    int ticket = -1, cas = -2, rget = -1, rgacc = -1;
    MPI_Accumulate(&rank, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
    MPI_Fetch_and_op(&one, &ticket, MPI_INT, 0, 1, MPI_SUM, win);
    MPI_Win_flush(0, win);
    const int minus1 = -1;
    MPI_Compare_and_swap(&rank, &minus1, &cas, MPI_INT, 0, 2, win);
    MPI_Win_flush_local(0, win);
    MPI_Request req[2];
    put = 10 * rank + 4;
    MPI_Rput(&put, 1, MPI_INT, right, 4, 1, MPI_INT, win, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Rget(&rget, 1, MPI_INT, left, 3, 1, MPI_INT, win, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Raccumulate(&rank1, 1, MPI_INT, 0, 5, 1, MPI_INT, MPI_SUM, win, &req[0]);
    MPI_Rget_accumulate(&rank1, 1, MPI_INT, &rgacc, 1, MPI_INT, right, 6, 1, MPI_INT, MPI_SUM, win,
                        &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Win_flush_local_all(win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    CHECK(rget == 100 * left + 3, "passive: rget read %d", rget);
    CHECK(rgacc == 100 * right + 6, "passive: rget_accumulate fetched %d", rgacc);
    CHECK(ticket >= 0 && ticket < np, "passive: ticket %d", ticket);
    int *tickets = malloc((size_t)np * sizeof *tickets);
    char *seen = calloc((size_t)np, 1);
    CHECK(tickets && seen, "out of memory");
    MPI_Allgather(&ticket, 1, MPI_INT, tickets, 1, MPI_INT, world);
    for (int r = 0; r < np; r++) {
        CHECK(tickets[r] >= 0 && tickets[r] < np && !seen[tickets[r]], "ticket %d of rank %d",
              tickets[r], r);
        seen[tickets[r]] = 1;
    }
    int won[2] = {cas == -1, cas == -1 ? rank + 1 : 0}, wins[2];
    MPI_Allreduce(won, wins, 2, MPI_INT, MPI_SUM, world);
    const int winner = wins[1] - 1;
    CHECK(wins[0] == 1, "compare_and_swap succeeded %d times", wins[0]);
    CHECK(cas == -1 || cas == winner, "compare_and_swap saw %d, the winner is %d", cas, winner);
    MPI_Barrier(world);
    got = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Get(&got, 1, MPI_INT, 0, 7, 1, MPI_INT, win);
    MPI_Win_flush(0, win);
    got++;
    MPI_Put(&got, 1, MPI_INT, 0, 7, 1, MPI_INT, win);
    MPI_Win_unlock(0, win);
    MPI_Barrier(world);
    got = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Get(&got, 1, MPI_INT, right, 4, 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    CHECK(got == 10 * rank + 4, "passive: get after rput read %d", got);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(m[4] == 10 * left + 4, "passive: rput delivered %d", m[4]);
    CHECK(m[6] == 100 * rank + 6 + left + 1, "passive: rget_accumulate left %d", m[6]);
    if (rank == 0) {
        CHECK(m[0] == np * (np - 1) / 2, "passive: accumulated %d", m[0]);
        CHECK(m[1] == np, "passive: fetch_and_op counter %d", m[1]);
        CHECK(m[2] == winner, "passive: compare_and_swap stored %d, winner %d", m[2], winner);
        CHECK(m[5] == np * (np + 1) / 2, "passive: raccumulated %d", m[5]);
        CHECK(m[7] == np, "passive: exclusive increments %d", m[7]);
    }
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);

    /* ---- D. MPI_Win_allocate_shared on the node ---- */
    MPI_Comm node;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nrank, nsize;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int *mine = NULL, *peer = NULL, peer_unit = 0;
    MPI_Aint peer_size = 0;
    MPI_Win_allocate_shared(2 * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine,
                            &win);
    const int npeer = (nrank + 1) % nsize;
    MPI_Win_shared_query(win, npeer, &peer_size, &peer_unit, &peer);
    CHECK(peer_size == 2 * (MPI_Aint)sizeof(int) && peer_unit == (int)sizeof(int) && peer,
          "shared_query: %ld bytes, unit %d", (long)peer_size, peer_unit);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    mine[0] = 1000 + nrank;
    mine[1] = nsize;
    MPI_Win_sync(win);
    MPI_Barrier(node);
    MPI_Win_sync(win);
    CHECK(peer[0] == 1000 + npeer && peer[1] == nsize, "shared: neighbour's slot holds %d %d",
          peer[0], peer[1]);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);

    /* ---- E. MPI_Win_create_dynamic, attach ---- */
    enum { BIG = 32768, PUT_BIG = 24576 };
    int *d = malloc(4 * sizeof *d);
    int *big = calloc(BIG, sizeof *big);
    int *src = malloc(PUT_BIG * sizeof *src);
    MPI_Aint *addr = malloc(2 * (size_t)np * sizeof *addr);
    CHECK(d && big && src && addr, "out of memory");
    for (int i = 0; i < 4; i++) d[i] = 100 * rank + i;
    for (int i = 0; i < PUT_BIG; i++) src[i] = 7 * rank + i;
    MPI_Win_create_dynamic(MPI_INFO_NULL, world, &win);
    MPI_Win_attach(win, d, 4 * (MPI_Aint)sizeof(int));
    MPI_Win_attach(win, big, BIG * (MPI_Aint)sizeof(int));
    MPI_Aint mine_addr[2];
    MPI_Get_address(d, &mine_addr[0]);
    MPI_Get_address(big, &mine_addr[1]);
    MPI_Allgather(mine_addr, 2, MPI_AINT, addr, 2, MPI_AINT, world);
    put = 10 * rank + 9;
    got = -1;
    MPI_Win_fence(0, win);
    /* (Plain sums, not MPI_Aint_add: a macro in Open MPI's mpi.h, a call
     * in MPICH's, and the calls should be the same on both.) */
    MPI_Put(&put, 1, MPI_INT, right, addr[2 * right] + (MPI_Aint)sizeof(int), 1, MPI_INT, win);
    MPI_Get(&got, 1, MPI_INT, left, addr[2 * left] + 2 * (MPI_Aint)sizeof(int), 1, MPI_INT, win);
    MPI_Put(src, PUT_BIG, MPI_INT, right, addr[2 * right + 1] + 4 * (MPI_Aint)sizeof(int),
            PUT_BIG, MPI_INT, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(d[1] == 10 * left + 9, "dynamic: put delivered %d", d[1]);
    CHECK(got == 100 * left + 2, "dynamic: get read %d", got);
    for (int i = 0; i < PUT_BIG; i++)
        CHECK(big[4 + i] == 7 * left + i, "dynamic: big put delivered %d at %d", big[4 + i], i);
    MPI_Win_detach(win, d);
    MPI_Win_detach(win, big);
    MPI_Win_free(&win);

    if (rank == 0) printf("rma_ops: %d ranks: ok\n", np);
    free(tickets);
    free(seen);
    free(d);
    free(big);
    free(src);
    free(addr);
    MPI_Finalize();
    return 0;
}
