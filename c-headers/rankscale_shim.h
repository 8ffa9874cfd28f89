/* C helpers of the rankscale PMPI shim.
 *
 * Some MPI constants are macros that Rust cannot see (MPI_IN_PLACE,
 * MPI_BOTTOM, MPI_F_STATUS_IGNORE, ...) or differ in kind between MPICH
 * (int handles) and Open MPI (pointers). These functions hand them to Rust as
 * plain values, computed once at start-up. They never call MPI_ (only PMPI_)
 * functions, so they cannot recurse into the shim.
 */
#ifndef RANKSCALE_SHIM_H
#define RANKSCALE_SHIM_H
#include <mpi.h>

/* MPI_IN_PLACE as seen from C. */
void *rs_in_place(void);
/* MPI_BOTTOM as seen from C. */
void *rs_bottom(void);
/* MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE: the C-side names of the Fortran
 * sentinels (MPI-3 section 17.2.5). */
MPI_Fint *rs_f_status_ignore(void);
MPI_Fint *rs_f_statuses_ignore(void);
/* MPI_OP_NULL, MPI_MAXLOC, MPI_MINLOC (mpi-sys lacks them). */
MPI_Op rs_op_maxloc(void);
MPI_Op rs_op_minloc(void);
/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are pointers; not needed, not exported. */
/* Number of integers in a Fortran status (MPI_STATUS_SIZE). */
int rs_f_status_size(void);
/* Fortran status <-> C status (functions in both implementations). */
int rs_status_f2c(const MPI_Fint *f, MPI_Status *c);
int rs_status_c2f(const MPI_Status *c, MPI_Fint *f);
/* MPI_VERSION of the library's header, for the README's coverage table. */
int rs_mpi_version(void);
#endif
