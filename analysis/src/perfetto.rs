//! A trace as a timeline that a browser opens: the Chrome trace-event JSON
//! format, which the Perfetto UI (ui.perfetto.dev) and `chrome://tracing`
//! read. Each rank is a process track (its threads are its thread tracks)
//! and each MPI call one complete slice (`"ph": "X"`) from its entry to its
//! return, named `MPI_<call>`, with the call's parameters in the
//! raw-log grammar and its source location as arguments.
//!
//! Times come from the trace's timeline when it has one (`rankscale trace
//! --timeline`), on one time base for all ranks (the earliest rank's time
//! zero). Without a timeline they are estimated: each event's computation
//! before the call and its time inside MPI are the means of its loop
//! path's statistics, laid end to end; the output says so. The output is
//! written as it is produced, one rank after another, so an export never
//! holds more than one event in memory; `max_events` bounds it per rank for
//! traces of many millions of events.

use std::fmt::Write as _;
use std::io::{self, Write};

use trace::TraceFile;

use semantics::timed::{self, Clock, RankEvents};

/// What can stop an export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Writing the output failed.
    #[error("writing the timeline")]
    Io(#[from] io::Error),
    /// Reading the trace's events or times failed.
    #[error(transparent)]
    Events(#[from] semantics::timed::Error),
}

/// Which part of a trace to export.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The ranks, in the order given; `None` exports every rank.
    pub ranks: Option<Vec<u32>>,
    /// At most this many events per rank (the first ones); `None` exports
    /// all of them.
    pub max_events: Option<u64>,
}

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// Ranks exported.
    pub ranks: usize,
    /// Slices written, one per exported event.
    pub slices: u64,
    /// Whether the times came from the timeline (else from statistics).
    pub timed: bool,
    /// Ranks whose events were cut at `max_events`.
    pub truncated: Vec<u32>,
}

/// Writes `file` (or the part `opts` selects) as Chrome trace-event JSON.
pub fn write(file: &TraceFile, opts: &Options, out: &mut impl Write) -> Result<Exported, Error> {
    let all: Vec<u32> = file.trace.ranks().iter().collect();
    let ranks = match &opts.ranks {
        Some(list) => {
            if let Some(&r) = list.iter().find(|r| !all.contains(r)) {
                return Err(timed::Error::NoSuchRank(r).into());
            }
            list.clone()
        }
        None => all.clone(),
    };
    let clock = Clock::of(file);
    let labels = file.meta.site_labels();
    let mut done = Exported {
        ranks: ranks.len(),
        slices: 0,
        timed: clock.timed,
        truncated: Vec::new(),
    };
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{")?;
    let timing = if clock.timed {
        "timeline"
    } else {
        "estimated: the mean computation and MPI time of each event's loop path, end to end"
    };
    write!(
        out,
        "\"command\":{},\"ranks\":{},\"timing\":{}}},\"traceEvents\":[",
        json_str(&file.meta.command.join(" ")),
        file.meta.world_size,
        json_str(timing)
    )?;
    let mut first = true;
    let mut sep = |out: &mut dyn Write| -> io::Result<()> {
        if !first {
            out.write_all(b",\n")?;
        }
        first = false;
        Ok(())
    };
    let mut line = String::with_capacity(256);
    for &rank in &ranks {
        sep(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"pid\":{rank},\"name\":\"process_name\",\"args\":{{\"name\":\"rank {rank}\"}}}}"
        )?;
        sep(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"pid\":{rank},\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{rank}}}}}"
        )?;
        let t = timed::rank_trace(file, rank)?;
        let mut events = RankEvents::new(file, &t, rank, clock)?;
        let mut threads: Vec<u32> = Vec::new();
        let mut i = 0u64;
        while let Some(next) = events.next_event() {
            if opts.max_events.is_some_and(|m| i >= m) {
                done.truncated.push(rank);
                break;
            }
            let (ev, start, dur) = next?;
            i += 1;
            let tid = ev.thread;
            if !threads.contains(&tid) {
                threads.push(tid);
                sep(out)?;
                write!(
                    out,
                    "{{\"ph\":\"M\",\"pid\":{rank},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":\"thread {tid}\"}}}}"
                )?;
            }
            line.clear();
            trace::raw::format_event(&ev, &mut line);
            let site = labels.get(&ev.site).copied().unwrap_or("");
            sep(out)?;
            write!(
                out,
                "{{\"ph\":\"X\",\"pid\":{rank},\"tid\":{tid},\"ts\":{},\"dur\":{},\"name\":\"MPI_{}\",\"cat\":\"{}\",\"args\":{{\"call\":{},\"site\":{}}}}}",
                micros(start),
                micros(dur),
                ev.op.name(),
                ev.op.family().slug(),
                json_str(&line),
                json_str(site)
            )?;
            done.slices += 1;
        }
    }
    out.write_all(b"]}\n")?;
    Ok(done)
}

/// Nanoseconds as the format's microseconds, to the nanosecond.
fn micros(ns: f64) -> String {
    format!("{:.3}", ns.max(0.0) / 1e3)
}

/// `s` as a JSON string literal.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let s = json_str("a\"b\\c\n\u{1}é");
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\n\u{1}é");
    }

    #[test]
    fn microseconds_keep_nanoseconds() {
        assert_eq!(micros(1_234_567.0), "1234.567");
        assert_eq!(micros(-3.0), "0.000");
    }
}
