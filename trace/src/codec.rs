//! The lossless split of an [`Event`] into a [`Shape`] and a flat list of
//! integer parameters.
//!
//! Intra-node compression matches events on *structure* (operation, call
//! site, thread and which fields are present) and keeps everything else as
//! value sequences (Wu and Mueller 2012 §2: RSDs record "the parameters and information
//! of a single MPI event nested in a loop"; ScalaTrace matches on signature,
//! opcode and loop shape only, PRIOR-ART.md). A shape is therefore what two
//! iterations of a loop must share, and the parameters are what may change
//! between iterations without breaking the loop: counts, tags, peers, request
//! ids, the communicator, list items and list lengths.
//!
//! Choices, and why:
//!
//! * **Peers are relative** to the recording rank's world rank
//!   (`world - rank`), the location-independent encoding of Wu and Mueller 2012 §2, so
//!   that the inter-node merge can unify the endpoints of SPMD ranks. The
//!   matched source of wildcard receives is relative for the same reason.
//!   `MPI_ANY_SOURCE` and `MPI_PROC_NULL` are sentinel values of the same
//!   parameter (not part of the shape): a rank on a non-periodic boundary
//!   whose loop over directions hits `MPI_PROC_NULL` keeps one loop. A peer's
//!   local rank is kept relative to the caller's rank *in the communicator
//!   used*, so a neighbour offset in a row or column communicator is the same
//!   number on every rank. The caller's own communicator rank is kept as its
//!   difference to its world rank (0 in `MPI_COMM_WORLD`).
//! * **The communicator is a parameter**: a loop that creates, uses and frees
//!   a communicator per iteration sees its id count up and still folds.
//! * **List lengths are parameters**: `Waitsome`/`Testsome` complete a varying
//!   number of requests and `MPI_REQUEST_NULL` entries are left out of
//!   `reqs`, so lengths vary between iterations of the same loop.
//! * **Request ids are kept as they are**: they grow by a constant per
//!   iteration, which a strided [`crate::seq::ValueSeq`] absorbs.
//! * Presence of optional fields, `in_place`, the reduction operation and the
//!   presence parts of a communicator's lineage are the shape: they are the
//!   same for every execution of a call site in SPMD codes, and they decide
//!   how many parameters there are.
//!
//! The encoding is exact: `decode(encode(e)) == e` for every event except its
//! timing, including local peer ranks and the (unprinted) peer/tag of
//! collective transfers.

#![warn(missing_docs)]

use crate::Datatype;
use crate::event::{
    CommCreate, CommId, Event, Io, Matched, Op, Peer, ReduceOp, ReqId, Rma, Tag, Timing, Transfer,
};

/// The parameter value of `MPI_ANY_SOURCE` (no relative peer can take it: a
/// difference of two `i32` ranks is far smaller).
pub const PEER_ANY: i64 = i64::MIN;
/// The parameter value of `MPI_PROC_NULL`.
pub const PEER_NULL: i64 = i64::MIN + 1;
/// The parameter value of `MPI_ANY_TAG`.
pub const TAG_ANY: i64 = i64::MIN;
/// The parameter value of a split's colour or key that equals the caller's
/// rank in the parent communicator.
pub const RANK_SELF: i64 = i64::MIN + 2;

const SEND: u32 = 1;
const RECV: u32 = 1 << 1;
const ROOT: u32 = 1 << 2;
const IN_PLACE: u32 = 1 << 3;
const REQ: u32 = 1 << 4;
const FLAG: u32 = 1 << 5;
const MSG: u32 = 1 << 6;
const VALUE: u32 = 1 << 7;
const CREATE: u32 = 1 << 8;
const C_NEW: u32 = 1 << 9;
const C_COLOR: u32 = 1 << 10;
const C_KEY: u32 = 1 << 11;
const C_STYPE: u32 = 1 << 12;
const C_REORDER: u32 = 1 << 13;
/// A split's colour or key equal to the caller's rank in the parent
/// communicator is stored as [`RANK_SELF`], so that `key = rank` (and
/// `color = rank`) is the same parameter on every rank and SPMD ranks merge,
/// and extrapolate, as one, while `key = 0` stays 0. Traces written before
/// this flag existed store every value as it is; the flag keeps both
/// readable.
const C_REL: u32 = 1 << 14;
/// The call returned an error ([`Event::error`]); its class follows the
/// value parameter (files of format version 9 on).
const ERROR: u32 = 1 << 15;
/// One-sided details ([`Rma`], format version 11 on): which variant.
const RMA_WINDOW: u32 = 1 << 16;
const RMA_TARGET: u32 = 1 << 17;
const RMA_SYNC: u32 = 1 << 18;
const RMA_LOCK: u32 = 1 << 19;
/// Any one-sided variant.
const RMA_VARIANTS: u32 = RMA_WINDOW | RMA_TARGET | RMA_SYNC | RMA_LOCK;
/// A lock's type is set (`Win_lock`).
const RMA_EXCL: u32 = 1 << 20;
/// MPI-IO details ([`Io`], format version 12 on): which variant.
const IO_OPEN: u32 = 1 << 21;
const IO_VIEW: u32 = 1 << 22;
const IO_ACCESS: u32 = 1 << 23;
const IO_SEEK: u32 = 1 << 24;
const IO_HANDLE: u32 = 1 << 25;
/// A data access's offset is stored relative to the caller's block: minus
/// its rank in the file times the access's etypes (see [`encode`]).
const IO_REL: u32 = 1 << 26;
/// Any MPI-IO variant.
const IO_VARIANTS: u32 = IO_OPEN | IO_VIEW | IO_ACCESS | IO_SEEK | IO_HANDLE;
/// Every flag a shape may carry.
const ALL_FLAGS: u32 = (1 << 27) - 1;

/// Items per entry of each list parameter, in encoding order:
/// scounts, rcounts, sdsizes, rdsizes, reqs, done, match (req?, req, src, tag).
const BASE_LISTS: [u8; 7] = [1, 1, 1, 1, 1, 1, 4];
/// The same plus the lineage lists: dims, periods, edges, sources, members.
const CREATE_LISTS: [u8; 12] = [1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1];
/// The base lists plus a one-sided synchronisation's group.
const SYNC_LISTS: [u8; 8] = [1, 1, 1, 1, 1, 1, 4, 1];
/// The lineage lists plus a one-sided synchronisation's group.
const CREATE_SYNC_LISTS: [u8; 13] = [1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1];

