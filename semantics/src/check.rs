//! `rankscale check`: proves that a trace can run, by walking its ranks'
//! events, so that no tool (above all the extrapolator) hands a user a trace
//! that deadlocks, truncates a message or breaks a collective on replay.
//!
//! It proves six things:
//!
//! 1. every concrete peer, root and matched source names a rank that exists,
//!    in the world and in the call's communicator;
//! 2. every communicator a rank creates fits in its parent (sizes, group
//!    members, graph edges and sources, Cartesian dimensions);
//! 3. the per-member lists of v/w collectives have one entry per member;
//! 4. every send has its receive and every receive its send, matched by
//!    MPI's non-overtaking rule per (communicator instance, sender, receiver,
//!    tag), wildcards by what they matched, persistent requests per `Start`
//!    (partitioned ones on channels of their own, whole buffer against
//!    whole buffer), `Mrecv` by its `Mprobe`; and a receive holds what it
//!    gets;
//! 5. every collective has all its members, in the same order on each, with
//!    the same operation, root, reduction and sizes, and what each member of
//!    a v-collective sends to another is what that one expects (window
//!    constructors, `Win_fence` and `Win_free` among them);
//! 6. one-sided calls keep MPI's epoch rules (the private module `epochs`):
//!    every put, get and accumulate lies in an access epoch on its target,
//!    PSCW epochs and locks open and close in order and pair up across
//!    ranks, nothing is left open at `Win_free`, and every access lies
//!    inside the memory its target exposed.
//!
//! Ranks are walked one at a time and never kept: memory is one rank's
//! expansion cursor, the messages not matched yet (in flight between ranks
//! walked and ranks to come) and the collectives not complete yet. A trace
//! too large to walk whole (an extrapolation to a million ranks) is checked
//! on a sample with [`check_ranks`]: the given ranks and their point-to-point
//! peers, so that both ends of each of their messages are seen.
//!
//! Communicator ids are per rank ([`trace::CommId`]); the checker tells
//! instances apart by lineage: the parent's instance, the position of the
//! creating call among the parent's collectives, and the colour (split), the
//! group (create) or the grid coordinates left out (Cart_sub). The groups of
//! `Comm_split_type` (one per node) are not in the trace: collectives on them
//! are checked for agreement, not for completeness (the report says so).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::ops::Range;

use trace::{CommCreate, Event, Family, Op, Peer, ReduceOp, Tag, TraceFile};

use crate::channel::{Channel, Channels, Read};
use crate::comms::{Comms, Map, View, counted, hash_of, world_size};
use crate::epochs::{Bounds, Broken, Pairing, RankEpochs};
use crate::walk::{RecvEnd, SendEnd, Step, Walker, bytes};
use serde::Serialize;

/// How many problems a report keeps in full (with the call's raw-log line);
/// the others are counted per kind. A broken trace can have a problem per
/// event, and a billion of them helps nobody.
pub const DETAIL: usize = 20;

/// The largest communicator whose v-collectives are checked pairwise when
/// every rank is walked (two sums per member and operation are kept until
/// the last member is seen).
const MAX_SUMS: i64 = 1 << 22;

/// Why a check could not run at all (a trace that runs the check but fails
/// it is a [`CheckReport`] with problems, not an error).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A rank given to [`check_ranks`] has no events in the trace.
    #[error("rank {rank} is not in the trace (it has {ranks})")]
    NoSuchRank {
        /// The rank asked for.
        rank: u32,
        /// The trace's ranks ("16 ranks, 0 to 15").
        ranks: String,
    },
    /// [`check_ranks`] was given no rank.
    #[error("no ranks to check were given")]
    NoRanks,
}

/// Which side of a point-to-point call a peer is on, for messages that say
/// "Send to rank 37" or "Recv from rank 40".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Dir {
    /// The destination of a send.
    To,
    /// The source of a receive or probe.
    From,
}

impl fmt::Display for Dir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dir::To => "to",
            Dir::From => "from",
        })
    }
}

/// What a member's byte count of a collective stands for, so that a
/// disagreement names both sides ("rank 7 sends 8 bytes per member, rank 0
/// receives 16").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Side {
    /// The buffer every member gives (Bcast, reductions, scans).
    Contributes,
    /// The block a member sends to each member (Allgather, Alltoall,
    /// Gather, Scatter's root).
    Sends,
    /// The block a member receives from each member.
    Receives,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Contributes => "contributes",
            Side::Sends => "sends",
            Side::Receives => "receives",
        })
    }
}

/// What the members of a collective must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Aspect {
    /// The communicator's size.
    Size(i64),
    /// The root.
    Root(i32),
    /// The reduction operation.
    Redop(ReduceOp),
    /// A byte count ("rank 7 contributes 8 bytes").
    Bytes(Side, i64),
}

impl fmt::Display for Aspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aspect::Size(n) => write!(f, "sees {n} members"),
            Aspect::Root(r) => write!(f, "names root {r}"),
            Aspect::Redop(o) => write!(f, "reduces with {}", o.name()),
            Aspect::Bytes(Side::Contributes, b) => write!(f, "contributes {b} bytes"),
            Aspect::Bytes(side, b) => write!(f, "{side} {b} bytes per member"),
        }
    }
}

/// One collective operation of a communicator: the k-th collective call on
/// it, which is what every member's k-th call must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CollRef {
    /// The operation (as the first member checked called it).
    pub op: Op,
    /// The communicator id (as the first member checked named it).
    pub comm: u32,
    /// Its position among the communicator's collectives, from 1.
    pub seq: u64,
}

impl fmt::Display for CollRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} #{} on comm {}", self.op.name(), self.seq, self.comm)
    }
}

/// One message channel position: the nth message from one rank to another
/// on one communicator and tag, the unit of MPI's non-overtaking rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Link {
    /// The sender (world rank).
    pub from: u32,
    /// The receiver (world rank).
    pub to: u32,
    /// The communicator id (as the first side checked named it).
    pub comm: u32,
    /// The tag.
    pub tag: i32,
    /// Position on the channel, from 1.
    pub nth: u64,
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "message from rank {} to rank {} (comm {}, tag {}), the {} on that channel",
            self.from,
            self.to,
            self.comm,
            self.tag,
            trace::ordinal(self.nth)
        )
    }
}

/// The name of a communicator in messages about its size.
fn comm_name(id: u32) -> String {
    match id {
        0 => "world".into(),
        1 => "self".into(),
        n => format!("comm {n}"),
    }
}

