//! The generated program's shape, on traces built through the compressor
//! (no MPI; that the programs build and issue the application's calls is
//! checked with real MPI in the workspace's `tests/codegen.rs`).

use codegen::{Error, Options, generate};
use trace::TraceFile;

/// A ring of `p` ranks: 3 iterations of `P / 2` Sendrecvs to the right
/// neighbour and an Allreduce; the Sendrecvs made by `thread` (0: the main
/// one).
fn ring(p: u32, thread: u32) -> TraceFile {
    compress::fixtures::ring(p, 0, thread)
}

#[test]
fn the_program_has_the_traces_loops_calls_and_constants() {
    let b = generate(&ring(8, 0), "ring.trace", &Options::default()).unwrap();
    let src = &b.source;
    let main = &src[src.find("int main(").unwrap()..];
    // Two loops (the iterations and the Sendrecvs), each call once.
    assert_eq!(main.matches("for (int64_t i").count(), 2, "{main}");
    assert_eq!(src.matches("MPI_Sendrecv(").count(), 1);
    assert_eq!(src.matches("MPI_Allreduce(").count(), 1);
    assert_eq!(b.calls, 4, "Init, Sendrecv, Allreduce, Finalize");
    // The loop counts and every rank's equal parameters are literals.
    assert!(src.contains("reps0 = 3;"), "{src}");
    assert!(src.contains("reps1 = 4;"), "{src}");
    assert!(src.contains("const int s_tag = 7;"), "{src}");
    assert!(src.contains("rs_count(1)"), "{src}");
    assert!(
        src.contains("MPI_Allreduce(sb, rb, s_n, s_t, MPI_SUM, c);"),
        "{src}"
    );
    assert!(src.contains("#define RS_RANKS 8"), "{src}");
    // The header says where it came from and how to build and run it.
    assert!(src.contains("from ring.trace"), "{src}");
    assert!(src.contains("mpirun -n 8 ./bench"), "{src}");
}

#[test]
fn the_programs_size_follows_the_trace_not_the_rank_count() {
    let small = generate(&ring(8, 0), "a", &Options::default()).unwrap();
    let large = generate(&ring(512, 0), "a", &Options::default()).unwrap();
    assert!(
        large.source.len() < small.source.len() + small.source.len() / 10,
        "{} bytes at 512 ranks against {} at 8",
        large.source.len(),
        small.source.len()
    );
}

#[test]
fn the_options_are_the_programs_defaults() {
    let opts = Options {
        no_compute: true,
        compute_scale: 0.5,
        bytes_scale: 2.0,
        seed: 9,
    };
    let src = generate(&ring(4, 0), "a", &opts).unwrap().source;
    for want in [
        "#define RS_NO_COMPUTE 1",
        "#define RS_COMPUTE_SCALE 5e-1",
        "#define RS_BYTES_SCALE 2e0",
        "#define RS_SEED 9ULL",
    ] {
        assert!(src.contains(want), "{want}");
    }
}

#[test]
fn several_threads_and_empty_traces_are_refused() {
    assert!(matches!(
        generate(&ring(4, 1), "a", &Options::default()),
        Err(Error::Threads)
    ));
    assert!(matches!(
        generate(&TraceFile::default(), "a", &Options::default()),
        Err(Error::Empty)
    ));
}
