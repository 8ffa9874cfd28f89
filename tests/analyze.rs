//! `rankscale analyze` on traces whose patterns, phases and slow instances
//! are known by construction:
//!
//! * the hand-written 4-rank `pertext` dataset (tests/data/pertext/small,
//!   its README describes every line): the patterns worked out by hand,
//!   and the late sender it contains, with the waiting time computed by
//!   hand from its timestamps;
//! * `latestencil`, a 3×3 torus halo exchange, traced with the timeline on
//!   both MPIs, with a 60 ms delay injected at rank 4 in iteration 10, once
//!   before its sends (late sender) and once before its receives (late
//!   receiver); and once without a delay;
//! * `threephase`: collectives, then a 2D stencil, then a ring: the phase
//!   boundaries are known;
//! * a 64-rank stencil of about 10^5 events, for the time analysis takes.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::*;
use serde_json::Value;

fn analyze(trace: &Path, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rankscale"))
        .arg("analyze")
        .arg(trace)
        .arg("--json")
        .args(extra)
        .output()
        .expect("run rankscale analyze");
    assert!(
        out.status.success(),
        "analyze {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("analyze --json prints JSON")
}

/// Imports the `pertext` directory `input` into `trace`.
fn import_pertext(input: &Path, trace: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_rankscale"))
        .args(["import", "--format", "pertext"])
        .arg(input)
        .arg("-o")
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Traces `program args` on `np` ranks with the timeline into `trace`.
fn trace(imp: &str, np: usize, program_name: &str, args: &[&str], trace: &Path) {
    trace_env(
        imp,
        np,
        program_name,
        args,
        trace,
        &[("RANKSCALE_TIMELINE", "1")],
    );
}

/// Traces `program args` on `np` ranks into `trace`, with or without the
/// timeline.
fn trace_with(
    imp: &str,
    np: usize,
    program_name: &str,
    args: &[&str],
    trace: &Path,
    timeline: bool,
) {
    let env: &[(&str, &str)] = if timeline {
        &[("RANKSCALE_TIMELINE", "1")]
    } else {
        &[]
    };
    trace_env(imp, np, program_name, args, trace, env);
}

/// Traces `program args` on `np` ranks into `trace` with these tracer
/// settings; returns what the job wrote on standard error.
fn trace_env(
    imp: &str,
    np: usize,
    program_name: &str,
    args: &[&str],
    trace: &Path,
    env: &[(&'static str, &str)],
) -> String {
    let mut o = untraced();
    o.traced = true;
    o.env.push(("RANKSCALE_TRACE", trace.display().to_string()));
    for &(k, v) in env {
        o.env.push((k, v.to_string()));
    }
    if imp == "mpich" {
        o.env.push(("RANKSCALE_YIELD", "1".into()));
    }
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let job = mpirun(imp, np, &program(imp, program_name), &args, &o);
    assert_eq!(job.code, Some(0), "{imp} {program_name}: {}", job.stderr);
    job.stderr
}

/// A pattern as (ranks, np, ne, instances, bytes, strings as "rank:
/// events" lines).
type PatternRow = (String, u64, u64, u64, Vec<u64>, Vec<String>);

/// The patterns of a report.
fn patterns(r: &Value) -> Vec<PatternRow> {
    r["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["ranks"].as_str().unwrap().to_string(),
                p["np"].as_u64().unwrap(),
                p["ne"].as_u64().unwrap(),
                p["instances"].as_u64().unwrap(),
                p["bytes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap())
                    .collect(),
                p["strings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| {
                        format!(
                            "{}: {}",
                            s["ranks"].as_str().unwrap(),
                            s["events"].as_str().unwrap()
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn the_hand_written_dataset_gives_the_patterns_worked_out_by_hand() {
    let dir = scratch("analyze-pertext");
    let t = dir.join("small.trace");
    import_pertext(&root().join("tests/data/pertext/small"), &t);
    let r = analyze(&t, &[]);
    assert_eq!(r["ranks"], 4);
    // 44 lines, of which 16 are DEL context markers.
    assert_eq!(r["events"], 28);
    assert_eq!(r["timeline"], true);
    assert_eq!(r["messages"], 12);
    assert_eq!(r["collectives"], 1);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    // By hand (README): the pair exchanges (0,1) and (2,3) twice each, the
    // Allreduce, the ring 0 -> 1 -> 2 -> 3 -> 0. Blocking sends are S,
    // receives R, followed by the peer.
    let mut got = patterns(&r);
    got.sort();
    let mut want = vec![
        (
            "0-1".into(),
            2,
            4,
            2,
            vec![2048],
            s(&["0: S1·R1", "1: R0·S0"]),
        ),
        (
            "2-3".into(),
            2,
            4,
            2,
            vec![2048],
            s(&["2: S3·R3", "3: R2·S2"]),
        ),
        ("0-3".into(), 4, 4, 1, vec![32], s(&["0-3: Allreduce"])),
        (
            "0-3".into(),
            4,
            8,
            1,
            vec![256],
            s(&["0: S1·R3", "1: R0·S2", "2: R1·S3", "3: R2·S0"]),
        ),
    ];
    want.sort();
    assert_eq!(got, want);
    // In time order: the four exchanges, the Allreduce, the ring.
    let seq: Vec<(String, u64)> = r["sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x[0].as_str().unwrap().to_string(), x[1].as_u64().unwrap()))
        .collect();
    let flat: Vec<&str> = seq
        .iter()
        .flat_map(|(p, n)| std::iter::repeat_n(p.as_str(), *n as usize))
        .collect();
    assert_eq!(flat.len(), 6);
    let id_of = |ranks: &str, ne: u64| {
        r["patterns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["ranks"] == ranks && p["ne"] == ne)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (pair01, pair23) = (id_of("0-1", 4), id_of("2-3", 4));
    let (allreduce, ring) = (id_of("0-3", 4), id_of("0-3", 8));
    let mut first4: Vec<&str> = flat[..4].to_vec();
    first4.sort();
    let mut want4 = vec![
        pair01.as_str(),
        pair01.as_str(),
        pair23.as_str(),
        pair23.as_str(),
    ];
    want4.sort();
    assert_eq!(first4, want4);
    assert_eq!(&flat[4..], &[allreduce.as_str(), ring.as_str()]);
    // Rank 3 arrives at the Allreduce at 1,128,000 ns; ranks 0, 1 and 2 at
    // 1,100,000, 1,101,000 and 1,100,500: 28,000 + 27,000 + 27,500 ns of
    // waiting caused by rank 3.
    let waits = r["waits"].as_array().unwrap();
    let coll = waits
        .iter()
        .find(|w| w["cause"] == "late_collective")
        .unwrap();
    assert_eq!(
        (coll["rank"].as_u64(), coll["ns"].as_i64()),
        (Some(3), Some(82_500))
    );
    // Two instances cannot make an outlier at the default cut-off (their
    // modified z-scores are +-0.6745 whatever the durations); at 0.5 the
    // slower exchange of (2,3) is flagged. Its duration runs from rank 2's
    // Send at 1,050,100 to rank 2's Recv end at 1,080,000; rank 2's Recv
    // (entered 1,052,400) waits for rank 3's Send (1,077,000): a late
    // sender of 24,600 ns, plus 300 ns of rank 2's Send before rank 3
    // posts its Recv (1,050,400).
    assert!(r["slow"].as_array().unwrap().is_empty());
    let r = analyze(&t, &["--cutoff", "0.5"]);
    let slow = r["slow"].as_array().unwrap();
    assert_eq!(slow.len(), 1, "{slow:?}");
    let x = &slow[0];
    assert_eq!(x["pattern"].as_str().unwrap(), pair23);
    assert_eq!(x["occurrence"], 1);
    assert_eq!(x["duration_ns"], 29_900);
    assert_eq!(x["cause"], "late_sender");
    assert_eq!(x["culprit"], 3);
    assert_eq!(x["caused_ns"], 24_900);
    assert_eq!(x["waits_ns"]["late_sender"], 24_600);
    assert_eq!(x["last_start"]["rank"], 3);
    // Without its timeline the same trace still gives every pattern and
    // phase, and the report says what needs the timeline.
    let mut f = trace::TraceFile::read(&t).unwrap();
    f.timelines.clear();
    let bare = dir.join("bare.trace");
    f.write(&bare).unwrap();
    let b = analyze(&bare, &[]);
    assert_eq!(b["timeline"], false);
    let mut got = patterns(&b);
    got.sort();
    assert_eq!(got, want);
    let instances: u64 = b["sequence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[1].as_u64().unwrap())
        .sum();
    assert_eq!(instances, 6);
    assert!(b["slow"].as_array().unwrap().is_empty());
    let notes = b["notes"].to_string();
    assert!(notes.contains("RANKSCALE_TIMELINE=1"), "{notes}");
    let text = text(&rankscale(&["analyze", &bare.display().to_string()]).stdout);
    assert!(text.contains("note: no timeline"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `pertext` dataset written the way the published SMG2000 files are
/// (Alawneh et al.'s 4-rank trace, whose first lines this imitates): every
/// rank's `DEL<n>` a running count from its own start, `m` numbers that
/// pair nothing, the last rank's collectives with `-1` and no `m`, and in
/// each exchange context three nonblocking receives and three sends whose
/// spans overlap (all complete together). `iters` exchanges, each followed
/// by a context of two Allreduces.
fn smg_like(dir: &Path, iters: u64) {
    std::fs::create_dir_all(dir).unwrap();
    for r in 0..4u64 {
        let mut t = 5_200_671_752_900 + 400 * r;
        let mut del = [39_634u64, 63_896, 88_158, 109_255][r as usize];
        let mut m = 1;
        let mut body = String::new();
        let line = |body: &mut String, text: String| {
            body.push_str(&text);
            body.push('\n');
        };
        for it in 0..iters {
            line(&mut body, format!("DEL{del}"));
            del += 1;
            // Posted one after another, all completing 250 us later.
            let end = t + 250_000;
            let peers: Vec<u64> = (0..4).filter(|&p| p != r).collect();
            for &p in &peers {
                line(
                    &mut body,
                    format!(
                        "Recv {p} t1 {t} t2 {end} t 0 l {} m {m}",
                        128 * (it % 2 + 1)
                    ),
                );
                t += 5_000;
            }
            m += 1;
            for &p in &peers {
                line(
                    &mut body,
                    format!(
                        "Send {p} t1 {t} t2 {} t 0 l {} m {m}",
                        end + 2_000,
                        128 * (it % 2 + 1)
                    ),
                );
                t += 5_000;
            }
            m += 1;
            t = end + 10_000;
            line(&mut body, format!("DEL{del}"));
            del += 1;
            for _ in 0..2 {
                let id = if r == 3 {
                    String::new()
                } else {
                    format!(" m {m}")
                };
                let who = if r == 3 { -1 } else { r as i64 + 1 };
                line(
                    &mut body,
                    format!("ALLREDUCE {who} t1 {t} t2 {} s 32 r 32{id}", t + 9_000),
                );
                m += 1;
                t += 12_000;
            }
        }
        std::fs::write(dir.join(format!("Process{r}.txt")), body).unwrap();
    }
}

/// The published files' own form imports as it is, and their `DEL` lines
/// are the contexts: each exchange context (six calls, which compress into
/// loops over peers) is one instance of one 4-rank pattern, as the paper
/// defines patterns, not one pattern per message.
#[test]
fn the_published_files_form_imports_and_its_contexts_are_the_del_lines() {
    let dir = scratch("analyze-smg-like");
    let input = dir.join("in");
    smg_like(&input, 10);
    let t = dir.join("smg.trace");
    import_pertext(&input, &t);
    // Running DEL counts do not defeat compression: the 10 iterations are
    // one loop, so the file does not grow with them.
    let show = Command::new(env!("CARGO_BIN_EXE_rankscale"))
        .arg("show")
        .arg(&t)
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("loop x10"), "{show}");
    let r = analyze(&t, &[]);
    assert_eq!(r["messages"], 10 * 12);
    assert_eq!(r["collectives"], 20);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut got = patterns(&r);
    got.sort();
    let mut want = vec![
        (
            "0-3".into(),
            4,
            24,
            10,
            // 12 messages of 128 or 256 bytes.
            vec![12 * 128, 12 * 256],
            s(&[
                "0: R1·R2·R3·S1·S2·S3",
                "1: R0·R2·R3·S0·S2·S3",
                "2: R0·R1·R3·S0·S1·S3",
                "3: R0·R1·R2·S0·S1·S2",
            ]),
        ),
        (
            "0-3".into(),
            4,
            8,
            10,
            // Two Allreduces of 8 bytes on 4 ranks: the published `s 32`
            // is the bytes to all 4.
            vec![2 * 4 * 8],
            s(&["0-3: Allreduce·Allreduce"]),
        ),
    ];
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = scratch("analyze-bad");
    let garbage = dir.join("garbage.trace");
    std::fs::write(&garbage, b"not a trace at all").unwrap();
    for (path, says) in [
        (garbage.display().to_string(), "not a rankscale trace file"),
        (
            dir.join("missing.trace").display().to_string(),
            "No such file",
        ),
    ] {
        let out = rankscale(&["analyze", &path]);
        assert_eq!(out.status.code(), Some(1), "{path}");
        let err = text(&out.stderr);
        assert!(
            err.contains(says) && !err.contains("panicked"),
            "{path}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The slow instances of a latestencil run.
fn slow_of(r: &Value) -> Vec<Value> {
    r["slow"].as_array().unwrap().clone()
}

/// The slowest calls that `analyze` lists for a trace taken without a
/// timeline (from the reservoirs alone), after checking that the report
/// says what needs the timeline.
fn slow_calls_without_timeline(imp: &str, t: &Path) -> Vec<Value> {
    let r = analyze(t, &[]);
    assert_eq!(r["timeline"], false, "{imp}");
    assert!(
        slow_of(&r).is_empty(),
        "{imp}: slow instances without a timeline"
    );
    let notes = r["notes"].to_string();
    assert!(notes.contains("RANKSCALE_TIMELINE=1"), "{imp}: {notes}");
    assert_eq!(r["reservoir_k"], 8, "{imp}");
    r["slow_calls"].as_array().unwrap().clone()
}

/// The slow instances of the trace, and the one of the delayed iteration.
fn slow_at_iteration_10(imp: &str, t: &Path) -> (Vec<Value>, Value) {
    let slow = slow_of(&analyze(t, &[]));
    let at = slow
        .iter()
        .find(|s| s["iterations"] == serde_json::json!([10]))
        .unwrap_or_else(|| panic!("{imp}: iteration 10 is not slow: {slow:#?}"))
        .clone();
    (slow, at)
}

#[test]
fn an_injected_delay_is_found_as_late_sender_or_late_receiver_at_its_rank() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-latestencil"));
        // Late sender: rank 4 sleeps 60 ms in iteration 10 after posting
        // its receives, before its sends. The sends are small standard
        // sends, which both MPIs deliver eagerly, so the neighbours wait
        // in Waitall for rank 4's messages (with MPI_Ssend they would
        // wait in their own Ssend to rank 4 instead: without asynchronous
        // progress a synchronous send cannot complete while its receiver
        // sleeps outside MPI).
        let t = dir.join("sender.trace");
        let sender = [
            "-m", "sender", "-r", "4", "-t", "10", "-d", "60", "-s", "send", "-n", "16",
        ];
        trace(imp, 9, "latestencil", &sender, &t);
        let (slow, at) = slow_at_iteration_10(imp, &t);
        assert_eq!(at["cause"], "late_sender", "{imp}: {at:#?}");
        assert_eq!(at["culprit"], 4, "{imp}: {at:#?}");
        // Four neighbours wait about 60 ms each.
        let caused = at["caused_ns"].as_i64().unwrap();
        assert!(
            (200_000_000..=300_000_000).contains(&caused),
            "{imp}: {at:#?}"
        );
        // The delay travels on: any later instance as slow names a rank
        // that itself waited in the instance before (an idle wave). The
        // instances before it are not its doing: MPICH's first iteration
        // (connection set-up, 9 ranks on 2 cores) once took 37 ms there.
        for s in &slow {
            let later = s["iterations"]
                .as_array()
                .and_then(|v| v.first())
                .and_then(Value::as_i64)
                .is_some_and(|i| i > 10);
            if later && s["duration_ns"].as_i64() > Some(30_000_000) {
                assert!(
                    s["culprit_waited_before_ns"].as_i64() > Some(30_000_000),
                    "{imp}: a slow instance neither injected nor propagated: {s:#?}"
                );
            }
        }
        // Late receiver: rank 4 sleeps before posting its receives, and
        // its neighbours' synchronous sends to it wait.
        let t = dir.join("receiver.trace");
        let receiver = ["-m", "receiver", "-r", "4", "-t", "10", "-d", "60"];
        trace(imp, 9, "latestencil", &receiver, &t);
        let (slow, at) = slow_at_iteration_10(imp, &t);
        assert_eq!(at["cause"], "late_receiver", "{imp}: {at:#?}");
        assert_eq!(at["culprit"], 4, "{imp}: {at:#?}");
        assert_eq!(at["last_start"]["rank"], 4, "{imp}: {at:#?}");
        // It is the slowest instance, apart from the warm-up: on CI
        // (2026-12-07, Open MPI, 9 ranks on 2 busy cores) the first
        // iteration's connection set-up once came out slower still.
        let slowest = slow
            .iter()
            .find(|s| s["warm_up"] != true)
            .unwrap_or_else(|| panic!("{imp}: only warm-up instances: {slow:#?}"));
        assert_eq!(slowest["iterations"], serde_json::json!([10]), "{imp}");
        // Without the timeline the reservoirs alone locate both delays. A
        // call waiting 40 ms or more first happens in iteration 10, where
        // exactly the neighbours of rank 4 (1, 3, 5 and 7 on the 3×3 torus)
        // wait in the expected call: in Waitall for the late sender's
        // messages, in Ssend to the late receiver. (Later such waits are
        // the idle wave: the neighbours' own lateness reaching the corner
        // ranks in the next iteration.) The first entry of an iteration
        // vector is the time-step loop; Ssend also sits in the loop over the
        // four directions.
        for (mode, args, call) in [
            ("sender", &sender[..], "Waitall"),
            ("receiver", &receiver[..], "Ssend"),
        ] {
            let t = dir.join(format!("{mode}-compact.trace"));
            trace_with(imp, 9, "latestencil", args, &t, false);
            let calls = slow_calls_without_timeline(imp, &t);
            let long: Vec<&Value> = calls
                .iter()
                .filter(|c| c["mpi_ns"].as_u64() >= Some(40_000_000))
                .collect();
            assert!(!long.is_empty(), "{imp} {mode}: {calls:#?}");
            assert!(
                long.iter().all(|c| c["iterations"][0].as_u64() >= Some(10)
                    && c["mpi_ns"].as_u64() <= Some(150_000_000)),
                "{imp} {mode}: {long:#?}"
            );
            let mut at10: Vec<u64> = long
                .iter()
                .filter(|c| c["iterations"][0] == 10 && c["call"] == call)
                .map(|c| c["rank"].as_u64().unwrap())
                .collect();
            at10.sort_unstable();
            assert_eq!(at10, [1, 3, 5, 7], "{imp} {mode}: {long:#?}");
        }
        // Without a delay: nothing near the injected 60 ms is slow. What
        // the modified z-score still flags on a shared 2-core machine is
        // either the warm-up instance or carries its (small) cause. The
        // warm-up (MPICH's first exchanges connect its 9 ranks, on 2
        // cores) took 29 ms once on CI (2026-12-06), and is labelled so:
        // it is bounded apart, still well below the delay.
        let t = dir.join("none.trace");
        trace(imp, 9, "latestencil", &["-m", "none"], &t);
        let r = analyze(&t, &[]);
        for s in slow_of(&r) {
            let d = s["duration_ns"].as_i64().unwrap();
            let bound = if s["warm_up"] == true {
                45_000_000
            } else {
                20_000_000
            };
            assert!(
                d < bound,
                "{imp}: a slow instance without injection: {s:#?}"
            );
            assert!(
                s["warm_up"] == true || !s["cause"].is_null(),
                "{imp}: a slow instance without a reason: {s:#?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn three_phases_are_segmented_at_their_true_boundaries() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-threephase"));
        let t = dir.join("t.trace");
        // 6 rounds of collectives, 40 stencil iterations, 40 ring
        // iterations (two Sendrecv shifts each), then the checksum Reduce.
        trace(
            imp,
            4,
            "threephase",
            &["-a", "6", "-b", "40", "-c", "40"],
            &t,
        );
        let r = analyze(&t, &[]);
        let seq: Vec<String> = r["sequence"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|x| {
                std::iter::repeat_n(
                    x[0].as_str().unwrap().to_string(),
                    x[1].as_u64().unwrap() as usize,
                )
            })
            .collect();
        let patterns = r["patterns"].as_array().unwrap();
        let of = |id: &str| patterns.iter().find(|p| p["id"] == id).unwrap();
        let strings = |id: &str| of(id)["strings"][0]["events"].as_str().unwrap().to_string();
        // The true phases, from the pattern each instance is of.
        let kind = |id: &str| {
            let s = strings(id);
            if s.contains("Bcast") {
                1
            } else if s.contains("Wa") {
                2
            } else if s.starts_with("SR") {
                3
            } else {
                4
            }
        };
        let kinds: Vec<u8> = seq.iter().map(|id| kind(id)).collect();
        assert_eq!(
            kinds.iter().filter(|&&k| k == 1).count(),
            6,
            "{imp}: {kinds:?}"
        );
        assert_eq!(
            kinds.iter().filter(|&&k| k == 2).count(),
            40,
            "{imp}: {kinds:?}"
        );
        // On 4 ranks the shift by 1 is one ring, the shift by 2 two
        // separate pair exchanges, (0,2) and (1,3): 3 instances a step.
        assert_eq!(
            kinds.iter().filter(|&&k| k == 3).count(),
            120,
            "{imp}: {kinds:?}"
        );
        // The closing Reduce (kind 4) may start on rank 0 before the last
        // pair exchange of ranks 1 and 3 does.
        let main: Vec<u8> = kinds.iter().copied().filter(|&k| k < 4).collect();
        let mut sorted = main.clone();
        sorted.sort();
        assert_eq!(main, sorted, "{imp}: the phases are contiguous in time");
        let b1 = 6;
        let b2 = 46;
        let phases: Vec<(u64, u64)> = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["start"].as_u64().unwrap(), p["end"].as_u64().unwrap()))
            .collect();
        // Boundaries at 6 and 46, none inside a true phase; the checksum
        // Reduce at the end may stand alone.
        let cuts: Vec<u64> = phases.iter().skip(1).map(|p| p.0).collect();
        assert!(
            cuts.contains(&b1) && cuts.contains(&b2),
            "{imp}: {phases:?}"
        );
        for c in &cuts {
            assert!(
                *c == b1 || *c == b2 || *c + 2 >= kinds.len() as u64,
                "{imp}: a cut at {c} inside a phase: {phases:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_64_rank_trace_of_1e5_events_is_analysed_in_seconds() {
    let imp = "openmpi";
    let dir = scratch("analyze-64");
    let t = dir.join("t.trace");
    // 64 ranks x 175 iterations x (4 Irecv + 4 Isend + Waitall).
    trace(imp, 64, "stencil", &["-d", "2", "-i", "175", "-k", "0"], &t);
    let t0 = Instant::now();
    let r = analyze(&t, &[]);
    let secs = t0.elapsed().as_secs_f64();
    let events = r["events"].as_u64().unwrap();
    eprintln!("analyze: 64 ranks, {events} events: {secs:.2} s");
    assert!(events >= 100_000, "{events}");
    assert_eq!(r["unmatched"], serde_json::json!([0, 0]));
    assert!(secs < 10.0, "{secs} s");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether `got` is `want` (ns) as a real run on a shared 2-core machine
/// measures it: at most 5 % or 5 ms shorter (a wait cannot be much shorter
/// than the delay that causes it: only the clocks' reading differs), and
/// at most 20 % or 5 ms longer, since an oversubscribed rank that is
/// descheduled while it waits only makes the wait longer (a 50 ms Late
/// Sender was seen at 55.4 ms on MPICH with the other core busy).
fn near(got: i64, want: i64) -> bool {
    got >= want - (want / 20).max(5_000_000) && got <= want + (want / 5).max(5_000_000)
}

/// The wait states of a report, one by one.
fn longest(r: &Value) -> Vec<Value> {
    r["wait_states"]["longest"].as_array().unwrap().clone()
}

#[test]
fn probe_wait_states_have_the_known_lengths_metrics_ranks_and_causes() {
    for imp in mpis() {
        // A run on a loaded two-core machine can be descheduled across
        // one of the 25 ms waits and lose it (seen on MPICH's yielding
        // waits, about one run in ten under load, with the shim of before
        // and after the change that first showed it): such a run is taken
        // once more, and says so. A second failure fails the test.
        let first = std::panic::catch_unwind(|| probe_wait_case(imp));
        if let Err(e) = first {
            let why = e
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| e.downcast_ref::<&str>().copied())
                .unwrap_or("?");
            eprintln!(
                "{imp}: probe wait states: the first run failed, taking a second: {}",
                why.lines().next().unwrap_or("?")
            );
            probe_wait_case(imp);
        }
    }
}

/// The probe wait states of one traced run on `imp` (see the test).
fn probe_wait_case(imp: &str) {
    let dir = scratch(&format!("{imp}-probewait"));
    let t = dir.join("p.trace");
    // Haus 2024 §4.2 cases with D = 50 ms (see probewait.c): Late Sender
    // into Probe and Mprobe, Wrong Order into Recv and into Probe, Late
    // Sender in a Probe and Late Receiver (D/2) in the Ssend of the
    // same exchange, and a plain Late Receiver.
    // The program times its own calls (PROBEWAIT_TIMING): on a loaded
    // machine MPICH's rank 1 can get its core back late after the D/2
    // sleep of ls_lr (31 and 34 ms instead of 25 in two runs of
    // 2026-11-29), so the Late Receivers are held against the enter times
    // the program measured, not against D/2 and D.
    let timing = trace_env(
        imp,
        3,
        "probewait",
        &["-d", "50"],
        &t,
        &[("RANKSCALE_TIMELINE", "1"), ("PROBEWAIT_TIMING", "1")],
    );
    let entered = |case: &str, rank: &str, call: &str| -> f64 {
        timing
            .lines()
            .filter_map(|l| l.strip_prefix("probewait-timing "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.len() >= 4 && w[0] == case && w[1] == rank && w[2] == call)
            .and_then(|w| w[3].parse().ok())
            .unwrap_or_else(|| panic!("{imp}: no timing of {case} {rank} {call}:\n{timing}"))
    };
    let late_receiver = |case: &str| -> i64 {
        ((entered(case, "1", "Recv") - entered(case, "0", "Ssend")) * 1e9).round() as i64
    };
    let r = analyze(&t, &[]);
    let waits = longest(&r);
    let find = |metric: &str, rank: u64, call: &str| -> Vec<i64> {
        let mut v: Vec<i64> = waits
            .iter()
            .filter(|w| w["metric"] == metric && w["rank"] == rank && w["call"] == call)
            .map(|w| w["ns"].as_i64().unwrap())
            .filter(|&ns| ns > 1_000_000)
            .collect();
        v.sort_unstable();
        v
    };
    let d = 50_000_000;
    let check = |what: &str, got: Vec<i64>, want: &[i64]| {
        assert!(
            got.len() == want.len() && got.iter().zip(want).all(|(&g, &w)| near(g, w)),
            "{imp}: {what}: got {got:?} ns, want {want:?}\n{waits:#?}"
        );
    };
    check(
        "late sender in Probe",
        find("late_sender", 1, "Probe"),
        &[d, d],
    );
    check(
        "late sender in Mprobe",
        find("late_sender", 1, "Mprobe"),
        &[d],
    );
    check(
        "wrong order in Recv",
        find("late_sender_wrong_order", 1, "Recv"),
        &[d],
    );
    check(
        "wrong order in Probe",
        find("late_sender_wrong_order", 1, "Probe"),
        &[d],
    );
    let (lr_half, lr_whole) = (late_receiver("ls_lr"), late_receiver("lr_ssend"));
    assert!(
        near(lr_half, d / 2) || lr_half > d / 2,
        "{imp}: ls_lr's receive came {lr_half} ns after the send, before D/2"
    );
    let mut want = vec![lr_half, lr_whole];
    want.sort_unstable();
    let got = find("late_receiver", 0, "Ssend");
    assert!(
        got.len() == 2
            && got
                .iter()
                .zip(&want)
                .all(|(&g, &w)| (g - w).abs() <= 1_000_000),
        "{imp}: late receiver in Ssend: got {got:?} ns, the program measured {want:?}\n{waits:#?}"
    );
    // A receive after its probe, and the polled Iprobe, never wait.
    for call in ["Mrecv", "Iprobe"] {
        check(call, find("late_sender", 1, call), &[]);
    }
    check("late sender in Recv", find("late_sender", 1, "Recv"), &[]);
    for w in &waits {
        if w["metric"] != "wait_at_barrier" && w["ns"].as_i64() > Some(1_000_000) {
            assert_eq!(
                w["culprit"],
                if w["rank"] == 1 { 0 } else { 1 },
                "{imp}: {w:#?}"
            );
        }
    }
    // The delay analysis names the sleeps: rank 0's before its sends
    // (four late sends of D) and rank 1's before its receives (D in
    // lr_ssend, D/2 in ls_lr); each may also be charged the barrier
    // waits of the bystander rank 2 where that rank arrived last.
    let costs = r["delays"]["costs"].as_array().unwrap();
    let cost = |rank: u64, op: &str| {
        costs
            .iter()
            .find(|c| c["rank"] == rank && c["region"]["op"] == op && c["region"]["mpi"] == false)
            .map_or(0, |c| c["short_term_ns"].as_i64().unwrap())
    };
    assert_eq!(costs[0]["rank"], 0, "{imp}: {costs:#?}");
    assert_eq!(costs[0]["region"]["op"], "Send", "{imp}: {costs:#?}");
    assert!(cost(0, "Send") >= 4 * d - 5_000_000, "{imp}: {costs:#?}");
    assert!(
        cost(1, "Recv") >= d + d / 2 - 5_000_000,
        "{imp}: {costs:#?}"
    );
    assert!(
        near(cost(0, "Ssend"), d) || cost(0, "Ssend") >= d,
        "{imp}: {costs:#?}"
    );
    // The critical path runs through rank 0's sleeps.
    let profile = r["delays"]["path_profile"].as_array().unwrap();
    assert_eq!(profile[0]["region"]["op"], "Send", "{imp}: {profile:#?}");
    // On one node the clocks agree to a few microseconds (each rank's
    // wall-clock anchor is read at its own MPI_Init), which can still
    // order a fast message's ends wrongly; the correction removes those.
    let c = &r["clock"];
    assert!(
        c["max_shift_ns"].as_i64() < Some(1_000_000),
        "{imp}: {c:#?}"
    );
    assert_eq!(c["remaining"], 0, "{imp}: {c:#?}");
    let before = c["violations"].as_u64().unwrap();

    // Timestamp correction: rank 1's clock 30 ms behind makes its
    // receives end before their sends began; after the correction none
    // does, with few local intervals changed.
    let mut f = trace::TraceFile::read(&t).unwrap();
    f.timelines[1].epoch_ns -= 30_000_000;
    let shifted = dir.join("shifted.trace");
    f.write(&shifted).unwrap();
    let r = analyze(&shifted, &[]);
    let c = &r["clock"];
    // The receives into rank 1 that came within 30 ms of their send
    // now end before it began. Some of them may already have been
    // among the few-microsecond violations of the unshifted run (more
    // so on a loaded machine), so the count grows, to at least five.
    assert!(
        c["violations"].as_u64() > Some(before) && c["violations"].as_u64() >= Some(5),
        "{imp}: before {before}, {c:#?}"
    );
    assert!(
        c["max_shift_ns"].as_i64() > Some(20_000_000),
        "{imp}: {c:#?}"
    );
    assert_eq!(c["remaining"], 0, "{imp}: {c:#?}");
    let (changed, all) = (
        c["intervals_changed"].as_u64().unwrap(),
        c["intervals"].as_u64().unwrap(),
    );
    assert!(changed * 10 < all, "{imp}: {c:#?}");
    // Without the correction the violations stay, and the analysis
    // sees waits that did not happen (receives "waiting" for sends
    // that seem to begin after the receive ended are cut to nothing,
    // but the barrier skew of 30 ms appears).
    let raw = analyze(&shifted, &["--no-clock-correction"]);
    assert_eq!(raw["clock"]["checked"], 0, "{imp}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn collective_wait_states_each_find_the_delayed_rank() {
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-collwait"));
        let t = dir.join("c.trace");
        // Rank 1 (or, before Reduce and Gather, every contributor) sleeps
        // D = 40 ms before each collective; 3 iterations on 4 ranks.
        trace(imp, 4, "collwait", &["-d", "40", "-i", "3"], &t);
        let r = analyze(&t, &[]);
        let waits = longest(&r);
        let d = 40_000_000;
        for (metric, call, ranks, culprit) in [
            ("wait_at_barrier", "Barrier", vec![0, 2, 3], Some(1)),
            ("wait_at_nxn", "Allreduce", vec![0, 2, 3], Some(1)),
            ("wait_at_nxn", "Allgather", vec![0, 2, 3], Some(1)),
            ("wait_at_nxn", "Alltoall", vec![0, 2, 3], Some(1)),
            ("late_broadcast", "Bcast", vec![0, 2, 3], Some(1)),
            ("late_broadcast", "Scatter", vec![0, 2, 3], Some(1)),
            ("early_reduce", "Reduce", vec![0], None),
            ("early_reduce", "Gather", vec![0], None),
        ] {
            let mine: Vec<&Value> = waits
                .iter()
                .filter(|w| w["metric"] == metric && w["call"] == call)
                .collect();
            // Every waiting rank, every iteration (the first barrier also
            // absorbs the start-up skew, so it is not timed).
            let mut who: Vec<u64> = mine.iter().map(|w| w["rank"].as_u64().unwrap()).collect();
            who.sort_unstable();
            who.dedup();
            assert_eq!(who, ranks, "{imp} {call}: {mine:#?}");
            assert_eq!(mine.len(), 3 * ranks.len(), "{imp} {call}: {mine:#?}");
            let mut ns: Vec<i64> = mine.iter().map(|w| w["ns"].as_i64().unwrap()).collect();
            ns.sort_unstable();
            let median = ns[ns.len() / 2];
            assert!(
                near(median, d),
                "{imp} {call}: median {median} ns of {ns:?}"
            );
            if let Some(c) = culprit {
                assert!(
                    mine.iter().all(|w| w["culprit"] == c),
                    "{imp} {call}: {mine:#?}"
                );
            }
        }
        // The delays are rank 1's sleeps.
        let costs = r["delays"]["costs"].as_array().unwrap();
        assert_eq!(costs[0]["rank"], 1, "{imp}: {costs:#?}");
        assert_eq!(costs[0]["region"]["mpi"], false, "{imp}: {costs:#?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Renders `html` in headless Chromium and returns the DOM it built (the
/// browser's parse of the page, not the file's text) after checking that
/// the browser reported no error and drew a screenshot.
fn chromium_dom(html: &Path) -> String {
    let bin = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok())
        .expect("no Chromium found: scripts/setup.sh installs Debian's chromium");
    let url = format!("file://{}", html.display());
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let out = Command::new(bin)
        .args(flags)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("run chromium");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {err}");
    for line in err.lines() {
        assert!(
            !line.contains("CONSOLE") && !line.contains("Uncaught"),
            "the page logged an error: {line}"
        );
    }
    let png = html.with_extension("png");
    let shot = Command::new(bin)
        .args(flags)
        .arg("--window-size=1200,9000")
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(shot.status.success());
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 50_000, "screenshot of {} bytes", size);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_idle_wave_shows_in_the_desynchronisation_views_and_the_report_renders() {
    use analysis::desync;
    for imp in mpis() {
        let dir = scratch(&format!("{imp}-idlewave"));
        let t = dir.join("w.trace");
        // A chain of 16 ranks; rank 4 sleeps 100 ms at the end of iteration
        // 10 of 16: the wave reaches rank 4 - k and 4 + k in iteration
        // 10 + k, so ranks 0-3 and 5-9 wait once, and 4 and 10-15 never.
        // (100 ms, not 30: 16 ranks on 2 cores have noise peaks of over
        // 15 ms, and the wave must stand far above them.)
        trace(
            imp,
            16,
            "idlewave",
            &["-t", "chain", "-i", "16", "-d", "100"],
            &t,
        );
        let f = trace::TraceFile::read(&t).unwrap();
        let (_, data) =
            analysis::analyze_with_data(&f, &analysis::Options::default(), &mut |_, _, _| {})
                .unwrap();
        let steps = data.steps.expect("a time-step loop");
        assert_eq!((steps.t.len(), steps.t[0].len()), (16, 16), "{imp}");
        let waited = |r: usize| r != 4 && r <= 9;
        // The heatmap's data: the V of the wave, from the second iteration
        // on. The first holds the MPI library's connection set-up, not the
        // wave: 16.9 ms on a calm rank and 30.9 ms on rank 5 in two
        // fresh-machine runs on MPICH, whose UCX wires each pair up on its
        // first message.
        let warm: Vec<Vec<f64>> = steps.t.iter().map(|row| row[1..].to_vec()).collect();
        for (r, row) in warm.iter().enumerate() {
            if waited(r) {
                // The slowest step after the start-up (see below: noise
                // peaks stood in the second iteration, and once, Open MPI,
                // 100.3 ms on rank 5, beside its 100.2 ms wave) is the wave.
                let (at, &max) = row
                    .iter()
                    .enumerate()
                    .skip(1)
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .unwrap();
                assert_eq!(1 + at, 10 + r.abs_diff(4), "{imp} rank {r}: {row:?}");
                assert!(max > 70e6, "{imp} rank {r}: {row:?}");
            } else {
                // No wait of the wave's size (the delay is 100 ms) once the
                // wave has started, and none at all where the wave would
                // reach the rank. The iterations before it are start-up,
                // not the wave: a noise peak of the oversubscribed machine
                // stood there twice in CI, in the second iteration (Open
                // MPI, 16 ranks on 2 cores): 63.6 ms on the delaying rank
                // 4, and 73.8 ms on rank 15.
                for (j, &t) in row.iter().enumerate().skip(9) {
                    assert!(
                        t < 70e6,
                        "{imp} rank {r} waited in iteration {}: {row:?}",
                        j + 1
                    );
                }
                let wave = 10 + r.abs_diff(4);
                if let Some(&t) = row.get(wave - 1) {
                    assert!(
                        t < 40e6,
                        "{imp} rank {r} waited in iteration {wave}: {row:?}"
                    );
                }
            }
        }
        let d = desync::analyze(&warm, &desync::Options::for_reports()).unwrap();
        // Ranks at the same distance from rank 4 wait in the same
        // iteration: their timelines correlate, each rank best with its
        // mirror; waiting ranks and undisturbed ones do not. Noise peaks of
        // the oversubscribed machine take a pair down (0.895 once, 0.79 to
        // 0.80 three times while other work ran), so the bound is 0.6: far
        // above pairs that do not wait together (their mean is below 0.3).
        for k in 1..=4 {
            let (a, b) = (4 - k, 4 + k);
            assert!(d.correlation[a][b] > 0.6, "{imp}: {:?}", d.correlation);
            let best = (0..16)
                .filter(|&c| c != a)
                .max_by(|&x, &y| d.correlation[a][x].total_cmp(&d.correlation[a][y]))
                .unwrap();
            assert_eq!(best, b, "{imp}: rank {a}'s best match {:?}", d.correlation);
        }
        // On average: one pair can correlate by chance, when a calm
        // rank's noise peaks in the iteration the wave reached the other.
        let cross: Vec<f64> = (0..16)
            .filter(|&a| waited(a))
            .flat_map(|a| (0..16).filter(|&b| !waited(b)).map(move |b| (a, b)))
            .map(|(a, b)| d.correlation[a][b])
            .collect();
        let mean = cross.iter().sum::<f64>() / cross.len() as f64;
        assert!(mean.abs() < 0.3, "{imp}: {mean} {:?}", d.correlation);
        // The clusters separate the delayed group: the undisturbed ranks
        // share one cluster, and no waiting rank with a mirror is in it.
        // Rank 9 waits alone, in the last iteration: as a cluster of one it
        // has no silhouette, and joining the calm ranks costs the
        // clustering little, so which side it lands on is noise (it joined
        // the calm ones once on MPICH in a fresh-machine run).
        let c = d.clustering.expect("clusters");
        let calm = c.labels[12];
        for r in (0..16).filter(|&r| r != 9) {
            assert_eq!(
                c.labels[r] == calm,
                !waited(r),
                "{imp}: labels {:?}",
                c.labels
            );
        }
        assert!(c.silhouette > 0.5, "{imp}: {c:?}");
        // The report: one HTML file that Chromium renders without errors,
        // with every section and every plot.
        let html = dir.join("report.html");
        let out = rankscale(&[
            "report",
            &t.display().to_string(),
            "-o",
            &html.display().to_string(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let dom = chromium_dom(&html);
        for id in [
            "topology", "matrix", "phases", "slow", "waits", "path", "desync",
        ] {
            assert!(
                dom.contains(&format!("id=\"{id}\"")),
                "{imp}: no section {id}"
            );
        }
        let plots = dom.matches("<svg").count();
        assert!(plots >= 10, "{imp}: {plots} plots");
        for title in [
            "Bytes sent point-to-point",
            "MPI time per rank and iteration",
            "Correlation of the ranks",
            "Phase space",
            "explained variance",
            "first two principal components",
            "Waiting time per metric",
            "critical path",
        ] {
            assert!(dom.contains(title), "{imp}: no plot {title:?}");
        }
        // Self-contained: nothing to fetch (the SVG namespace URI is a name,
        // not a resource), and no script.
        let raw = std::fs::read_to_string(&html).unwrap();
        for bad in [
            "src=\"http",
            "href=\"http",
            "url(http",
            "<script",
            "@import",
        ] {
            assert!(!raw.contains(bad), "{imp}: the report contains {bad}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The clock correction on a traced nonblocking exchange of our own: a
/// 2D torus stencil on 4 ranks (Irecv, Isend, one Waitall per
/// iteration), rank 1's clock then set 30 ms behind. Every bound of
/// issue 40 holds: no violation left, no more than before; no timestamp
/// moved by more than the chain of violations behind it allows (here the
/// 30 ms skew, within the 5 µs a message takes); a critical path and
/// each rank's waiting within the run; all waiting within ranks × run.
#[test]
fn a_skewed_nonblocking_stencil_is_corrected_within_the_skew() {
    for imp in mpis() {
        let dir = scratch(&format!("analyze-nb-skew-{imp}"));
        let t = dir.join("stencil.trace");
        trace(imp, 4, "stencil", &["-d", "2", "-i", "200", "-n", "64"], &t);
        let mut f = trace::TraceFile::read(&t).unwrap();
        let skew: i64 = 30_000_000;
        f.timelines[1].epoch_ns -= skew as u64;
        let shifted = dir.join("shifted.trace");
        f.write(&shifted).unwrap();
        let r = analyze(&shifted, &[]);
        let c = &r["clock"];
        eprintln!("{imp}: {c}");
        let n = |k: &str| c[k].as_i64().unwrap_or_else(|| panic!("{k} in {c}"));
        assert!(
            n("violations") >= 200,
            "{imp}: every Waitall of rank 1: {c}"
        );
        assert_eq!(n("remaining"), 0, "{imp}: {c}");
        assert!(
            n("max_shift_ns") <= n("max_shift_chain").max(1) * n("largest_violation_ns"),
            "{imp}: {c}"
        );
        assert!(
            n("max_shift_ns") <= skew + 5_000_000,
            "{imp}: at most the skew (and a loaded machine's message time): {c}"
        );
        let run = r["run_ns"].as_i64().unwrap();
        let path = r["delays"]["path_ns"].as_i64().unwrap();
        assert!(path <= run, "{imp}: critical path {path} in a run of {run}");
        let mut all = 0;
        for rank in r["wait_states"]["ranks"].as_array().unwrap() {
            let ns = rank["ns"].as_i64().unwrap();
            assert!(
                ns <= run,
                "{imp}: rank {} waited {ns} of {run}",
                rank["rank"]
            );
            all += ns;
        }
        assert!(all <= 4 * run, "{imp}: {all} ns waiting in 4 × {run}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
