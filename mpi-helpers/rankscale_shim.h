/* C helpers of the rankscale PMPI shim.
 *
 * Some MPI constants are macros that Rust cannot see (MPI_IN_PLACE,
 * MPI_BOTTOM, MPI_MAXLOC, ...) or differ in kind between MPICH
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
/* MPI_MAXLOC, MPI_MINLOC (mpi-sys lacks them). */
MPI_Op rs_op_maxloc(void);
MPI_Op rs_op_minloc(void);
/* Number of integers in a Fortran status (MPI_STATUS_SIZE). */
int rs_root(void);
int rs_f_status_size(void);
/* The value-index pair types of MPI_MAXLOC / MPI_MINLOC (for replay). */
MPI_Datatype rs_type_2int(void);
MPI_Datatype rs_type_float_int(void);
MPI_Datatype rs_type_double_int(void);
MPI_Datatype rs_type_long_int(void);
MPI_Datatype rs_type_short_int(void);
MPI_Datatype rs_type_long_double_int(void);
/* rankscale's code of a datatype (trace::Datatype): 1.. for the
 * predefined types, 255 for any other (derived) type, 0 for
 * MPI_DATATYPE_NULL. */
int rs_type_code(MPI_Datatype t);
/* The predefined datatype of a code, MPI_DATATYPE_NULL for any other. */
MPI_Datatype rs_type_of_code(int code);
/* The in- and out-degree of a communicator's virtual topology (0 and 0
 * without one): the lengths of a neighbourhood collective's count arrays.
 * A Cartesian grid of d dimensions has 2d of each, MPI_PROC_NULL
 * neighbours at a non-periodic edge included. */
void rs_neighbor_degrees(MPI_Comm comm, int *indegree, int *outdegree);
#endif