/// The names of the base lists ([`BASE_LISTS`]).
const BASE_LIST_NAMES: [&str; 7] = [
    "send_counts",
    "recv_counts",
    "send_dsizes",
    "recv_dsizes",
    "reqs",
    "done",
    "matched",
];
/// The names of every list, in encoding order ([`CREATE_SYNC_LISTS`]).
const LIST_NAMES: [&str; 13] = join(
    BASE_LIST_NAMES,
    ["dims", "periods", "edges", "sources", "members", "group"],
);
/// The names of a synchronisation's lists ([`SYNC_LISTS`]).
const SYNC_LIST_NAMES: [&str; 8] = join(BASE_LIST_NAMES, ["group"]);

/// `a` then `b`, in an array of their joint length `C`.
const fn join<const A: usize, const B: usize, const C: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; C] {
    assert!(A + B == C);
    let mut out = [""; C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < C {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// What two executions of an event must share to be the same event of a loop:
/// operation, call site, thread, and the presence of every optional field.
///
/// 16 bytes, `Copy`, compared and hashed in O(1). The send and receive
/// datatypes are part of it: a call site reduces over one type.
///
/// Serialized as the five words of `to_words` (the datatypes in the second
/// word beside the reduction, so that traces from before them read as
/// "unknown"), and checked when read, so that a corrupted file cannot
/// produce a shape the codec never makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "[u64; 5]", try_from = "[u64; 5]")]
pub struct Shape {
    op: Op,
    redop: u8,
    flags: u32,
    /// The thread index, saturated at 65,535 (threads beyond share it).
    thread: u16,
    stype: Datatype,
    rtype: Datatype,
    site: u64,
}

impl Default for Shape {
    /// The shape of `Event::new(Op::Init)`.
    fn default() -> Shape {
        Shape {
            op: Op::Init,
            redop: 0,
            flags: 0,
            thread: 0,
            stype: Datatype::UNKNOWN,
            rtype: Datatype::UNKNOWN,
            site: 0,
        }
    }
}

impl Shape {
    /// The MPI operation.
    pub fn op(&self) -> Op {
        self.op
    }
    /// Whether the calls of this shape name a communicator, a window or a
    /// file (see [`Event::names_comm`]).
    pub fn names_comm(&self) -> bool {
        self.op.has_comm() || self.flags & (RMA_VARIANTS | IO_VARIANTS) != 0
    }
    /// Whether the calls of this shape returned an error ([`Event::error`]).
    pub fn failed(&self) -> bool {
        self.has(ERROR)
    }
    /// The call-site signature.
    pub fn site(&self) -> u64 {
        self.site
    }
    /// The calling thread's index.
    pub fn thread(&self) -> u32 {
        u32::from(self.thread)
    }
    /// The reduction operation, if the call has one.
    pub fn redop(&self) -> Option<ReduceOp> {
        self.redop
            .checked_sub(1)
            .and_then(|i| ReduceOp::ALL.get(usize::from(i)).copied())
    }

    /// A well-mixed 64-bit hash, the key of the candidate index of
    /// `compress::Compressor`. Stable across runs and ranks.
    pub fn hash64(&self) -> u64 {
        let packed = (self.op as u64)
            | (u64::from(self.thread) << 8)
            | (u64::from(self.stype.0) << 24)
            | (u64::from(self.rtype.0) << 32)
            | (u64::from(self.flags as u16) << 40)
            | (u64::from(self.redop) << 56)
            // Codes past 255 (the listed functions) keep their high bits
            // apart from the reduction operation's.
            | ((self.op as u64) >> 8 << 62);
        // The one-sided flags (above bit 15) mixed in apart: zero for
        // every other call, so their hashes are as before.
        mix64(self.site ^ mix64(packed) ^ u64::from(self.flags >> 16))
    }

    fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// Number of fixed (non-list) parameters, and the entry width of each list
    /// parameter that follows them.
    pub fn layout(&self) -> (usize, &'static [u8]) {
        let mut n = 2; // comm, comm_rank
        if self.has(SEND) {
            n += 5;
        }
        if self.has(RECV) {
            n += 5;
        }
        for f in [ROOT, REQ, FLAG, MSG, VALUE, ERROR] {
            n += usize::from(self.has(f));
        }
        if self.has(CREATE) {
            n += 1; // size
            for f in [C_NEW, C_COLOR, C_KEY, C_STYPE, C_REORDER] {
                n += usize::from(self.has(f));
            }
        }
        n += self.rma_params() + self.io_params();
        if self.has(CREATE) && self.has(RMA_SYNC) {
            (n, &CREATE_SYNC_LISTS)
        } else if self.has(CREATE) {
            (n, &CREATE_LISTS)
        } else if self.has(RMA_SYNC) {
            (n, &SYNC_LISTS)
        } else {
            (n, &BASE_LISTS)
        }
    }

    /// The number of one-sided fixed parameters (see [`encode`]).
    fn rma_params(&self) -> usize {
        if self.has(RMA_WINDOW) {
            2
        } else if self.has(RMA_TARGET) {
            4
        } else if self.has(RMA_SYNC) {
            1
        } else if self.has(RMA_LOCK) {
            3 + usize::from(self.has(RMA_EXCL))
        } else {
            0
        }
    }

    /// The number of MPI-IO fixed parameters (see [`encode`]).
    fn io_params(&self) -> usize {
        if self.has(IO_OPEN) || self.has(IO_SEEK) || self.has(IO_ACCESS) {
            2
        } else if self.has(IO_VIEW) {
            5
        } else {
            0
        }
    }

    /// The index of a lock's target peer among the fixed parameters.
    fn lock_peer_param(&self) -> Option<usize> {
        self.has(RMA_LOCK)
            .then(|| self.layout().0 - self.rma_params() - self.io_params())
    }

    /// The names of the fixed parameters, in encoding order, for display
    /// (`rankscale show`) and JSON. Peers are `*.peer` (world rank relative
    /// to the recording rank) and `*.local` (communicator rank relative to
    /// the caller's rank in that communicator).
    pub fn param_names(&self) -> Vec<&'static str> {
        let mut v = vec!["comm", "comm_rank"];
        if self.has(SEND) {
            v.extend([
                "send.peer",
                "send.local",
                "send.tag",
                "send.count",
                "send.dsize",
            ]);
        }
        if self.has(RECV) {
            v.extend([
                "recv.peer",
                "recv.local",
                "recv.tag",
                "recv.count",
                "recv.dsize",
            ]);
        }
        for (f, name) in [
            (ROOT, "root"),
            (REQ, "req"),
            (FLAG, "flag"),
            (MSG, "message"),
            (VALUE, "value"),
            (ERROR, "error"),
        ] {
            if self.has(f) {
                v.push(name);
            }
        }
        if self.has(CREATE) {
            if self.has(C_NEW) {
                v.push("new_comm");
            }
            v.push("size");
            for (f, name) in [
                (C_COLOR, "color"),
                (C_KEY, "key"),
                (C_STYPE, "split_type"),
                (C_REORDER, "reorder"),
            ] {
                if self.has(f) {
                    v.push(name);
                }
            }
        }
        if self.has(RMA_WINDOW) {
            v.extend(["win.size", "win.disp_unit"]);
        } else if self.has(RMA_TARGET) {
            v.extend([
                "target.disp",
                "target.count",
                "target.dsize",
                "target.dtype",
            ]);
        } else if self.has(RMA_SYNC) {
            v.push("assert");
        } else if self.has(RMA_LOCK) {
            v.extend(["lock.peer", "lock.local"]);
            if self.has(RMA_EXCL) {
                v.push("lock.exclusive");
            }
            v.push("assert");
        }
        if self.has(IO_OPEN) {
            v.extend(["file.amode", "file.path"]);
        } else if self.has(IO_VIEW) {
            v.extend([
                "view.disp",
                "view.etype",
                "view.filetype",
                "view.lb",
                "view.extent",
            ]);
        } else if self.has(IO_ACCESS) {
            v.extend(["offset", "offset.etype"]);
        } else if self.has(IO_SEEK) {
            v.extend(["seek.offset", "seek.whence"]);
        }
        v
    }

    /// The names of the list parameters, in encoding order.
    pub fn list_names(&self) -> &'static [&'static str] {
        if self.has(RMA_SYNC) && !self.has(CREATE) {
            return &SYNC_LIST_NAMES;
        }
        &LIST_NAMES[..self.layout().1.len()]
    }

    /// The send buffer's datatype ([`Datatype::UNKNOWN`] without a send
    /// side or for traces that predate datatype codes).
    pub fn send_type(&self) -> Datatype {
        self.stype
    }

    /// The receive buffer's datatype, as [`Shape::send_type`].
    pub fn recv_type(&self) -> Datatype {
        self.rtype
    }

    /// Whether the call passed `MPI_IN_PLACE`.
    pub fn in_place(&self) -> bool {
        self.has(IN_PLACE)
    }

    /// Whether fixed parameter `i` is a world peer relative to the recording
    /// rank (the send or receive peer): the inter-node merge may keep such a
    /// parameter absolute instead, so that "everyone sends to rank 0" merges.
    #[doc(hidden)]
    pub fn is_peer_param(&self, i: usize) -> bool {
        let send = self.has(SEND);
        (send && i == 2)
            || (self.has(RECV) && i == 2 + 5 * usize::from(send))
            || self.lock_peer_param() == Some(i)
    }

    /// Whether fixed parameter `i` names a peer, as a world rank or as a
    /// communicator rank (both relative): such parameters rotate over a
    /// rank's neighbours, and the merge splits them by phase.
    #[doc(hidden)]
    pub fn is_peer_or_local(&self, i: usize) -> bool {
        self.is_peer_param(i) || (i > 0 && self.is_peer_param(i - 1))
    }

    /// Whether item `j` of list parameter `list` is a world peer relative to
    /// the recording rank (the matched source of a wildcard receive).
    #[doc(hidden)]
    pub fn is_peer_item(&self, list: usize, j: usize) -> bool {
        list == 6 && j % 4 == 2
    }

    /// The shape's fields as integers, for the binary spill format.
    pub(crate) fn to_words(self) -> [u64; 5] {
        [
            self.op as u64,
            u64::from(self.redop) | u64::from(self.stype.0) << 8 | u64::from(self.rtype.0) << 16,
            u64::from(self.flags),
            u64::from(self.thread),
            self.site,
        ]
    }

    /// Inverse of [`Shape::to_words`]; `None` for anything `to_words` cannot
    /// produce.
    pub(crate) fn from_words(w: [u64; 5]) -> Option<Shape> {
        let op = *Op::ALL.get(usize::try_from(w[0]).ok()?)?;
        if w[1] >> 24 != 0 {
            return None;
        }
        let redop = (w[1] & 0xff) as u8;
        if usize::from(redop) > ReduceOp::ALL.len() {
            return None;
        }
        let stype = Datatype((w[1] >> 8 & 0xff) as u8);
        let rtype = Datatype((w[1] >> 16 & 0xff) as u8);
        if !stype.is_valid() || !rtype.is_valid() {
            return None;
        }
        let flags = u32::try_from(w[2]).ok().filter(|f| f & !ALL_FLAGS == 0)?;
        // At most one one-sided variant, a lock type only on a lock, and
        // at most one MPI-IO variant, never beside a one-sided one.
        if (flags & RMA_VARIANTS).count_ones() > 1
            || (flags & RMA_EXCL != 0 && flags & RMA_LOCK == 0)
            || (flags & IO_VARIANTS).count_ones() > 1
            || (flags & IO_VARIANTS != 0 && flags & RMA_VARIANTS != 0)
            || (flags & IO_REL != 0 && flags & IO_ACCESS == 0)
        {
            return None;
        }

        Some(Shape {
            op,
            redop,
            flags,
            thread: u16::try_from(w[3]).ok()?,
            stype,
            rtype,
            site: w[4],
        })
    }
}

impl From<Shape> for [u64; 5] {
    fn from(s: Shape) -> [u64; 5] {
        s.to_words()
    }
}

impl TryFrom<[u64; 5]> for Shape {
    type Error = &'static str;
    fn try_from(w: [u64; 5]) -> Result<Shape, &'static str> {
        Shape::from_words(w).ok_or("invalid event shape")
    }
}

