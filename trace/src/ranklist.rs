//! Ranklists: the set of ranks that executed an event, in the compact,
//! topology-aware form of Wu and Mueller 2012 (ScalaTrace).
//!
//! After the per-rank traces are merged, every event carries the group of
//! ranks that executed it. Wu and Mueller 2012 §2 ("Communication group encoding",
//! Fig. 2) writes such a group as a *rank list*
//! `<dimension start_rank iteration_length stride {iteration_length stride}>`:
//! `<2 6 3 5 3 1>` is the 2D block that starts at rank 6 with 3 iterations of
//! stride 5 (rows of a 5-wide grid) and 3 of stride 1 (columns), i.e.
//! `{6,7,8, 11,12,13, 16,17,18}`. Because the encoding follows the row-major
//! placement of the ranks, the groups of a stencil code (the interior, each
//! boundary edge, the corners; Wu and Mueller 2012 Fig. 8) are one or a few sections
//! whatever the number of ranks P, and Wu and Mueller 2012 §3.3 extrapolates a group to
//! a larger P by fitting each field (`start`, `iters`, `stride`) as a
//! function of the grid size (`<2 x+1 x-2 x x-2 1>` for the interior). The
//! replay engine runs an event on a rank only if the event's ranklist
//! contains it, and Wu and Mueller 2012 Algorithm 1 orders the branches of a trace by
//! the lowest rank of each group ([`RankList::min`]).
//!
//! # Representation
//!
//! A [`Section`] is a regular section `start + Σ i_k · stride_k`,
//! `0 ≤ i_k < iters_k`, with its dimensions listed outermost first. Every
//! stored dimension has `iters ≥ 2` and a stride larger than the extent of
//! the dimensions inside it (row-major, no interleaving), so a section lists
//! its ranks in ascending order and a rank is decoded by one division per
//! dimension. A single rank is a section with no dimension.
//!
//! A [`RankList`] is a list of sections, sorted by start, whose spans
//! (`start..=last`) are disjoint and not even adjacent: each section is a
//! contiguous block of the sorted rank sequence.
//!
//! # Normal form
//!
//! Equal sets have equal representations: the sections of a set are, by
//! definition, the output of one deterministic *stream* over the set's
//! maximal runs of consecutive ranks (its *atoms*: a single rank, or an
//! interval `<1 a L 1>`), taken in ascending order. Each atom is pushed on a
//! list of sections, and then, while possible, the last two sections `U, T`
//! are merged:
//!
//! 1. **extend**: if `U` has shape `(n, e) ++ shape(T)` and `T` starts at
//!    `U.start + n·e`, then `T` is one more iteration of `U`'s outermost
//!    dimension: `U` becomes `(n+1, e) ++ shape(T)`;
//! 2. **pair**: otherwise, if `U` and `T` have the same shape, they become
//!    the two iterations of a new outermost dimension of stride
//!    `T.start − U.start`.
//!
//! This is a greedy, row-major grouping: rows of equal length at a constant
//! stride become a 2D block, equal blocks at a constant stride a 3D block, and
//! so on (it is the same pair of rules that [`crate::seq`] and
//! `compress::intra` use to fold loops). The interior of a `q × q` grid
//! becomes `<2 q+1 q-2 q q-2 1>`, its four corners `<2 0 2 q²-q 2 q-1>`. The
//! form is canonical, not minimal: a set such as `{0, 3, 6, 8, 10}` becomes
//! `<1 0 3 3> <1 8 2 2>` (the greedy choice) although
//! `<1 0 2 3> <1 6 3 2>` has as many sections.
//!
//! Because the form is a function of the set, [`RankList::union`] is
//! associative and commutative *in representation*, not only in the set it
//! denotes: any order or grouping of unions (for example the log2(P)
//! reduction tree of the inter-node merge) gives the identical ranklist.
//!
//! # Union and its cost
//!
//! [`RankList::union`] never goes through ranks. It sorts the sections of
//! both operands by start (`O(s log s)` for `s` sections in total, `O(s)` for
//! the usual case of two lists that do not interleave) and replays the stream
//! above on whole sections instead of atoms:
//!
//! * two facts make this exact: a prefix of a normal form is the normal form
//!   of its ranks, and every section of a normal form is rebuilt
//!   unchanged by the stream from its own atoms. So the operands' sections
//!   are fed as units, a section whose predecessor is left unchanged is
//!   followed by the rest of its list without any work, and a section that
//!   does interact with what precedes it is fed child by child (its
//!   outermost iterations), where a run of children that only extends the
//!   last section is added in one step;
//! * sections of the two operands that touch (`last + 1 == start`) exchange
//!   only their boundary atoms: each is split into at most `dims + 1`
//!   sections around that atom.
//!
//! Adjacent blocks (`<1 0 4 1> ∪ <1 4 4 1> = <1 0 8 1>`), a new row under a
//! 2D block, a rank that extends a stride and disjoint sections therefore
//! cost `O(dims²)` each, and a union costs `O(s · dims²)`, independent of
//! P. Two cases cost more, and both are rare in trace merging, where the two
//! operands come from disjoint rank ranges of the reduction tree:
//!
//! * operand sections whose spans overlap or interleave (all even ranks ∪
//!   all odd ranks) are merged atom by atom, lazily, in `O(a log k)` time for
//!   `a` atoms of `k` overlapping sections and `O(k)` memory. Ranks are never
//!   materialised unless those atoms are single ranks;
//! * when a fed section is re-parsed with a different alignment (alternating
//!   strides), its children are fed one by one: `O(iterations)` for that
//!   section. The result is still compact.
//!
//! [`RankList::contains`] is `O(log s + dims)`, [`RankList::len`] is
//! `O(s · dims)` and computed arithmetically, [`RankList::iter`] is lazy.
//!
//! # Text form
//!
//! [`Display`](fmt::Display) writes each section as in Wu and Mueller 2012,
//! `<dim start iters stride ...>`, sections separated by a space; a single
//! rank `r` is `<1 r 1 1>` and the empty list is `<>`.
//! [`FromStr`] reads any list of such sections, in any order, possibly
//! overlapping or not in normal form, and returns the normal form; errors
//! are [`ParseRankListError`]s, never panics. Serde uses the text form in JSON and the
//! same numbers as varints in binary formats.

