//! Compiles the C helpers (MPI constants that mpi-sys lacks) with the same
//! MPI compiler wrapper as mpi-sys (`MPICC`, default `mpicc.mpich`).

fn main() {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc.mpich".to_string());
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-changed=../c-headers/rankscale_helpers.c");
    println!("cargo:rerun-if-changed=../c-headers/rankscale_shim.h");
    cc::Build::new()
        .compiler(&mpicc)
        .include("../c-headers")
        .file("../c-headers/rankscale_helpers.c")
        .warnings(true)
        .compile("rankscale_replay_helpers");
}
