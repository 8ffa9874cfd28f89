//! Value sequences: the lossless, compact form of one parameter over all the
//! executions of one event in a loop nest.
//!
//! Wu and Mueller 2012 §2 keeps the parameters of an event that sits in a loop in an RSD
//! "with the parameters and information of a single MPI event nested in a
//! loop"; ScalaTrace merges them into per-value vectors (see PRIOR-ART.md) so
//! that differing parameters never break a loop. We do the same, but keep the
//! *order* of the values exactly, because `--expand` must reproduce the raw
//! log line for line.
//!
//! # Representation
//!
//! A [`ValueSeq`] is built from two levels of arithmetic structure:
//!
//! * a **segment** is an arithmetic progression `start, start+stride, ...`
//!   (`len` values). A constant is a segment of stride 0; request ids that grow
//!   by a fixed amount per iteration are one segment.
//! * a **repeat block** is a short list of blocks (the *period*, at most
//!   [`MAX_PERIOD`] blocks) repeated `reps` times, where repetition `r` adds
//!   `r * shift` to every value. A peer that rotates over four neighbours is a
//!   period of two segments with shift 0; a tag that is constant inside an
//!   inner loop and counts up in the outer loop is one constant segment with
//!   shift 1. Periods may hold repeat blocks, so values that follow a loop
//!   nest of any depth (`100 i + 10 j + k`) stay constant-size.
//!
//! The sequence is a list of blocks (segments or repeat blocks) followed by one
//! *open* segment that can still grow. A constant or strided sequence is only
//! the open segment and owns no heap memory.
//!
//! # Cost
//!
//! [`ValueSeq::push`] is amortised O(1): a value either extends the open
//! segment, or closes it; a closed segment is then folded with the same two
//! rules as events in `compress::intra` (extend the repeat block before the
//! tail, or fold two equal runs of blocks), each looking at most
//! [`MAX_PERIOD`] blocks back and failing fast on the newest block in
//! practice. Every successful fold removes a block, so the folding steps are
//! paid for by the blocks they remove. [`ValueSeq::append`] works on
//! whole segments and repeat blocks, so appending a compressed sequence costs
//! in proportion to its compressed size, not to its length.
//!
//! Arithmetic is wrapping (two's complement): `start + i * stride` is computed
//! in the ring of 64-bit integers, which is exact for every sequence that was
//! built by pushes, whatever the values, and can never overflow or panic.

#![warn(missing_docs)]

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::depth::guarded;

/// The longest period, in segments, that a repeat block may have. A rotation
/// over up to 32 distinct values (for example the 26 neighbours of a 3D
/// stencil with corners) is found; longer periods stay as plain segments,
/// which is lossless but not constant-size.
pub const MAX_PERIOD: usize = 16;

/// An arithmetic progression of `len` values. `len >= 1` for every segment
/// stored in a block; a segment of one value has stride 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Seg {
    pub(crate) start: i64,
    pub(crate) stride: i64,
    pub(crate) len: u64,
}

impl Seg {
    fn one(v: i64) -> Seg {
        Seg {
            start: v,
            stride: 0,
            len: 1,
        }
    }

    #[inline]
    fn get(&self, i: u64) -> i64 {
        self.start.wrapping_add(self.stride.wrapping_mul(i as i64))
    }

    #[inline]
    fn last(&self) -> i64 {
        self.get(self.len.saturating_sub(1))
    }

    /// The value that would extend this segment (for `len >= 2`).
    #[inline]
    fn next(&self) -> i64 {
        self.last().wrapping_add(self.stride)
    }

    /// Whether `self` equals `base` with `delta` added to every value.
    #[inline]
    fn is_shift_of(&self, base: &Seg, delta: i64) -> bool {
        self.len == base.len
            && self.stride == base.stride
            && self.start == base.start.wrapping_add(delta)
    }

    fn shifted(&self, delta: i64) -> Seg {
        Seg {
            start: self.start.wrapping_add(delta),
            ..*self
        }
    }
}

/// A period of blocks repeated `reps >= 2` times; repetition `r` adds
/// `r * shift` to each value. Periods may hold repeat blocks themselves, so a
/// value that depends on three loop indices (`100 i + 10 j + k`) is a repeat
/// of a repeat of a segment.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Rep {
    #[serde(deserialize_with = "guarded")]
    pub(crate) period: Vec<Block>,
    pub(crate) reps: u64,
    pub(crate) shift: i64,
    /// Values in one repetition.
    pub(crate) period_len: u64,
}

