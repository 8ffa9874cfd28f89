//! A nesting limit for deserialization.
//!
//! Loops and value sequences are recursive, and a serde deserializer follows
//! the nesting of its input with the native stack. A crafted or corrupted
//! trace file could nest deeply enough to overflow the stack, which aborts
//! the process instead of returning an error. Every recursive field is
//! therefore read through [`guarded`], which counts the depth per thread and
//! fails cleanly past [`MAX_DEPTH`].

use std::cell::Cell;

use serde::{Deserialize, Deserializer, de::Error as _};

/// The deepest nesting a trace file may have. Real loop nests and value
/// sequences are a few levels deep; 256 leaves room for any program.
pub(crate) const MAX_DEPTH: u32 = 256;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static EXCEEDED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a deserialization on this thread hit the limit since the last
/// call (some formats, postcard among them, drop custom error messages, so
/// the reader asks here to name the cause).
pub(crate) fn take_exceeded() -> bool {
    EXCEEDED.with(|e| e.replace(false))
}

struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Deserializes `T` one nesting level deeper, or fails past [`MAX_DEPTH`].
pub(crate) fn guarded<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    let depth = DEPTH.with(|c| {
        let v = c.get() + 1;
        c.set(v);
        v
    });
    let _guard = Guard;
    if depth > MAX_DEPTH {
        EXCEEDED.with(|e| e.set(true));
        return Err(D::Error::custom(format!(
            "nesting deeper than {MAX_DEPTH} levels"
        )));
    }
    T::deserialize(d)
}
