//! The `rankscale` command line.
fn main() {}