impl Rep {
    fn len(&self) -> u64 {
        self.reps.wrapping_mul(self.period_len)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Block {
    Seg(Seg),
    Rep(Box<Rep>),
}

impl Block {
    fn len(&self) -> u64 {
        match self {
            Block::Seg(s) => s.len,
            Block::Rep(r) => r.len(),
        }
    }

    fn first(&self) -> i64 {
        match self {
            Block::Seg(s) => s.start,
            Block::Rep(r) => r.period.first().map_or(0, Block::first),
        }
    }

    /// Whether `self` equals `base` with `delta` added to every value.
    fn is_shift_of(&self, base: &Block, delta: i64) -> bool {
        match (self, base) {
            (Block::Seg(a), Block::Seg(b)) => a.is_shift_of(b, delta),
            (Block::Rep(a), Block::Rep(b)) => {
                a.reps == b.reps
                    && a.shift == b.shift
                    && a.period_len == b.period_len
                    && a.period.len() == b.period.len()
                    && a.period
                        .iter()
                        .zip(&b.period)
                        .all(|(x, y)| x.is_shift_of(y, delta))
            }
            _ => false,
        }
    }

    fn shifted(&self, delta: i64) -> Block {
        match self {
            Block::Seg(s) => Block::Seg(s.shifted(delta)),
            Block::Rep(r) => Block::Rep(Box::new(Rep {
                period: r.period.iter().map(|b| b.shifted(delta)).collect(),
                ..**r
            })),
        }
    }

    fn get(&self, i: u64) -> i64 {
        match self {
            Block::Seg(s) => s.get(i),
            Block::Rep(r) => {
                let rep = i / r.period_len.max(1);
                let delta = r.shift.wrapping_mul(rep as i64);
                get_in(&r.period, i % r.period_len.max(1)).wrapping_add(delta)
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Block::Seg(_) => 0,
            Block::Rep(r) => {
                std::mem::size_of::<Rep>()
                    + r.period.capacity() * std::mem::size_of::<Block>()
                    + r.period.iter().map(Block::heap_bytes).sum::<usize>()
            }
        }
    }
}

fn get_in(blocks: &[Block], mut i: u64) -> i64 {
    for b in blocks {
        let n = b.len();
        if i < n {
            return b.get(i);
        }
        i -= n;
    }
    0
}

/// A lossless sequence of `i64` values in a compact form (see the module
/// documentation): constant, strided, periodic and periodic-with-drift runs,
/// nested to any depth, take constant space; anything else degrades to about
/// 16 bytes per value.
///
/// Two sequences with the same values may have different internal forms
/// (segmentation is greedy and depends on how the sequence was built), so
/// equality is by value: use [`ValueSeq::iter`] to compare.
///
/// The serialized form is the internal one; a deserialized sequence must be
/// checked with [`ValueSeq::is_consistent`] before it is read.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct ValueSeq {
    len: u64,
    /// Closed blocks.
    blocks: Vec<Block>,
    /// The open segment (`len == 0` when there is none).
    cur: Seg,
}

/// The shape of a [`ValueSeq`], for display and for callers (extrapolation,
/// analysis) that want to recognise the simple cases the way ScalaTrace
/// names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqForm {
    /// No values.
    Empty,
    /// `len` copies of `value`.
    Const {
        /// The value.
        value: i64,
        /// How many times.
        len: u64,
    },
    /// `start, start + stride, ...` (`len` values, `len >= 2`, `stride != 0`).
    Strided {
        /// First value.
        start: i64,
        /// Difference between consecutive values.
        stride: i64,
        /// Number of values.
        len: u64,
    },
    /// Anything else: `blocks` segments and repeat blocks plus the open segment.
    Blocks {
        /// Number of closed top-level blocks.
        blocks: usize,
        /// Number of values.
        len: u64,
    },
}

impl ValueSeq {
    /// An empty sequence.
    pub fn new() -> ValueSeq {
        ValueSeq::default()
    }