/// The splitmix64 finaliser: a fast bijective mixer, so that hashes of
/// structured values spread over all 64 bits.
#[doc(hidden)]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn push_peer(out: &mut Vec<i64>, peer: Peer, rank: i32, comm_rank: i32) {
    match peer {
        Peer::Rank { world, local } => {
            out.push(i64::from(world) - i64::from(rank));
            out.push(i64::from(local) - i64::from(comm_rank));
        }
        Peer::Any => out.extend([PEER_ANY, 0]),
        Peer::Null => out.extend([PEER_NULL, 0]),
    }
}

fn push_xfer(out: &mut Vec<i64>, t: &Transfer, rank: i32, comm_rank: i32) {
    push_peer(out, t.peer, rank, comm_rank);
    out.push(match t.tag {
        Tag::Value(v) => i64::from(v),
        Tag::Any => TAG_ANY,
    });
    out.push(t.count);
    out.push(t.dsize);
}

fn push_list<T: Copy>(out: &mut Vec<i64>, items: &[T], f: impl Fn(T) -> i64) {
    out.push(items.len() as i64);
    out.extend(items.iter().map(|&x| f(x)));
}

/// Splits `ev` into its shape and its parameters (appended to `out`, which
/// is cleared first). `rank` is the recording rank's world rank.
pub fn encode(ev: &Event, rank: i32, out: &mut Vec<i64>) -> Shape {
    out.clear();
    let mut flags = 0u32;
    let mut set = |cond: bool, f: u32| {
        if cond {
            flags |= f;
        }
    };
    set(ev.send.is_some(), SEND);
    set(ev.recv.is_some(), RECV);
    set(ev.root.is_some(), ROOT);
    set(ev.in_place, IN_PLACE);
    set(ev.req.is_some(), REQ);
    set(ev.flag.is_some(), FLAG);
    set(ev.message.is_some(), MSG);
    set(ev.value.is_some(), VALUE);
    set(ev.error.is_some(), ERROR);
    if let Some(c) = &ev.create {
        set(true, CREATE);
        set(c.new.is_some(), C_NEW);
        set(c.color.is_some(), C_COLOR);
        set(c.key.is_some(), C_KEY);
        set(c.split_type.is_some(), C_STYPE);
        set(c.reorder.is_some(), C_REORDER);
        set(true, C_REL);
    }
    match ev.rma.as_deref() {
        Some(Rma::Window { .. }) => set(true, RMA_WINDOW),
        Some(Rma::Target { .. }) => set(true, RMA_TARGET),
        Some(Rma::Sync { .. }) => set(true, RMA_SYNC),
        Some(Rma::Lock { exclusive, .. }) => {
            set(true, RMA_LOCK);
            set(exclusive.is_some(), RMA_EXCL);
        }
        None => {}
    }
    match ev.io.as_deref() {
        Some(Io::Open { .. }) => set(true, IO_OPEN),
        Some(Io::View { .. }) => set(true, IO_VIEW),
        Some(Io::Access { offset, etype }) => {
            set(true, IO_ACCESS);
            set(relative(ev, *offset, *etype).is_some(), IO_REL);
        }
        Some(Io::Seek { .. }) => set(true, IO_SEEK),
        Some(Io::Handle) => set(true, IO_HANDLE),
        None => {}
    }
    let redop = ev.redop.map_or(0, |r| {
        ReduceOp::ALL
            .iter()
            .position(|&o| o == r)
            .map_or(0, |i| i as u8 + 1)
    });

    out.push(i64::from(ev.comm.0));
    // Relative to the world rank where the call has a communicator (0 on
    // every rank in MPI_COMM_WORLD); as recorded (0) where it has none.
    let base = if ev.names_comm() { i64::from(rank) } else { 0 };
    out.push(i64::from(ev.comm_rank) - base);
    if let Some(t) = &ev.send {
        push_xfer(out, t, rank, ev.comm_rank);
    }
    if let Some(t) = &ev.recv {
        push_xfer(out, t, rank, ev.comm_rank);
    }
    out.extend(ev.root.map(i64::from));
    out.extend(ev.req.map(|r| r.0 as i64));
    out.extend(ev.flag.map(i64::from));
    out.extend(ev.message.map(|m| m as i64));
    out.extend(ev.value);
    out.extend(ev.error.map(i64::from));
    if let Some(c) = &ev.create {
        out.extend(c.new.map(|id| i64::from(id.0)));
        out.push(i64::from(c.size));
        let me = |v: i32| {
            if v == ev.comm_rank && v >= 0 {
                RANK_SELF
            } else {
                i64::from(v)
            }
        };
        out.extend(c.color.map(me));
        out.extend(c.key.map(me));
        out.extend(c.split_type.map(i64::from));
        out.extend(c.reorder.map(i64::from));
    }
    let mut group: &[i32] = &[];
    match ev.rma.as_deref() {
        Some(Rma::Window { size, disp_unit }) => out.extend([*size, i64::from(*disp_unit)]),
        Some(Rma::Target {
            disp,
            count,
            dsize,
            dtype,
        }) => out.extend([*disp, *count, *dsize, i64::from(dtype.0)]),
        Some(Rma::Sync { assert, group: g }) => {
            out.push(i64::from(*assert));
            group = g;
        }
        Some(Rma::Lock {
            peer,
            exclusive,
            assert,
        }) => {
            push_peer(out, *peer, rank, ev.comm_rank);
            out.extend(exclusive.map(i64::from));
            out.push(i64::from(*assert));
        }
        None => {}
    }
    match ev.io.as_deref() {
        // The hash as its 64 bits: a parameter is an i64.
        Some(Io::Open { amode, path }) => out.extend([i64::from(*amode), *path as i64]),
        Some(Io::View {
            disp,
            etype,
            filetype,
            lb,
            extent,
        }) => out.extend([*disp, *etype, *filetype, *lb, *extent]),
        Some(Io::Access { offset, etype }) => {
            let block = relative(ev, *offset, *etype).unwrap_or(0);
            let me = i64::from(ev.comm_rank.max(0));
            out.extend([offset.wrapping_sub(me.wrapping_mul(block)), *etype]);
        }
        Some(Io::Seek { offset, whence }) => out.extend([*offset, i64::from(*whence)]),
        Some(Io::Handle) | None => {}
    }
    push_list(out, &ev.send_counts, i64::from);
    push_list(out, &ev.recv_counts, i64::from);
    push_list(out, &ev.send_dsizes, i64::from);
    push_list(out, &ev.recv_dsizes, i64::from);
    push_list(out, &ev.reqs, |r| r.0 as i64);
    push_list(out, &ev.done, |r| r.0 as i64);
    out.push(ev.matched.len() as i64);
    for m in &ev.matched {
        out.extend([
            i64::from(m.req.is_some()),
            m.req.map_or(0, |r| r.0 as i64),
            i64::from(m.source) - i64::from(rank),
            i64::from(m.tag),
        ]);
    }
    if let Some(c) = &ev.create {
        push_list(out, &c.dims, i64::from);
        push_list(out, &c.periods, i64::from);
        push_list(out, &c.edges, i64::from);
        push_list(out, &c.sources, i64::from);
        push_list(out, &c.members, i64::from);
    }
    if flags & RMA_SYNC != 0 {
        // Relative to the caller's rank in the window, so that a ring's
        // neighbours are the same numbers on every rank.
        push_list(out, group, |g| i64::from(g) - i64::from(ev.comm_rank));
    }
    Shape {
        op: ev.op,
        redop,
        flags,
        thread: u16::try_from(ev.thread).unwrap_or(u16::MAX),
        stype: ev.send.map_or(Datatype::UNKNOWN, |t| t.dtype),
        rtype: ev.recv.map_or(Datatype::UNKNOWN, |t| t.dtype),
        site: ev.site,
    }
}

