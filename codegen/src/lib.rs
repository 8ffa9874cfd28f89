//! Benchmark generation (Wu and Mueller 2012 §6, as ScalaBenchGen does it):
//! a trace becomes one self-contained C+MPI program that stands in for the
//! application and can be shared where its source cannot.
//!
//! The program keeps the trace's shape. Its loops are the trace's loops
//! (PRSDs), each event node is its MPI call, and a node that only some
//! ranks execute is guarded by its ranklist. A parameter that is the same
//! constant on every rank is written as a literal (a peer as `cr + 1`, the
//! caller's rank in the communicator plus an offset); every other one is
//! read from tables that hold the trace's compressed value sequences, so
//! the file grows with the trace, not with its event count.
//! Computation becomes sleeps drawn from the trace's histograms with a
//! fixed seed, as `replay` draws them.
//!
//! Everything here is pure text generation; the crate calls no MPI.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod emit;
mod tables;

use std::collections::HashMap;
use std::fmt::Write;

use trace::{MNode, Op, Origin, TraceFile};

/// The runtime every generated program carries (ranklists, value
/// sequences, requests, communicators, buffers and computation).
const RUNTIME: &str = include_str!("runtime.c");

/// What cannot be turned into a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An MPI operation the generator does not write yet.
    #[error(
        "MPI_{op} (at {site}) is not supported by codegen yet; supported are point-to-point, \
         persistent requests, completions, every collective, Comm_dup/split/split_type/free, \
         Cart_create, one-sided communication, MPI-IO and Pcontrol"
    )]
    Unsupported {
        /// The operation's name without `MPI_`.
        op: &'static str,
        /// Its call site.
        site: String,
    },
    /// Calls from more than one thread per rank.
    #[error(
        "the trace has MPI calls from several threads of a rank; codegen writes single-threaded \
         programs"
    )]
    Threads,
    /// Events kept verbatim outside the loop structure.
    #[error(
        "the trace holds {0} events outside its loop structure (spilled by a rank's compressor); \
         codegen needs every event in the structure"
    )]
    Spilled(u64),
    /// An event whose parameters do not fit its operation.
    #[error("a malformed MPI_{op} event: {what}")]
    Malformed {
        /// The operation's name without `MPI_`.
        op: &'static str,
        /// What is wrong.
        what: String,
    },
    /// A trace of a job that did not finish (merged from the snapshots a
    /// dying job left): its ranks stop at different calls, so a program
    /// of it would wait for messages and collectives that never come.
    #[error(
        "rank {rank} of this trace holds only its first {events} events ({cause}): a trace of a \
         job that did not finish cannot be written as a benchmark"
    )]
    Partial {
        /// The first rank cut short.
        rank: u32,
        /// The events it holds.
        events: u64,
        /// What wrote its part (`periodic snapshot`, `SIGTERM`, ...).
        cause: String,
    },
    /// A trace without ranks.
    #[error("the trace has no ranks")]
    Empty,
}

/// How the generated program emulates the application, as replay's
/// options do; the program takes the same three at run time.
#[derive(Clone, Debug)]
pub struct Options {
    /// Leave out the computation between calls.
    pub no_compute: bool,
    /// Multiply every computation time by this.
    pub compute_scale: f64,
    /// Multiply every message's element count by this.
    pub bytes_scale: f64,
    /// The seed of the computation draws (per rank, as replay's).
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            no_compute: false,
            compute_scale: 1.0,
            bytes_scale: 1.0,
            seed: 1,
        }
    }
}

/// A generated benchmark.
#[derive(Debug)]
pub struct Benchmark {
    /// The C source.
    pub source: String,
    /// Event nodes written as calls.
    pub calls: usize,
    /// Words in the data tables.
    pub table_words: usize,
}

/// Writes the benchmark of `file`. `source` names the trace in the
/// program's header comment.
pub fn generate(file: &TraceFile, source: &str, opts: &Options) -> Result<Benchmark, Error> {
    check_generable(file)?;
    let trace = &file.trace;
    let labels: HashMap<u64, String> = file.meta.sites.iter().cloned().collect();
    let mut em = emit::Emitter::new(&labels, opts.seed);
    let nodes = trace.nodes();
    let init = init_call(nodes);
    let ends = ends_mpi(nodes);
    em.nodes(nodes, trace.ranks())?;
    let ranks = file
        .meta
        .world_size
        .max(trace.ranks().max().map_or(1, |m| m + 1));

    let mut out = String::new();
    header(&mut out, file, source, ranks);
    preamble(&mut out, file, opts, ranks, &em.types, em.io);
    let _ = writeln!(out, "\n/* The trace's tables. */");
    em.tables.write_c(&mut out);
    pscw_table(&mut out, file);
    out.push('\n');
    out.push_str(RUNTIME);
    main_function(&mut out, &init, &em, ends);
    Ok(Benchmark {
        source: out,
        calls: em.events,
        table_words: em.tables.words(),
    })
}

