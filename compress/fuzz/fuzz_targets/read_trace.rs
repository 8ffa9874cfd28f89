//! Fuzzes the trace file reader: any bytes must give a trace or a clean
//! error, never a panic, an abort or a hang. The input is tried twice: as a
//! whole file, and as the payload of a file with a valid header and zlib
//! stream (so that the fuzzer reaches the decoder and the consistency checks
//! instead of stopping at the checksum). Whatever reads successfully is
//! expanded for every rank (a bounded number of events).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

// The reading and bounded expansion every fuzz target shares.
use compress::hostile::exercise;

fuzz_target!(|data: &[u8]| {
    let _ = exercise(data);
    let mut file = Vec::from(trace::file::MAGIC);
    file.extend_from_slice(&trace::file::VERSION.to_le_bytes());
    file.extend_from_slice(&0u32.to_le_bytes());
    let mut z = flate2::write::ZlibEncoder::new(file, flate2::Compression::fast());
    if z.write_all(data).is_ok()
        && let Ok(file) = z.finish()
    {
        let _ = exercise(&file);
    }
});