    /// `len` copies of `value`, in O(1) space.
    pub fn constant(value: i64, len: u64) -> ValueSeq {
        ValueSeq {
            len,
            cur: if len == 0 {
                Seg::default()
            } else {
                Seg {
                    start: value,
                    stride: 0,
                    len,
                }
            },
            ..ValueSeq::default()
        }
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The form the sequence is kept in.
    pub fn form(&self) -> SeqForm {
        if self.len == 0 {
            SeqForm::Empty
        } else if !self.blocks.is_empty() {
            SeqForm::Blocks {
                blocks: self.blocks.len(),
                len: self.len,
            }
        } else if self.cur.stride == 0 || self.cur.len == 1 {
            SeqForm::Const {
                value: self.cur.start,
                len: self.cur.len,
            }
        } else {
            SeqForm::Strided {
                start: self.cur.start,
                stride: self.cur.stride,
                len: self.cur.len,
            }
        }
    }

    /// Appends one value. Amortised O(1).
    pub fn push(&mut self, v: i64) {
        self.len = self.len.wrapping_add(1);
        match self.cur.len {
            0 => self.cur = Seg::one(v),
            1 => {
                self.cur.stride = v.wrapping_sub(self.cur.start);
                self.cur.len = 2;
            }
            _ => {
                if v == self.cur.next() {
                    self.cur.len += 1;
                } else {
                    let s = std::mem::replace(&mut self.cur, Seg::one(v));
                    self.close(Block::Seg(s));
                }
            }
        }
    }

    /// Appends all values of `other`, in order, working on whole segments and
    /// repeat blocks (cost proportional to `other`'s compressed size).
    pub fn append(&mut self, other: &ValueSeq) {
        for b in &other.blocks {
            self.push_block(b);
        }
        if other.cur.len > 0 {
            self.push_seg(other.cur);
        }
    }

    /// The `i`-th value, or `None` past the end. O(number of blocks).
    pub fn get(&self, i: u64) -> Option<i64> {
        if i >= self.len {
            return None;
        }
        let closed = self.len - self.cur.len;
        Some(if i < closed {
            get_in(&self.blocks, i)
        } else {
            self.cur.get(i - closed)
        })
    }

    /// The sequence as a flat list of words, for programs that evaluate it
    /// outside Rust (the C benchmarks of `rankscale codegen`): the number of
    /// blocks, then each block; the open segment is the last block. A
    /// segment is `0, start, stride, len`; a repeat block is `1, words,
    /// reps, shift, period_len, blocks`, then its period's blocks, where
    /// `words` counts the block's words from `reps` on, so that a reader
    /// can skip it. Value `i` is found by walking the blocks as
    /// [`ValueSeq::get`] does; arithmetic wraps in 64 bits.
    pub fn flatten(&self, out: &mut Vec<i64>) {
        fn block(b: &Block, out: &mut Vec<i64>) {
            match b {
                Block::Seg(s) => seg(s, out),
                Block::Rep(r) => {
                    out.push(1);
                    let at = out.len();
                    out.push(0);
                    out.extend([r.reps as i64, r.shift, r.period_len as i64]);
                    out.push(r.period.len() as i64);
                    for b in &r.period {
                        block(b, out);
                    }
                    out[at] = (out.len() - at - 1) as i64;
                }
            }
        }
        fn seg(s: &Seg, out: &mut Vec<i64>) {
            out.extend([0, s.start, s.stride, s.len as i64]);
        }
        let open = usize::from(self.cur.len > 0);
        out.push((self.blocks.len() + open) as i64);
        for b in &self.blocks {
            block(b, out);
        }
        if open == 1 {
            seg(&self.cur, out);
        }
    }

    /// The last value.
    pub fn last(&self) -> Option<i64> {
        if self.cur.len > 0 {
            return Some(self.cur.last());
        }
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    /// The values in order. Each step is O(1) amortised.
    pub fn iter(&self) -> SeqIter<'_> {
        SeqIter {
            seq: self,
            stack: vec![Ctx {
                blocks: &self.blocks,
                idx: 0,
                delta: 0,
                rep: 0,
                reps: 1,
                shift: 0,
            }],
            pos: 0,
        }
    }

    /// Approximate heap bytes owned by this sequence (for memory accounting
    /// in tests and statistics).
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.blocks.iter().map(Block::heap_bytes).sum::<usize>()
    }

    /// The same sequence with `delta` added to every value (wrapping), in
    /// O(compressed size). The inter-node merge uses it to turn a peer kept
    /// relative to one rank into an absolute one.
    pub fn offset(&self, delta: i64) -> ValueSeq {
        ValueSeq {
            len: self.len,
            blocks: self.blocks.iter().map(|b| b.shifted(delta)).collect(),
            cur: if self.cur.len == 0 {
                self.cur
            } else {
                self.cur.shifted(delta)
            },
        }
    }

    /// Whether `self` and `other` have the same internal form (which implies
    /// the same values). O(compressed size); the merge uses it as its
    /// equality because sequences built by the same pushes have the same form.
    pub fn same_form(&self, other: &ValueSeq) -> bool {
        self.len == other.len && self.cur == other.cur && self.blocks == other.blocks
    }

    /// A hash of the internal form, consistent with [`ValueSeq::same_form`].
    pub fn form_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.len.hash(&mut h);
        self.cur.hash(&mut h);
        self.blocks.hash(&mut h);
        h.finish()
    }

    /// The sum of the values, computed on the compressed form (a sequence of
    /// 2^62 values sums as fast as one of two); `None` when it does not fit
    /// an `i128`. A loop's iterations are the sum of its counts, so this is
    /// how a declared loop is checked against its body before anything
    /// expands it.
    pub fn sum(&self) -> Option<i128> {
        fn seg(s: &Seg) -> Option<i128> {
            let n = i128::from(s.len);
            let tri = n.checked_mul(n - 1)? / 2;
            i128::from(s.start)
                .checked_mul(n)?
                .checked_add(i128::from(s.stride).checked_mul(tri)?)
        }
        fn block(b: &Block) -> Option<i128> {
            match b {
                Block::Seg(s) => seg(s),
                Block::Rep(r) => {
                    let mut one = 0i128;
                    for b in &r.period {
                        one = one.checked_add(block(b)?)?;
                    }
                    let reps = i128::from(r.reps);
                    let tri = reps.checked_mul(reps - 1)? / 2;
                    one.checked_mul(reps)?.checked_add(
                        i128::from(r.shift)
                            .checked_mul(i128::from(r.period_len))?
                            .checked_mul(tri)?,
                    )
                }
            }
        }
        let mut total = if self.cur.len > 0 { seg(&self.cur)? } else { 0 };
        for b in &self.blocks {
            total = total.checked_add(block(b)?)?;
        }
        Some(total)
    }