#![warn(missing_docs)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The largest rank a ranklist may hold. MPI world ranks are non-negative C
/// `int`s; the bound also keeps every iteration count and length of a
/// section within `u32`.
pub const MAX_RANK: u32 = i32::MAX as u32;

/// Which operand list, and which section of it, an item of a union comes
/// from (see [`Builder::emit`]).
type Origin = (usize, usize);

/// One regular section `start + Σ i_k · stride_k`, `0 ≤ i_k < iters_k`,
/// dimensions outermost first.
///
/// This is one `<dim start iters stride ...>` group of Wu and Mueller 2012 §2. The
/// invariants (every dimension has `iters ≥ 2`, and a stride larger than the
/// extent of the dimensions inside it) make the ranks of a section ascend in
/// row-major order and decode by division, which is what
/// [`RankList::contains`] and the extrapolation of Wu and Mueller 2012 §3.3 (one
/// linear fit per field) rely on. Sections are only built by [`RankList`],
/// which keeps them in normal form; read them with [`RankList::sections`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Section {
    start: u32,
    dims: Vec<(u32, u32)>,
}

impl Section {
    /// The lowest rank of the section (Wu and Mueller's (2012) `start_rank`).
    pub fn start(&self) -> u32 {
        self.start
    }

    /// The `(iters, stride)` pairs, outermost first; empty for a single
    /// rank. The extrapolation fits each of these fields separately.
    pub fn dims(&self) -> &[(u32, u32)] {
        &self.dims
    }

    /// The number of ranks, computed arithmetically (product of the
    /// iteration counts).
    pub fn size(&self) -> u64 {
        self.dims.iter().map(|&(n, _)| u64::from(n)).product()
    }

    /// The highest rank of the section.
    pub fn last(&self) -> u32 {
        let span: u64 = self
            .dims
            .iter()
            .map(|&(n, s)| u64::from(n - 1) * u64::from(s))
            .sum();
        (u64::from(self.start) + span) as u32
    }

    /// Whether `rank` is in the section, by one division per dimension
    /// (the strides do not interleave, so the quotient at each level is the
    /// iteration index).
    pub fn contains(&self, rank: u32) -> bool {
        self.decode(rank).is_some()
    }

    /// The place of `rank` among the section's ranks (row-major, 0 for
    /// `start`), if it is in the section.
    fn place(&self, rank: u32) -> Option<u64> {
        let mut off = u64::from(rank.checked_sub(self.start)?);
        let mut place = 0;
        for &(n, s) in &self.dims {
            let q = off / u64::from(s);
            if q >= u64::from(n) {
                return None;
            }
            off -= q * u64::from(s);
            place = place * u64::from(n) + q;
        }
        (off == 0).then_some(place)
    }

    /// The iteration index of `rank` at the innermost dimension, if `rank`
    /// is in the section.
    fn decode(&self, rank: u32) -> Option<u32> {
        let mut off = u64::from(rank.checked_sub(self.start)?);
        let mut q = 0;
        for &(n, s) in &self.dims {
            q = off / u64::from(s);
            if q >= u64::from(n) {
                return None;
            }
            off -= q * u64::from(s);
        }
        (off == 0).then_some(q as u32)
    }

    /// A single rank, or the interval `a..=b`: an atom of the stream.
    fn interval(a: u32, b: u32) -> Section {
        let dims = if a == b {
            Vec::new()
        } else {
            vec![(b - a + 1, 1)]
        };
        Section { start: a, dims }
    }

    /// Whether the section is an atom: a single rank or a run of consecutive
    /// ranks. Inside a normal form, these are exactly the maximal runs.
    fn is_atomic(&self) -> bool {
        match self.dims.as_slice() {
            [] => true,
            [(_, s)] => *s == 1,
            _ => false,
        }
    }

    /// The length of an atom minus one (0 for a single rank), and for other
    /// sections the length of their rows minus one.
    fn row_extra(&self) -> u32 {
        match self.dims.last() {
            Some(&(n, 1)) => n - 1,
            _ => 0,
        }
    }

    /// The dimensions above the atoms (all but a stride-1 innermost one).
    fn outer_dims(&self) -> &[(u32, u32)] {
        match self.dims.last() {
            Some(&(_, 1)) => &self.dims[..self.dims.len() - 1],
            _ => &self.dims,
        }
    }