/// What is wrong, with the data that shows it. Each kind is one of the
/// five properties the checker proves (see the module documentation), or a
/// trace that cannot be read at all.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub enum ProblemKind {
    /// World ranks without events in the trace: their messages and
    /// collectives are missing too.
    MissingRanks {
        /// How many.
        missing: u64,
        /// The first few of them.
        first: Vec<u32>,
        /// The world size.
        world_size: u64,
    },
    /// A rank at or beyond the world size has events.
    ExtraRank {
        /// The world size.
        world_size: u64,
    },
    /// A rank's events cannot be projected or expanded out of the merged
    /// trace.
    Unreadable {
        /// Why.
        why: String,
    },
    /// A concrete peer that is not a world rank.
    PeerOutOfWorld {
        /// The call.
        op: Op,
        /// Destination or source.
        dir: Dir,
        /// The peer's world rank.
        peer: i64,
        /// The world size.
        world_size: u64,
    },
    /// A concrete peer whose communicator rank is not in the communicator.
    PeerOutOfComm {
        /// The call.
        op: Op,
        /// Destination or source.
        dir: Dir,
        /// The peer's rank in the communicator.
        local: i64,
        /// The communicator id.
        comm: u32,
        /// Its size.
        comm_size: i64,
    },
    /// A peer's world rank and communicator rank name different processes.
    PeerMismatch {
        /// The call.
        op: Op,
        /// Destination or source.
        dir: Dir,
        /// The world rank the event gives.
        world: i64,
        /// The communicator rank it gives.
        local: i64,
        /// The communicator id.
        comm: u32,
        /// The world rank of that communicator rank.
        expected: i64,
    },
    /// The caller's own rank in the call's communicator is impossible.
    CallerRank {
        /// The call.
        op: Op,
        /// The communicator id.
        comm: u32,
        /// The rank the event gives.
        comm_rank: i64,
        /// The communicator's size.
        comm_size: i64,
        /// The caller's true rank there, where the trace knows it.
        expected: Option<i64>,
    },
    /// A root outside the communicator.
    RootOutOfComm {
        /// The call.
        op: Op,
        /// The root.
        root: i64,
        /// The communicator id.
        comm: u32,
        /// Its size.
        comm_size: i64,
    },
    /// A wildcard receive or probe matched a source that is not a rank.
    MatchedOutOfWorld {
        /// The call.
        op: Op,
        /// The matched source.
        source: i64,
        /// The world size.
        world_size: u64,
    },
    /// A count, datatype size or tag that cannot be negative is.
    Negative {
        /// The call.
        op: Op,
        /// Which value.
        what: &'static str,
        /// Its value.
        value: i64,
    },
    /// A send to `MPI_ANY_SOURCE` or with `MPI_ANY_TAG`.
    WildcardSend {
        /// The call.
        op: Op,
    },
    /// A per-member list of a v/w collective with the wrong length.
    ListLength {
        /// The call.
        op: Op,
        /// Which list.
        list: &'static str,
        /// Its length.
        len: u64,
        /// The communicator id.
        comm: u32,
        /// Its size.
        comm_size: i64,
    },
    /// A created communicator (or its group, grid or graph) larger than its
    /// parent.
    CommTooLarge {
        /// The constructor.
        op: Op,
        /// What is too large ("makes a communicator of").
        what: &'static str,
        /// Its size.
        size: i64,
        /// The parent communicator id.
        parent: u32,
        /// The parent's size.
        limit: i64,
    },
    /// A created communicator whose size is not what its construction
    /// implies.
    CommSize {
        /// The constructor.
        op: Op,
        /// The size recorded.
        size: i64,
        /// The size implied.
        expected: i64,
        /// By what ("its parent", "its dimensions").
        why: &'static str,
    },
    /// A list of a constructor whose length its other arguments
    /// contradict (periods against dimensions, a graph's edges against its
    /// index or degrees).
    ConstructorList {
        /// The constructor.
        op: Op,
        /// Which list.
        list: &'static str,
        /// Its length.
        len: i64,
        /// The length the other arguments imply.
        expected: i64,
        /// Which argument implies it.
        why: &'static str,
    },
    /// A rank, edge or dimension of a constructor outside its range.
    CommValueOutOfRange {
        /// The constructor.
        op: Op,
        /// Which value.
        what: &'static str,
        /// The value.
        value: i64,
        /// Values must be below this.
        limit: i64,
    },
    /// A send no receive takes.
    Unreceived {
        /// The message.
        link: Link,
        /// Its size in bytes.
        bytes: i64,
    },
    /// A completed receive no send feeds.
    Unsent {
        /// The message it expects.
        link: Link,
    },
    /// A receive smaller than the message it gets (MPI_ERR_TRUNCATE).
    Truncated {
        /// The message.
        link: Link,
        /// Bytes sent.
        sent: i64,
        /// Bytes the receive posts.
        posted: i64,
        /// The send's event index on the sending rank.
        send_event: u64,
    },
    /// A completed wildcard receive or probe without its matched source and
    /// tag, so that its message cannot be known.
    UnresolvedWildcard {
        /// The call.
        op: Op,
    },
    /// An `Mrecv`/`Imrecv` of a message handle no probe of the rank made.
    UnknownMessage {
        /// The call.
        op: Op,
        /// The message handle id.
        message: u64,
    },
    /// The k-th collective of a communicator is another operation on this
    /// rank than on the first member checked: the members are out of step
    /// (later collectives of this rank on it are not compared again).
    CollectiveOrder {
        /// The communicator id.
        comm: u32,
        /// The position.
        seq: u64,
        /// This rank's operation.
        op: Op,
        /// This rank.
        rank: u32,
        /// The first member's operation.
        first_op: Op,
        /// The first member.
        first_rank: u32,
    },
    /// A collective some members never call.
    CollectiveIncomplete {
        /// The collective.
        coll: CollRef,
        /// Members that call it.
        members: u64,
        /// The communicator size.
        size: i64,
        /// The first few missing ones (communicator ranks; world ranks on
        /// the world); in a sample, only missing sampled ranks count.
        missing: Vec<i64>,
        /// How many more are missing.
        more: u64,
    },
    /// Two ranks claim the same communicator rank in one collective.
    CollectiveDuplicate {
        /// The collective.
        coll: CollRef,
        /// The communicator rank.
        local: i64,
        /// The two world ranks.
        ranks: [u32; 2],
    },
    /// Members of a collective disagree where MPI needs them to agree.
    Disagree {
        /// The collective.
        coll: CollRef,
        /// This rank.
        rank: u32,
        /// What this rank gives.
        mine: Aspect,
        /// The member the value was first seen on.
        first_rank: u32,
        /// What that one gives.
        first: Aspect,
    },
    /// A one-sided communication call outside every access epoch on its
    /// target (no fence epoch, no `Win_start` naming it, no lock on it).
    RmaOutsideEpoch {
        /// The call.
        op: Op,
        /// The window (this rank's id).
        window: u32,
        /// The target (rank in the window).
        target: i64,
    },
    /// A one-sided synchronisation call out of place (a `Win_complete`
    /// without `Win_start`, an unlock without a lock, ...).
    RmaSync {
        /// The call.
        op: Op,
        /// The window (this rank's id).
        window: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// An epoch or lock still open when the window is freed or the rank
    /// ends.
    RmaLeftOpen {
        /// The window (this rank's id).
        window: Option<u32>,
        /// What is open.
        what: String,
    },
    /// `Win_start` epochs of an origin naming a target and `Win_post`
    /// epochs of the target naming the origin do not pair up.
    RmaUnpaired {
        /// The origin (rank in the window).
        origin: i64,
        /// The target (rank in the window).
        target: i64,
        /// Start epochs less post epochs.
        excess: i64,
    },
    /// A one-sided access that reaches beyond the memory its target
    /// exposed in the window.
    RmaOutOfWindow {
        /// The call.
        op: Op,
        /// The target (rank in the window).
        target: i64,
        /// The byte the access ends at.
        end: i64,
        /// The bytes the target exposed.
        size: i64,
    },
    /// What one member of a v-collective sends another is not what that
    /// one expects from it.
    FlowDisagree {
        /// The collective.
        coll: CollRef,
        /// The sender (world rank).
        from: u32,
        /// The receiver (world rank).
        to: u32,
        /// The sender's rank in the communicator.
        from_local: i64,
        /// The receiver's rank in the communicator.
        to_local: i64,
        /// The sender's event index.
        send_event: u64,
        /// Bytes the sender sends to the receiver (`None`: nothing, or not
        /// worked out).
        sent: Option<i64>,
        /// Bytes the receiver expects from the sender (`None`: nothing, or
        /// not worked out).
        expected: Option<i64>,
        /// Whether `sent` and `expected` were worked out (a check of every
        /// rank finds the pair by fingerprints and reads the two calls again
        /// for the reports it keeps in full).
        resolved: bool,
    },
}

impl ProblemKind {
    /// A short name of the kind, for the count of problems per kind.
    pub fn label(&self) -> &'static str {
        match self {
            ProblemKind::MissingRanks { .. } => "missing ranks",
            ProblemKind::ExtraRank { .. } => "rank beyond the world",
            ProblemKind::Unreadable { .. } => "unreadable rank",
            ProblemKind::PeerOutOfWorld { .. } => "peer outside the world",
            ProblemKind::PeerOutOfComm { .. } => "peer outside its communicator",
            ProblemKind::PeerMismatch { .. } => "peer's world and communicator ranks differ",
            ProblemKind::CallerRank { .. } => "caller's communicator rank",
            ProblemKind::RootOutOfComm { .. } => "root outside its communicator",
            ProblemKind::MatchedOutOfWorld { .. } => "matched source outside the world",
            ProblemKind::Negative { .. } => "negative value",
            ProblemKind::WildcardSend { .. } => "wildcard send",
            ProblemKind::ListLength { .. } => "list length",
            ProblemKind::CommTooLarge { .. } => "communicator too large",
            ProblemKind::CommSize { .. } => "communicator size",
            ProblemKind::CommValueOutOfRange { .. } => "constructor value out of range",
            ProblemKind::ConstructorList { .. } => "constructor list length",
            ProblemKind::Unreceived { .. } => "message never received",
            ProblemKind::Unsent { .. } => "receive never sent",
            ProblemKind::Truncated { .. } => "receive too small",
            ProblemKind::UnresolvedWildcard { .. } => "unresolved wildcard",
            ProblemKind::UnknownMessage { .. } => "unknown message handle",
            ProblemKind::CollectiveOrder { .. } => "collectives out of order",
            ProblemKind::CollectiveIncomplete { .. } => "collective incomplete",
            ProblemKind::CollectiveDuplicate { .. } => "collective member twice",
            ProblemKind::Disagree { mine, .. } => match mine {
                Aspect::Size(_) => "communicator sizes disagree",
                Aspect::Root(_) => "roots disagree",
                Aspect::Redop(_) => "reductions disagree",
                Aspect::Bytes(..) => "collective sizes disagree",
            },
            ProblemKind::FlowDisagree { .. } => "v-collective counts disagree",
            ProblemKind::RmaOutsideEpoch { .. } => "one-sided call outside an epoch",
            ProblemKind::RmaSync { .. } => "one-sided synchronisation out of place",
            ProblemKind::RmaLeftOpen { .. } => "one-sided epoch left open",
            ProblemKind::RmaUnpaired { .. } => "Win_start and Win_post do not pair",
            ProblemKind::RmaOutOfWindow { .. } => "one-sided access outside the window",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        // By what the problem concerns; every variant is in one group.
        match self {
            K::MissingRanks { .. } | K::ExtraRank { .. } | K::Unreadable { .. } => {
                self.fmt_ranks(f)
            }
            K::PeerOutOfWorld { .. }
            | K::PeerOutOfComm { .. }
            | K::PeerMismatch { .. }
            | K::CallerRank { .. }
            | K::RootOutOfComm { .. }
            | K::MatchedOutOfWorld { .. }
            | K::Negative { .. }
            | K::WildcardSend { .. }
            | K::ListLength { .. } => self.fmt_values(f),
            K::CommTooLarge { .. }
            | K::CommSize { .. }
            | K::ConstructorList { .. }
            | K::CommValueOutOfRange { .. } => self.fmt_comms(f),
            K::Unreceived { .. }
            | K::Unsent { .. }
            | K::Truncated { .. }
            | K::UnresolvedWildcard { .. }
            | K::UnknownMessage { .. } => self.fmt_messages(f),
            K::CollectiveOrder { .. }
            | K::CollectiveIncomplete { .. }
            | K::CollectiveDuplicate { .. }
            | K::Disagree { .. }
            | K::FlowDisagree { .. } => self.fmt_collectives(f),
            K::RmaOutsideEpoch { .. }
            | K::RmaSync { .. }
            | K::RmaLeftOpen { .. }
            | K::RmaUnpaired { .. }
            | K::RmaOutOfWindow { .. } => self.fmt_rma(f),
        }
    }
}

impl ProblemKind {
    /// The trace as a whole and its ranks.
    fn fmt_ranks(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        match self {
            K::MissingRanks {
                missing,
                first,
                world_size,
            } => {
                let names: Vec<String> = first.iter().map(u32::to_string).collect();
                let more = if *missing > first.len() as u64 {
                    ", ..."
                } else {
                    ""
                };
                write!(
                    f,
                    "{missing} of the world's {world_size} ranks have no events in the trace ({}{more})",
                    names.join(", ")
                )
            }
            K::ExtraRank { world_size } => write!(
                f,
                "this rank has events but the trace's world has {world_size} ranks"
            ),
            K::Unreadable { why } => write!(f, "the rank's events cannot be read: {why}"),
            _ => unreachable!("{self:?} is formatted by another group"),
        }
    }

