/* See c-headers/rankscale_shim.h. */
#include "rankscale_shim.h"

void *rs_in_place(void) { return MPI_IN_PLACE; }
void *rs_bottom(void) { return MPI_BOTTOM; }
MPI_Op rs_op_maxloc(void) { return MPI_MAXLOC; }
MPI_Op rs_op_minloc(void) { return MPI_MINLOC; }
int rs_f_status_size(void) { return (int)(sizeof(MPI_Status) / sizeof(MPI_Fint)); }