    /// All values but the last, and the last, on the compressed form: a
    /// loop's counts split into the finished executions and the current one
    /// without visiting the others (a projection that collected them one by
    /// one took minutes for a loop executed 10^9 times). `None` when empty.
    pub fn split_last(&self) -> Option<(ValueSeq, i64)> {
        fn shift(b: &Block, d: i64) -> Block {
            match b {
                Block::Seg(s) => Block::Seg(s.shifted(d)),
                Block::Rep(r) => Block::Rep(Box::new(Rep {
                    period: r.period.iter().map(|b| shift(b, d)).collect(),
                    ..(**r).clone()
                })),
            }
        }
        /// The blocks of `b` without its last value, and that value.
        fn pop(b: &Block) -> Option<(Vec<Block>, i64)> {
            match b {
                Block::Seg(s) => {
                    let rest = (s.len > 1).then(|| {
                        Block::Seg(Seg {
                            len: s.len - 1,
                            ..*s
                        })
                    });
                    Some((rest.into_iter().collect(), s.last()))
                }
                Block::Rep(r) => {
                    let mut out = Vec::new();
                    match r.reps {
                        0 => return None,
                        1 => {}
                        // One repetition left is its period, unrolled: a
                        // repeat block repeats at least twice.
                        2 => out.extend(r.period.iter().cloned()),
                        n => out.push(Block::Rep(Box::new(Rep {
                            reps: n - 1,
                            ..(**r).clone()
                        }))),
                    }
                    let delta = r.shift.wrapping_mul((r.reps - 1) as i64);
                    let mut last: Vec<Block> = r.period.iter().map(|b| shift(b, delta)).collect();
                    let (tail, v) = pop(&last.pop()?)?;
                    out.extend(last);
                    out.extend(tail);
                    Some((out, v))
                }
            }
        }
        if self.len == 0 {
            return None;
        }
        let mut rest = self.clone();
        rest.len -= 1;
        if rest.cur.len > 0 {
            let v = rest.cur.last();
            rest.cur.len -= 1;
            if rest.cur.len == 0 {
                rest.cur = Seg::default();
            }
            return Some((rest, v));
        }
        let b = rest.blocks.pop()?;
        let (tail, v) = pop(&b)?;
        rest.blocks.extend(tail);
        Some((rest, v))
    }

    /// The least value, computed on the compressed form; `None` for an
    /// empty sequence. Loop counts must not be negative: an expansion
    /// would take -1 for 2^64 - 1 iterations.
    pub fn min(&self) -> Option<i128> {
        fn seg(s: &Seg) -> i128 {
            let last = i128::from(s.start)
                .saturating_add(i128::from(s.stride).saturating_mul(i128::from(s.len) - 1));
            i128::from(s.start).min(last)
        }
        fn block(b: &Block) -> Option<i128> {
            match b {
                Block::Seg(s) => Some(seg(s)),
                Block::Rep(r) => {
                    let low = r.period.iter().filter_map(block).min()?;
                    let drift = i128::from(r.shift).saturating_mul(i128::from(r.reps) - 1);
                    Some(low.saturating_add(drift.min(0)))
                }
            }
        }
        let cur = (self.cur.len > 0).then(|| seg(&self.cur));
        self.blocks.iter().filter_map(block).chain(cur).min()
    }

    /// Whether the internal form obeys the invariants that reading relies on
    /// (lengths add up, blocks are non-empty). Always true for sequences
    /// built by this module; a sequence read from a file must pass it.
    pub fn is_consistent(&self) -> bool {
        fn block_len(b: &Block) -> Option<u64> {
            match b {
                Block::Seg(s) => (s.len >= 1).then_some(s.len),
                Block::Rep(r) => {
                    if r.period.is_empty() || r.reps < 1 {
                        return None;
                    }
                    let mut n = 0u64;
                    for b in &r.period {
                        n = n.checked_add(block_len(b)?)?;
                    }
                    (n == r.period_len).then_some(())?;
                    n.checked_mul(r.reps)
                }
            }
        }
        let mut n = 0u64;
        for b in &self.blocks {
            match block_len(b).and_then(|l| n.checked_add(l)) {
                Some(v) => n = v,
                None => return false,
            }
        }
        n.checked_add(self.cur.len) == Some(self.len)
    }

    /// Appends a whole segment (`s.len >= 1`).
    fn push_seg(&mut self, s: Seg) {
        if s.len == 0 {
            return;
        }
        self.len = self.len.wrapping_add(s.len);
        match self.cur.len {
            0 => {
                self.cur = s;
                return;
            }
            1 => {
                let stride = s.start.wrapping_sub(self.cur.start);
                if s.len == 1 || s.stride == stride {
                    self.cur.stride = stride;
                    self.cur.len += s.len;
                    return;
                }
            }
            _ => {
                if s.start == self.cur.next() && (s.len == 1 || s.stride == self.cur.stride) {
                    self.cur.len += s.len;
                    return;
                }
            }
        }
        let c = std::mem::replace(&mut self.cur, s);
        self.close(Block::Seg(c));
    }