    /// Whether the atom `a..=b` lies in one atom of this section.
    fn covers(&self, a: u32, b: u32) -> bool {
        match (self.decode(a), self.dims.last()) {
            (Some(q), Some(&(n, 1))) => u64::from(b) <= u64::from(a) + u64::from(n - 1 - q),
            (Some(_), _) => a == b,
            (None, _) => false,
        }
    }

    /// Iteration `i` of the outermost dimension.
    fn child(&self, i: u32) -> Section {
        let (_, d) = self.dims[0];
        Section {
            start: self.start + i * d,
            dims: self.dims[1..].to_vec(),
        }
    }

    /// Iterations `from..from + count` of the outermost dimension, as one
    /// section.
    fn block(&self, from: u32, count: u32) -> Section {
        if count == 1 {
            return self.child(from);
        }
        let (_, d) = self.dims[0];
        let mut dims = self.dims.clone();
        dims[0].0 = count;
        Section {
            start: self.start + from * d,
            dims,
        }
    }

    /// The section without its last atom (at most `dims` sections, in
    /// order), and that atom.
    fn peel_last(&self) -> (Vec<Section>, Section) {
        let mut before = Vec::new();
        let mut cur = self.clone();
        while !cur.is_atomic() {
            let (n, _) = cur.dims[0];
            before.push(cur.block(0, n - 1));
            cur = cur.child(n - 1);
        }
        (before, cur)
    }

    /// The first atom of the section, and the rest (at most `dims`
    /// sections, in order).
    fn peel_first(&self) -> (Section, Vec<Section>) {
        let mut after = Vec::new();
        let mut cur = self.clone();
        while !cur.is_atomic() {
            let (n, _) = cur.dims[0];
            after.push(cur.block(1, n - 1));
            cur = cur.child(0);
        }
        after.reverse();
        (cur, after)
    }
}

impl fmt::Display for Section {
    /// Wu and Mueller's (2012) `<dim start iters stride ...>`; a single rank is
    /// `<1 r 1 1>` (one iteration) so that every group has the paper's
    /// grammar.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.dims.is_empty() {
            return write!(f, "<1 {} 1 1>", self.start);
        }
        write!(f, "<{} {}", self.dims.len(), self.start)?;
        for (n, s) in &self.dims {
            write!(f, " {n} {s}")?;
        }
        f.write_str(">")
    }
}

/// A set of MPI ranks, as a list of regular sections in normal form.
///
/// This is the ranklist that Wu and Mueller 2012 attach to every event of the merged
/// trace (§2, Fig. 2) and extrapolates field by field (§3.3). See the
/// [module documentation](self) for the normal form (equal sets have equal
/// representations, so `==` and `Hash` are set equality) and for the cost of
/// [`union`](RankList::union), which is bounded by the number of sections,
/// not by the number of ranks.
///
/// Serde writes the text form to human-readable formats (JSON) and, to
/// binary ones (the trace file), the same numbers as varints: the number of
/// sections, then for each `dim start (iters stride)...`. Both are checked
/// and normalised when read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RankList {
    sections: Vec<Section>,
}

impl RankList {
    /// The empty set (an event that no rank executed; the identity of
    /// [`union`](RankList::union)).
    pub fn new() -> RankList {
        RankList::default()
    }

    /// The set of one rank: the ranklist of an event in a single rank's
    /// trace, before the inter-node merge.
    ///
    /// # Panics
    ///
    /// If `rank > MAX_RANK`.
    pub fn single(rank: u32) -> RankList {
        RankList::range(rank, 1)
    }

    /// The ranks `start..start + len` (`<1 start len 1>`), for example all
    /// ranks of a collective.
    ///
    /// # Panics
    ///
    /// If a rank would exceed [`MAX_RANK`].
    pub fn range(start: u32, len: u32) -> RankList {
        if len == 0 {
            return RankList::new();
        }
        let last = u64::from(start) + u64::from(len) - 1;
        assert!(
            last <= u64::from(MAX_RANK),
            "ranklist: rank {last} exceeds MAX_RANK"
        );
        RankList {
            sections: vec![Section::interval(start, last as u32)],
        }
    }

    /// The regular section `start + Σ i_k · stride_k`, `0 ≤ i_k < iters_k`,
    /// for `dims = [(iters_0, stride_0), ...]`: Wu and Mueller's (2012)
    /// `<dim start iters stride ...>`, for example a group extrapolated to a
    /// new size (§3.3). The dimensions may come in any order and need not be
    /// in normal form (`(1, s)` dimensions, dimensions that continue each
    /// other, rows that touch); the result is the normal form of the set.
    /// A dimension with 0 iterations gives the empty set.
    ///
    /// Cost: `O(dims²)`, except for a section whose blocks touch (the last
    /// rank of one block followed by the first rank of the next, e.g.
    /// `(n, 3) (2, 2)` = `{0, 2,3, 5,6, ...}`): its atoms are not its rows,
    /// and it is rebuilt block by block, in time proportional to the number
    /// of such blocks (memory stays proportional to the result).
    ///
    /// # Errors
    ///
    /// [`ParseRankListError::ZeroStride`] or [`ParseRankListError::Overlap`]
    /// if the dimensions repeat or interleave ranks (the ranks are then not a
    /// row-major section), [`ParseRankListError::TooLarge`] if a rank exceeds
    /// [`MAX_RANK`].
    pub fn section(start: u32, dims: &[(u32, u32)]) -> Result<RankList, ParseRankListError> {
        let mut b = Builder::default();
        section_into(start, dims, &mut b)?;
        Ok(b.finish())
    }