    /// Peers, roots, callers, counts and lists of one call.
    fn fmt_values(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        match self {
            K::PeerOutOfWorld {
                op,
                dir,
                peer,
                world_size,
            } => write!(
                f,
                "{} {dir} rank {peer} but the trace has {world_size} ranks",
                op.name()
            ),
            K::PeerOutOfComm {
                op,
                dir,
                local,
                comm,
                comm_size,
            } => write!(
                f,
                "{} {dir} comm rank {local} but its communicator ({}) has {comm_size} ranks",
                op.name(),
                comm_name(*comm)
            ),
            K::PeerMismatch {
                op,
                dir,
                world,
                local,
                comm,
                expected,
            } => write!(
                f,
                "{} {dir} rank {world} as comm rank {local} of {}, which is rank {expected}",
                op.name(),
                comm_name(*comm)
            ),
            K::CallerRank {
                op,
                comm,
                comm_rank,
                comm_size,
                expected,
            } => {
                write!(
                    f,
                    "{} on {} as its rank {comm_rank}",
                    op.name(),
                    comm_name(*comm)
                )?;
                match expected {
                    Some(x) => write!(f, ", but this rank is rank {x} there"),
                    None => write!(f, ", but it has {comm_size} ranks"),
                }
            }
            K::RootOutOfComm {
                op,
                root,
                comm,
                comm_size,
            } => write!(
                f,
                "{} with root {root} but its communicator ({}) has {comm_size} ranks",
                op.name(),
                comm_name(*comm)
            ),
            K::MatchedOutOfWorld {
                op,
                source,
                world_size,
            } => write!(
                f,
                "{} matched a message from rank {source} but the trace has {world_size} ranks",
                op.name()
            ),
            K::Negative { op, what, value } => {
                write!(f, "{} has a negative {what} ({value})", op.name())
            }
            K::WildcardSend { op } => write!(
                f,
                "{} sends to MPI_ANY_SOURCE or with MPI_ANY_TAG",
                op.name()
            ),
            K::ListLength {
                op,
                list,
                len,
                comm,
                comm_size,
            } => write!(
                f,
                "{} has {len} {list} but its communicator ({}) has {comm_size} ranks",
                op.name(),
                comm_name(*comm)
            ),
            _ => unreachable!("{self:?} is formatted by another group"),
        }
    }

    /// Communicators a constructor makes.
    fn fmt_comms(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        match self {
            K::CommTooLarge {
                op,
                what,
                size,
                parent,
                limit,
            } => write!(
                f,
                "{} {what} {size} ranks but its parent ({}) has {limit}",
                op.name(),
                comm_name(*parent)
            ),
            K::CommSize {
                op,
                size,
                expected,
                why,
            } => write!(
                f,
                "{} makes a communicator of {size} ranks but {why} gives {expected}",
                op.name()
            ),
            K::ConstructorList {
                op,
                list,
                len,
                expected,
                why,
            } => write!(
                f,
                "{} has {len} {list} but {why} gives {expected}",
                op.name()
            ),
            K::CommValueOutOfRange {
                op,
                what,
                value,
                limit,
            } => write!(
                f,
                "{} has {what} {value}, outside 0 to {}",
                op.name(),
                limit - 1
            ),
            _ => unreachable!("{self:?} is formatted by another group"),
        }
    }

    /// Point-to-point messages.
    fn fmt_messages(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        match self {
            K::Unreceived { link, bytes } => {
                write!(f, "{link}, is never received ({bytes} bytes)")
            }
            K::Unsent { link } => {
                write!(f, "{link}, is received but never sent")
            }
            K::Truncated {
                link,
                sent,
                posted,
                send_event,
            } => write!(
                f,
                "{link}, has {sent} bytes (rank {}, event {send_event}) but the receive takes only {posted}",
                link.from
            ),
            K::UnresolvedWildcard { op } => write!(
                f,
                "{} with a wildcard source or tag matched a message, but the trace does not say which",
                op.name()
            ),
            K::UnknownMessage { op, message } => write!(
                f,
                "{} of message {message}, which no Mprobe or Improbe of this rank returned",
                op.name()
            ),
            _ => unreachable!("{self:?} is formatted by another group"),
        }
    }

    /// Collective operations.
    fn fmt_collectives(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        match self {
            K::CollectiveOrder {
                comm,
                seq,
                op,
                rank,
                first_op,
                first_rank,
            } => write!(
                f,
                "collective #{seq} on comm {comm}: rank {rank} calls {} where rank {first_rank} calls {} (this rank's later collectives on it are not compared)",
                op.name(),
                first_op.name()
            ),
            K::CollectiveIncomplete {
                coll,
                members,
                size,
                missing,
                more,
            } => {
                write!(f, "{coll} has {members} of {size} members")?;
                let names: Vec<String> = missing.iter().map(i64::to_string).collect();
                let who = if coll.comm == 0 { "rank" } else { "comm rank" };
                match names.len() {
                    0 => Ok(()),
                    1 => write!(f, ": {who} {} never calls it", names[0]),
                    _ => write!(f, ": {who}s {} never call it", names.join(", ")),
                }?;
                if *more > 0 {
                    write!(f, " (and {more} more)")?;
                }
                Ok(())
            }
            K::CollectiveDuplicate { coll, local, ranks } => write!(
                f,
                "{coll}: comm rank {local} takes part twice (ranks {} and {})",
                ranks[0], ranks[1]
            ),
            K::Disagree {
                coll,
                rank,
                mine,
                first_rank,
                first,
            } => {
                write!(f, "{coll}: rank {rank} {mine}, rank {first_rank} ")?;
                // The second value short: "..., rank 0 contributes 16".
                match first {
                    Aspect::Size(n) => write!(f, "sees {n}"),
                    Aspect::Redop(o) => write!(f, "with {}", o.name()),
                    Aspect::Bytes(Side::Contributes, b) => write!(f, "contributes {b}"),
                    Aspect::Bytes(side, b) => write!(f, "{side} {b} per member"),
                    Aspect::Root(_) => write!(f, "{first}"),
                }
            }
            K::FlowDisagree {
                coll,
                from,
                to,
                sent,
                expected,
                resolved,
                ..
            } => {
                if !resolved {
                    return write!(
                        f,
                        "{coll}: what rank {from} sends to rank {to} is not what rank {to} expects from it"
                    );
                }
                let amount =
                    |b: &Option<i64>| b.map_or_else(|| "nothing".into(), |b| format!("{b} bytes"));
                write!(
                    f,
                    "{coll}: rank {from} sends {} to rank {to}, which expects {}",
                    amount(sent),
                    amount(expected)
                )
            }
            _ => unreachable!("{self:?} is formatted by another group"),
        }
    }
}

impl ProblemKind {
    /// One-sided epochs, pairs and bounds.
    fn fmt_rma(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ProblemKind as K;
        match self {
            K::RmaOutsideEpoch { op, window, target } => write!(
                f,
                "{} to window rank {target} on window {window} outside every access epoch on that rank (no fence epoch, no Win_start naming it, no lock on it)",
                op.name(),
            ),
            K::RmaSync { op, window, why } => {
                write!(f, "{} on window {window}: {why}", op.name())
            }
            K::RmaLeftOpen { window, what } => match window {
                Some(w) => write!(f, "Win_free of window {w} leaves {what}"),
                None => write!(f, "the rank ends with {what}"),
            },
            K::RmaUnpaired {
                origin,
                target,
                excess,
            } => {
                if *excess > 0 {
                    write!(
                        f,
                        "window rank {origin}'s Win_start epochs naming window rank {target} outnumber window rank {target}'s Win_post epochs naming window rank {origin} by {excess}"
                    )
                } else {
                    write!(
                        f,
                        "window rank {target}'s Win_post epochs naming window rank {origin} outnumber window rank {origin}'s Win_start epochs naming window rank {target} by {}",
                        -excess
                    )
                }
            }
            K::RmaOutOfWindow {
                op,
                target,
                end,
                size,
            } => write!(
                f,
                "{} reaches byte {end} of window rank {target}'s memory, which exposes {size} bytes",
                op.name()
            ),
            _ => unreachable!("{self:?} is formatted by another group"),
        }
    }
}

/// One problem: where it is and what is wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    /// The world rank whose event shows it (`None` for the trace as a
    /// whole).
    pub rank: Option<u32>,
    /// The event's index in the rank's sequence (from 0, markers included,
    /// as `rankscale show --expand` numbers lines from 0).
    pub event: Option<u64>,
    /// The event as `trace::raw::event_line` prints it.
    pub call: Option<String>,
    /// What is wrong.
    pub kind: ProblemKind,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.rank, self.event) {
            (Some(r), Some(e)) => write!(f, "rank {r}, event {e}: ")?,
            (Some(r), None) => write!(f, "rank {r}: ")?,
            _ => {}
        }
        write!(f, "{}", self.kind)?;
        if let Some(c) = &self.call {
            write!(f, "\n    {c}")?;
        }
        Ok(())
    }
}

/// What a check covered and what it found.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// The trace's world size.
    pub world_size: u64,
    /// Whether every rank was checked ([`check`]) or a sample
    /// ([`check_ranks`]).
    pub complete: bool,
    /// The ranks a sample was asked for (empty for a complete check); their
    /// point-to-point peers were checked with them.
    pub requested: Vec<u32>,
    /// Ranks whose events were checked.
    pub ranks: u64,
    /// Events checked.
    pub events: u64,
    /// Messages matched (send with receive).
    pub messages: u64,
    /// Collective operations checked (one per operation, not per member).
    pub collectives: u64,
    /// Of those, the ones a sample saw only some members of (checked for
    /// agreement among them, not for completeness).
    pub partial_collectives: u64,
    /// Problems found.
    pub problem_count: u64,
    /// The first [`DETAIL`] problems, in full.
    pub problems: Vec<Problem>,
    /// Problems per kind ([`ProblemKind::label`]).
    pub tally: BTreeMap<String, u64>,
    /// What was not checked, or not held against the trace, and why.
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Whether the check found nothing wrong.
    pub fn is_consistent(&self) -> bool {
        self.problem_count == 0
    }

    /// One line of what was checked: "32 ranks, 404128 events, 12345
    /// messages, 678 collectives checked".
    pub fn summary(&self) -> String {
        let ranks = if self.complete {
            format!("{} ranks", self.ranks)
        } else {
            format!("{} of {} ranks (a sample)", self.ranks, self.world_size)
        };
        format!(
            "{ranks}, {} events, {} messages, {} collectives checked",
            self.events, self.messages, self.collectives
        )
    }
}

