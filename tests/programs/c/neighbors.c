/*
 * neighbors ITERS
 *
 * Every neighbourhood collective (issue 39), blocking and nonblocking, on
 * the three virtual topologies of a ring of np >= 3 ranks (left = r - 1,
 * right = r + 1, modulo np):
 *
 *  - a periodic 1D grid (MPI_Cart_create): MPI_Neighbor_allgather of the
 *    rank (neighbours in MPI_Cart_shift's order: left, right) and
 *    MPI_Neighbor_alltoall (block 0 to the left, 1 to the right);
 *  - a graph of the ring (MPI_Graph_create, edges left then right):
 *    MPI_Neighbor_allgatherv of r % 3 + 1 ints and MPI_Neighbor_alltoallv
 *    of 1 int to the left and 2 to the right;
 *  - a distributed graph (MPI_Dist_graph_create_adjacent: from the left,
 *    to the right): MPI_Neighbor_alltoallw of one double;
 *
 * and the I form of each of the five on the same topology, completed by
 * MPI_Wait. Every received value is checked.
 *
 * Per-rank calls: Init 1, Finalize 1, Cart_create 1, Graph_create 1,
 *   Dist_graph_create_adjacent 1, Comm_free 3, each of the ten
 *   neighbourhood collectives ITERS, Wait 5*ITERS.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 2 || np < 3) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP >= 3) neighbors ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = parse_int(argv[1], "ITERS", 0);
    const int left = (rank + np - 1) % np, right = (rank + 1) % np;

    MPI_Comm cart, graph, dist;
    int dims[1] = {np}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    int *index = malloc(sizeof(int) * (size_t)np), *edges = malloc(sizeof(int) * 2 * (size_t)np);
    if (!index || !edges) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int i = 0; i < np; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + np - 1) % np;
        edges[2 * i + 1] = (i + 1) % np;
    }
    MPI_Graph_create(MPI_COMM_WORLD, np, index, edges, 0, &graph);
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dist);

    for (int it = 0; it < iters; it++) {
        for (int nb = 0; nb < 2; nb++) {
            MPI_Request r;
            /* Cartesian: allgather and alltoall. */
            int got[2] = {-1, -1};
            if (nb) {
                MPI_Ineighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, cart, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, cart);
            }
            CHECK(got[0] == left && got[1] == right, "allgather %d %d", got[0], got[1]);
            int blocks[2] = {rank * 10 + it, rank * 10 + it + 5}, back[2] = {-1, -1};
            if (nb) {
                MPI_Ineighbor_alltoall(blocks, 1, MPI_INT, back, 1, MPI_INT, cart, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_alltoall(blocks, 1, MPI_INT, back, 1, MPI_INT, cart);
            }
            CHECK(back[0] == left * 10 + it + 5 && back[1] == right * 10 + it, "alltoall %d %d",
                  back[0], back[1]);

            /* Graph: allgatherv (r % 3 + 1 ints of r) and alltoallv (1 int
             * to the left, 2 to the right). */
            int mine[3] = {rank, rank, rank}, vals[6];
            int rc[2] = {left % 3 + 1, right % 3 + 1}, rd[2] = {0, left % 3 + 1};
            if (nb) {
                MPI_Ineighbor_allgatherv(mine, rank % 3 + 1, MPI_INT, vals, rc, rd, MPI_INT, graph,
                                         &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_allgatherv(mine, rank % 3 + 1, MPI_INT, vals, rc, rd, MPI_INT, graph);
            }
            CHECK(vals[0] == left && vals[rd[1] + rc[1] - 1] == right, "allgatherv");
            int out[3] = {rank, rank + 100, rank + 200}, in[3] = {-1, -1, -1};
            int sc[2] = {1, 2}, sd[2] = {0, 1}, vc[2] = {2, 1}, vd[2] = {0, 2};
            if (nb) {
                MPI_Ineighbor_alltoallv(out, sc, sd, MPI_INT, in, vc, vd, MPI_INT, graph, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_alltoallv(out, sc, sd, MPI_INT, in, vc, vd, MPI_INT, graph);
            }
            /* From the left its two for the right; from the right its one. */
            CHECK(in[0] == left + 100 && in[1] == left + 200 && in[2] == right, "alltoallv");

            /* Distributed graph: one double from the left. */
            double d = rank + 0.5 * it, e = -1.0;
            int one = 1;
            MPI_Aint zero = 0;
            MPI_Datatype dbl = MPI_DOUBLE;
            if (nb) {
                MPI_Ineighbor_alltoallw(&d, &one, &zero, &dbl, &e, &one, &zero, &dbl, dist, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_alltoallw(&d, &one, &zero, &dbl, &e, &one, &zero, &dbl, dist);
            }
            CHECK(e == left + 0.5 * it, "alltoallw %g", e);
        }
    }
    MPI_Comm_free(&dist);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&cart);
    free(index);
    free(edges);
    if (rank == 0) printf("neighbors: %d iterations on %d ranks: ok\n", iters, np);
    MPI_Finalize();
    return 0;
}
