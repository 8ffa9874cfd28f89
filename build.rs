//! Finds the MPI installation the `rankscale` command was built for, so that
//! `rankscale trace` preloads the matching shim and names the launcher.
//!
//! The implementation is chosen by `RANKSCALE_MPI` (`mpich`, the default, or
//! `openmpi`); `MPICC` names the compiler wrapper, as for mpi-sys.

fn main() {
    println!("cargo:rerun-if-env-changed=RANKSCALE_MPI");
    println!("cargo:rerun-if-env-changed=MPICC");
    let imp = std::env::var("RANKSCALE_MPI").unwrap_or_else(|_| "mpich".into());
    let imp = match imp.as_str() {
        "openmpi" | "ompi" => "openmpi",
        _ => "mpich",
    };
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| format!("mpicc.{imp}"));
    println!("cargo:rustc-env=RANKSCALE_BUILD_MPI={imp}");
    println!("cargo:rustc-env=RANKSCALE_BUILD_MPICC={mpicc}");
}
