//! Extrapolation of rankscale traces to larger rank counts (seed 001 §3).
//!
//! Not implemented yet: this crate only reserves its place in the design
//! card's layout. It will consume traces through the `compress` reader API.