    /// Appends a whole block.
    fn push_block(&mut self, b: &Block) {
        let r = match b {
            Block::Seg(s) => return self.push_seg(*s),
            Block::Rep(r) => r,
        };
        if self.cur.len > 0 {
            let c = std::mem::take(&mut self.cur);
            self.close(Block::Seg(c));
        }
        // Continue the last repeat block if `r` is its next repetitions.
        if let Some(Block::Rep(last)) = self.blocks.last_mut()
            && last.period.len() == r.period.len()
            && last.shift == r.shift
        {
            let delta = last.shift.wrapping_mul(last.reps as i64);
            if r.period
                .iter()
                .zip(&last.period)
                .all(|(a, b)| a.is_shift_of(b, delta))
            {
                last.reps = last.reps.wrapping_add(r.reps);
                self.len = self.len.wrapping_add(r.len());
                return;
            }
        }
        // A short block is replayed block by block so that the folding in
        // `close` can join it with its neighbours; a long one is kept whole.
        if (r.reps as usize).saturating_mul(r.period.len()) <= 2 * MAX_PERIOD {
            for k in 0..r.reps {
                let delta = r.shift.wrapping_mul(k as i64);
                for b in &r.period {
                    match b {
                        Block::Seg(s) => self.push_seg(s.shifted(delta)),
                        rep => self.push_block(&rep.shifted(delta)),
                    }
                }
            }
            return;
        }
        self.len = self.len.wrapping_add(r.len());
        self.close(b.clone());
    }

    /// Adds a closed block and folds repetitions, with the same two rules as
    /// the RSD folding of events in `intra`, until neither applies:
    /// (a) the last `t` blocks are one more repetition of the repeat block
    /// before them; (b) the last `p` blocks repeat the `p` before them,
    /// shifted by a constant. Both look at most [`MAX_PERIOD`] blocks back.
    fn close(&mut self, b: Block) {
        self.blocks.push(b);
        while self.try_extend() || self.try_fold() {}
    }

    fn try_extend(&mut self) -> bool {
        let nb = self.blocks.len();
        for t in 1..=MAX_PERIOD.min(nb.saturating_sub(1)) {
            let Block::Rep(r) = &self.blocks[nb - t - 1] else {
                continue;
            };
            if r.period.len() != t {
                continue;
            }
            let delta = r.shift.wrapping_mul(r.reps as i64);
            let ok = r
                .period
                .iter()
                .zip(&self.blocks[nb - t..])
                .all(|(p, b)| b.is_shift_of(p, delta));
            if ok {
                self.blocks.truncate(nb - t);
                if let Some(Block::Rep(r)) = self.blocks.last_mut() {
                    r.reps += 1;
                }
                return true;
            }
        }
        false
    }

    fn try_fold(&mut self) -> bool {
        let nb = self.blocks.len();
        for p in 1..=MAX_PERIOD.min(nb / 2) {
            let (a, b) = (nb - 2 * p, nb - p);
            let delta = self.blocks[b].first().wrapping_sub(self.blocks[a].first());
            // The newest pair first: it is the one most likely to differ.
            if !self.blocks[nb - 1].is_shift_of(&self.blocks[b - 1], delta) {
                continue;
            }
            if (0..p).all(|i| self.blocks[b + i].is_shift_of(&self.blocks[a + i], delta)) {
                self.blocks.truncate(b);
                let period: Vec<Block> = self.blocks.drain(a..).collect();
                let period_len = period.iter().map(Block::len).fold(0u64, u64::wrapping_add);
                self.blocks.push(Block::Rep(Box::new(Rep {
                    period,
                    reps: 2,
                    shift: delta,
                    period_len,
                })));
                return true;
            }
        }
        false
    }
}

impl fmt::Debug for ValueSeq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.form())
    }
}

impl FromIterator<i64> for ValueSeq {
    fn from_iter<I: IntoIterator<Item = i64>>(iter: I) -> ValueSeq {
        let mut s = ValueSeq::new();
        for v in iter {
            s.push(v);
        }
        s
    }
}

/// One level of a [`SeqIter`]: a list of blocks played `reps` times.
#[derive(Clone, Debug)]
struct Ctx<'a> {
    blocks: &'a [Block],
    idx: usize,
    /// Added to every value of the current repetition.
    delta: i64,
    rep: u64,
    reps: u64,
    shift: i64,
}

/// Sequential reader over a [`ValueSeq`]; O(1) amortised per value.
#[derive(Clone, Debug)]
pub struct SeqIter<'a> {
    seq: &'a ValueSeq,
    /// Empty once the closed blocks are done; then `cur` is read.
    stack: Vec<Ctx<'a>>,
    /// Position inside the current segment.
    pos: u64,
}