    /// The normal form of a list of ranks, in `O(n)` for ascending input
    /// (unsorted input is sorted and deduplicated first). This is the
    /// reference construction: every other one gives the same result for the
    /// same set.
    ///
    /// # Panics
    ///
    /// If a rank exceeds [`MAX_RANK`].
    pub fn from_ranks<I: IntoIterator<Item = u32>>(ranks: I) -> RankList {
        let mut v: Vec<u32> = ranks.into_iter().collect();
        if !v.is_sorted_by(|a, b| a < b) {
            v.sort_unstable();
            v.dedup();
        }
        if let Some(&last) = v.last() {
            assert!(last <= MAX_RANK, "ranklist: rank {last} exceeds MAX_RANK");
        }
        let mut b = Builder::default();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            b.push(Section::interval(v[i], v[j]), None);
            i = j + 1;
        }
        b.finish()
    }

    /// The union of two ranklists, in normal form, without expanding
    /// sections into ranks (see the module documentation for the algorithm
    /// and its cost). This is the merge of the ranklists of two matching
    /// events in the inter-node reduction of Wu and Mueller 2012 §2; the result does not
    /// depend on the order or grouping of the unions.
    pub fn union(&self, other: &RankList) -> RankList {
        if other.is_empty() {
            return self.clone();
        }
        if self.is_empty() {
            return other.clone();
        }
        union_lists(&[self, other])
    }

    /// Adds one rank (a union with [`RankList::single`]).
    ///
    /// # Panics
    ///
    /// If `rank > MAX_RANK`.
    pub fn insert(&mut self, rank: u32) {
        if !self.contains(rank) {
            *self = self.union(&RankList::single(rank));
        }
    }

    /// Whether `rank` is in the set: the replay engine runs an event on a
    /// rank only if the event's ranklist contains it. A binary search on the
    /// section starts, then one division per dimension: `O(log s + dims)`.
    pub fn contains(&self, rank: u32) -> bool {
        let i = self.sections.partition_point(|s| s.start <= rank);
        i > 0 && self.sections[i - 1].contains(rank)
    }

    /// The place of `rank` in the set, from 0 for the lowest rank to
    /// `len() - 1` for the highest, or `None` when it is not in the set.
    /// It numbers the ranks that share a timing, so that the executions
    /// of one rank's accidents can be dealt to ranks exactly
    /// (`compress::ComputeDraws`) without enumerating a ranklist of 10^6
    /// ranks: `O(sections + dims)`.
    pub fn index_of(&self, rank: u32) -> Option<u64> {
        let i = self.sections.partition_point(|s| s.start <= rank);
        let place = self.sections.get(i.checked_sub(1)?)?.place(rank)?;
        let before: u64 = self.sections[..i - 1].iter().map(Section::size).sum();
        Some(before + place)
    }

    /// The number of ranks, computed from the iteration counts
    /// (`O(sections × dims)`), never by enumeration.
    pub fn len(&self) -> u64 {
        self.sections.iter().map(Section::size).sum()
    }

    /// Whether no rank is in the set.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The lowest rank: Wu and Mueller 2012 Algorithm 1 orders the branches of the
    /// merged trace by the lowest rank of each group.
    pub fn min(&self) -> Option<u32> {
        self.sections.first().map(|s| s.start)
    }

    /// The highest rank.
    pub fn max(&self) -> Option<u32> {
        self.sections.last().map(Section::last)
    }

    /// The sections, sorted by start, in normal form: the representation
    /// that extrapolation fits field by field (Wu and Mueller 2012 §3.3).
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The ranks in ascending order, lazily (a replay or a test can walk a
    /// ranklist of 10^6 ranks without allocating them).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            rest: &self.sections,
            odo: None,
        }
    }
}

impl fmt::Display for RankList {
    /// The sections in Wu and Mueller's (2012) text form, separated by spaces; `<>` for
    /// the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sections.is_empty() {
            return f.write_str("<>");
        }
        for (i, s) in self.sections.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

