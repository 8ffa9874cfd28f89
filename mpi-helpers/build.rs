//! Compiles the C helpers with the MPI compiler wrapper that mpi-sys also
//! uses (`MPICC`, default `mpicc.mpich`), so that both see the same
//! `mpi.h`. The shim and replay link this one build.

fn main() {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc.mpich".to_string());
    println!("cargo:rerun-if-env-changed=MPICC");
    // Whether this `mpi.h` is MPI 4 (MPICH 4.0 is; Open MPI 4.1 is 3.1 and
    // lacks the persistent collectives): the shim and replay read it as
    // `DEP_RANKSCALE_HELPERS_MPI4` and compile their MPI 4 calls only then.
    println!("cargo:mpi4={}", u8::from(mpi_version(&mpicc) >= 4));
    println!("cargo:rerun-if-changed=rankscale_helpers.c");
    println!("cargo:rerun-if-changed=rankscale_shim.h");
    cc::Build::new()
        .compiler(&mpicc)
        .include(".")
        .file("rankscale_helpers.c")
        .warnings(true)
        .compile("rankscale_helpers");
}

/// `MPI_VERSION` of the `mpi.h` that `mpicc` sees (0 when it cannot tell).
fn mpi_version(mpicc: &str) -> u32 {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src = out.join("mpi_version.c");
    std::fs::write(&src, "#include <mpi.h>\n").expect("write mpi_version.c");
    let defines = std::process::Command::new(mpicc)
        .args(["-E", "-dM"])
        .arg(&src)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    defines
        .lines()
        .find_map(|l| l.strip_prefix("#define MPI_VERSION "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}