/// The etypes of one block of a data access (etypes of `etype` bytes):
/// its bytes in etypes, when they are whole. Only the transfer's count and
/// datatype size are read, which `decode` has read before the detail.
fn block_of(ev: &Event, etype: i64) -> Option<i64> {
    let t = ev.send.or(ev.recv)?;
    let bytes = t.count.checked_mul(t.dsize)?;
    (etype > 0 && bytes % etype == 0).then_some(bytes / etype)
}

/// The block a data access's offset is stored relative to ([`IO_REL`]):
/// [`block_of`], but not for the shared file pointer. "Rank r accesses
/// block r" (`offset = r * block + c`) then stores `c`, the same on every
/// rank of an SPMD program and at every rank count: the pattern merges
/// into one parameter and extrapolates, as relative peers do.
fn relative(ev: &Event, offset: i64, etype: i64) -> Option<i64> {
    if offset == Io::SHARED {
        return None;
    }
    block_of(ev, etype)
}

/// A checked reader over a parameter list.
struct Rd<'a> {
    v: &'a [i64],
    i: usize,
}

impl Rd<'_> {
    fn next(&mut self) -> Option<i64> {
        let x = *self.v.get(self.i)?;
        self.i += 1;
        Some(x)
    }
    fn i32(&mut self) -> Option<i32> {
        i32::try_from(self.next()?).ok()
    }
    /// A value that may be [`RANK_SELF`] (the caller's communicator rank
    /// `me`) when `rel` is set (see `C_REL`).
    fn rel_i32(&mut self, rel: bool, me: i32) -> Option<i32> {
        match self.next()? {
            RANK_SELF if rel => Some(me),
            v => i32::try_from(v).ok(),
        }
    }
    fn bool(&mut self) -> Option<bool> {
        match self.next()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn opt<T>(
        &mut self,
        present: bool,
        f: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        if present {
            f(self).map(Some)
        } else {
            Some(None)
        }
    }
    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.next()?).ok()?;
        // A list cannot be longer than what is left.
        (n <= self.v.len() - self.i).then_some(n)
    }
    /// A list's values: its length, then that many values. Most lists of
    /// most events are empty, and cost one read.
    fn items(&mut self) -> Option<&[i64]> {
        let n = self.len()?;
        let items = self.v.get(self.i..self.i + n)?;
        self.i += n;
        Some(items)
    }
    fn list_i32(&mut self) -> Option<Vec<i32>> {
        match self.items()? {
            [] => Some(Vec::new()),
            items => items.iter().map(|&x| i32::try_from(x).ok()).collect(),
        }
    }
    fn list_i64(&mut self) -> Option<Vec<i64>> {
        Some(self.items()?.to_vec())
    }
    fn list_req(&mut self) -> Option<Vec<ReqId>> {
        Some(self.items()?.iter().map(|&x| ReqId(x as u64)).collect())
    }
    fn peer(&mut self, rank: i32, comm_rank: i32) -> Option<Peer> {
        let code = self.next()?;
        let delta = self.next()?;
        Some(match code {
            PEER_ANY => Peer::Any,
            PEER_NULL => Peer::Null,
            _ => {
                let world = i32::try_from(code.checked_add(i64::from(rank))?).ok()?;
                let local = i32::try_from(delta.checked_add(i64::from(comm_rank))?).ok()?;
                Peer::Rank { world, local }
            }
        })
    }
    fn xfer(&mut self, rank: i32, comm_rank: i32) -> Option<Transfer> {
        let peer = self.peer(rank, comm_rank)?;
        let tag = match self.next()? {
            TAG_ANY => Tag::Any,
            t => Tag::Value(i32::try_from(t).ok()?),
        };
        Some(Transfer {
            peer,
            tag,
            count: self.next()?,
            dsize: self.next()?,
            dtype: crate::Datatype::UNKNOWN,
        })
    }
}