/// Checks every rank of `file`.
pub fn check(file: &TraceFile) -> Result<CheckReport, Error> {
    let ranks: Vec<u32> = file.trace.ranks().iter().collect();
    let mut c = Checker::new(file, None);
    c.world_ranks();
    for &r in &ranks {
        c.rank(r);
    }
    Ok(c.finish(Vec::new(), 0))
}

/// Checks the given ranks and their point-to-point peers (the ranks they
/// send to and receive from), so that both ends of every message of the
/// given ranks are checked, for a trace too large to check whole. Checks 1
/// to 3 apply to every rank expanded; collectives are checked for order,
/// operation, root and sizes among the expanded members, and for
/// completeness only where all their members were expanded.
pub fn check_ranks(file: &TraceFile, ranks: &[u32]) -> Result<CheckReport, Error> {
    if ranks.is_empty() {
        return Err(Error::NoRanks);
    }
    let all = file.trace.ranks();
    let given: BTreeSet<u32> = ranks.iter().copied().collect();
    if let Some(&rank) = given.iter().find(|&&r| !all.contains(r)) {
        let (lo, hi) = (all.min().unwrap_or(0), all.max().unwrap_or(0));
        return Err(Error::NoSuchRank {
            rank,
            ranks: format!("{} ranks, {lo} to {hi}", all.len()),
        });
    }
    if given.len() as u64 == all.len() {
        return check(file);
    }
    let world = world_size(file);
    let mut set = given.clone();
    for &r in &given {
        peers_of(file, r, world, &mut set);
    }
    let peers = (set.len() - given.len()) as u64;
    let mut c = Checker::new(file, Some(set.iter().copied().collect()));
    c.world_ranks();
    for &r in &set {
        c.rank(r);
    }
    Ok(c.finish(given.into_iter().collect(), peers))
}

/// Adds the ranks `rank` exchanges point-to-point messages with to `set`.
fn peers_of(file: &TraceFile, rank: u32, world: i64, set: &mut BTreeSet<u32>) {
    let Ok(t) = file.trace.rank_trace(rank) else {
        return;
    };
    let all = file.trace.ranks();
    let mut add = |w: i64| {
        if (0..world).contains(&w) && all.contains(w as u32) {
            set.insert(w as u32);
        }
    };
    for e in t.expand() {
        if !is_collective(e.op) {
            for t in [e.send, e.recv].into_iter().flatten() {
                if let Some(w) = t.peer.world() {
                    add(i64::from(w));
                }
            }
        }
        for m in &e.matched {
            add(i64::from(m.source));
        }
    }
}

/// Collectives in the checker's sense: every member of the communicator
/// takes part, constructors and `Comm_free` included, and the collective
/// calls of windows and files.
fn is_collective(op: Op) -> bool {
    op.is_collective()
        || op.family() == Family::CommManagement
        || op.is_window_collective()
        || op.is_file_collective()
}

/// A broken epoch rule as the report names it.
fn rma_problem(e: &Event, b: Broken) -> ProblemKind {
    let window = e.comm.0;
    match b {
        Broken::Outside { target } => ProblemKind::RmaOutsideEpoch {
            op: e.op,
            window,
            target,
        },
        Broken::Sync { why } => ProblemKind::RmaSync {
            op: e.op,
            window,
            why,
        },
        Broken::LeftOpen { what } => ProblemKind::RmaLeftOpen {
            window: Some(window),
            what,
        },
    }
}

// ----- per-rank state ---------------------------------------------------

/// One rank's walk: its communicators, its receives in post order, and the
/// channels it used.
struct Rank {
    rank: u32,
    comms: Comms,
    walk: Walker,
    /// The channels this rank's walk used.
    touched: HashSet<Channel>,
    /// Its windows' epochs.
    epochs: RankEpochs,
}

impl Rank {
    fn new(rank: u32, world: i64) -> Rank {
        Rank {
            rank,
            comms: Comms::new(rank, world),
            walk: Walker::new(rank, world),
            touched: HashSet::new(),
            epochs: RankEpochs::default(),
        }
    }
}

// ----- whole-trace state ------------------------------------------------

/// One half of a v-collective pair seen in a sample.
#[derive(Clone, Copy, Debug)]
struct Half {
    send: bool,
    bytes: i64,
    rank: u32,
    event: u64,
}

/// The pairwise check of a v-collective.
#[derive(Debug)]
enum Flows {
    /// Not a v-collective, or not checkable.
    Off,
    /// Every member checked: per-member sums of pair fingerprints (sender
    /// side added, receiver side subtracted), zero when all pairs agree.
    Sums { rows: Vec<u64>, cols: Vec<u64> },
    /// A sample: the halves not matched yet, by (sender, receiver).
    Pairs(HashMap<(i64, i64), Half>),
}

/// One collective operation being assembled from its members.
#[derive(Debug)]
struct Coll {
    at: CollRef,
    size: Option<i64>,
    ambiguous: bool,
    first_rank: u32,
    root: Option<i32>,
    redop: Option<ReduceOp>,
    /// The byte count every member must give, where it has one, and the
    /// member it was first seen on.
    block: Option<(Aspect, u32)>,
    /// (communicator rank, world rank, event index).
    members: Vec<(i64, u32, u64)>,
    flows: Flows,
    /// In a sample: the communicator ranks of the sampled ranks.
    sampled: Option<Vec<i64>>,
}

#[derive(Default)]
struct Sink {
    shown: Vec<Problem>,
    total: u64,
    tally: BTreeMap<&'static str, u64>,
}

impl Sink {
    fn add(&mut self, rank: Option<u32>, event: Option<u64>, e: Option<&Event>, kind: ProblemKind) {
        self.total += 1;
        *self.tally.entry(kind.label()).or_default() += 1;
        if self.shown.len() < DETAIL {
            self.shown.push(Problem {
                rank,
                event,
                call: e.map(trace::raw::event_line),
                kind,
            });
        }
    }
}

#[derive(Default)]
struct Counts {
    ranks: u64,
    events: u64,
    messages: u64,
    collectives: u64,
    partial: u64,
    /// The fewest members a partial collective was checked among, and its
    /// size.
    fewest: Option<(u64, i64)>,
    agreement_only: u64,
    untraced_comm_events: u64,
    pending_recvs: u64,
    unresolved_pending: u64,
}

struct Checker<'a> {
    file: &'a TraceFile,
    world: i64,
    /// The expanded ranks of a sample; `None` when every rank is checked.
    sample: Option<HashSet<u32>>,
    chans: Channels<Channel, SendEnd, RecvEnd>,
    /// The steps of the current event's walk (reused).
    steps: Vec<Step>,
    colls: HashMap<(u64, u64), Coll>,
    /// (rank, instance) pairs whose collectives are out of step.
    desynced: HashSet<(u32, u64)>,
    /// PSCW epochs, to pair across ranks.
    pairing: Pairing,
    /// Windows' memory and the accesses that reach furthest.
    bounds: Bounds,
    sink: Sink,
    n: Counts,
}