impl Iterator for SeqIter<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        loop {
            let Some(ctx) = self.stack.last_mut() else {
                let c = &self.seq.cur;
                if self.pos < c.len {
                    self.pos += 1;
                    return Some(c.get(self.pos - 1));
                }
                return None;
            };
            match ctx.blocks.get(ctx.idx) {
                Some(Block::Seg(s)) => {
                    if self.pos < s.len {
                        self.pos += 1;
                        return Some(s.get(self.pos - 1).wrapping_add(ctx.delta));
                    }
                    self.pos = 0;
                    ctx.idx += 1;
                }
                Some(Block::Rep(r)) => {
                    let inner = Ctx {
                        blocks: &r.period,
                        idx: 0,
                        delta: ctx.delta,
                        rep: 0,
                        reps: r.reps,
                        shift: r.shift,
                    };
                    self.stack.push(inner);
                }
                None => {
                    ctx.rep += 1;
                    if ctx.rep < ctx.reps && !ctx.blocks.is_empty() {
                        ctx.idx = 0;
                        ctx.delta = ctx.delta.wrapping_add(ctx.shift);
                        continue;
                    }
                    self.stack.pop();
                    if let Some(parent) = self.stack.last_mut() {
                        parent.idx += 1;
                    }
                }
            }
        }
    }
}

impl ValueSeq {
    /// Whether the sequence is `head` over and over: value `i` is
    /// `head[i % head.len()]`. Walks the compressed form, never the values
    /// one by one: a repeat block is checked for at most `head.len()`
    /// repetitions (after that its repetitions meet `head` at phases already
    /// checked), so the cost does not grow with the run's length. The
    /// tracer converts a rank's trace this way at every snapshot, which a
    /// long run takes many times.
    #[doc(hidden)]
    pub fn repeats(&self, head: &[i64]) -> bool {
        if head.is_empty() {
            return self.len == 0;
        }
        let mut pos = 0;
        self.blocks
            .iter()
            .all(|b| block_repeats(b, 0, &mut pos, head))
            && (self.cur.len == 0 || seg_repeats(&self.cur, 0, &mut pos, head))
    }
}

/// [`ValueSeq::repeats`] for the values of `s` plus `add`, starting at
/// phase `*pos` of `head`; advances `*pos` (kept below `head.len()`).
fn seg_repeats(s: &Seg, add: i64, pos: &mut u64, head: &[i64]) -> bool {
    let k = head.len() as u64;
    // A segment whose values change over k steps cannot repeat with period
    // k; one whose values do not (`stride * k == 0`, wrapping) repeats its
    // first k values.
    if s.len > k && s.stride.wrapping_mul(k as i64) != 0 {
        return false;
    }
    let ok = (0..s.len.min(k)).all(|i| {
        let v = s
            .start
            .wrapping_add(add)
            .wrapping_add(s.stride.wrapping_mul(i as i64));
        v == head[((*pos + i) % k) as usize]
    });
    *pos = (*pos + s.len % k) % k;
    ok
}

fn block_repeats(b: &Block, add: i64, pos: &mut u64, head: &[i64]) -> bool {
    let r = match b {
        Block::Seg(s) => return seg_repeats(s, add, pos, head),
        Block::Rep(r) => r,
    };
    let k = head.len() as u64;
    // Repetition j starts at phase pos + j * L; the phases cycle after m
    // repetitions, so repetitions j and j + m meet the same head values and
    // must hold the same values: m * shift == 0.
    let l = r.period_len % k;
    let m = k / gcd(l, k);
    if r.reps > m && r.shift.wrapping_mul(m as i64) != 0 {
        return false;
    }
    let start = *pos;
    for j in 0..r.reps.min(m) {
        let add = add.wrapping_add(r.shift.wrapping_mul(j as i64));
        if !r.period.iter().all(|b| block_repeats(b, add, pos, head)) {
            return false;
        }
    }
    *pos = (start + (r.reps % k) * l) % k;
    true
}