/// Rebuilds the event from its shape and parameters (timing zero), or `None`
/// if the parameters are not ones [`encode`] can produce for this shape.
pub fn decode(shape: &Shape, params: &[i64], rank: i32) -> Option<Event> {
    let mut r = Rd { v: params, i: 0 };
    let s = *shape;
    let mut ev = Event::new(s.op);
    ev.site = s.site;
    ev.thread = u32::from(s.thread);
    ev.comm = CommId(u32::try_from(r.next()?).ok()?);
    let base = if s.names_comm() { i64::from(rank) } else { 0 };
    ev.comm_rank = i32::try_from(r.next()?.checked_add(base)?).ok()?;
    let cr = ev.comm_rank;
    ev.send = r
        .opt(s.has(SEND), |r| r.xfer(rank, cr))?
        .map(|t| t.typed(s.stype));
    ev.recv = r
        .opt(s.has(RECV), |r| r.xfer(rank, cr))?
        .map(|t| t.typed(s.rtype));
    ev.root = r.opt(s.has(ROOT), Rd::i32)?;
    ev.redop = match s.redop {
        0 => None,
        _ => Some(s.redop()?),
    };
    ev.in_place = s.has(IN_PLACE);
    ev.req = r.opt(s.has(REQ), |r| r.next().map(|x| ReqId(x as u64)))?;
    ev.flag = r.opt(s.has(FLAG), Rd::bool)?;
    ev.message = r.opt(s.has(MSG), |r| r.next().map(|x| x as u64))?;
    ev.value = r.opt(s.has(VALUE), Rd::next)?;
    ev.error = r.opt(s.has(ERROR), Rd::i32)?;
    let mut create = None;
    if s.has(CREATE) {
        create = Some(CommCreate {
            new: r
                .opt(s.has(C_NEW), |r| {
                    r.next().and_then(|x| u32::try_from(x).ok())
                })?
                .map(CommId),
            size: r.i32()?,
            color: r.opt(s.has(C_COLOR), |r| r.rel_i32(s.has(C_REL), cr))?,
            key: r.opt(s.has(C_KEY), |r| r.rel_i32(s.has(C_REL), cr))?,
            split_type: r.opt(s.has(C_STYPE), Rd::i32)?,
            reorder: r.opt(s.has(C_REORDER), Rd::bool)?,
            dims: Vec::new(),
            periods: Vec::new(),
            edges: Vec::new(),
            sources: Vec::new(),
            members: Vec::new(),
        });
    }
    let mut rma = if s.has(RMA_WINDOW) {
        Some(Rma::Window {
            size: r.next()?,
            disp_unit: r.i32()?,
        })
    } else if s.has(RMA_TARGET) {
        Some(Rma::Target {
            disp: r.next()?,
            count: r.next()?,
            dsize: r.next()?,
            dtype: u8::try_from(r.next()?)
                .ok()
                .map(Datatype)
                .filter(|d| d.is_valid())?,
        })
    } else if s.has(RMA_SYNC) {
        Some(Rma::Sync {
            assert: r.i32()?,
            group: Vec::new(),
        })
    } else if s.has(RMA_LOCK) {
        Some(Rma::Lock {
            peer: r.peer(rank, cr)?,
            exclusive: r.opt(s.has(RMA_EXCL), Rd::bool)?,
            assert: r.i32()?,
        })
    } else {
        None
    };
    ev.io = if s.has(IO_OPEN) {
        Some(Io::Open {
            amode: r.i32()?,
            path: r.next()? as u64,
        })
    } else if s.has(IO_VIEW) {
        Some(Io::View {
            disp: r.next()?,
            etype: r.next()?,
            filetype: r.next()?,
            lb: r.next()?,
            extent: r.next()?,
        })
    } else if s.has(IO_ACCESS) {
        let stored = r.next()?;
        let etype = r.next()?;
        let offset = if s.has(IO_REL) {
            let block = block_of(&ev, etype)?;
            stored.checked_add(i64::from(cr.max(0)).checked_mul(block)?)?
        } else {
            stored
        };
        Some(Io::Access { offset, etype })
    } else if s.has(IO_SEEK) {
        Some(Io::Seek {
            offset: r.next()?,
            whence: r.i32()?,
        })
    } else if s.has(IO_HANDLE) {
        Some(Io::Handle)
    } else {
        None
    }
    .map(Box::new);
    ev.send_counts = r.list_i64()?;
    ev.recv_counts = r.list_i64()?;
    ev.send_dsizes = r.list_i32()?;
    ev.recv_dsizes = r.list_i32()?;
    ev.reqs = r.list_req()?;
    ev.done = r.list_req()?;
    let n = r.len()?;
    ev.matched = (0..n)
        .map(|_| {
            let has = r.bool()?;
            let req = r.next()?;
            let source = i32::try_from(r.next()?.checked_add(i64::from(rank))?).ok()?;
            let tag = r.i32()?;
            Some(Matched {
                req: has.then_some(ReqId(req as u64)),
                source,
                tag,
            })
        })
        .collect::<Option<_>>()?;
    if let Some(c) = &mut create {
        c.dims = r.list_i32()?;
        c.periods = r.list_i32()?;
        c.edges = r.list_i32()?;
        c.sources = r.list_i32()?;
        c.members = r.list_i32()?;
    }
    if let Some(Rma::Sync { group, .. }) = &mut rma {
        *group = r
            .items()?
            .iter()
            .map(|&g| i32::try_from(g.checked_add(i64::from(cr))?).ok())
            .collect::<Option<_>>()?;
    }
    ev.create = create.map(Box::new);
    ev.rma = rma.map(Box::new);
    ev.time = Timing::default();
    (r.i == params.len()).then_some(ev)
}