/// Whether any event node among `nodes` (loops included) is a `Win_post`.
fn has_post(nodes: &[MNode]) -> bool {
    nodes.iter().any(|n| match n {
        MNode::Event(e) => e.shape().op() == Op::WinPost,
        MNode::Loop(l) => has_post(l.body()),
        _ => false,
    })
}

/// `RS_PSCW`, what forces `Win_test`'s outcomes (see the runtime's
/// one-sided part): for each exposure epoch whose `Win_test` calls came
/// back false before one came back true, (rank, the rank's `Win_post`
/// ordinal, how many). Only epochs with such tests are listed, and a trace
/// without `Win_post` has none (its ranks are not expanded for it).
fn pscw_table(out: &mut String, file: &TraceFile) {
    let mut rows: Vec<[i64; 3]> = Vec::new();
    if has_post(file.trace.nodes()) {
        for r in file.trace.ranks().iter() {
            let Ok(rt) = file.trace.rank_trace(r) else {
                continue;
            };
            // The rank's Win_post ordinal of each window's open epoch, and
            // the false tests of each epoch by that ordinal.
            let (mut posts, mut open) = (0i64, HashMap::new());
            let mut falses: std::collections::BTreeMap<i64, i64> = Default::default();
            for e in rt.expand() {
                if e.rma.is_none() || e.failed() {
                    continue;
                }
                match (e.op, e.flag) {
                    (Op::WinPost, _) => {
                        open.insert(e.comm.0, posts);
                        posts += 1;
                    }
                    (Op::WinTest, Some(false)) => {
                        if let Some(&k) = open.get(&e.comm.0) {
                            *falses.entry(k).or_default() += 1;
                        }
                    }
                    _ => {}
                }
            }
            rows.extend(falses.into_iter().map(|(k, n)| [i64::from(r), k, n]));
        }
    }
    let words: Vec<String> = rows.iter().flatten().map(i64::to_string).collect();
    let _ = writeln!(
        out,
        "#define RS_NPSCW {}
static const int64_t RS_PSCW[] = {{{}}};",
        rows.len(),
        if words.is_empty() {
            "0".to_string()
        } else {
            words.join(", ")
        }
    );
}

/// Refuses what cannot be a benchmark before anything is written: a
/// trace without ranks, of a job that did not finish, or with events
/// outside its loop structure.
fn check_generable(file: &TraceFile) -> Result<(), Error> {
    let trace = &file.trace;
    if trace.ranks().is_empty() {
        return Err(Error::Empty);
    }
    if let Some(p) = file.meta.partial.first() {
        return Err(Error::Partial {
            rank: p.rank,
            events: p.events,
            cause: p.cause.clone(),
        });
    }
    let spilled = trace.spilled_events();
    if spilled > 0 {
        return Err(Error::Spilled(spilled));
    }
    Ok(())
}

/// The statements that open MPI the way the application did: MPI_Init
/// unless the trace starts with MPI_Init_thread (then with the thread
/// level it asked for).
fn init_call(nodes: &[MNode]) -> String {
    let first = match nodes.first() {
        Some(MNode::Event(e)) => Some((e.shape().op(), e)),
        _ => None,
    };
    match first {
        Some((Op::InitThread, e)) => {
            let names = e.shape().param_names();
            let required = names
                .iter()
                .position(|n| *n == "value")
                .and_then(|i| e.params()[i].variants().first())
                .and_then(|v| v.values().get(0))
                .map_or(0, |v| v / 16);
            format!(
                "    int provided = 0;\n    MPI_Init_thread(&argc, &argv, {required}, &provided);\n"
            )
        }
        _ => "    MPI_Init(&argc, &argv);\n".to_string(),
    }
}

/// Whether the trace closes MPI itself (ends with MPI_Finalize or
/// MPI_Abort); if not (an imported trace has neither), the program
/// closes it.
fn ends_mpi(nodes: &[MNode]) -> bool {
    matches!(
        nodes.last(),
        Some(MNode::Event(e)) if matches!(e.shape().op(), Op::Finalize | Op::Abort)
    )
}

