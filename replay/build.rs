//! Compiles replay's MPI 4 calls (persistent collectives) only where the
//! MPI has them: mpi-helpers' build script reads `MPI_VERSION` from the
//! `mpi.h` that mpi-sys also sees.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rankscale_mpi4)");
    println!("cargo:rerun-if-env-changed=DEP_RANKSCALE_HELPERS_MPI4");
    if std::env::var("DEP_RANKSCALE_HELPERS_MPI4").as_deref() == Ok("1") {
        println!("cargo:rustc-cfg=rankscale_mpi4");
    }
}