#[doc(hidden)]
pub fn gcd(a: u64, b: u64) -> u64 {
    if a == 0 { b } else { gcd(b % a, a) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sum_is_computed_on_the_compressed_form() {
        let mut s = ValueSeq::new();
        let mut plain = Vec::new();
        for i in 0..5i64 {
            for j in 0..4i64 {
                for k in [3i64, 1, 4] {
                    let v = 100 * i + 10 * j + k;
                    s.push(v);
                    plain.push(v);
                }
            }
        }
        s.push(-7);
        plain.push(-7);
        assert_eq!(s.sum(), Some(plain.iter().map(|&v| i128::from(v)).sum()));
        assert_eq!(ValueSeq::constant(3, 1 << 62).sum(), Some(3i128 << 62));
        assert_eq!(ValueSeq::new().sum(), Some(0));
        assert_eq!(ValueSeq::constant(i64::MAX, u64::MAX).sum(), None);
        assert_eq!(s.min(), Some(-7));
        let mut down = ValueSeq::new();
        for i in 0..6i64 {
            for k in [5i64, 2, 9] {
                down.push(k - 3 * i);
            }
        }
        assert_eq!(down.min(), Some(2 - 15));
        assert_eq!(ValueSeq::new().min(), None);
        // Splitting off the last value keeps every other one, whatever
        // form the sequence ends in (an open segment, a segment, a repeat
        // of repeats).
        for seq in [s, down, ValueSeq::constant(4, 1 << 40)] {
            let (rest, last) = seq.split_last().unwrap();
            assert!(rest.is_consistent());
            assert_eq!(rest.len() + 1, seq.len());
            assert_eq!(Some(last), seq.get(seq.len() - 1));
            if seq.len() < 1000 {
                let all: Vec<i64> = seq.iter().collect();
                assert_eq!(rest.iter().collect::<Vec<_>>(), all[..all.len() - 1]);
            }
        }
        assert!(ValueSeq::new().split_last().is_none());
        // Every prefix of a three-level pattern, so that the split meets
        // every form the pushes leave behind.
        let values: Vec<i64> = (0..4)
            .flat_map(|i| (0..3).flat_map(move |j| [2, 7, 1].map(|k| 100 * i + 10 * j + k)))
            .collect();
        let mut seq = ValueSeq::new();
        for (n, &v) in values.iter().enumerate() {
            seq.push(v);
            let (rest, last) = seq.split_last().unwrap();
            assert!(rest.is_consistent(), "prefix {n}");
            assert_eq!(last, v, "prefix {n}");
            assert_eq!(rest.iter().collect::<Vec<_>>(), values[..n], "prefix {n}");
        }
        // Pushes always leave an open segment; a decoded or appended
        // sequence may end in a repeat of repeats, with 2, 3 and 4
        // repetitions.
        for reps in 2..=4 {
            let inner = Rep {
                period: vec![Block::Seg(Seg::one(1))],
                reps: 2,
                shift: 3,
                period_len: 1,
            };
            let outer = Rep {
                period: vec![
                    Block::Seg(Seg {
                        start: 2,
                        stride: 5,
                        len: 3,
                    }),
                    Block::Rep(Box::new(inner)),
                ],
                reps,
                shift: 100,
                period_len: 5,
            };
            let seq = ValueSeq {
                len: 1 + 5 * reps,
                blocks: vec![Block::Seg(Seg::one(9)), Block::Rep(Box::new(outer))],
                cur: Seg::default(),
            };
            assert!(seq.is_consistent());
            let all: Vec<i64> = seq.iter().collect();
            let (rest, last) = seq.split_last().unwrap();
            assert!(rest.is_consistent(), "{reps}");
            assert_eq!(last, *all.last().unwrap(), "{reps}");
            assert_eq!(
                rest.iter().collect::<Vec<_>>(),
                all[..all.len() - 1],
                "{reps}"
            );
        }
    }

    /// Value `i` of a flattened sequence, read the way the C runtime of
    /// `rankscale codegen` reads it: the format's independent reader.
    fn flat_get(w: &[i64], i: u64) -> Option<i64> {
        fn blocks(w: &[i64], n: i64, mut i: u64) -> Option<(i64, usize)> {
            let mut at = 0;
            for _ in 0..n {
                if w[at] == 0 {
                    let (start, stride, len) = (w[at + 1], w[at + 2], w[at + 3] as u64);
                    if i < len {
                        return Some((start.wrapping_add(stride.wrapping_mul(i as i64)), 0));
                    }
                    i -= len;
                    at += 4;
                } else {
                    let words = w[at + 1] as usize;
                    let (reps, shift, plen) = (w[at + 2] as u64, w[at + 3], w[at + 4] as u64);
                    if i < reps * plen {
                        let (v, _) = blocks(&w[at + 6..], w[at + 5], i % plen)?;
                        return Some((v.wrapping_add(shift.wrapping_mul((i / plen) as i64)), 0));
                    }
                    i -= reps * plen;
                    at += 2 + words;
                }
            }
            None
        }
        blocks(&w[1..], w[0], i).map(|(v, _)| v)
    }

    #[test]
    fn a_flattened_sequence_gives_the_same_values() {
        let nest: Vec<i64> = (0..3)
            .flat_map(|i| (0..4).flat_map(move |j| (0..5).map(move |k| 100 * i + 10 * j + k)))
            .collect();
        let mut rng = crate::rng::SplitMix64::new(11);
        let random: Vec<i64> = (0..300).map(|_| (rng.next_u64() % 4) as i64).collect();
        let rotate: Vec<i64> = (0..200).map(|i| [1, -1, 8, -8][i % 4]).collect();
        let mut tail = nest.clone();
        tail.extend([7, 7, 9]);
        for values in [nest, random, rotate, tail, vec![], vec![5]] {
            let s: ValueSeq = values.iter().copied().collect();
            let mut w = Vec::new();
            s.flatten(&mut w);
            let got: Vec<i64> = (0..values.len() as u64)
                .map(|i| flat_get(&w, i).expect("a value"))
                .collect();
            assert_eq!(got, values, "{s:?} as {w:?}");
            assert_eq!(flat_get(&w, values.len() as u64), None);
        }
    }

    /// `repeats` agrees with the values, on sequences built as loop nests
    /// build them (rotating peers, tags that count, nested repeats) and on
    /// ones that break the period late.
    #[test]
    fn repeats_agrees_with_the_values() {
        let mut rng = crate::rng::SplitMix64::new(7);
        for case in 0..3000 {
            let k = 1 + (rng.next_u64() % 5) as usize;
            let base: Vec<i64> = (0..k).map(|_| (rng.next_u64() % 3) as i64).collect();
            let n = (rng.next_u64() % 400) as usize;
            let mut values: Vec<i64> = (0..n).map(|i| base[i % k]).collect();
            match case % 4 {
                0 => {}
                1 if n > 0 => {
                    let at = (rng.next_u64() % n as u64) as usize;
                    values[at] += 1;
                }
                2 => values
                    .iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v += (i / (4 * k)) as i64),
                _ => values.extend((0..k).map(|i| base[i] + (i % 2) as i64)),
            }
            let s: ValueSeq = values.iter().copied().collect();
            for hk in 1..=6usize {
                let head: Vec<i64> = values.iter().copied().take(hk).collect();
                if head.len() < hk {
                    continue;
                }
                let truth = values.iter().enumerate().all(|(i, v)| *v == head[i % hk]);
                assert_eq!(
                    s.repeats(&head),
                    truth,
                    "case {case}, k {hk}: {values:?} as {s:?}"
                );
            }
        }
    }

    fn check(values: &[i64]) -> ValueSeq {
        let s: ValueSeq = values.iter().copied().collect();
        assert_eq!(s.len(), values.len() as u64);
        assert_eq!(s.iter().collect::<Vec<_>>(), values, "iter of {s:?}");
        for (i, v) in values.iter().enumerate() {
            assert_eq!(s.get(i as u64), Some(*v), "get({i})");
        }
        assert_eq!(s.get(values.len() as u64), None);
        assert_eq!(s.last(), values.last().copied());
        s
    }

    #[test]
    fn constant_and_strided_sequences_take_no_heap() {
        let s = check(&[7; 1000]);
        assert_eq!(
            s.form(),
            SeqForm::Const {
                value: 7,
                len: 1000
            }
        );
        assert_eq!(s.heap_bytes(), 0);
        let v: Vec<i64> = (0..1000).map(|i| 10 + 8 * i).collect();
        let s = check(&v);
        assert_eq!(
            s.form(),
            SeqForm::Strided {
                start: 10,
                stride: 8,
                len: 1000
            }
        );
        assert_eq!(ValueSeq::constant(3, 5).iter().collect::<Vec<_>>(), [3; 5]);
        assert_eq!(ValueSeq::new().form(), SeqForm::Empty);
    }

    #[test]
    fn rotating_values_fold_into_one_repeat_block() {
        let v: Vec<i64> = (0..10_000).map(|i| [3, -1, 16, -16][i % 4]).collect();
        let s = check(&v);
        assert!(s.blocks.len() <= 2, "{:?}", s.blocks);
        let v: Vec<i64> = (0..9_999).map(|i| [1, 2, 3][i % 3]).collect();
        let s = check(&v);
        assert!(s.blocks.len() <= 3, "{:?}", s.blocks);
    }

    #[test]
    fn outer_counter_with_inner_constant_is_a_shifted_repeat() {
        // tag = outer iteration, constant over an inner loop of 4.
        let v: Vec<i64> = (0..4000).map(|i| i / 4).collect();
        let s = check(&v);
        assert!(s.blocks.len() <= 2, "{:?}", s.blocks);
        // value = 100*i + 10*j + k, a 3-deep nest.
        let v: Vec<i64> = (0..10)
            .flat_map(|i| (0..3).flat_map(move |j| (0..3).map(move |k| 100 * i + 10 * j + k)))
            .collect();
        let s = check(&v);
        assert!(s.blocks.len() <= 3, "{:?}", s.blocks);
    }

    #[test]
    fn random_values_stay_exact() {
        let mut x: u64 = 0x1234_5678;
        let v: Vec<i64> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 7) as i64 - 3
            })
            .collect();
        check(&v);
    }

    #[test]
    fn extreme_values_wrap_exactly() {
        check(&[i64::MIN, i64::MAX, i64::MIN, i64::MAX, 0, -1, i64::MIN]);
        check(&[i64::MAX, i64::MAX - 1, i64::MAX - 2]);
    }

    #[test]
    fn append_equals_pushing_every_value() {
        let parts: Vec<Vec<i64>> = vec![
            vec![1, 2, 3],
            (0..100).map(|i| [5, 9][i % 2]).collect(),
            vec![4; 50],
            (0..64).map(|i| i / 4).collect(),
            (0..64).map(|i| i / 4 + 16).collect(),
            vec![],
            vec![-3],
        ];
        let mut all = ValueSeq::new();
        let mut want = Vec::new();
        for p in &parts {
            let s: ValueSeq = p.iter().copied().collect();
            all.append(&s);
            want.extend_from_slice(p);
            assert_eq!(all.iter().collect::<Vec<_>>(), want);
            assert_eq!(all.len(), want.len() as u64);
        }
    }

    #[test]
    fn appending_repetitions_of_a_period_stays_small() {
        let block: Vec<i64> = (0..400).map(|i| [3, -1, 16, -16][i % 4]).collect();
        let s: ValueSeq = block.iter().copied().collect();
        let mut all = ValueSeq::new();
        for _ in 0..1000 {
            all.append(&s);
        }
        assert_eq!(all.len(), 400_000);
        assert!(all.blocks.len() <= 3, "{:?}", all.blocks);
        assert_eq!(all.get(399_999), Some(-16));
        assert!(all.heap_bytes() < 1024);
    }
}