/// Appends `x` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Reads an unsigned LEB128 varint at `*pos`.
pub(crate) fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        x |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(x);
        }
    }
    None
}

/// Maps a signed value to an unsigned one, small magnitudes to small
/// values (for varints).
pub(crate) fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

/// Inverse of [`zigzag`].
pub(crate) fn unzigzag(x: u64) -> i64 {
    ((x >> 1) as i64) ^ -((x & 1) as i64)
}

/// Appends one event in the compact binary form of the in-memory spill:
/// the five shape words, the parameter count and the parameters, all LEB128
/// varints (parameters zigzag-encoded). A typical event takes 15–30 bytes.
#[doc(hidden)]
pub fn write_binary(shape: &Shape, params: &[i64], out: &mut Vec<u8>) {
    for w in shape.to_words() {
        put_varint(out, w);
    }
    put_varint(out, params.len() as u64);
    for &p in params {
        put_varint(out, zigzag(p));
    }
}

/// Reads one event written by [`write_binary`] into `params`.
pub(crate) fn read_binary(buf: &[u8], pos: &mut usize, params: &mut Vec<i64>) -> Option<Shape> {
    let mut w = [0u64; 5];
    for x in &mut w {
        *x = get_varint(buf, pos)?;
    }
    let shape = Shape::from_words(w)?;
    let n = usize::try_from(get_varint(buf, pos)?).ok()?;
    params.clear();
    for _ in 0..n {
        params.push(unzigzag(get_varint(buf, pos)?));
    }
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{every_op, p2p, rank_peer};
    use crate::raw::event_line;

    fn untimed(e: &Event) -> Event {
        let mut e = e.clone();
        e.time = Timing::default();
        e
    }

    /// Every one-sided detail round-trips, at its recording rank and at
    /// another (targets and groups are relative), and its layout and
    /// parameter names describe the parameters.
    #[test]
    fn one_sided_details_round_trip_exactly() {
        let mut params = Vec::new();
        for e in crate::fixtures::rma_events() {
            let shape = encode(&e, 5, &mut params);
            let back = decode(&shape, &params, 5).expect("decodes");
            assert_eq!(back, untimed(&e), "{}", event_line(&e));
            let (fixed, lists) = shape.layout();
            assert_eq!(shape.param_names().len(), fixed, "{}", event_line(&e));
            assert_eq!(shape.list_names().len(), lists.len());
            let mut i = fixed;
            for w in lists {
                i += 1 + params[i] as usize * usize::from(*w);
            }
            assert_eq!(i, params.len(), "{}", event_line(&e));
            // The shape survives its serialized words.
            assert_eq!(Shape::from_words(shape.to_words()), Some(shape));
            // A lock's target is a peer parameter, as a send's is.
            if let Some(Rma::Lock { .. }) = e.rma.as_deref() {
                let p = shape
                    .param_names()
                    .iter()
                    .position(|n| *n == "lock.peer")
                    .expect("lock.peer");
                assert!(shape.is_peer_param(p));
            }
        }
        // The same calls of the ring neighbours of two ranks encode the
        // same parameters: targets and PSCW groups are relative.
        let at = |world: i32, local: i32, op: Op| {
            let mut e = Event::new(op);
            e.comm = CommId(7);
            e.comm_rank = local;
            match op {
                Op::Put => {
                    e.send = Some(p2p(rank_peer(world + 1, local + 1), Tag::Value(0)));
                    e.rma = Some(Box::new(Rma::Target {
                        disp: 3,
                        count: 1,
                        dsize: 8,
                        dtype: Datatype::UNKNOWN,
                    }));
                }
                _ => {
                    e.rma = Some(Box::new(Rma::Sync {
                        assert: 0,
                        group: vec![local - 1, local + 1],
                    }))
                }
            }
            let mut p = Vec::new();
            let s = encode(&e, world, &mut p);
            (s, p)
        };
        for op in [Op::Put, Op::WinPost] {
            assert_eq!(at(3, 2, op), at(6, 5, op));
        }
    }

    /// Every MPI-IO detail round-trips, at its recording rank and at
    /// another, and its layout and parameter names describe the
    /// parameters; the same write of two ranks at offsets a block apart
    /// differs in the offset alone.
    #[test]
    fn io_details_round_trip_exactly() {
        let mut params = Vec::new();
        for e in crate::fixtures::io_events() {
            for rank in [5, 0] {
                let shape = encode(&e, rank, &mut params);
                let back = decode(&shape, &params, rank).expect("decodes");
                assert_eq!(back, untimed(&e), "{}", event_line(&e));
                let (fixed, lists) = shape.layout();
                assert_eq!(shape.param_names().len(), fixed, "{}", event_line(&e));
                assert_eq!(shape.list_names().len(), lists.len());
                assert!(shape.names_comm(), "{}", event_line(&e));
                assert_eq!(Shape::from_words(shape.to_words()), Some(shape));
            }
        }
        // "Rank r writes block r" (1024 ints of 4 bytes, a view of 4-byte
        // etypes, 8 etypes past the start): the same shape and parameters
        // at world and file ranks 3 and 6.
        let write = |rank: i32, offset: i64, etype: i64| {
            let mut e = crate::fixtures::io_events()[2].clone();
            e.comm_rank = rank;
            e.io = Some(Box::new(Io::Access { offset, etype }));
            let mut p = Vec::new();
            let shape = encode(&e, rank, &mut p);
            assert_eq!(decode(&shape, &p, rank).unwrap().io, e.io);
            (shape, p)
        };
        assert_eq!(write(3, 3 * 1024 + 8, 4), write(6, 6 * 1024 + 8, 4));
        let (s, p) = write(6, 6 * 1024 + 8, 4);
        let at = s.param_names().iter().position(|n| *n == "offset").unwrap();
        assert_eq!(p[at], 8);
        // Etypes that do not divide the access (4096 bytes in 3-byte
        // etypes), and the shared file pointer: stored as they are.
        let (s, p) = write(6, 6 * 1024 + 8, 3);
        assert_eq!(p[at], 6 * 1024 + 8);
        assert_ne!(s, write(6, 8, 4).0, "no relative flag");
        let (_, p) = write(6, Io::SHARED, 4);
        assert_eq!(p[at], Io::SHARED);
        // A relative offset that happens to be the shared pointer's mark.
        let (_, p) = write(6, 6 * 1024 - 1, 4);
        assert_eq!(p[at], -1);
    }

    /// A shape word with two MPI-IO variants, or with an MPI-IO and a
    /// one-sided variant, is refused.
    #[test]
    fn impossible_io_shapes_are_refused() {
        let mut params = Vec::new();
        let e = &crate::fixtures::io_events()[2];
        let mut w = encode(e, 5, &mut params).to_words();
        let ok = w[2];
        for bad in [ok | u64::from(IO_VIEW), ok | u64::from(RMA_TARGET)] {
            w[2] = bad;
            assert_eq!(Shape::from_words(w), None, "{bad:#x}");
        }
    }

    /// A shape word with two one-sided variants, or a lock type without a
    /// lock, or a flag no build writes, is refused.
    #[test]
    fn impossible_one_sided_shapes_are_refused() {
        let mut params = Vec::new();
        let e = &crate::fixtures::rma_events()[0];
        let mut w = encode(e, 5, &mut params).to_words();
        let ok = w[2];
        for bad in [
            ok | u64::from(RMA_TARGET),
            ok | 1 << 30,
            u64::from(RMA_EXCL),
        ] {
            w[2] = bad;
            assert_eq!(Shape::from_words(w), None, "flags {bad:#x}");
        }
    }

    #[test]
    fn every_op_round_trips_exactly() {
        let mut events = every_op();
        assert_eq!(events.len(), Op::ALL.len());
        // And each as a call that failed, as the shim records one: its
        // error class beside the communicator, nothing else.
        let failed: Vec<Event> = Op::ALL
            .iter()
            .map(|&op| {
                let mut e = Event::new(op);
                e.comm_rank = if op.has_comm() { 5 } else { -1 };
                e.error = Some(5);
                e
            })
            .collect();
        events.extend(failed);
        let mut params = Vec::new();
        for e in &events {
            let shape = encode(e, 5, &mut params);
            let back = decode(&shape, &params, 5).expect("decodes");
            assert_eq!(event_line(&back), event_line(e));
            assert_eq!(back, untimed(e), "{}", event_line(e));
            // The layout describes the parameters exactly.
            let (fixed, lists) = shape.layout();
            let mut i = fixed;
            for w in lists {
                let n = params[i] as usize;
                i += 1 + n * usize::from(*w);
            }
            assert_eq!(i, params.len(), "{}", event_line(e));
            // And the binary form too.
            let mut buf = Vec::new();
            write_binary(&shape, &params, &mut buf);
            let mut pos = 0;
            let mut p2 = Vec::new();
            assert_eq!(read_binary(&buf, &mut pos, &mut p2), Some(shape));
            assert_eq!((pos, &p2), (buf.len(), &params));
        }
    }

    #[test]
    fn peers_are_relative_to_the_recording_rank() {
        let mut a = Event::new(Op::Send);
        a.comm_rank = 5;
        a.send = Some(p2p(rank_peer(6, 6), Tag::Value(0)));
        let mut b = a.clone();
        b.comm_rank = 10;
        b.send = Some(p2p(rank_peer(11, 11), Tag::Value(0)));
        assert_eq!(a.relative(a.send.unwrap().peer), Some(1));
        assert_eq!(b.relative(b.send.unwrap().peer), Some(1));
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        let sa = encode(&a, 5, &mut pa);
        let sb = encode(&b, 10, &mut pb);
        assert_eq!(
            (sa, &pa),
            (sb, &pb),
            "rank 5 -> 6 and rank 10 -> 11 encode alike"
        );
        assert_eq!(event_line(&decode(&sb, &pb, 10).unwrap()), event_line(&b));
    }

    #[test]
    fn a_split_keyed_by_rank_encodes_alike_on_every_rank() {
        // NPB FT: MPI_Comm_split(world, 0, me) and (world, me, 0).
        let split = |me: i32, color: i32, key: i32| {
            let mut e = Event::new(Op::CommSplit);
            e.comm_rank = me;
            let mut c = CommCreate::new(Some(CommId(2)), 4);
            c.color = Some(color);
            c.key = Some(key);
            e.create = Some(Box::new(c));
            e
        };
        for (color, key) in [(None, Some(0)), (Some(0), None)] {
            let ev = |me: i32| split(me, color.unwrap_or(me), key.unwrap_or(me));
            let (mut p1, mut p3) = (Vec::new(), Vec::new());
            let (s1, s3) = (encode(&ev(1), 1, &mut p1), encode(&ev(3), 3, &mut p3));
            assert_eq!((s1, &p1), (s3, &p3), "ranks 1 and 3 encode alike");
            assert!(p1.contains(&RANK_SELF));
            for (r, p) in [(1, &p1), (3, &p3)] {
                assert_eq!(decode(&s1, p, r).unwrap().create, ev(r).create);
            }
        }
        // Rank 0's key 0 is its own rank too; another constant is kept.
        let mut p = Vec::new();
        let s = encode(&split(2, 7, 0), 2, &mut p);
        assert!(!p.contains(&RANK_SELF));
        assert_eq!(decode(&s, &p, 2).unwrap().create, split(2, 7, 0).create);
    }

    #[test]
    fn proc_null_and_any_source_do_not_change_the_shape() {
        let mut a = Event::new(Op::Isend);
        a.send = Some(p2p(rank_peer(1, 1), Tag::Value(0)));
        let mut b = a.clone();
        b.send = Some(p2p(Peer::Null, Tag::Any));
        let mut p = Vec::new();
        assert_eq!(encode(&a, 0, &mut p), encode(&b, 0, &mut p));
    }

    #[test]
    fn malformed_parameters_are_rejected_not_panics() {
        let e = &every_op()[Op::Waitsome as usize];
        let mut params = Vec::new();
        let shape = encode(e, 5, &mut params);
        for cut in 0..params.len() {
            assert!(decode(&shape, &params[..cut], 5).is_none());
        }
        let mut bad = params.clone();
        bad.push(0);
        assert!(decode(&shape, &bad, 5).is_none());
        let mut bad = params.clone();
        bad[1] = i64::MAX; // list length
        assert!(decode(&shape, &bad, 5).is_none());
        assert!(Shape::from_words([999, 0, 0, 0, 0]).is_none());
        assert!(Shape::from_words([0, 0, 1 << 27, 0, 0]).is_none());
        let mut pos = 0;
        assert!(read_binary(&[0xff; 3], &mut pos, &mut params).is_none());
    }
}
