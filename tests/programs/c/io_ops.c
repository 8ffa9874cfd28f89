/*
 * io_ops [PATH]
 *
 * The MPI-IO calls, each result checked (np >= 2, up to 999), on one file
 * (default "io_ops.dat" in the current directory), which rank 0 deletes
 * at the end, plus one scratch file per rank. The file has 14 regions of
 * np x K ints (K = 8, RB = np K sizeof(int) bytes each); value i of rank r
 * in region g is 1 + 1000000 g + 1000 r + i. In the byte view
 * (displacement 0, etype and filetype MPI_BYTE) rank r's slot of region g
 * is the K ints at byte g RB + r K sizeof(int); in the strided views
 * (regions 3 and 4, a K x np row-major matrix) rank r owns column r.
 * right = rank + 1 (mod np). Every access moves K ints (MPI_Get_count of
 * its status, 28 in all).
 *
 *  1. MPI_File_open (MPI_MODE_CREATE | MPI_MODE_RDWR) on MPI_COMM_WORLD;
 *     MPI_File_set_size to 14 RB, MPI_File_get_size (= 14 RB). Each rank
 *     MPI_File_open's "PATH.RANK" on MPI_COMM_SELF (MPI_MODE_CREATE |
 *     MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE), MPI_File_set_size's it
 *     to 0 (a file left by an aborted run), MPI_File_preallocate's RB
 *     bytes, MPI_File_get_size (= RB), MPI_File_close (which deletes it).
 *  2. Writes of the rank's K ints (the byte view unless said):
 *     region 0 MPI_File_seek + MPI_File_write (individual pointer);
 *     1 MPI_File_write_at; 2 MPI_File_write_at_all;
 *     5 MPI_File_write_at_all_begin/_end; 6 MPI_File_seek +
 *     MPI_File_iwrite and 7 MPI_File_iwrite_at, both completed by one
 *     MPI_Waitall; 8 MPI_File_seek + MPI_File_iwrite_all + MPI_Wait;
 *     9 MPI_File_iwrite_at_all + MPI_Wait; with the shared pointer, each
 *     after MPI_File_seek_shared to the region's start: 10
 *     MPI_File_write_shared (ranks in any order) + MPI_Barrier, 11
 *     MPI_File_write_ordered (rank order), 12
 *     MPI_File_write_ordered_begin/_end, 13 MPI_File_iwrite_shared +
 *     MPI_Wait (any order) + MPI_Barrier; 3 MPI_File_set_view
 *     (displacement 3 RB, etype MPI_INT, filetype an
 *     MPI_Type_create_subarray of column r of the K x np matrix) +
 *     MPI_File_write_all; 4 MPI_File_set_view (displacement 4 RB +
 *     r sizeof(int), filetype MPI_Type_vector(K, 1, np, MPI_INT)) +
 *     MPI_File_write_all_begin/_end; MPI_File_set_view back to bytes.
 *     (The barriers: a collective MPI_File_seek_shared or
 *     MPI_File_set_view, which resets the shared pointer, need not wait
 *     for the other ranks' earlier independent shared-pointer accesses;
 *     without them both MPIs let a late rank's block land in the next
 *     region.)
 *  3. MPI_File_sync, MPI_Barrier, MPI_File_sync.
 *  4. Reads, the counterpart of each write in the same order, of right's
 *     slot or column where the read names a position: MPI_File_seek +
 *     MPI_File_read, MPI_File_read_at, MPI_File_read_at_all,
 *     MPI_File_read_at_all_begin/_end, MPI_File_seek + MPI_File_iread +
 *     MPI_File_iread_at + MPI_Waitall, MPI_File_seek +
 *     MPI_File_iread_all + MPI_Wait, MPI_File_iread_at_all + MPI_Wait;
 *     after MPI_File_seek_shared: MPI_File_read_shared + MPI_Barrier,
 *     MPI_File_read_ordered, MPI_File_read_ordered_begin/_end,
 *     MPI_File_iread_shared + MPI_Wait; MPI_File_set_view (subarray of
 *     right's column) + MPI_File_read_all, MPI_File_set_view (vector at
 *     right's column) + MPI_File_read_all_begin/_end, MPI_File_set_view
 *     back to bytes. Every read returns exactly what was written there;
 *     the ordered reads return the reader's own ordered writes; a
 *     shared-pointer read (regions 10 and 13) returns some rank's whole
 *     block, and one MPI_Allgather of the two writers each rank read
 *     checks that each region's blocks came from every rank exactly once.
 *  5. MPI_File_get_size (= 14 RB), MPI_File_close, MPI_Barrier; rank 0
 *     MPI_File_delete's the file.
 *
 * SPMD apart from rank 0's MPI_File_delete. Per-rank calls:
 *   detailed: Init 1, Finalize 1, Barrier 5, Allgather 1, Wait 6,
 *     Waitall 2;
 *   MPI-IO: File_open 2 (1 world, 1 self),
 *     File_close 2, File_set_size 2, File_preallocate 1, File_get_size 3,
 *     File_set_view 6, File_seek 6, File_seek_shared 8, File_sync 2,
 *     File_delete [1, 0, ...], and 1 each of File_write, File_read,
 *     File_write_at, File_read_at, File_write_at_all, File_read_at_all,
 *     File_write_all, File_read_all, File_write_all_begin,
 *     File_write_all_end, File_read_all_begin, File_read_all_end,
 *     File_write_at_all_begin, File_write_at_all_end,
 *     File_read_at_all_begin, File_read_at_all_end, File_write_shared,
 *     File_read_shared, File_write_ordered, File_read_ordered,
 *     File_write_ordered_begin, File_write_ordered_end,
 *     File_read_ordered_begin, File_read_ordered_end, File_iwrite,
 *     File_iread, File_iwrite_at, File_iread_at, File_iwrite_all,
 *     File_iread_all, File_iwrite_at_all, File_iread_at_all,
 *     File_iwrite_shared, File_iread_shared;
 *   without detail: Comm_rank 1, Comm_size 1, Get_count 28,
 *     Type_create_subarray 2, Type_vector 1, Type_commit 3, Type_free 3.
 *
 * Open MPI 4.1.4 (io ompio, the default): every call above works, but
 * MPI_File_preallocate is broken on a file that holds data: rank 0 reads
 * the existing bytes and writes them back at the advanced individual
 * pointer, so the file doubles (100 bytes, preallocate(100): get_size
 * 200), and each rank decides by its own MPI_File_get_size, taken while
 * rank 0 may already be writing, whether to join a closing internal
 * MPI_Bcast; when they disagree the next collective write hangs in
 * mca_fcoll_vulcan_file_write_all or crashes in opal_generic_simple_pack.
 * Hence the preallocation on an empty MPI_COMM_SELF file. With
 * `--mca io romio321` Open MPI crashes in MPI_File_iwrite_all (a NULL
 * function in MPIOI_File_iwrite_all). MPICH 4.0.2 (ROMIO) passes all.
 */