impl<'a> Checker<'a> {
    fn new(file: &'a TraceFile, sample: Option<HashSet<u32>>) -> Checker<'a> {
        Checker {
            file,
            world: world_size(file),
            sample,
            chans: Channels::default(),
            steps: Vec::new(),
            colls: HashMap::new(),
            desynced: HashSet::new(),
            pairing: Pairing::default(),
            bounds: Bounds::default(),
            sink: Sink::default(),
            n: Counts::default(),
        }
    }

    fn problem(&mut self, rank: u32, event: u64, e: Option<&Event>, kind: ProblemKind) {
        self.sink.add(Some(rank), Some(event), e, kind);
    }

    /// Every world rank has events, and no rank is beyond the world.
    fn world_ranks(&mut self) {
        let world = self.world;
        let mut first = Vec::new();
        let mut missing = 0u64;
        // Walk the gaps of the (ascending) ranks: a corrupt world size of
        // billions must not mean billions of look-ups.
        let mut next = 0i64;
        let ranks = self.file.trace.ranks().iter().map(i64::from);
        for r in ranks.filter(|&r| r < world).chain([world]) {
            missing += (r - next).max(0) as u64;
            first.extend((next..r).take(8 - first.len()).map(|m| m as u32));
            next = next.max(r + 1);
        }
        if missing > 0 {
            self.sink.add(
                None,
                None,
                None,
                ProblemKind::MissingRanks {
                    missing,
                    first,
                    world_size: world as u64,
                },
            );
        }
    }

    /// Walks one rank's events.
    fn rank(&mut self, rank: u32) {
        self.n.ranks += 1;
        if i64::from(rank) >= self.world {
            let kind = ProblemKind::ExtraRank {
                world_size: self.world as u64,
            };
            self.sink.add(Some(rank), None, None, kind);
        }
        let t = match self.file.trace.rank_trace(rank) {
            Ok(t) => t,
            Err(e) => {
                let why = e.to_string();
                self.sink
                    .add(Some(rank), None, None, ProblemKind::Unreadable { why });
                return;
            }
        };
        let mut st = Rank::new(rank, self.world);
        let mut ex = t.expand();
        let mut i = 0u64;
        for e in ex.by_ref() {
            self.n.events += 1;
            self.event(&mut st, i, &e);
            i += 1;
        }
        if ex.is_broken() {
            let why = format!("the expansion stops after {i} events");
            self.sink
                .add(Some(rank), Some(i), None, ProblemKind::Unreadable { why });
        }
        let mut steps = std::mem::take(&mut self.steps);
        st.walk.finish(&mut |s| steps.push(s));
        for s in steps.drain(..) {
            self.step(&mut st, u64::MAX, None, s);
        }
        self.steps = steps;
        self.close_channels(&mut st);
        for b in st.epochs.finish() {
            if let Broken::LeftOpen { what } = b {
                let kind = ProblemKind::RmaLeftOpen { window: None, what };
                self.sink.add(Some(rank), None, None, kind);
            }
        }
    }

    fn event(&mut self, st: &mut Rank, i: u64, e: &Event) {
        // A call that returned an error did nothing (the notes count them).
        if e.failed() {
            return;
        }
        let view = e.names_comm().then(|| st.comms.view(e.comm.0));
        self.values(st.rank, i, e);
        if let Some(v) = view {
            if v.size.is_none() {
                self.n.untraced_comm_events += 1;
            }
            self.caller(st, i, e, v);
            if is_collective(e.op) {
                // An inter-communicator's roots and lists name the other
                // group (MPI_ROOT, MPI_PROC_NULL): not checked as ranks.
                if !v.inter {
                    self.root_and_lists(st.rank, i, e, v);
                }
            } else {
                if let Some(t) = e.send {
                    self.peer(st, i, e, v, Dir::To, t.peer);
                    if matches!(t.peer, Peer::Any) || t.tag == Tag::Any {
                        self.problem(st.rank, i, Some(e), ProblemKind::WildcardSend { op: e.op });
                    }
                }
                if let Some(t) = e.recv {
                    self.peer(st, i, e, v, Dir::From, t.peer);
                }
            }
        }
        let mut steps = std::mem::take(&mut self.steps);
        st.walk.event(i, e, view, &mut |s| steps.push(s));
        for s in steps.drain(..) {
            self.step(st, i, Some(e), s);
        }
        self.steps = steps;
        match (e.op.family(), view) {
            // Made of groups alone (MPI 4): collective over them, not over
            // a parent; the world stands for the parent whose ranks the
            // groups name.
            (Family::CommManagement, None) => {
                if let Some(c) = &e.create {
                    let world = st.comms.view(0);
                    self.create(st, i, e, world, 0, c);
                }
            }
            (_, Some(v)) if counted(e.op) => {
                // Calls on an inter-communicator span both of its groups,
                // with roots of their own (`MPI_ROOT`, `MPI_PROC_NULL`):
                // counted, not grouped. `Comm_create_group` is collective
                // over its group only, not over the parent: not counted.
                let seq = st.comms.count(e);
                if let Some(seq) = seq
                    && !v.inter
                {
                    self.collective(st, i, e, v, seq);
                }
                if let Some(c) = &e.create {
                    self.create(st, i, e, v, seq.unwrap_or(0), c);
                }
            }
            _ => {}
        }
        if e.op.family() == Family::OneSided {
            let mut broken = Vec::new();
            st.epochs.event(
                st.rank,
                i,
                e,
                &st.comms,
                &mut self.pairing,
                &mut self.bounds,
                &mut broken,
            );
            for b in broken {
                let kind = rma_problem(e, b);
                self.problem(st.rank, i, Some(e), kind);
            }
        }
    }

    /// What the walk of point-to-point calls hands on: sends and receives
    /// go on their channels, problems are reported. `e` is the event being
    /// walked (`None` at the rank's end), at index `i`.
    fn step(&mut self, st: &mut Rank, i: u64, e: Option<&Event>, s: Step) {
        let call = |at: u64| e.filter(|_| at == i);
        match s {
            Step::Send(x) => {
                st.touched.insert(x.chan);
                if let (_, Some((k, send, recv))) = self.chans.send(x.chan, x) {
                    deliver(&mut self.sink, &mut self.n, k, send, recv);
                }
            }
            Step::Recv(x) => {
                st.touched.insert(x.chan);
                if let Read::Now(k, send, recv) = self.chans.recv(x.chan, x) {
                    deliver(&mut self.sink, &mut self.n, k, send, recv);
                }
            }
            Step::SendDone { .. } => {}
            Step::UnresolvedWildcard { op, event } => {
                let kind = ProblemKind::UnresolvedWildcard { op };
                self.problem(st.rank, event, call(event), kind);
            }
            Step::UnknownMessage { op, message, event } => {
                let kind = ProblemKind::UnknownMessage { op, message };
                self.problem(st.rank, event, call(event), kind);
            }
            Step::Unknown { .. } => self.n.unresolved_pending += 1,
        }
    }

    /// Counts, sizes, tags and matched sources.
    fn values(&mut self, rank: u32, i: u64, e: &Event) {
        let transfers = [e.send, e.recv].into_iter().flatten().flat_map(|t| {
            let tag = t.tag.value().map_or(0, i64::from);
            [("count", t.count), ("datatype size", t.dsize), ("tag", tag)]
        });
        let counts = [
            ("send count", &e.send_counts),
            ("receive count", &e.recv_counts),
        ]
        .into_iter()
        .flat_map(|(what, l)| l.iter().map(move |&v| (what, v)));
        let sizes = [
            ("send datatype size", &e.send_dsizes),
            ("receive datatype size", &e.recv_dsizes),
        ]
        .into_iter()
        .flat_map(|(what, l)| l.iter().map(move |&v| (what, i64::from(v))));
        let lists = counts.chain(sizes);
        let tags = e.matched.iter().map(|m| ("matched tag", i64::from(m.tag)));
        let mut all = transfers.chain(lists).chain(tags);
        if let Some((what, value)) = all.find(|(_, v)| *v < 0) {
            let kind = ProblemKind::Negative {
                op: e.op,
                what,
                value,
            };
            self.problem(rank, i, Some(e), kind);
        }
        for m in &e.matched {
            let source = i64::from(m.source);
            if !(0..self.world).contains(&source) {
                let kind = ProblemKind::MatchedOutOfWorld {
                    op: e.op,
                    source,
                    world_size: self.world as u64,
                };
                self.problem(rank, i, Some(e), kind);
            }
        }
    }

    /// The caller's own rank in the call's communicator.
    fn caller(&mut self, st: &Rank, i: u64, e: &Event, v: View) {
        let (Some(size), me) = (v.size, i64::from(e.comm_rank)) else {
            return;
        };
        if me < 0 {
            return;
        }
        let expected = st.comms.local_of(v.id);
        if me >= size || expected.is_some_and(|x| x != me) {
            let kind = ProblemKind::CallerRank {
                op: e.op,
                comm: v.id,
                comm_rank: me,
                comm_size: size,
                expected,
            };
            self.problem(st.rank, i, Some(e), kind);
        }
    }

    /// A point-to-point peer.
    fn peer(&mut self, st: &Rank, i: u64, e: &Event, v: View, dir: Dir, peer: Peer) {
        let Peer::Rank { world, local } = peer else {
            return;
        };
        // A communicator rank of -1 is unknown (a parsed raw log has none).
        let (world, local) = (i64::from(world), i64::from(local));
        let kind = if !(0..self.world).contains(&world) {
            ProblemKind::PeerOutOfWorld {
                op: e.op,
                dir,
                peer: world,
                world_size: self.world as u64,
            }
        } else if local == -1 {
            return;
        } else if let Some(size) =
            (if v.inter { v.remote } else { v.size }).filter(|&s| !(0..s).contains(&local))
        {
            ProblemKind::PeerOutOfComm {
                op: e.op,
                dir,
                local,
                comm: v.id,
                comm_size: size,
            }
        } else if let Some(expected) = st.comms.world_of(v.id, local).filter(|&x| x != world) {
            ProblemKind::PeerMismatch {
                op: e.op,
                dir,
                world,
                local,
                comm: v.id,
                expected,
            }
        } else {
            return;
        };
        self.problem(st.rank, i, Some(e), kind);
    }

    /// A collective's root and the lengths of its per-member lists.
    fn root_and_lists(&mut self, rank: u32, i: u64, e: &Event, v: View) {
        let Some(n) = v.size else { return };
        if let Some(root) = e.root.map(i64::from)
            && !(0..n).contains(&root)
        {
            let kind = ProblemKind::RootOutOfComm {
                op: e.op,
                root,
                comm: v.id,
                comm_size: n,
            };
            self.problem(rank, i, Some(e), kind);
        }
        for (list, len) in sized_lists(e) {
            if len as i64 != n {
                let kind = ProblemKind::ListLength {
                    op: e.op,
                    list,
                    len: len as u64,
                    comm: v.id,
                    comm_size: n,
                };
                self.problem(rank, i, Some(e), kind);
            }
        }
    }

    // ----- collectives ---------------------------------------------------

    /// Adds this rank's call, the `seq`-th counted on its communicator, to
    /// its collective.
    fn collective(&mut self, st: &mut Rank, i: u64, e: &Event, v: View, seq: u64) {
        let rank = st.rank;
        let me = i64::from(e.comm_rank);
        let flows_ok = self.flows_ok(e, v);
        let key = (v.inst, seq);
        let desynced = self.desynced.contains(&(rank, v.inst));
        let sample = self.sample.as_ref();
        let world = self.world;
        let c = self.colls.entry(key).or_insert_with(|| {
            let sampled = sampled_locals(sample, st, v);
            Coll {
                at: CollRef {
                    op: e.op,
                    comm: v.id,
                    seq,
                },
                size: v.size,
                ambiguous: v.ambiguous,
                first_rank: rank,
                root: e.root,
                redop: e.redop,
                block: None,
                members: Vec::new(),
                flows: match (v.size, sample.is_none()) {
                    (Some(n), true)
                        if has_flows(e.op)
                            && !v.ambiguous
                            && (0..=world.min(MAX_SUMS)).contains(&n) =>
                    {
                        Flows::Sums {
                            rows: vec![0; n as usize],
                            cols: vec![0; n as usize],
                        }
                    }
                    (Some(_), false) if has_flows(e.op) && sampled.is_some() => {
                        Flows::Pairs(HashMap::new())
                    }
                    _ => Flows::Off,
                },
                sampled,
            }
        });
        let mut found = Vec::new();
        if !desynced {
            if c.at.op != e.op {
                found.push(ProblemKind::CollectiveOrder {
                    comm: v.id,
                    seq,
                    op: e.op,
                    rank,
                    first_op: c.at.op,
                    first_rank: c.first_rank,
                });
                self.desynced.insert((rank, v.inst));
                c.flows = Flows::Off;
            } else {
                agree(c, e, rank, v, &mut found);
                if !flows_ok || v.size != c.size {
                    c.flows = Flows::Off;
                }
                add_flows(c, e, rank, i, me, &mut found);
            }
        }
        c.members.push((me, rank, i));
        let done = !c.ambiguous && c.size.is_some_and(|n| c.members.len() as i64 >= n);
        for kind in found {
            self.problem(rank, i, Some(e), kind);
        }
        if done && let Some(c) = self.colls.remove(&key) {
            self.finalize(c);
        }
    }

    /// Whether this member's call allows the pairwise check.
    fn flows_ok(&self, e: &Event, v: View) -> bool {
        let Some(n) = v.size else { return false };
        let me = i64::from(e.comm_rank);
        (0..n).contains(&me)
            && e.root.is_none_or(|r| (0..n).contains(&i64::from(r)))
            && sized_lists(e).iter().all(|&(_, len)| len as i64 == n)
    }

    /// Checks a collective whose members are all in (or whose walk is over).
    fn finalize(&mut self, mut c: Coll) {
        self.n.collectives += 1;
        c.members.sort_by_key(|m| (m.0, m.1));
        let first = c.members.first().map_or((c.first_rank, 0), |m| (m.1, m.2));
        // An ambiguous instance (`Comm_split_type`: one group per node,
        // which the trace does not say) holds several groups, each with its
        // own comm rank 0.
        for w in c.members.windows(2).filter(|_| !c.ambiguous) {
            if w[0].0 == w[1].0 {
                let kind = ProblemKind::CollectiveDuplicate {
                    coll: c.at,
                    local: w[0].0,
                    ranks: [w[0].1, w[1].1],
                };
                self.sink.add(Some(w[1].1), Some(w[1].2), None, kind);
                return;
            }
        }
        let (Some(n), false) = (
            c.size.filter(|&n| (0..=self.world).contains(&n)),
            c.ambiguous,
        ) else {
            self.n.agreement_only += 1;
            return;
        };
        let locals: Vec<i64> = c.members.iter().map(|m| m.0).collect();
        let present = |l: &i64| locals.binary_search(l).is_ok();
        let count = locals.iter().filter(|l| (0..n).contains(*l)).count() as u64;
        let (mut missing, absent): (Vec<i64>, u64) = match &c.sampled {
            None if self.sample.is_none() => (
                (0..n).filter(|l| !present(l)).take(4).collect(),
                (n - count as i64).max(0) as u64,
            ),
            None => (Vec::new(), 0),
            Some(s) => {
                let all: Vec<i64> = s.iter().copied().filter(|l| !present(l)).collect();
                (all, 0)
            }
        };
        let absent = absent.max(missing.len() as u64);
        missing.truncate(4);
        if !missing.is_empty() {
            let kind = ProblemKind::CollectiveIncomplete {
                coll: c.at,
                members: count,
                size: n,
                more: absent - missing.len() as u64,
                missing,
            };
            self.sink.add(Some(first.0), Some(first.1), None, kind);
            return;
        }
        if (count as i64) < n {
            self.n.partial += 1;
            if self.n.fewest.is_none_or(|(m, _)| count < m) {
                self.n.fewest = Some((count, n));
            }
        }
        match c.flows {
            Flows::Sums { rows, cols } if count as i64 == n => {
                let bad = |v: &[u64]| v.iter().position(|&x| x != 0).map(|p| p as i64);
                let (Some(i), Some(j)) = (bad(&rows), bad(&cols)) else {
                    return;
                };
                let member = |l: i64| c.members.iter().find(|m| m.0 == l).copied();
                if let (Some(s), Some(r)) = (member(i), member(j)) {
                    let kind = ProblemKind::FlowDisagree {
                        coll: c.at,
                        from: s.1,
                        to: r.1,
                        from_local: i,
                        to_local: j,
                        send_event: s.2,
                        sent: None,
                        expected: None,
                        resolved: false,
                    };
                    self.sink.add(Some(r.1), Some(r.2), None, kind);
                }
            }
            Flows::Pairs(halves) => {
                let mut left: Vec<((i64, i64), Half)> = halves.into_iter().collect();
                left.sort_by_key(|(k, _)| *k);
                for ((i, j), h) in left {
                    let other = if h.send { j } else { i };
                    let Some(o) = c.members.iter().find(|m| m.0 == other) else {
                        continue;
                    };
                    let (s, r) = if h.send {
                        ((h.rank, h.event), (o.1, o.2))
                    } else {
                        ((o.1, o.2), (h.rank, h.event))
                    };
                    let kind = ProblemKind::FlowDisagree {
                        coll: c.at,
                        from: s.0,
                        to: r.0,
                        from_local: i,
                        to_local: j,
                        send_event: s.1,
                        sent: h.send.then_some(h.bytes),
                        expected: (!h.send).then_some(h.bytes),
                        resolved: true,
                    };
                    self.sink.add(Some(r.0), Some(r.1), None, kind);
                }
            }
            _ => {}
        }
    }

    /// Checks a communicator constructor and registers what it made.
    fn create(&mut self, st: &mut Rank, i: u64, e: &Event, parent: View, seq: u64, c: &CommCreate) {
        let parent_cart = st.comms.cart(parent.id);
        let found = Ctor::new(e, c, parent, self.world).problems(parent_cart.as_deref());
        for kind in found {
            self.problem(st.rank, i, Some(e), kind);
        }
        st.comms.create(e, parent, seq, c);
    }

    /// Drops the channels of a rank whose other end has been walked too
    /// (ranks are walked in increasing order), or never will be (outside a
    /// sample): nothing more can come on them, so what is left on them is
    /// a problem now, and memory stays with the messages in flight.
    fn close_channels(&mut self, st: &mut Rank) {
        let mut keys: Vec<Channel> = st.touched.drain().collect();
        keys.sort_unstable();
        for k in keys {
            let other = if k.from == st.rank { k.to } else { k.from };
            let outside = self.sample.as_ref().is_some_and(|s| !s.contains(&other));
            if other <= st.rank || outside {
                self.close_channel(k);
            }
        }
    }

    /// Reports what is left on a channel and drops it.
    fn close_channel(&mut self, k: Channel) {
        let Some(left) = self.chans.close(k) else {
            return;
        };
        if let Some(s) = &self.sample
            && !(s.contains(&k.from) && s.contains(&k.to))
        {
            return;
        }
        let link = |comm: u32, nth: u64| Link {
            from: k.from,
            to: k.to,
            comm,
            tag: k.tag,
            nth: nth + 1,
        };
        for (nth, send) in left.sends {
            let kind = ProblemKind::Unreceived {
                link: link(send.comm, nth),
                bytes: send.bytes,
            };
            self.sink.add(Some(k.from), Some(send.post), None, kind);
        }
        for (nth, recv) in left.recvs {
            if recv.completed {
                let kind = ProblemKind::Unsent {
                    link: link(recv.comm, nth),
                };
                self.sink.add(Some(k.to), Some(recv.event), None, kind);
            } else {
                self.n.pending_recvs += 1;
            }
        }
    }

    // ----- the end -------------------------------------------------------

    fn finish(mut self, requested: Vec<u32>, peers: u64) -> CheckReport {
        let mut rest: Vec<Coll> = self.colls.drain().map(|(_, c)| c).collect();
        rest.sort_by_key(|c| {
            let m = c.members.first();
            (m.map(|m| m.1), m.map(|m| m.2), c.at.seq)
        });
        for c in rest {
            self.finalize(c);
        }
        let mut keys: Vec<Channel> = self.chans.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            self.close_channel(k);
        }
        self.rma_across_ranks();
        fill_details(self.file, &mut self.sink.shown);
        let notes = self.notes(&requested, peers);
        CheckReport {
            world_size: self.world as u64,
            complete: self.sample.is_none(),
            requested,
            ranks: self.n.ranks,
            events: self.n.events,
            messages: self.n.messages,
            collectives: self.n.collectives,
            partial_collectives: self.n.partial,
            problem_count: self.sink.total,
            problems: self.sink.shown,
            tally: self
                .sink
                .tally
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            notes,
        }
    }

