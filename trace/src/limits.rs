//! Budgets for the sizes a trace file declares.
//!
//! A trace is small on disk and large in meaning: a few bytes say "2^31
//! ranks" or "a loop of 2^62 iterations", and a tool that believes them
//! allocates per rank or expands per event until the machine gives out. So
//! every size a file declares is checked before anything is allocated
//! from it ([`Limits::check`], run by [`crate::TraceFile::read`]):
//!
//! - the decompressed payload may not exceed a share of the memory budget
//!   (a zlib bomb is refused while it inflates);
//! - the world size must be at least 1, agree with the ranklists, and fit
//!   the memory budget at [`Limits::BYTES_PER_RANK`];
//! - the events the trace expands to (every loop count multiplied out,
//!   over every rank) may not exceed the event budget.
//!
//! The defaults suit a workstation and every real trace we know of; a user
//! with a larger trace raises them with `--max-memory` / `--event-budget` (or
//! `RANKSCALE_MAX_MEMORY` / `RANKSCALE_EVENT_BUDGET`, which replay reads).

/// The budgets a trace is read under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes a tool may allocate for one trace.
    pub memory: u64,
    /// Events (summed over ranks) a trace may expand to.
    pub events: u64,
}

/// Why a trace exceeds its budgets: the field, the declared value and the
/// budget, so that a user can tell a damaged file from a big one and knows
/// which option raises the budget.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitError {
    /// The metadata's world size is zero.
    #[error("world_size is 0: a trace is of at least one rank")]
    NoRanks,
    /// The ranklists name a rank at or beyond the world size.
    #[error("world_size {world} disagrees with the ranklists, which name rank {rank}")]
    RankOutside {
        /// The metadata's world size.
        world: u32,
        /// The highest rank of the ranklists.
        rank: u32,
    },
    /// The world size needs more memory than the budget.
    #[error(
        "world_size {world} needs about {need} per-rank bytes, over the memory budget of {budget} bytes (raise it with --max-memory or RANKSCALE_MAX_MEMORY)"
    )]
    TooManyRanks {
        /// The metadata's world size.
        world: u32,
        /// The bytes it would take.
        need: u64,
        /// The memory budget.
        budget: u64,
    },
    /// The loops multiply out to more events than the budget.
    #[error(
        "the loop counts expand to {events} events, over the budget of {budget} (raise it with --event-budget or RANKSCALE_EVENT_BUDGET)"
    )]
    TooManyEvents {
        /// The events the trace expands to (saturated at `u64::MAX`).
        events: u64,
        /// The event budget.
        budget: u64,
    },
    /// Materialising per-event data needs more memory than the budget.
    #[error(
        "{what} of {events} events needs about {need} bytes, over the memory budget of {budget} bytes (raise it with --max-memory or RANKSCALE_MAX_MEMORY)"
    )]
    TooMuchMemory {
        /// What was to be built.
        what: &'static str,
        /// The events it holds.
        events: u64,
        /// The bytes it would take.
        need: u64,
        /// The memory budget.
        budget: u64,
    },
    /// An environment variable holds no size.
    #[error("{name}={value:?} is not a positive size (a number, optionally with K, M, G or T)")]
    BadValue {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            memory: Limits::DEFAULT_MEMORY,
            events: Limits::DEFAULT_EVENTS,
        }
    }
}

impl Limits {
    /// The default memory budget: 8 GiB.
    pub const DEFAULT_MEMORY: u64 = 8 << 30;
    /// The default event budget: 2^40 events (a replay of that many at a
    /// microsecond each takes twelve days).
    pub const DEFAULT_EVENTS: u64 = 1 << 40;
    /// What a tool allocates per rank of the world at most (the report's
    /// per-rank tables, the simulator's clocks, the statistics' matrix
    /// rows), with room to spare.
    pub const BYTES_PER_RANK: u64 = 64;
    /// The decompressed payload may take this share of the memory budget
    /// (a decoded trace takes several times its payload).
    pub const PAYLOAD_SHARE: u64 = 4;

