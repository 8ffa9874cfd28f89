//! Fuzzes the `pertext` importer: any bytes must give a trace or a clean
//! error, never a panic, an abort or a hang. The input is split at `0xff`
//! bytes into the files of up to 8 ranks; each is parsed as its rank's
//! `Process<r>.txt` (every line also through the line parser alone), and
//! when all parse, the ranks are paired and converted into a trace, which
//! is then expanded for every rank (a bounded number of events).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

use compress::import::{convert, parse_line, parse_rank};

fuzz_target!(|data: &[u8]| {
    let files: Vec<&[u8]> = data.split(|&b| b == 0xff).take(8).collect();
    let world = u32::try_from(files.len()).unwrap_or(u32::MAX);
    let mut ranks = Vec::with_capacity(files.len());
    for (r, bytes) in files.iter().enumerate() {
        if let Ok(text) = std::str::from_utf8(bytes) {
            for line in text.lines() {
                let _ = parse_line(line);
            }
        }
        let name = format!("Process{r}.txt");
        match parse_rank(Path::new(&name), bytes, world) {
            Ok(entries) => ranks.push(entries),
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        }
    }
    let Ok(file) = convert(ranks, Path::new("fuzz")) else {
        return;
    };
    for rank in file.trace.ranks().iter().take(8) {
        if let Ok(t) = file.trace.rank_trace(rank) {
            for ev in t.expand().take(10_000) {
                let _ = trace::raw::event_line(&ev);
            }
        }
    }
});
