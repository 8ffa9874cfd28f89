//! Names the MPI implementation the shim is built for (from the compiler
//! wrapper mpi-sys also uses, `MPICC`, default `mpicc.mpich`), for its
//! messages.

fn main() {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc.mpich".to_string());
    println!("cargo:rerun-if-env-changed=MPICC");
    let out = std::process::Command::new(&mpicc).arg("-show").output();
    let show = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let imp = if show.contains("openmpi") {
        "openmpi"
    } else {
        "mpich"
    };
    println!("cargo:rustc-env=RANKSCALE_SHIM_MPI={imp}");
}
