/* MPI constants that are macros or link-time symbols, for the Rust side of
 * the shim and of replay. See c-headers/rankscale_shim.h. */
#include "rankscale_shim.h"

void *rs_in_place(void) { return MPI_IN_PLACE; }
void *rs_bottom(void) { return MPI_BOTTOM; }
MPI_Op rs_op_maxloc(void) { return MPI_MAXLOC; }
MPI_Op rs_op_minloc(void) { return MPI_MINLOC; }
int rs_f_status_size(void) { return (int)(sizeof(MPI_Status) / sizeof(MPI_Fint)); }
MPI_Datatype rs_type_2int(void) { return MPI_2INT; }
MPI_Datatype rs_type_float_int(void) { return MPI_FLOAT_INT; }
MPI_Datatype rs_type_double_int(void) { return MPI_DOUBLE_INT; }
MPI_Datatype rs_type_long_int(void) { return MPI_LONG_INT; }
MPI_Datatype rs_type_short_int(void) { return MPI_SHORT_INT; }
MPI_Datatype rs_type_long_double_int(void) { return MPI_LONG_DOUBLE_INT; }