/// The includes and the macros the runtime reads: the run's size, the
/// emulation options, whether the program issues MPI-IO (`io`: it then
/// sets up a scratch directory), the application's run time and a macro
/// per datatype the program names (`MPI_DATATYPE_NULL` where `mpi.h`
/// lacks it).
fn preamble(
    out: &mut String,
    file: &TraceFile,
    opts: &Options,
    ranks: u32,
    types: &std::collections::BTreeSet<u8>,
    io: bool,
) {
    let _ = writeln!(out, "#define _POSIX_C_SOURCE 200809L");
    for inc in [
        "mpi.h",
        "dirent.h",
        "errno.h",
        "float.h",
        "math.h",
        "stdint.h",
        "stdio.h",
        "stdlib.h",
        "string.h",
        "sys/stat.h",
        "time.h",
        "unistd.h",
    ] {
        let _ = writeln!(out, "#include <{inc}>");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "#define RS_RANKS {ranks}");
    let _ = writeln!(out, "#define RS_SEED {}ULL", opts.seed);
    let _ = writeln!(out, "#define RS_NO_COMPUTE {}", i32::from(opts.no_compute));
    let _ = writeln!(out, "#define RS_COMPUTE_SCALE {:e}", opts.compute_scale);
    let _ = writeln!(out, "#define RS_BYTES_SCALE {:e}", opts.bytes_scale);
    let _ = writeln!(out, "#define RS_IO {}", i32::from(io));
    let _ = writeln!(
        out,
        "#define RS_APP_S {:e}",
        file.meta.wall_ns as f64 * 1e-9
    );
    for &code in types {
        let dt = trace::Datatype(code);
        if dt.is_known() && dt != trace::Datatype::DERIVED {
            let name = format!("MPI_{}", dt.name().to_uppercase());
            let _ = writeln!(
                out,
                "#ifdef {name}\n#define RS_T{code} {name}\n#else\n#define RS_T{code} \
                 MPI_DATATYPE_NULL\n#endif"
            );
        } else {
            let _ = writeln!(out, "#define RS_T{code} MPI_DATATYPE_NULL");
        }
    }
}

/// `main`: MPI opened by `init`, the runtime set up (a buffer attached
/// for buffered sends), the emitted body, and MPI closed unless the trace
/// `ends` it itself.
fn main_function(out: &mut String, init: &str, em: &emit::Emitter<'_>, ends: bool) {
    let _ = writeln!(
        out,
        "\n/* ------------------------------------------------------------------------\n * The \
         program: the trace's loops and calls.\n * \
         ------------------------------------------------------------------------ */\n"
    );
    let _ = writeln!(out, "int main(int argc, char **argv)\n{{");
    out.push_str(init);
    out.push_str("    rs_setup(argc, argv);\n");
    if em.buffered {
        out.push_str(
            "    static char rs_attached[1 << 26];\n    MPI_Buffer_attach(rs_attached, \
             (int)sizeof rs_attached);\n",
        );
    }
    out.push_str(&em.body);
    if !ends {
        out.push_str("    rs_finish();\n    MPI_Finalize();\n");
    }
    out.push_str("    return 0;\n}\n");
}

/// The header comment: where the program came from and how to build and
/// run it.
fn header(out: &mut String, file: &TraceFile, source: &str, ranks: u32) {
    let origin = match &file.meta.origin {
        Origin::Traced => "a traced run".to_string(),
        Origin::Imported { format: f } => format!("a trace imported from {f}"),
        Origin::Extrapolated { inputs } => format!(
            "a trace extrapolated from runs at {} ranks",
            inputs
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let command = file.meta.command.join(" ").replace("*/", "* /");
    let _ = writeln!(
        out,
        "/*\n * A communication benchmark generated by rankscale {} (rankscale codegen)\n * from \
         {} ({origin}, {ranks} ranks{}).\n *\n * Build:  mpicc -O2 -o bench bench.c -lm\n * Run:    \
         mpirun -n {ranks} ./bench [--no-compute] [--compute-scale X] [--bytes-scale X]\n *         \
         [--report-compute] [--iodir DIR]\n *\n * It \
         issues the application's MPI calls with its loop structure, communicators,\n * peers, \
         tags, counts and datatypes, with zeroed payloads, and sleeps the\n * recorded \
         computation (drawn from the trace's histograms, fixed seed:\n * the times replay draws). \
         It runs at exactly {ranks} ranks, and prints\n * the slowest rank's time \
         (--report-compute: each rank's drawn computation).\n * Its MPI-IO goes to files of its \
         own in a scratch directory: --iodir DIR\n * (or RANKSCALE_REPLAY_IODIR), kept; by \
         default a new one in $TMPDIR,\n * removed at the end.\n */\n",
        env!("CARGO_PKG_VERSION"),
        source.replace("*/", "* /"),
        if command.is_empty() {
            String::new()
        } else {
            format!("; recorded command: {command}")
        },
    );
}