#include "common.h"

#define K 8
#define NREG 14

static int np, rank;

static inline int val(int g, int r, int i) { return 1 + 1000000 * g + 1000 * r + i; }

/* The byte offset of rank r's slot in region g. */
static inline MPI_Offset slot(int g, int r)
{
    return ((MPI_Offset)g * np + r) * K * (MPI_Offset)sizeof(int);
}

/* Every access moves K ints. */
static void moved(MPI_Status *st, int g, const char *what)
{
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    CHECK(n == K, "region %d: %s moved %d ints", g, what, n);
}

/* What was read from region g is rank r's data. */
static void holds(const int *buf, int g, int r, const char *what)
{
    for (int i = 0; i < K; i++)
        CHECK(buf[i] == val(g, r, i), "region %d: %s read %d at %d, want %d (rank %d's)", g, what,
              buf[i], i, val(g, r, i), r);
}

/* The writer of a block read with the shared pointer from region g. */
static int writer(const int *buf, int g)
{
    const int r = (buf[0] - 1 - 1000000 * g) / 1000;
    CHECK(r >= 0 && r < np, "region %d: a block starts with %d", g, buf[0]);
    holds(buf, g, r, "a shared-pointer read");
    return r;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc > 2 || np < 2 || np > 999) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (2 <= NP <= 999) io_ops [PATH]\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *path = argc > 1 ? argv[1] : "io_ops.dat";
    const int right = (rank + 1) % np;
    const MPI_Offset rb = (MPI_Offset)np * K * (MPI_Offset)sizeof(int);
    int wbuf[NREG][K], rbuf[NREG][K];
    for (int g = 0; g < NREG; g++)
        for (int i = 0; i < K; i++) {
            wbuf[g][i] = val(g, rank, i);
            rbuf[g][i] = -1;
        }

    /* Column r of the K x np matrix, as a subarray and as a vector. */
    MPI_Datatype col_mine, col_right, vec;
    int sizes[2] = {K, np}, subsizes[2] = {K, 1}, starts[2] = {0, rank};
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &col_mine);
    starts[1] = right;
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &col_right);
    MPI_Type_vector(K, 1, np, MPI_INT, &vec);
    MPI_Type_commit(&col_mine);
    MPI_Type_commit(&col_right);
    MPI_Type_commit(&vec);

    /* 1. Open, size. */
    MPI_File fh;
    MPI_Offset size = -1;
    IO(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    IO(MPI_File_set_size(fh, NREG * rb));
    IO(MPI_File_get_size(fh, &size));
    CHECK(size == NREG * rb, "size %lld after set_size, want %lld", (long long)size,
          (long long)(NREG * rb));
    /* MPI_File_preallocate on an empty file of this rank's own (Open MPI
     * 4.1 gets it wrong on a file with data or shared by ranks: see the
     * header), emptied first in case an aborted run left it, deleted when
     * it is closed. */
    char own[4096];
    snprintf(own, sizeof own, "%s.%d", path, rank);
    MPI_File fself;
    IO(MPI_File_open(MPI_COMM_SELF, own, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                     MPI_INFO_NULL, &fself));
    IO(MPI_File_set_size(fself, 0));
    IO(MPI_File_preallocate(fself, rb));
    IO(MPI_File_get_size(fself, &size));
    CHECK(size == rb, "size %lld after preallocate, want %lld", (long long)size, (long long)rb);
    IO(MPI_File_close(&fself));

    /* 2. Writes. */
    MPI_Status st, sts[2];
    MPI_Request rq[2];
    IO(MPI_File_seek(fh, slot(0, rank), MPI_SEEK_SET));
    IO(MPI_File_write(fh, wbuf[0], K, MPI_INT, &st));
    moved(&st, 0, "write");
    IO(MPI_File_write_at(fh, slot(1, rank), wbuf[1], K, MPI_INT, &st));
    moved(&st, 1, "write_at");
    IO(MPI_File_write_at_all(fh, slot(2, rank), wbuf[2], K, MPI_INT, &st));
    moved(&st, 2, "write_at_all");
    IO(MPI_File_write_at_all_begin(fh, slot(5, rank), wbuf[5], K, MPI_INT));
    IO(MPI_File_write_at_all_end(fh, wbuf[5], &st));
    moved(&st, 5, "write_at_all_begin/end");
    IO(MPI_File_seek(fh, slot(6, rank), MPI_SEEK_SET));
    IO(MPI_File_iwrite(fh, wbuf[6], K, MPI_INT, &rq[0]));
    IO(MPI_File_iwrite_at(fh, slot(7, rank), wbuf[7], K, MPI_INT, &rq[1]));
    MPI_Waitall(2, rq, sts);
    moved(&sts[0], 6, "iwrite");
    moved(&sts[1], 7, "iwrite_at");
    IO(MPI_File_seek(fh, slot(8, rank), MPI_SEEK_SET));
    IO(MPI_File_iwrite_all(fh, wbuf[8], K, MPI_INT, &rq[0]));
    MPI_Wait(&rq[0], &st);
    moved(&st, 8, "iwrite_all");
    IO(MPI_File_iwrite_at_all(fh, slot(9, rank), wbuf[9], K, MPI_INT, &rq[0]));
    MPI_Wait(&rq[0], &st);
    moved(&st, 9, "iwrite_at_all");
    IO(MPI_File_seek_shared(fh, slot(10, 0), MPI_SEEK_SET));
    IO(MPI_File_write_shared(fh, wbuf[10], K, MPI_INT, &st));
    moved(&st, 10, "write_shared");
    /* A collective MPI_File_seek_shared or MPI_File_set_view may move the
     * shared pointer while another rank's independent shared-pointer
     * access has not started: every rank first finishes its own. */
    MPI_Barrier(MPI_COMM_WORLD);
    IO(MPI_File_seek_shared(fh, slot(11, 0), MPI_SEEK_SET));
    IO(MPI_File_write_ordered(fh, wbuf[11], K, MPI_INT, &st));
    moved(&st, 11, "write_ordered");
    IO(MPI_File_seek_shared(fh, slot(12, 0), MPI_SEEK_SET));
    IO(MPI_File_write_ordered_begin(fh, wbuf[12], K, MPI_INT));
    IO(MPI_File_write_ordered_end(fh, wbuf[12], &st));
    moved(&st, 12, "write_ordered_begin/end");
    IO(MPI_File_seek_shared(fh, slot(13, 0), MPI_SEEK_SET));
    IO(MPI_File_iwrite_shared(fh, wbuf[13], K, MPI_INT, &rq[0]));
    MPI_Wait(&rq[0], &st);
    moved(&st, 13, "iwrite_shared");
    MPI_Barrier(MPI_COMM_WORLD);
    IO(MPI_File_set_view(fh, slot(3, 0), MPI_INT, col_mine, "native", MPI_INFO_NULL));
    IO(MPI_File_write_all(fh, wbuf[3], K, MPI_INT, &st));
    moved(&st, 3, "write_all");
    IO(MPI_File_set_view(fh, slot(4, 0) + rank * (MPI_Offset)sizeof(int), MPI_INT, vec, "native",
                         MPI_INFO_NULL));
    IO(MPI_File_write_all_begin(fh, wbuf[4], K, MPI_INT));
    IO(MPI_File_write_all_end(fh, wbuf[4], &st));
    moved(&st, 4, "write_all_begin/end");
    IO(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));

    /* 3. Make every rank's writes visible to every rank. */
    IO(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    IO(MPI_File_sync(fh));

    /* 4. Reads. */
    IO(MPI_File_seek(fh, slot(0, right), MPI_SEEK_SET));
    IO(MPI_File_read(fh, rbuf[0], K, MPI_INT, &st));
    moved(&st, 0, "read");
    holds(rbuf[0], 0, right, "read");
    IO(MPI_File_read_at(fh, slot(1, right), rbuf[1], K, MPI_INT, &st));
    moved(&st, 1, "read_at");
    holds(rbuf[1], 1, right, "read_at");
    IO(MPI_File_read_at_all(fh, slot(2, right), rbuf[2], K, MPI_INT, &st));
    moved(&st, 2, "read_at_all");
    holds(rbuf[2], 2, right, "read_at_all");
    IO(MPI_File_read_at_all_begin(fh, slot(5, right), rbuf[5], K, MPI_INT));
    IO(MPI_File_read_at_all_end(fh, rbuf[5], &st));
    moved(&st, 5, "read_at_all_begin/end");
    holds(rbuf[5], 5, right, "read_at_all_begin/end");
    IO(MPI_File_seek(fh, slot(6, right), MPI_SEEK_SET));
    IO(MPI_File_iread(fh, rbuf[6], K, MPI_INT, &rq[0]));
    IO(MPI_File_iread_at(fh, slot(7, right), rbuf[7], K, MPI_INT, &rq[1]));
    MPI_Waitall(2, rq, sts);
    moved(&sts[0], 6, "iread");
    moved(&sts[1], 7, "iread_at");
    holds(rbuf[6], 6, right, "iread");
    holds(rbuf[7], 7, right, "iread_at");
    IO(MPI_File_seek(fh, slot(8, right), MPI_SEEK_SET));
    IO(MPI_File_iread_all(fh, rbuf[8], K, MPI_INT, &rq[0]));
    MPI_Wait(&rq[0], &st);
    moved(&st, 8, "iread_all");
    holds(rbuf[8], 8, right, "iread_all");
    IO(MPI_File_iread_at_all(fh, slot(9, right), rbuf[9], K, MPI_INT, &rq[0]));
    MPI_Wait(&rq[0], &st);
    moved(&st, 9, "iread_at_all");
    holds(rbuf[9], 9, right, "iread_at_all");
    int writers[2], all_writers[2 * 999];
    IO(MPI_File_seek_shared(fh, slot(10, 0), MPI_SEEK_SET));
    IO(MPI_File_read_shared(fh, rbuf[10], K, MPI_INT, &st));
    moved(&st, 10, "read_shared");
    writers[0] = writer(rbuf[10], 10);
    MPI_Barrier(MPI_COMM_WORLD);
    IO(MPI_File_seek_shared(fh, slot(11, 0), MPI_SEEK_SET));
    IO(MPI_File_read_ordered(fh, rbuf[11], K, MPI_INT, &st));
    moved(&st, 11, "read_ordered");
    holds(rbuf[11], 11, rank, "read_ordered");
    IO(MPI_File_seek_shared(fh, slot(12, 0), MPI_SEEK_SET));
    IO(MPI_File_read_ordered_begin(fh, rbuf[12], K, MPI_INT));
    IO(MPI_File_read_ordered_end(fh, rbuf[12], &st));
    moved(&st, 12, "read_ordered_begin/end");
    holds(rbuf[12], 12, rank, "read_ordered_begin/end");
    IO(MPI_File_seek_shared(fh, slot(13, 0), MPI_SEEK_SET));
    IO(MPI_File_iread_shared(fh, rbuf[13], K, MPI_INT, &rq[0]));
    MPI_Wait(&rq[0], &st);
    moved(&st, 13, "iread_shared");
    writers[1] = writer(rbuf[13], 13);
    /* (The MPI_Allgather also orders every rank's iread_shared before the
     * MPI_File_set_view below, which resets the shared pointer.) */
    MPI_Allgather(writers, 2, MPI_INT, all_writers, 2, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < 2; k++) {
        char seen[999] = {0};
        for (int r = 0; r < np; r++) {
            const int w = all_writers[2 * r + k];
            CHECK(!seen[w], "region %d: rank %d's block was read twice", k ? 13 : 10, w);
            seen[w] = 1;
        }
    }
    IO(MPI_File_set_view(fh, slot(3, 0), MPI_INT, col_right, "native", MPI_INFO_NULL));
    IO(MPI_File_read_all(fh, rbuf[3], K, MPI_INT, &st));
    moved(&st, 3, "read_all");
    holds(rbuf[3], 3, right, "read_all (subarray view)");
    IO(MPI_File_set_view(fh, slot(4, 0) + right * (MPI_Offset)sizeof(int), MPI_INT, vec, "native",
                         MPI_INFO_NULL));
    IO(MPI_File_read_all_begin(fh, rbuf[4], K, MPI_INT));
    IO(MPI_File_read_all_end(fh, rbuf[4], &st));
    moved(&st, 4, "read_all_begin/end");
    holds(rbuf[4], 4, right, "read_all_begin/end (vector view)");
    IO(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));

    /* 5. Size, close, delete. */
    IO(MPI_File_get_size(fh, &size));
    CHECK(size == NREG * rb, "size %lld at the end, want %lld", (long long)size,
          (long long)(NREG * rb));
    IO(MPI_File_close(&fh));
    MPI_Type_free(&col_mine);
    MPI_Type_free(&col_right);
    MPI_Type_free(&vec);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        IO(MPI_File_delete(path, MPI_INFO_NULL));
        printf("io_ops: %d ranks, %d regions of %d ints per rank: ok\n", np, NREG, K);
    }
    MPI_Finalize();
    return 0;
}
