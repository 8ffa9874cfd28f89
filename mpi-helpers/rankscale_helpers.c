/* MPI constants that are macros or link-time symbols, for the Rust side of
 * the shim and of replay. See c-headers/rankscale_shim.h. */
#include "rankscale_shim.h"

void *rs_in_place(void) { return MPI_IN_PLACE; }
void *rs_bottom(void) { return MPI_BOTTOM; }
MPI_Op rs_op_maxloc(void) { return MPI_MAXLOC; }
MPI_Op rs_op_minloc(void) { return MPI_MINLOC; }
MPI_Op rs_op_replace(void) { return MPI_REPLACE; }
MPI_Op rs_op_no_op(void) { return MPI_NO_OP; }
int rs_root(void) { return MPI_ROOT; }
int rs_f_status_size(void) { return (int)(sizeof(MPI_Status) / sizeof(MPI_Fint)); }
MPI_Datatype rs_type_2int(void) { return MPI_2INT; }
MPI_Datatype rs_type_float_int(void) { return MPI_FLOAT_INT; }
MPI_Datatype rs_type_double_int(void) { return MPI_DOUBLE_INT; }
MPI_Datatype rs_type_long_int(void) { return MPI_LONG_INT; }
MPI_Datatype rs_type_short_int(void) { return MPI_SHORT_INT; }
MPI_Datatype rs_type_long_double_int(void) { return MPI_LONG_DOUBLE_INT; }

void rs_neighbor_degrees(MPI_Comm comm, int *indegree, int *outdegree)
{
    int kind = MPI_UNDEFINED, n = 0, rank = 0, weighted = 0;
    *indegree = *outdegree = 0;
    if (PMPI_Topo_test(comm, &kind) != MPI_SUCCESS)
        return;
    if (kind == MPI_CART) {
        if (PMPI_Cartdim_get(comm, &n) == MPI_SUCCESS)
            *indegree = *outdegree = 2 * n;
    } else if (kind == MPI_GRAPH) {
        if (PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
            PMPI_Graph_neighbors_count(comm, rank, &n) == MPI_SUCCESS)
            *indegree = *outdegree = n;
    } else if (kind == MPI_DIST_GRAPH) {
        if (PMPI_Dist_graph_neighbors_count(comm, indegree, outdegree, &weighted) != MPI_SUCCESS)
            *indegree = *outdegree = 0;
    }
}

/* The predefined datatypes in the order of rankscale's datatype codes
 * (trace/src/dtype.rs, Datatype::NAMES): code = position + 1. The order
 * is part of the trace format; new types are appended. */
#define RS_TYPES(X)                                                            \
  X(MPI_CHAR) X(MPI_SIGNED_CHAR) X(MPI_UNSIGNED_CHAR) X(MPI_BYTE)              \
  X(MPI_SHORT) X(MPI_UNSIGNED_SHORT) X(MPI_INT) X(MPI_UNSIGNED) X(MPI_LONG)    \
  X(MPI_UNSIGNED_LONG) X(MPI_LONG_LONG) X(MPI_UNSIGNED_LONG_LONG) X(MPI_FLOAT) \
  X(MPI_DOUBLE) X(MPI_LONG_DOUBLE) X(MPI_WCHAR) X(MPI_C_BOOL) X(MPI_INT8_T)    \
  X(MPI_INT16_T) X(MPI_INT32_T) X(MPI_INT64_T) X(MPI_UINT8_T) X(MPI_UINT16_T)  \
  X(MPI_UINT32_T) X(MPI_UINT64_T) X(MPI_C_FLOAT_COMPLEX)                       \
  X(MPI_C_DOUBLE_COMPLEX) X(MPI_C_LONG_DOUBLE_COMPLEX) X(MPI_AINT)             \
  X(MPI_OFFSET) X(MPI_COUNT) X(MPI_PACKED) X(MPI_FLOAT_INT) X(MPI_DOUBLE_INT)  \
  X(MPI_LONG_INT) X(MPI_2INT) X(MPI_SHORT_INT) X(MPI_LONG_DOUBLE_INT)          \
  X(MPI_INTEGER) X(MPI_REAL) X(MPI_DOUBLE_PRECISION) X(MPI_COMPLEX)            \
  X(MPI_DOUBLE_COMPLEX) X(MPI_LOGICAL) X(MPI_CHARACTER) X(MPI_2REAL)           \
  X(MPI_2DOUBLE_PRECISION) X(MPI_2INTEGER) X(MPI_INTEGER4) X(MPI_INTEGER8)     \
  X(MPI_REAL4) X(MPI_REAL8)

int rs_type_code(MPI_Datatype t) {
  int code = 0;
  if (t == MPI_DATATYPE_NULL) return 0;
#define RS_MATCH(T)                                                            \
  code++;                                                                      \
  if ((T) != MPI_DATATYPE_NULL && t == (T)) return code;
  RS_TYPES(RS_MATCH)
#undef RS_MATCH
  return 255;
}

MPI_Datatype rs_type_of_code(int code) {
  int i = 0;
#define RS_PICK(T)                                                             \
  if (++i == code) return (T);
  RS_TYPES(RS_PICK)
#undef RS_PICK
  return MPI_DATATYPE_NULL;
}
