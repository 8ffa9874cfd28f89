/* See c-headers/rankscale_shim.h. */
#include "rankscale_shim.h"

void *rs_in_place(void) { return MPI_IN_PLACE; }
void *rs_bottom(void) { return MPI_BOTTOM; }
MPI_Fint *rs_f_status_ignore(void) { return MPI_F_STATUS_IGNORE; }
MPI_Fint *rs_f_statuses_ignore(void) { return MPI_F_STATUSES_IGNORE; }
MPI_Op rs_op_maxloc(void) { return MPI_MAXLOC; }
MPI_Op rs_op_minloc(void) { return MPI_MINLOC; }
int rs_f_status_size(void) { return (int)(sizeof(MPI_Status) / sizeof(MPI_Fint)); }
int rs_status_f2c(const MPI_Fint *f, MPI_Status *c) { return PMPI_Status_f2c(f, c); }
int rs_status_c2f(const MPI_Status *c, MPI_Fint *f) { return PMPI_Status_c2f(c, f); }
int rs_mpi_version(void) { return MPI_VERSION; }
