/*
 * io_checkpoint [ITERS] [EVERY] [BLOCK] [PATH] [keep]
 *
 * A checkpoint writer with MPI-IO (any np, tried up to 64). Every rank
 * owns BLOCK ints (default ITERS = 20, EVERY = 5, BLOCK = 1024, PATH =
 * "io_checkpoint.dat" in the current directory). Iteration it (0-based)
 * computes the block, data[i] = (rank BLOCK + i) * 3 + 7 it + 1, and sums
 * it with one MPI_Allreduce (MPI_SUM, long long), checked against the
 * closed form; after every EVERY-th iteration (it % EVERY == EVERY - 1),
 * a checkpoint: all ranks MPI_File_open PATH on MPI_COMM_WORLD with
 * MPI_MODE_CREATE | MPI_MODE_WRONLY, write their block with
 * MPI_File_write_at_all at byte offset rank * BLOCK * sizeof(int) (the
 * status's MPI_Get_count must be BLOCK), and MPI_File_close. The file is
 * rewritten in place, so it ends up holding the last checkpoint.
 *
 * At the end an MPI_Barrier; then, if there was a checkpoint, rank 0
 * alone reopens PATH with MPI_COMM_SELF and MPI_MODE_RDONLY, reads all
 * np * BLOCK ints with one MPI_File_read_at at offset 0 (MPI_Get_count
 * must be np * BLOCK), checks them against the last checkpoint's
 * iteration, MPI_File_close's it and MPI_File_delete's PATH, unless the
 * fifth argument is "keep". Rank 0 prints one line.
 *
 * With C = floor(ITERS / EVERY) checkpoints, per-rank calls:
 *   every rank:
 *     detailed: Init 1, Finalize 1, Allreduce ITERS, Barrier 1;
 *     MPI-IO: File_open C, File_write_at_all C,
 *       File_close C;
 *     without detail: Comm_rank 1, Comm_size 1, Get_count C;
 *   rank 0 in addition, if C >= 1 (its verification):
 *     File_open 1 (MPI_COMM_SELF), File_read_at 1, File_close 1,
 *     File_delete 1 (0 with "keep"), Get_count 1.
 * E.g. ITERS=10 EVERY=5 BLOCK=256: C = 2; File_open [3, 2, 2, ...],
 * File_write_at_all 2, File_close [3, 2, ...], File_read_at [1, 0, ...],
 * File_delete [1, 0, ...], Get_count [3, 2, ...], Allreduce 10.
 */
#include "common.h"

/* Element i of rank r's block at iteration it. */
static inline int val(int r, int block, int it, int i)
{
    return ((r * block + i) * 3 + 7 * it + 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc > 6 || (argc == 6 && strcmp(argv[5], "keep") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: io_checkpoint [ITERS] [EVERY] [BLOCK] [PATH] [keep]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int iters = argc > 1 ? parse_int(argv[1], "ITERS", 1) : 20;
    const int every = argc > 2 ? parse_int(argv[2], "EVERY", 0) : 5;
    const int block = argc > 3 ? parse_int(argv[3], "BLOCK", 0) : 1024;
    const char *path = argc > 4 ? argv[4] : "io_checkpoint.dat";
    const int keep = argc > 5;
    /* The largest value and the global sum must fit their types. */
    CHECK((long long)np * block * 3 + 7LL * iters < 2000000000LL, "np * BLOCK or ITERS too large");

    int *data = malloc((size_t)block * sizeof *data);
    CHECK(data, "out of memory");
    const long long cells = (long long)np * block;
    int checkpoints = 0, last = -1;
    for (int it = 0; it < iters; it++) {
        long long local = 0, total = 0;
        for (int i = 0; i < block; i++) {
            data[i] = val(rank, block, it, i);
            local += data[i];
        }
        MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        /* sum over g < cells of 3 g + 7 it + 1 */
        const long long want = 3 * (cells * (cells - 1) / 2) + cells * (7LL * it + 1);
        CHECK(total == want, "iteration %d: sum %lld, want %lld", it, total, want);
        if (it % every != every - 1) continue;
        MPI_File fh;
        MPI_Status st;
        int count = -1;
        IO(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                         &fh));
        IO(MPI_File_write_at_all(fh, (MPI_Offset)rank * block * (MPI_Offset)sizeof(int), data,
                                 block, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == block, "checkpoint at iteration %d: wrote %d ints", it, count);
        IO(MPI_File_close(&fh));
        checkpoints++;
        last = it;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && checkpoints > 0) {
        int *all = malloc((size_t)cells * sizeof *all);
        CHECK(all, "out of memory");
        MPI_File fh;
        MPI_Status st;
        int count = -1;
        IO(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        IO(MPI_File_read_at(fh, 0, all, (int)cells, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(count == cells, "read %d ints, want %lld", count, cells);
        for (int r = 0; r < np; r++)
            for (int i = 0; i < block; i++)
                CHECK(all[(long long)r * block + i] == val(r, block, last, i),
                      "file: rank %d's element %d is %d, want %d (iteration %d)", r, i,
                      all[(long long)r * block + i], val(r, block, last, i), last);
        IO(MPI_File_close(&fh));
        if (!keep) IO(MPI_File_delete(path, MPI_INFO_NULL));
        free(all);
    }
    if (rank == 0)
        printf("io_checkpoint: %d ranks, %d iterations, %d checkpoints of %d ints per rank: ok\n",
               np, iters, checkpoints, block);
    free(data);
    MPI_Finalize();
    return 0;
}