    /// The one-sided rules between ranks: PSCW epochs pair up (when every
    /// rank was walked) and accesses lie inside their targets' windows
    /// (where the target was walked).
    fn rma_across_ranks(&mut self) {
        if self.sample.is_none() {
            for (_, origin, target, excess) in self.pairing.unpaired() {
                let kind = ProblemKind::RmaUnpaired {
                    origin,
                    target,
                    excess,
                };
                self.sink.add(None, None, None, kind);
            }
        }
        for o in self.bounds.overflows() {
            let kind = ProblemKind::RmaOutOfWindow {
                op: o.at.op,
                target: o.target,
                end: o.end,
                size: o.size,
            };
            self.sink
                .add(Some(o.at.origin), Some(o.at.event), None, kind);
        }
    }

    fn notes(&self, requested: &[u32], peers: u64) -> Vec<String> {
        let n = &self.n;
        let mut notes = Vec::new();
        if self.sample.is_some() {
            let list: Vec<String> = requested.iter().take(16).map(u32::to_string).collect();
            let more = if requested.len() > 16 { ", ..." } else { "" };
            notes.push(format!(
                "a sample: ranks {}{more} and {peers} ranks they exchange messages with; messages of other ranks were not checked",
                list.join(", ")
            ));
        }
        if let Some((m, size)) = n.fewest {
            notes.push(format!(
                "{} collectives were checked among the sampled members only (as few as {m} of {size} members), for agreement but not for completeness",
                n.partial
            ));
        }
        let counted = [
            (
                n.agreement_only,
                "collectives on communicators whose groups the trace does not pin down (Comm_split_type, a Cart_sub of an unknown grid, untraced constructors) were checked for agreement, not for completeness",
            ),
            (
                n.untraced_comm_events,
                "events use communicators no traced call created (e.g. MPI_Intercomm_create); their communicator ranks, roots and lists were not checked",
            ),
            (
                n.pending_recvs,
                "receives were never completed and no send matches them (a program may leave a receive pending at its end)",
            ),
            (
                n.unresolved_pending,
                "wildcard receives were never completed, so what they would match is unknown",
            ),
        ];
        for (count, text) in counted {
            if count > 0 {
                notes.push(format!("{count} {text}"));
            }
        }
        notes.extend(self.file.trace.passed_over());
        notes
    }
}

