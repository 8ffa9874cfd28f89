//! `libpmpi_shim.so`: rankscale's PMPI interposition library.
//!
//! Preload it into an unmodified MPI application (`LD_PRELOAD`) and every
//! MPI call the application makes, from C or Fortran, is recorded as one
//! [`trace::Event`] and handed to an [`trace::EventSink`]. The shim is
//! only a membrane: all ABI knowledge (MPICH `int` handles, Open MPI
//! pointers, Fortran sentinels and manglings) stays in [`ffi`], and nothing
//! past it knows which MPI it runs on.
//!
//! Guarantees to the application:
//! - every wrapper forwards the application's arguments unchanged to `PMPI_*`
//!   and returns MPI's own return code;
//! - no panic crosses the FFI boundary: a failure in the tracer turns
//!   tracing off with one warning on stderr, and the application goes on;
//! - calls the shim does not know are not defined here, so they go straight
//!   to MPI.
//!
//! Settings come from `RANKSCALE_*` environment variables (see docs/TRACING.md).

#![warn(missing_docs)]

/// The tracer's Rust allocations come from a heap of their own (mimalloc's
/// segments, mapped apart from the C heap), never from the application's
/// `malloc` heap, so that tracing does not change where the application's
/// own allocations land. It matters: Open MPI's dynamic windows merge
/// attached regions that share a page and allow 64 of them, and a traced
/// linked-list benchmark (MPICH's test suite, rma/linked_list_bench_lock_all)
/// whose 16-byte elements the tracer's small allocations had spread over
/// more pages failed in `MPI_Win_attach`. The application's `malloc`
/// itself is untouched (mimalloc's `override` feature is off).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod callsite;
mod config;
pub mod ffi;
mod handles;
mod os;
mod paths;
mod reduce;
mod snapshot;
mod tracer;
mod warn;
