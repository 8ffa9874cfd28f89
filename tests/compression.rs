//! The intra-node compressor is lossless on real MPI event streams: for
//! every program of the interception manifest, each rank's raw log
//! (written by the tracer under real `mpirun`) is compressed and expanded
//! again, and the expansion must print exactly the raw log's lines.
//!
//! Until the compressor runs inside the shim, this is how it meets real
//! streams: wildcard outcomes, requests shared by MPICH, threads, the
//! boundary ranks of meshes. It also reports how much each log folds.

mod common;

use common::*;
use compress::{Compressor, Config, raw};

#[test]
fn compressing_real_raw_logs_and_expanding_gives_them_back() {
    let m = manifest();
    let mut failures = Vec::new();
    for imp in mpis() {
        for run in &m.run {
            let dir = scratch(&format!("{imp}-compress-{}", run.name));
            let job = mpirun(
                imp,
                run.np,
                &program(imp, &run.binary),
                &run.args,
                &traced_raw(imp, &dir),
            );
            assert_eq!(job.code, Some(0), "{imp} {}: {}", run.name, job.stderr);
            let (mut events, mut nodes) = (0usize, 0usize);
            for rank in 0..run.np as i32 {
                let text = raw_text(&dir, rank);
                let mut c = Compressor::new(rank, Config::default());
                for (i, line) in text.lines().enumerate() {
                    let ev = raw::parse_line(line, i + 1).unwrap();
                    c.push(&ev).unwrap();
                }
                let trace = c.into_trace().unwrap();
                nodes += trace.stats().nodes;
                let mut back = String::with_capacity(text.len());
                for ev in trace.expand() {
                    back.push_str(&raw::event_line(&ev));
                    back.push('\n');
                }
                events += text.lines().count();
                if back != text {
                    let first = back.lines().zip(text.lines()).position(|(a, b)| a != b);
                    failures.push(format!(
                        "{imp} {} rank {rank}: expansion differs from the raw log (first at line {:?})",
                        run.name,
                        first.map(|i| i + 1)
                    ));
                }
            }
            eprintln!(
                "{imp} {:<28} {events:>7} events -> {nodes:>5} nodes",
                run.name
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