/// The checks of one communicator constructor: what it makes must fit in
/// its parent, and its lists must be as long as its other arguments say.
/// Each kind of constructor has its own stage; a stage may also say what
/// size the new communicator must have (`implied`).
struct Ctor<'a> {
    e: &'a Event,
    c: &'a CommCreate,
    parent: View,
    world: i64,
    /// The largest communicator it may make: its parent's size (a merge
    /// joins both groups of its inter-communicator: the world's).
    limit: i64,
    dims: Vec<i64>,
    found: Vec<ProblemKind>,
    /// The size the new communicator must have, and why.
    implied: Option<(i64, &'static str)>,
}

impl<'a> Ctor<'a> {
    fn new(e: &'a Event, c: &'a CommCreate, parent: View, world: i64) -> Ctor<'a> {
        let limit = match e.op {
            Op::IntercommMerge => world,
            _ => parent.size.unwrap_or(world),
        };
        Ctor {
            e,
            c,
            parent,
            world,
            limit,
            dims: c.dims.iter().map(|&d| i64::from(d)).collect(),
            found: Vec::new(),
            implied: None,
        }
    }

    /// Every problem of the call.
    fn problems(mut self, parent_cart: Option<&[i64]>) -> Vec<ProblemKind> {
        let (e, c) = (self.e, self.c);
        let size = i64::from(c.size);
        if size < 0 {
            self.negative("communicator size", size);
        } else if size > self.limit {
            self.too_large("makes a communicator of", size);
        }
        match e.op {
            op if op.is_comm_dup() => self.implied = self.parent.size.map(|s| (s, "its parent")),
            op if op.makes_intercomm() => self.intercomm(),
            Op::IntercommMerge => {
                self.out_of("member", &c.members, self.world);
                self.implied_by(c.members.len(), "its members");
            }
            Op::CommCreate | Op::CommCreateGroup | Op::CommCreateFromGroup => {
                self.out_of("group member", &c.members, self.world);
                if c.members.len() as i64 > self.limit {
                    self.too_large("has a group of", c.members.len() as i64);
                }
                self.implied_by(c.members.len(), "its group");
            }
            Op::CartCreate => self.cart(),
            Op::CartSub => self.cart_sub(parent_cart),
            Op::GraphCreate => self.graph(),
            Op::DistGraphCreate => self.dist_graph(),
            Op::DistGraphCreateAdjacent => {
                self.out_of("source", &c.sources, self.limit);
                self.out_of("destination", &c.edges, self.limit);
                self.implied = self.parent.size.map(|s| (s, "its parent"));
            }
            _ => {}
        }
        if let (Some(_), Some((expected, why))) = (c.new, self.implied)
            && expected != size
            && expected <= self.limit
        {
            self.found.push(ProblemKind::CommSize {
                op: e.op,
                size,
                expected,
                why,
            });
        }
        self.found
    }

    /// `Intercomm_create(_from_groups)`: both groups in the world, two
    /// leaders.
    fn intercomm(&mut self) {
        let c = self.c;
        self.out_of("remote group member", &c.members, self.world);
        self.out_of("local group member", &c.sources, self.world);
        self.list("leaders", c.dims.len(), 2, "a local and a remote leader");
        self.implied_by(c.sources.len(), "its local group");
    }

    /// `Cart_create`: dimensions of at least 0 whose product fits, one
    /// period per dimension.
    fn cart(&mut self) {
        let product = self
            .dims
            .iter()
            .fold(1i64, |a, &d| a.saturating_mul(d.max(0)));
        if let Some(&value) = self.dims.iter().find(|&&d| d < 0) {
            self.negative("dimension", value);
        }
        if product > self.limit {
            self.too_large("has dimensions for", product);
        }
        let expected = self.dims.len() as i64;
        self.list(
            "periods",
            self.c.periods.len(),
            expected,
            "its number of dimensions",
        );
        self.implied = Some((product, "its dimensions"));
    }

    /// `Cart_sub` of a known grid: one flag per dimension; the new grid has
    /// the dimensions it keeps.
    fn cart_sub(&mut self, parent_cart: Option<&[i64]>) {
        let Some(pd) = parent_cart else { return };
        if pd.len() != self.dims.len() {
            self.found.push(ProblemKind::CommSize {
                op: self.e.op,
                size: self.dims.len() as i64,
                expected: pd.len() as i64,
                why: "the parent grid's number of dimensions",
            });
            return;
        }
        let kept = pd
            .iter()
            .zip(&self.dims)
            .filter(|(_, k)| **k != 0)
            .fold(1i64, |a, (d, _)| a.saturating_mul(*d));
        self.implied = Some((kept, "the dimensions it keeps"));
    }

    /// `Graph_create`: the index is the running total of each node's edges,
    /// and every edge names a node.
    fn graph(&mut self) {
        let nnodes = self.dims.len() as i64;
        if nnodes > self.limit {
            self.too_large("has a graph of", nnodes);
        }
        self.out_of("graph edge to node", &self.c.edges, nnodes);
        let last = self.dims.last().copied().unwrap_or(0);
        let negative = self
            .dims
            .first()
            .copied()
            .into_iter()
            .chain(self.dims.windows(2).map(|w| w[1] - w[0]))
            .find(|&d| d < 0);
        match negative {
            Some(value) => self.negative("node's edge count in its index", value),
            None => self.list("edges", self.c.edges.len(), last, "its index"),
        }
        self.implied = Some((nnodes, "its graph"));
    }

    /// `Dist_graph_create`: each source's degree, then all their
    /// destinations, every one a rank of the parent.
    fn dist_graph(&mut self) {
        let c = self.c;
        let expected = self.dims.len() as i64;
        self.list(
            "sources",
            c.sources.len(),
            expected,
            "its number of degrees",
        );
        let degrees = self.dims.iter().fold(0i64, |a, &d| a.saturating_add(d));
        self.list(
            "destinations",
            c.edges.len(),
            degrees,
            "the sum of its degrees",
        );
        self.out_of("source", &c.sources, self.limit);
        self.out_of("destination", &c.edges, self.limit);
        self.implied = self.parent.size.map(|s| (s, "its parent"));
    }

    /// The new communicator has as many ranks as a non-empty list names.
    fn implied_by(&mut self, len: usize, why: &'static str) {
        if len > 0 {
            self.implied = Some((len as i64, why));
        }
    }

    fn negative(&mut self, what: &'static str, value: i64) {
        let op = self.e.op;
        self.found.push(ProblemKind::Negative { op, what, value });
    }

    fn too_large(&mut self, what: &'static str, size: i64) {
        self.found.push(ProblemKind::CommTooLarge {
            op: self.e.op,
            what,
            size,
            parent: self.parent.id,
            limit: self.limit,
        });
    }

    /// The first of `values` outside `0..limit`, if any.
    fn out_of(&mut self, what: &'static str, values: &[i32], limit: i64) {
        if let Some(value) = values
            .iter()
            .map(|&v| i64::from(v))
            .find(|v| !(0..limit).contains(v))
        {
            self.found.push(ProblemKind::CommValueOutOfRange {
                op: self.e.op,
                what,
                value,
                limit,
            });
        }
    }

    /// A list of `len` entries where `expected` are due.
    fn list(&mut self, list: &'static str, len: usize, expected: i64, why: &'static str) {
        if len as i64 != expected {
            self.found.push(ProblemKind::ConstructorList {
                op: self.e.op,
                list,
                len: len as i64,
                expected,
                why,
            });
        }
    }
}

/// In a sample: the communicator ranks of the sampled ranks, where the
/// communicator's mapping to world ranks is known.
fn sampled_locals(sample: Option<&HashSet<u32>>, st: &Rank, v: View) -> Option<Vec<i64>> {
    let sample = sample?;
    let n = v.size?;
    match st.comms.map(v.id)? {
        Map::Identity => {
            let mut l: Vec<i64> = sample
                .iter()
                .map(|&r| i64::from(r))
                .filter(|&r| r < n)
                .collect();
            l.sort_unstable();
            Some(l)
        }
        Map::Single(_) => Some(vec![0]),
        Map::Members(m) => Some(
            (0..m.len() as i64)
                .filter(|&l| {
                    st.comms
                        .world_of(v.id, l)
                        .is_some_and(|w| sample.contains(&(w as u32)))
                })
                .collect(),
        ),
        Map::Unknown => None,
    }
}

/// A send meets its receive, the `k`-th (from 0) on their channel.
fn deliver(sink: &mut Sink, n: &mut Counts, k: u64, send: SendEnd, recv: RecvEnd) {
    n.messages += 1;
    if let Some(posted) = recv.posted
        && posted < send.bytes
    {
        let link = Link {
            from: send.chan.from,
            to: send.chan.to,
            comm: recv.comm,
            tag: send.chan.tag,
            nth: k + 1,
        };
        let kind = ProblemKind::Truncated {
            link,
            sent: send.bytes,
            posted,
            send_event: send.post,
        };
        sink.add(Some(send.chan.to), Some(recv.event), None, kind);
    }
}

