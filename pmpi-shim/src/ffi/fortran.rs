//! Fortran entry points (`mpif.h`, `use mpi`, `use mpi_f08`).
