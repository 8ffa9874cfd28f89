//! Compiles the C helpers with the MPI compiler wrapper that mpi-sys also
//! uses (`MPICC`, default `mpicc.mpich`), so that both see the same
//! `mpi.h`. The shim and replay link this one build.

fn main() {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc.mpich".to_string());
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-changed=rankscale_helpers.c");
    println!("cargo:rerun-if-changed=rankscale_shim.h");
    cc::Build::new()
        .compiler(&mpicc)
        .include(".")
        .file("rankscale_helpers.c")
        .warnings(true)
        .compile("rankscale_helpers");
}
