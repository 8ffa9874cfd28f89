/*
 * walltime: the run time of an untraced MPI job, measured as rankscale's
 * tracer measures a traced one (rank 0, from the return of MPI_Init to the
 * call of MPI_Finalize), so that `scripts/bench.sh simulate` can hold a
 * prediction against the application itself and not only against its
 * traced run. At many ranks per core the tracer's own cost per call
 * lengthens the traced run (CG class W at 16 ranks on 2 cores: +45 %),
 * and a prediction measured against that run measured the tracer.
 *
 * It is independent of rankscale on purpose (the truth a benchmark
 * compares with must not share the code it checks), and intercepts only
 * initialisation and finalisation, so it costs nothing per call.
 *
 * Build: mpicc -shared -fPIC -O2 -o libwalltime.so walltime.c
 * Use:   mpirun -x LD_PRELOAD=.../libwalltime.so ./app   (Open MPI)
 *        mpirun -genv LD_PRELOAD .../libwalltime.so ./app (MPICH)
 * Rank 0 prints "walltime: S s" on standard error at MPI_Finalize.
 *
 * C programs call MPI_Init / MPI_Init_thread; Fortran programs (mpif.h and
 * `use mpi`) call mpi_init_ / mpi_init_thread_, which Open MPI sends to
 * PMPI_Init directly, so those are intercepted too and each interception
 * starts the clock once.
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double started = -1.0;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void start(void)
{
    if (started < 0.0)
        started = now();
}

static void report(void)
{
    int rank = -1;
    if (started < 0.0)
        return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr, "walltime: %.6f s\n", now() - started);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    start();
    return rc;
}

int MPI_Finalize(void)
{
    report();
    return PMPI_Finalize();
}

void mpi_init_(MPI_Fint *ierr)
{
    *ierr = (MPI_Fint)PMPI_Init(NULL, NULL);
    start();
}

void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int got = 0;
    *ierr = (MPI_Fint)PMPI_Init_thread(NULL, NULL, (int)*required, &got);
    *provided = (MPI_Fint)got;
    start();
}

void mpi_finalize_(MPI_Fint *ierr)
{
    report();
    *ierr = (MPI_Fint)PMPI_Finalize();
}
