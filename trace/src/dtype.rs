//! MPI's predefined datatypes, named by a stable one-byte code.
//!
//! A size alone cannot replay a reduction: 16 bytes summed may be a
//! `MPI_DOUBLE_COMPLEX` (NPB FT) or two `MPI_DOUBLE`s, and only the first
//! is a valid sum of one element. So every transfer records its datatype's
//! identity when the type is predefined, and replay issues the same type.
//! A derived type keeps its size only and replays as a stand-in of that
//! size. The codes are part of the trace format: new types are appended.
//! The C helpers (`mpi-helpers/rankscale_helpers.c`, `RS_TYPES`) list the
//! same types in the same order; the replay tests compare the two through
//! real runs.

use serde::{Deserialize, Serialize};

/// A datatype as a code: 0 unknown (not recorded: traces older than the
/// code, imported traces), 255 a derived (user-defined) type, the rest
/// [`Datatype::NAMES`].
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Datatype(pub u8);

impl Datatype {
    /// Not recorded.
    pub const UNKNOWN: Datatype = Datatype(0);
    /// A derived type: replayed by a stand-in of the recorded size.
    pub const DERIVED: Datatype = Datatype(255);

    /// The predefined types by code (index 0 is unused), in the MPI
    /// standard's spelling without `MPI_`, lower case.
    pub const NAMES: [&'static str; 53] = [
        "?",
        "char",
        "signed_char",
        "unsigned_char",
        "byte",
        "short",
        "unsigned_short",
        "int",
        "unsigned",
        "long",
        "unsigned_long",
        "long_long",
        "unsigned_long_long",
        "float",
        "double",
        "long_double",
        "wchar",
        "c_bool",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "c_float_complex",
        "c_double_complex",
        "c_long_double_complex",
        "aint",
        "offset",
        "count",
        "packed",
        "float_int",
        "double_int",
        "long_int",
        "2int",
        "short_int",
        "long_double_int",
        "integer",
        "real",
        "double_precision",
        "complex",
        "double_complex",
        "logical",
        "character",
        "2real",
        "2double_precision",
        "2integer",
        "integer4",
        "integer8",
        "real4",
        "real8",
    ];

    /// The type's name (`double_complex`), `derived`, or `?` when unknown.
    pub fn name(self) -> &'static str {
        match self {
            Datatype::DERIVED => "derived",
            Datatype(c) => Self::NAMES.get(usize::from(c)).copied().unwrap_or("?"),
        }
    }

    /// Looks a type up by [`Datatype::name`].
    pub fn from_name(name: &str) -> Option<Datatype> {
        if name == "derived" {
            return Some(Datatype::DERIVED);
        }
        let i = Self::NAMES.iter().skip(1).position(|&n| n == name)?;
        u8::try_from(i + 1).ok().map(Datatype)
    }

    /// Whether the code names a type (predefined or derived).
    pub fn is_known(self) -> bool {
        self != Datatype::UNKNOWN
    }

    /// Whether a code read from a file is one this build knows.
    pub(crate) fn is_valid(self) -> bool {
        self == Datatype::DERIVED || usize::from(self.0) < Self::NAMES.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in 1..Datatype::NAMES.len() {
            let t = Datatype(c as u8);
            assert_eq!(Datatype::from_name(t.name()), Some(t));
        }
        assert_eq!(Datatype::from_name("derived"), Some(Datatype::DERIVED));
        assert_eq!(Datatype::from_name("?"), None);
        assert!(!Datatype(200).is_valid());
    }
}