/// Numbers as a reader writes a set of them: runs of consecutive values as
/// `first{dash}last`, joined by `sep` (`ranges_text([0, 1, 2, 5], ", ",
/// "-")` is `0-2, 5`). The one formatter of rank sets and index sets for
/// every text, table and plot, so that they all read alike. Sorts and
/// drops repeats first.
pub fn ranges_text<T>(values: impl IntoIterator<Item = T>, sep: &str, dash: &str) -> String
where
    T: Ord + Copy + fmt::Display + TryInto<u64>,
{
    let mut v: Vec<T> = values.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    let next = |a: T, b: T| match (a.try_into(), b.try_into()) {
        (Ok(a), Ok(b)) => a.checked_add(1) == Some(b),
        _ => false,
    };
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && next(v[j], v[j + 1]) {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}{dash}{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    parts.join(sep)
}

/// Why a ranklist text (or a section given to [`RankList::section`]) was
/// rejected. Byte offsets point into the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseRankListError {
    /// The text holds no section at all (the empty set is written `<>`).
    #[error("empty ranklist text (the empty ranklist is written `<>`)")]
    Empty,
    /// A character that does not fit the grammar
    /// `{ '<' dim start {iters stride} '>' }`.
    #[error("at byte {pos}: {msg}")]
    Syntax {
        /// Byte offset in the text.
        pos: usize,
        /// What was expected.
        msg: &'static str,
    },
    /// A number that does not fit in 32 bits.
    #[error("at byte {pos}: number `{text}` is out of range")]
    Number {
        /// Byte offset in the text.
        pos: usize,
        /// The digits.
        text: String,
    },
    /// A section whose number count does not match its dimension.
    #[error("a section of dimension {dim} needs {expected} numbers, found {found}")]
    Arity {
        /// The dimension the section declares.
        dim: u32,
        /// `2 + 2 · dim`.
        expected: u64,
        /// The numbers found between `<` and `>`.
        found: usize,
    },
    /// A dimension of several iterations with stride 0 (repeated ranks).
    #[error("a dimension of {iters} iterations has stride 0")]
    ZeroStride {
        /// The iteration count of that dimension.
        iters: u32,
    },
    /// Two dimensions interleave or overlap (a stride not larger than the
    /// extent of the dimensions inside it), so the ranks are not a
    /// row-major regular section.
    #[error("the dimensions of section <{start} ...> overlap: not a row-major regular section")]
    Overlap {
        /// The start of the section.
        start: u32,
    },
    /// A rank above [`MAX_RANK`].
    #[error("rank {rank} exceeds the largest MPI rank {MAX_RANK}")]
    TooLarge {
        /// The offending rank (or a lower bound of it).
        rank: u64,
    },
}

impl FromStr for RankList {
    type Err = ParseRankListError;

    /// Reads sections written as in Wu and Mueller 2012 (`<2 6 3 5 3 1> <1 30 1 1>`),
    /// in any order and possibly overlapping, and returns their union in
    /// normal form. `<>` is the empty set.
    fn from_str(text: &str) -> Result<RankList, ParseRankListError> {
        let bytes = text.as_bytes();
        let mut pos = 0;
        let mut groups = 0usize;
        let mut lists = Vec::new();
        let skip_ws = |pos: &mut usize| {
            while *pos < bytes.len() && bytes[*pos].is_ascii_whitespace() {
                *pos += 1;
            }
        };
        loop {
            skip_ws(&mut pos);
            if pos == bytes.len() {
                break;
            }
            if bytes[pos] != b'<' {
                return Err(ParseRankListError::Syntax {
                    pos,
                    msg: "expected `<`",
                });
            }
            pos += 1;
            let mut nums: Vec<u32> = Vec::new();
            loop {
                skip_ws(&mut pos);
                if pos == bytes.len() {
                    return Err(ParseRankListError::Syntax {
                        pos,
                        msg: "missing `>`",
                    });
                }
                if bytes[pos] == b'>' {
                    pos += 1;
                    break;
                }
                if !bytes[pos].is_ascii_digit() {
                    return Err(ParseRankListError::Syntax {
                        pos,
                        msg: "expected a number or `>`",
                    });
                }
                let from = pos;
                while pos < bytes.len() && bytes[pos].is_ascii_digit() {
                    pos += 1;
                }
                let digits = &text[from..pos];
                let n = digits
                    .parse::<u32>()
                    .map_err(|_| ParseRankListError::Number {
                        pos: from,
                        text: digits.to_string(),
                    })?;
                nums.push(n);
            }
            groups += 1;
            if nums.is_empty() {
                continue;
            }
            let dim = nums[0];
            let expected = 2 + 2 * u64::from(dim);
            if nums.len() as u64 != expected {
                return Err(ParseRankListError::Arity {
                    dim,
                    expected,
                    found: nums.len(),
                });
            }
            let dims: Vec<(u32, u32)> = nums[2..].chunks_exact(2).map(|c| (c[0], c[1])).collect();
            lists.push(RankList::section(nums[1], &dims)?);
        }
        if groups == 0 {
            return Err(ParseRankListError::Empty);
        }
        let refs: Vec<&RankList> = lists.iter().filter(|l| !l.is_empty()).collect();
        Ok(match refs.as_slice() {
            [] => RankList::new(),
            [one] => (*one).clone(),
            _ => union_lists(&refs),
        })
    }
}

impl Serialize for RankList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return s.collect_str(self);
        }
        let mut v: Vec<u32> = vec![self.sections.len() as u32];
        for sec in &self.sections {
            v.push(sec.dims.len() as u32);
            v.push(sec.start);
            for &(n, st) in &sec.dims {
                v.extend([n, st]);
            }
        }
        v.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RankList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RankList, D::Error> {
        use serde::de::Error as _;
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            return text.parse().map_err(D::Error::custom);
        }
        let v = Vec::<u32>::deserialize(d)?;
        let bad = || D::Error::custom("malformed ranklist");
        let (&n, mut rest) = v.split_first().ok_or_else(bad)?;
        let mut lists = Vec::new();
        for _ in 0..n {
            let (&dim, tail) = rest.split_first().ok_or_else(bad)?;
            let (&start, tail) = tail.split_first().ok_or_else(bad)?;
            let k = usize::try_from(dim)
                .map_err(|_| bad())?
                .checked_mul(2)
                .ok_or_else(bad)?;
            if tail.len() < k {
                return Err(bad());
            }
            let dims: Vec<(u32, u32)> = tail[..k].chunks_exact(2).map(|c| (c[0], c[1])).collect();
            lists.push(RankList::section(start, &dims).map_err(D::Error::custom)?);
            rest = &tail[k..];
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        let refs: Vec<&RankList> = lists.iter().filter(|l| !l.is_empty()).collect();
        Ok(match refs.as_slice() {
            [] => RankList::new(),
            [one] => (*one).clone(),
            _ => union_lists(&refs),
        })
    }
}

