//! Replay of rankscale traces on a real MPI machine (seed 001 §2, ScalaReplay).
//!
//! Not implemented yet: this crate only reserves its place in the design
//! card's layout. It will walk the compressed trace in place through the
//! `compress` reader API and be the only crate besides `pmpi-shim` that calls
//! MPI.