    /// The defaults with `RANKSCALE_MAX_MEMORY` and `RANKSCALE_EVENT_BUDGET`
    /// applied, so that a budget reaches tools started by a launcher
    /// (replay) the same way as the command line's.
    pub fn from_env() -> Result<Limits, LimitError> {
        let mut l = Limits::default();
        if let Some(v) = env_size("RANKSCALE_MAX_MEMORY")? {
            l.memory = v;
        }
        if let Some(v) = env_size("RANKSCALE_EVENT_BUDGET")? {
            l.events = v;
        }
        Ok(l)
    }

    /// The largest decompressed payload these limits accept.
    pub fn max_payload(&self) -> u64 {
        (self.memory / Limits::PAYLOAD_SHARE).max(1 << 20)
    }

    /// Checks the declared sizes of a decoded trace: `world` (the
    /// metadata's world size), `highest` (the ranklists' highest rank, if
    /// any) and `events` (the events the trace expands to).
    pub fn check(&self, world: u32, highest: Option<u32>, events: u64) -> Result<(), LimitError> {
        if world == 0 {
            return Err(LimitError::NoRanks);
        }
        if let Some(rank) = highest.filter(|&r| r >= world) {
            return Err(LimitError::RankOutside { world, rank });
        }
        let need = u64::from(world).saturating_mul(Limits::BYTES_PER_RANK);
        if need > self.memory {
            return Err(LimitError::TooManyRanks {
                world,
                need,
                budget: self.memory,
            });
        }
        if events > self.events {
            return Err(LimitError::TooManyEvents {
                events,
                budget: self.events,
            });
        }
        Ok(())
    }

    /// Checks that `events` records of `bytes_per_event` each fit the
    /// memory budget before a tool allocates them for `what`.
    pub fn check_materialised(
        &self,
        what: &'static str,
        events: u64,
        bytes_per_event: u64,
    ) -> Result<(), LimitError> {
        let need = events.saturating_mul(bytes_per_event);
        if need > self.memory {
            return Err(LimitError::TooMuchMemory {
                what,
                events,
                need,
                budget: self.memory,
            });
        }
        Ok(())
    }
}

/// Parses a size such as `8G`, `512M` or `1000000` (binary multiples).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, shift) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 10),
        (i, 'm' | 'M') => (&t[..i], 20),
        (i, 'g' | 'G') => (&t[..i], 30),
        (i, 't' | 'T') => (&t[..i], 40),
        _ => (t, 0),
    };
    let n: u64 = num.trim().parse().ok()?;
    let v = n.checked_mul(1u64 << shift)?;
    (v > 0).then_some(v)
}

fn env_size(name: &'static str) -> Result<Option<u64>, LimitError> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => parse_size(&v)
            .map(Some)
            .ok_or(LimitError::BadValue { name, value: v }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size(" 1000 "), Some(1000));
        for bad in ["", "0", "-1", "1.5G", "G", "abc", "99999999999T", "NaN"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_declared_size_is_checked_against_its_budget() {
        let l = Limits {
            memory: 1 << 30,
            events: 1 << 20,
        };
        assert_eq!(l.check(0, None, 0), Err(LimitError::NoRanks));
        assert_eq!(
            l.check(4, Some(4), 10),
            Err(LimitError::RankOutside { world: 4, rank: 4 })
        );
        assert!(l.check(4, Some(3), 1 << 20).is_ok());
        // 2^24 ranks at 64 bytes = 1 GiB: the budget exactly; one more is
        // over it.
        assert!(l.check(1 << 24, None, 0).is_ok());
        let e = l.check((1 << 24) + 1, None, 0).unwrap_err();
        assert!(e.to_string().contains("world_size 16777217"), "{e}");
        let e = l.check(4, None, u64::MAX).unwrap_err();
        assert!(e.to_string().contains("--event-budget"), "{e}");
        assert!(l.check_materialised("x", 1 << 20, 1024).is_ok());
        assert!(l.check_materialised("x", u64::MAX, 2).is_err());
    }
}