/// The per-member lists a v/w collective must have one entry per member
/// in, with their lengths.
fn sized_lists(e: &Event) -> Vec<(&'static str, usize)> {
    let root = e.root.is_some() && e.root == Some(e.comm_rank);
    let send = !e.in_place;
    let mut v: Vec<(&'static str, usize)> = Vec::new();
    match e.op.blocking_form() {
        Op::Alltoallv | Op::Alltoallw => {
            if send {
                v.push(("send counts", e.send_counts.len()));
            }
            v.push(("receive counts", e.recv_counts.len()));
            if e.op.blocking_form() == Op::Alltoallw {
                if send {
                    v.push(("send datatype sizes", e.send_dsizes.len()));
                }
                v.push(("receive datatype sizes", e.recv_dsizes.len()));
            }
        }
        Op::Allgatherv | Op::ReduceScatter => v.push(("receive counts", e.recv_counts.len())),
        Op::Gatherv if root => v.push(("receive counts", e.recv_counts.len())),
        Op::Scatterv if root => v.push(("send counts", e.send_counts.len())),
        _ => {}
    }
    v
}

/// Whether an operation's members exchange per-pair amounts that must
/// agree pairwise.
fn has_flows(op: Op) -> bool {
    matches!(
        op.blocking_form(),
        Op::Alltoallv
            | Op::Alltoallw
            | Op::Allgatherv
            | Op::Gatherv
            | Op::Scatterv
            | Op::ReduceScatter
    )
}

/// The byte counts a member of a fixed-size collective gives, all of which
/// must be the same on every member.
fn block_values(e: &Event) -> Vec<(Side, i64)> {
    let root = e.root.is_some() && e.root == Some(e.comm_rank);
    let b = |t: &Option<trace::Transfer>| t.map(|t| bytes(t.count, t.dsize));
    let (send, recv) = match e.op.blocking_form() {
        Op::Bcast | Op::Reduce | Op::Allreduce | Op::Scan | Op::Exscan => {
            return b(&e.send)
                .map(|x| (Side::Contributes, x))
                .into_iter()
                .collect();
        }
        Op::ReduceScatterBlock => (None, b(&e.recv)),
        Op::Allgather | Op::Alltoall => (b(&e.send).filter(|_| !e.in_place), b(&e.recv)),
        Op::Gather => (b(&e.send), b(&e.recv).filter(|_| root)),
        Op::Scatter => (b(&e.send).filter(|_| root), b(&e.recv)),
        _ => (None, None),
    };
    let mut v = Vec::new();
    v.extend(send.map(|x| (Side::Sends, x)));
    v.extend(recv.map(|x| (Side::Receives, x)));
    v
}

/// Compares a member's root, reduction, communicator size and byte counts
/// with the collective's first member.
fn agree(c: &mut Coll, e: &Event, rank: u32, v: View, found: &mut Vec<ProblemKind>) {
    let mut pairs = vec![
        (
            v.size.map(Aspect::Size),
            c.size.map(Aspect::Size),
            c.first_rank,
        ),
        (
            e.root.map(Aspect::Root),
            c.root.map(Aspect::Root),
            c.first_rank,
        ),
        (
            e.redop.map(Aspect::Redop),
            c.redop.map(Aspect::Redop),
            c.first_rank,
        ),
    ];
    for (side, bytes) in block_values(e) {
        let (first, first_rank) = *c.block.get_or_insert((Aspect::Bytes(side, bytes), rank));
        pairs.push((Some(Aspect::Bytes(side, bytes)), Some(first), first_rank));
    }
    let same = |a: &Aspect, b: &Aspect| match (a, b) {
        (Aspect::Bytes(_, x), Aspect::Bytes(_, y)) => x == y,
        _ => a == b,
    };
    for (mine, first, first_rank) in pairs {
        if let (Some(mine), Some(first)) = (mine, first)
            && !same(&mine, &first)
        {
            found.push(ProblemKind::Disagree {
                coll: c.at,
                rank,
                mine,
                first_rank,
                first,
            });
            if matches!(mine, Aspect::Bytes(..)) {
                break;
            }
        }
    }
}

/// The communicator ranks a member exchanges with on one side: everyone,
/// or only the root (a Gatherv's senders, a Scatterv's receivers), or no
/// one.
fn targets(base: Op, send: bool, me: i64, root: i64, n: i64) -> Range<i64> {
    match (base, send) {
        (Op::Gatherv, true) | (Op::Scatterv, false) => root..root + 1,
        (Op::Gatherv, false) | (Op::Scatterv, true) if me != root => 0..0,
        _ => 0..n,
    }
}

/// Bytes a member `me` of a v-collective sends to (`send`) or expects from
/// (`!send`) member `k`; `None` when it has nothing for `k`.
fn flow_bytes(e: &Event, send: bool, me: i64, k: i64) -> Option<i64> {
    fn at<T: Copy + Into<i64>>(v: &[T], k: i64) -> Option<i64> {
        usize::try_from(k)
            .ok()
            .and_then(|k| v.get(k))
            .map(|&c| c.into())
    }
    let rd = e.recv.map(|t| t.dsize);
    let sent = e.send.map(|t| bytes(t.count, t.dsize));
    let root = e.root.map_or(-1, i64::from);
    let recv_block = |k: i64| Some(bytes(at(&e.recv_counts, k)?, rd?));
    let w_block = |c: &[i64], d: &[i32], k: i64| Some(bytes(at(c, k)?, at(d, k)?));
    match (e.op.blocking_form(), send) {
        (Op::Alltoallv, true) if e.in_place => recv_block(k),
        (Op::Alltoallv, true) => Some(bytes(at(&e.send_counts, k)?, e.send?.dsize)),
        (Op::Alltoallw, true) if e.in_place => w_block(&e.recv_counts, &e.recv_dsizes, k),
        (Op::Alltoallw, true) => w_block(&e.send_counts, &e.send_dsizes, k),
        (Op::Alltoallw, false) => w_block(&e.recv_counts, &e.recv_dsizes, k),
        (Op::Allgatherv, true) if e.in_place => recv_block(me),
        (Op::Allgatherv, true) => sent,
        (Op::Gatherv, true) if me == root && e.in_place => None,
        (Op::Gatherv, true) => sent,
        (Op::Gatherv, false) if e.in_place && k == root => None,
        (Op::Scatterv, true) if e.in_place && k == root => None,
        (Op::Scatterv, true) => Some(bytes(at(&e.send_counts, k)?, e.send?.dsize)),
        (Op::Scatterv, false) if me == root && e.in_place => None,
        (Op::Scatterv, false) => e.recv.map(|t| bytes(t.count, t.dsize)),
        (Op::ReduceScatter, true) => recv_block(k),
        (Op::ReduceScatter, false) => recv_block(me),
        (Op::Alltoallv | Op::Allgatherv | Op::Gatherv, false) => recv_block(k),
        _ => None,
    }
}

/// Adds a member's per-pair amounts to its collective's pairwise check.
fn add_flows(
    c: &mut Coll,
    e: &Event,
    rank: u32,
    event: u64,
    me: i64,
    found: &mut Vec<ProblemKind>,
) {
    let (Some(n), false) = (c.size, matches!(c.flows, Flows::Off)) else {
        return;
    };
    let root = e.root.map_or(0, i64::from);
    let base = e.op.blocking_form();
    let coll = c.at;
    let sampled = c.sampled.as_deref();
    for send in [true, false] {
        let range = targets(base, send, me, root, n);
        let ks: Box<dyn Iterator<Item = i64>> = match sampled {
            Some(s) => Box::new(s.iter().copied().filter(|k| range.contains(k))),
            None => Box::new(range),
        };
        for k in ks {
            let Some(b) = flow_bytes(e, send, me, k) else {
                continue;
            };
            let (i, j) = if send { (me, k) } else { (k, me) };
            match &mut c.flows {
                Flows::Off => return,
                Flows::Sums { rows, cols } => {
                    let h = hash_of((i, j, b));
                    let (Some(r), Some(col)) = (rows.get_mut(i as usize), cols.get_mut(j as usize))
                    else {
                        continue;
                    };
                    if send {
                        *r = r.wrapping_add(h);
                        *col = col.wrapping_add(h);
                    } else {
                        *r = r.wrapping_sub(h);
                        *col = col.wrapping_sub(h);
                    }
                }
                Flows::Pairs(halves) => {
                    let half = Half {
                        send,
                        bytes: b,
                        rank,
                        event,
                    };
                    match halves.remove(&(i, j)) {
                        Some(o) if o.send != send => {
                            let (s, r) = if send { (half, o) } else { (o, half) };
                            if s.bytes != r.bytes {
                                found_pair(found, coll, (i, j), s, r);
                            }
                        }
                        _ => {
                            halves.insert((i, j), half);
                        }
                    }
                }
            }
        }
    }
}

/// A disagreeing pair seen in a sample (reported on the receiver's side
/// when the receiver is the current member, else with the sender's event).
fn found_pair(found: &mut Vec<ProblemKind>, coll: CollRef, (i, j): (i64, i64), s: Half, r: Half) {
    found.push(ProblemKind::FlowDisagree {
        coll,
        from: s.rank,
        to: r.rank,
        from_local: i,
        to_local: j,
        send_event: s.event,
        sent: Some(s.bytes),
        expected: Some(r.bytes),
        resolved: true,
    });
}

/// Fills in the raw-log lines of the problems kept in full, and the amounts
/// of v-collective pairs found by fingerprint, by reading those events again.
fn fill_details(file: &TraceFile, shown: &mut [Problem]) {
    let mut want: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    for p in shown.iter() {
        if let (Some(r), Some(e), None) = (p.rank, p.event, &p.call) {
            want.entry(r).or_default().insert(e);
        }
        if let ProblemKind::FlowDisagree {
            from,
            send_event,
            resolved: false,
            ..
        } = p.kind
        {
            want.entry(from).or_default().insert(send_event);
        }
    }
    let mut got: HashMap<(u32, u64), Event> = HashMap::new();
    for (rank, at) in want {
        let Ok(t) = file.trace.rank_trace(rank) else {
            continue;
        };
        let last = at.iter().next_back().copied().unwrap_or(0);
        for (i, e) in t.expand().enumerate() {
            let i = i as u64;
            if at.contains(&i) {
                got.insert((rank, i), e);
            }
            if i >= last {
                break;
            }
        }
    }
    for p in shown.iter_mut() {
        let (Some(r), Some(i)) = (p.rank, p.event) else {
            continue;
        };
        if p.call.is_none() {
            p.call = got.get(&(r, i)).map(trace::raw::event_line);
        }
        if let ProblemKind::FlowDisagree {
            from,
            from_local,
            to_local,
            send_event,
            sent,
            expected,
            resolved,
            ..
        } = &mut p.kind
            && !*resolved
            && let (Some(se), Some(re)) = (got.get(&(*from, *send_event)), got.get(&(r, i)))
        {
            let s = flow_bytes(se, true, *from_local, *to_local);
            let x = flow_bytes(re, false, *to_local, *from_local);
            if s != x {
                (*sent, *expected, *resolved) = (s, x, true);
            }
        }
    }
}