impl From<RankList> for String {
    /// The text form.
    fn from(r: RankList) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for RankList {
    type Error = ParseRankListError;

    /// Parses the text form (the result is in normal form).
    fn try_from(s: String) -> Result<RankList, ParseRankListError> {
        s.parse()
    }
}

impl FromIterator<u32> for RankList {
    /// [`RankList::from_ranks`].
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> RankList {
        RankList::from_ranks(iter)
    }
}

impl<'a> IntoIterator for &'a RankList {
    type Item = u32;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The ranks of a [`RankList`] in ascending order, produced lazily by an
/// odometer over each section's iteration indices.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    rest: &'a [Section],
    odo: Option<Odometer<'a>>,
}

impl Iterator for Iter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        loop {
            if let Some(odo) = &mut self.odo
                && let Some(r) = odo.next()
            {
                return Some(r as u32);
            }
            let (first, rest) = self.rest.split_first()?;
            self.rest = rest;
            self.odo = Some(Odometer::new(first.start, &first.dims));
        }
    }
}

/// Walks `start + Σ i_k · s_k` in row-major (ascending) order.
#[derive(Clone, Debug)]
struct Odometer<'a> {
    dims: &'a [(u32, u32)],
    idx: Vec<u32>,
    cur: Option<u64>,
}

impl<'a> Odometer<'a> {
    fn new(start: u32, dims: &'a [(u32, u32)]) -> Odometer<'a> {
        Odometer {
            dims,
            idx: vec![0; dims.len()],
            cur: Some(u64::from(start)),
        }
    }
}

impl Iterator for Odometer<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let now = self.cur?;
        let mut next = now;
        self.cur = None;
        for k in (0..self.dims.len()).rev() {
            let (n, s) = self.dims[k];
            if self.idx[k] + 1 < n {
                self.idx[k] += 1;
                self.cur = Some(next + u64::from(s));
                break;
            }
            next -= u64::from(n - 1) * u64::from(s);
            self.idx[k] = 0;
        }
        Some(now)
    }
}

/// The atoms (rows, or single ranks) of one section, ascending, as
/// `(first, last)`.
struct Atoms<'a> {
    odo: Odometer<'a>,
    extra: u32,
}

impl Iterator for Atoms<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        let a = self.odo.next()? as u32;
        Some((a, a + self.extra))
    }
}

fn atoms(s: &Section) -> Atoms<'_> {
    Atoms {
        odo: Odometer::new(s.start, s.outer_dims()),
        extra: s.row_extra(),
    }
}

/// Validates a section given as `start` and `(iters, stride)` pairs, brings
/// it to a row-major form whose rows do not touch, and pushes it (or, if
/// its blocks touch, its blocks) on `b`.
fn section_into(
    start: u32,
    dims: &[(u32, u32)],
    b: &mut Builder,
) -> Result<(), ParseRankListError> {
    use ParseRankListError as E;
    if dims.iter().any(|&(n, _)| n == 0) {
        return Ok(());
    }
    if start > MAX_RANK {
        return Err(E::TooLarge {
            rank: u64::from(start),
        });
    }
    let mut ds: Vec<(u32, u32)> = dims.iter().copied().filter(|&(n, _)| n >= 2).collect();
    if let Some(&(iters, _)) = ds.iter().find(|&&(_, s)| s == 0) {
        return Err(E::ZeroStride { iters });
    }
    // Row-major: the only possible order is by decreasing stride.
    ds.sort_by_key(|&(_, s)| Reverse(s));
    let mut span: u64 = 0;
    for &(n, s) in ds.iter().rev() {
        if u64::from(s) <= span {
            return Err(E::Overlap { start });
        }
        span += u64::from(n - 1) * u64::from(s);
        if span > u64::from(MAX_RANK) {
            return Err(E::TooLarge {
                rank: u64::from(start) + span,
            });
        }
    }
    if u64::from(start) + span > u64::from(MAX_RANK) {
        return Err(E::TooLarge {
            rank: u64::from(start) + span,
        });
    }
    // Fuse a dimension that continues the one inside it:
    // (n, m·e) (m, e) is (n·m, e).
    let mut fused: Vec<(u32, u32)> = Vec::with_capacity(ds.len());
    for &(n, s) in ds.iter().rev() {
        match fused.last() {
            Some(&(m, e)) if u64::from(s) == u64::from(m) * u64::from(e) => {
                fused.pop();
                fused.push((n * m, e));
            }
            _ => fused.push((n, s)),
        }
    }
    fused.reverse();
    // Blocks touch at level k when the first rank of block i+1 follows the
    // last rank of block i; then the atoms are not the section's rows, and
    // the blocks below the deepest such level are pushed one by one (the
    // builder joins the touching atoms).
    let mut deepest = None;
    let mut inner: u64 = 0;
    for k in (0..fused.len()).rev() {
        let (n, s) = fused[k];
        if k + 1 < fused.len() && u64::from(s) == inner + 1 {
            deepest.get_or_insert(k);
        }
        inner += u64::from(n - 1) * u64::from(s);
    }
    match deepest {
        None => b.push(Section { start, dims: fused }, None),
        Some(k) => {
            let (outer, rest) = fused.split_at(k + 1);
            for base in Odometer::new(start, outer) {
                b.push(
                    Section {
                        start: base as u32,
                        dims: rest.to_vec(),
                    },
                    None,
                );
            }
        }
    }
    Ok(())
}

