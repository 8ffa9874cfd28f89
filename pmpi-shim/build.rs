//! Compiles the shim's C helpers with the MPI compiler wrapper that mpi-sys
//! also uses (`MPICC`, default `mpicc.mpich`), so that both see the same
//! `mpi.h`.

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
        .compile("rankscale_helpers");
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
