/*
 * io_inputs
 *
 * The MPI-IO cases that replay and codegen's benchmarks handle apart (not
 * in the manifest: it needs files of its own; tests/codegen.rs runs it),
 * in the current directory, any np up to 999:
 *
 *  1. "io_inputs.in", an input the program finds (it must hold at least
 *     4 np ints): MPI_File_open with MPI_MODE_RDONLY alone on
 *     MPI_COMM_WORLD; each rank MPI_File_read_at's 4 ints at byte 16 r,
 *     MPI_File_seek's there and MPI_File_read's 4 ints twice (the second
 *     from where the first left the individual pointer, byte 16 r + 16);
 *     MPI_File_close.
 *  2. "io_inputs.out", which must not exist: MPI_File_open with
 *     MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY; each rank
 *     MPI_File_iwrite_at_all's 16 ints at byte 64 r, then MPI_Wait;
 *     MPI_File_close. The file is kept.
 *  3. MPI_Barrier; rank 0 MPI_File_delete's "io_inputs.gone", which must
 *     exist and which the program never opened.
 *
 * Per rank: Init 1, Finalize 1, Barrier 1, Wait 1, File_open 2,
 * File_read_at 1, File_seek 1, File_read 2, File_close 2,
 * File_iwrite_at_all 1, File_delete [1, 0, ...]; without detail:
 * Comm_rank 1, Comm_size 1.
 */
#include "common.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc != 1 || np > 999) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n NP (NP <= 999) io_inputs\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_File fh;
    int in[3][4], out[16];
    for (int i = 0; i < 16; i++)
        out[i] = 1000 * rank + i;

    IO(MPI_File_open(MPI_COMM_WORLD, "io_inputs.in", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    const MPI_Offset at = (MPI_Offset)rank * 4 * (MPI_Offset)sizeof(int);
    IO(MPI_File_read_at(fh, at, in[0], 4, MPI_INT, MPI_STATUS_IGNORE));
    IO(MPI_File_seek(fh, at, MPI_SEEK_SET));
    IO(MPI_File_read(fh, in[1], 4, MPI_INT, MPI_STATUS_IGNORE));
    IO(MPI_File_read(fh, in[2], 4, MPI_INT, MPI_STATUS_IGNORE));
    CHECK(memcmp(in[0], in[1], sizeof in[0]) == 0, "read_at and read disagree");
    IO(MPI_File_close(&fh));

    MPI_Request rq;
    IO(MPI_File_open(MPI_COMM_WORLD, "io_inputs.out",
                     MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    IO(MPI_File_iwrite_at_all(fh, (MPI_Offset)rank * 16 * (MPI_Offset)sizeof(int), out, 16,
                              MPI_INT, &rq));
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    IO(MPI_File_close(&fh));

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        IO(MPI_File_delete("io_inputs.gone", MPI_INFO_NULL));
        printf("io_inputs: %d ranks: ok\n", np);
    }
    MPI_Finalize();
    return 0;
}