/// The union of normal forms: sections sorted by start, grouped into
/// clusters of overlapping spans; a cluster of one section is fed whole,
/// a larger one atom by atom.
fn union_lists(lists: &[&RankList]) -> RankList {
    let mut items: Vec<(&Section, Origin)> = lists
        .iter()
        .enumerate()
        .flat_map(|(l, r)| r.sections.iter().enumerate().map(move |(j, s)| (s, (l, j))))
        .collect();
    // Stable, and linear on the two sorted runs of the usual two operands.
    items.sort_by_key(|(s, _)| s.start);
    let mut b = Builder::default();
    let mut i = 0;
    while i < items.len() {
        let mut j = i + 1;
        let mut max = items[i].0.last();
        while j < items.len() && items[j].0.start <= max {
            max = max.max(items[j].0.last());
            j += 1;
        }
        push_cluster(&items[i..j], &mut b);
        i = j;
    }
    b.finish()
}

/// Pushes a cluster of sections whose spans overlap. Duplicates and atoms
/// covered by another section are dropped first (cheap, and keeps the common
/// `A ∪ A` and `A ∪ {r ∈ A}` linear); what remains is merged lazily atom by
/// atom through a heap.
fn push_cluster(cluster: &[(&Section, Origin)], b: &mut Builder) {
    let mut keep: Vec<(&Section, Origin)> = Vec::with_capacity(cluster.len());
    for &(s, o) in cluster {
        if !keep.iter().any(|(k, _)| *k == s) {
            keep.push((s, o));
        }
    }
    let covered = |i: usize, s: &Section| {
        s.is_atomic()
            && keep
                .iter()
                .enumerate()
                .any(|(j, (k, _))| j != i && k.covers(s.start, s.last()))
    };
    let keep: Vec<(&Section, Origin)> = keep
        .iter()
        .enumerate()
        .filter(|(i, (s, _))| !covered(*i, s))
        .map(|(_, &x)| x)
        .collect();
    if let [(s, o)] = keep.as_slice() {
        b.push((*s).clone(), Some(*o));
        return;
    }
    let mut its: Vec<Atoms<'_>> = keep.iter().map(|(s, _)| atoms(s)).collect();
    let mut heap = BinaryHeap::new();
    for (i, it) in its.iter_mut().enumerate() {
        if let Some((a, e)) = it.next() {
            heap.push(Reverse((a, e, i)));
        }
    }
    let mut cur: Option<(u32, u32)> = None;
    while let Some(Reverse((a, e, i))) = heap.pop() {
        if let Some(next) = its[i].next() {
            heap.push(Reverse((next.0, next.1, i)));
        }
        cur = match cur {
            Some((ca, ce)) if u64::from(a) <= u64::from(ce) + 1 => Some((ca, ce.max(e))),
            Some((ca, ce)) => {
                b.push(Section::interval(ca, ce), None);
                Some((a, e))
            }
            None => Some((a, e)),
        };
    }
    if let Some((ca, ce)) = cur {
        b.push(Section::interval(ca, ce), None);
    }
}

/// Runs the normal-form stream over a sequence of sections.
///
/// Sections are pushed in ascending order, spans disjoint, each one either
/// an atom, a section of a normal form, or a part of one cut by
/// [`Section::peel_first`] / [`Section::peel_last`] (all of which the stream
/// rebuilds unchanged from their own atoms). Consecutive sections may touch;
/// the builder keeps the last one pending and joins the touching atoms.
#[derive(Default)]
struct Builder {
    /// The stream state: the normal form of everything emitted so far.
    state: Vec<Section>,
    /// The origin of the last section of `state`, if it is a section of an
    /// operand's normal form that was emitted and left unchanged.
    tail: Option<Origin>,
    /// The last pushed section, not yet emitted because the next one may
    /// touch it.
    pending: Option<(Section, Option<Origin>)>,
}

impl Builder {
    fn push(&mut self, sec: Section, origin: Option<Origin>) {
        let Some((p, po)) = self.pending.take() else {
            self.pending = Some((sec, origin));
            return;
        };
        if u64::from(p.last()) + 1 != u64::from(sec.start) {
            self.emit(p, po);
            self.pending = Some((sec, origin));
            return;
        }
        let (before, la) = p.peel_last();
        let (fa, mut after) = sec.peel_first();
        for s in before {
            self.emit(s, None);
        }
        let joined = Section::interval(la.start, fa.last());
        match after.pop() {
            None => self.pending = Some((joined, None)),
            Some(last) => {
                self.emit(joined, None);
                for s in after {
                    self.emit(s, None);
                }
                self.pending = Some((last, None));
            }
        }
    }

