//! Structure-aware fuzzing of the size checks: the input chooses a
//! well-formed trace with hostile sizes (world size, loop counts honest or
//! lying, nesting, declared list lengths, bytes after the data; see
//! `compress::hostile::from_fuzz`), which must be refused with an error or
//! read and expanded within the default budgets, never panic, abort or
//! exhaust memory (run with `-rss_limit_mb=1024`). The test
//! `tests/hostile.rs` runs the same generator for a fixed time in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = compress::hostile::from_fuzz(data);
    compress::hostile::exercise(&bytes);
});