    /// Feeds one section to the stream. A section of an operand's normal
    /// form that follows its unchanged predecessor in that same normal form
    /// is appended as is: in the operand's own stream, it was built from its
    /// atoms next to that predecessor without ever merging with it, and the
    /// stream only ever looks at its last two sections.
    fn emit(&mut self, sec: Section, origin: Option<Origin>) {
        if let (Some((l, j)), Some((l2, j2))) = (self.tail, origin)
            && l == l2
            && j2 == j + 1
        {
            self.state.push(sec);
            self.tail = origin;
            return;
        }
        if self.state.is_empty() {
            self.state.push(sec);
            self.tail = origin;
            return;
        }
        feed(&mut self.state, &sec);
        self.tail = if self.state.last() == Some(&sec) {
            origin
        } else {
            None
        };
    }

    fn finish(mut self) -> RankList {
        if let Some((p, po)) = self.pending.take() {
            self.emit(p, po);
        }
        RankList {
            sections: self.state,
        }
    }
}

/// Applies the two merge rules of the normal form to the last two sections
/// of `state` until neither applies.
fn merge_tail(state: &mut Vec<Section>) {
    while state.len() >= 2 {
        let n = state.len();
        let (u, t) = (&state[n - 2], &state[n - 1]);
        if u.dims.len() == t.dims.len() + 1
            && u.dims[1..] == t.dims[..]
            && u64::from(t.start)
                == u64::from(u.start) + u64::from(u.dims[0].0) * u64::from(u.dims[0].1)
        {
            state.pop();
            state[n - 2].dims[0].0 += 1;
        } else if u.dims == t.dims {
            let delta = t.start - u.start;
            state.pop();
            state[n - 2].dims.insert(0, (2, delta));
        } else {
            break;
        }
    }
}

/// Streams the atoms of `x` onto `state`, exactly as if they were pushed one
/// by one, but by whole children (iterations of the outermost dimension)
/// and, where the children only extend the last section, by whole runs of
/// children.
///
/// `x` must be rebuilt unchanged by the stream from its own atoms, and must
/// not touch the last section of `state`.
fn feed(state: &mut Vec<Section>, x: &Section) {
    if x.is_atomic() {
        state.push(x.clone());
        merge_tail(state);
        return;
    }
    let (n, d) = x.dims[0];
    let inner = &x.dims[1..];
    let mut i = 0;
    while i < n {
        let cstart = u64::from(x.start) + u64::from(i) * u64::from(d);
        if let Some(k) = run_before(state, inner, d, cstart) {
            // Children i.. each form whole (their parts are too small to
            // merge with the last section, and, being translates, do not
            // merge with a copy of the previous child) and then extend the
            // last section to (k+1, d) ++ inner, (k+2, d) ++ inner, ...
            // The only other merge is with the section before it, at the one
            // size where the rules match it: stop there.
            let remaining = n - i;
            let t = match hit(state, inner, d, k) {
                Some(kh) => remaining.min(kh - k),
                None => remaining,
            };
            let last = state.last_mut().expect("run_before saw a section");
            if k == 1 {
                let mut dims = Vec::with_capacity(inner.len() + 1);
                dims.push((1 + t, d));
                dims.extend_from_slice(inner);
                last.dims = dims;
            } else {
                last.dims[0].0 = k + t;
            }
            merge_tail(state);
            i += t;
            continue;
        }
        feed(state, &x.child(i));
        i += 1;
    }
}

/// If the last section of `state` is a run of `k` children of shape `inner`
/// at stride `d` (a single child when `k == 1`) that the child at `cstart`
/// continues, returns `k`.
fn run_before(state: &[Section], inner: &[(u32, u32)], d: u32, cstart: u64) -> Option<u32> {
    let last = state.last()?;
    if last.dims == inner && u64::from(last.start) + u64::from(d) == cstart {
        return Some(1);
    }
    match last.dims.split_first() {
        Some((&(k, e), rest))
            if e == d
                && rest == inner
                && u64::from(last.start) + u64::from(k) * u64::from(d) == cstart =>
        {
            Some(k)
        }
        _ => None,
    }
}

/// The size `k' > k` at which the last section, grown to
/// `(k', d) ++ inner`, would merge with the section before it, if any.
fn hit(state: &[Section], inner: &[(u32, u32)], d: u32, k: u32) -> Option<u32> {
    let n = state.len();
    if n < 2 {
        return None;
    }
    let (v, l) = (&state[n - 2], &state[n - 1]);
    let m = inner.len();
    // pair: v has the grown shape.
    if v.dims.len() == m + 1 && v.dims[0].1 == d && v.dims[1..] == *inner && v.dims[0].0 > k {
        return Some(v.dims[0].0);
    }
    // extend: v is a run of sections of the grown shape that l continues.
    if v.dims.len() == m + 2
        && v.dims[1].1 == d
        && v.dims[2..] == *inner
        && v.dims[1].0 > k
        && u64::from(l.start)
            == u64::from(v.start) + u64::from(v.dims[0].0) * u64::from(v.dims[0].1)
    {
        return Some(v.dims[1].0);
    }
    None
}
