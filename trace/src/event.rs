//! The one event model shared by every rankscale crate.
//!
//! The shim turns each intercepted MPI call into one [`Event`]; the compressor,
//! the raw log, extrapolation, replay and analysis all consume this type and
//! nothing else. Nothing here knows which MPI implementation produced the event:
//! handles are already resolved into stable per-rank identifiers
//! ([`CommId`], [`ReqId`]) and peers into world ranks.

use serde::{Deserialize, Serialize};

macro_rules! ops {
    ($( $(#[$doc:meta])* $group:ident { $($variant:ident = $name:literal),* $(,)? } )*) => {
        /// An intercepted MPI operation, named as in the MPI standard without
        /// the `MPI_` prefix.
        ///
        /// The order of the variants is part of the trace format (it is the
        /// operation's numeric code), so new operations are only ever appended.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[non_exhaustive]
        pub enum Op { $($(#[doc = concat!("`MPI_", $name, "`.")] $variant,)*)* }

        impl Op {
            /// Every operation, in code order.
            pub const ALL: &'static [Op] = &[$($(Op::$variant,)*)*];

            /// The MPI name without the `MPI_` prefix, e.g. `"Sendrecv_replace"`.
            /// This is the spelling used by the raw log grammar.
            pub fn name(self) -> &'static str {
                match self { $($(Op::$variant => $name,)*)* }
            }

            /// The function family, used to group coverage and profiles.
            pub const fn family(self) -> Family {
                match self { $($(Op::$variant => Family::$group,)*)* }
            }

            /// Looks an operation up by its raw-log name.
            pub fn from_name(name: &str) -> Option<Op> {
                match name { $($($name => Some(Op::$variant),)*)* _ => None }
            }
        }
    };
}

// The hand-written groups, then the functions of `mpi-functions.txt` (see
// build.rs): one list of operation codes, appended to only.
include!(concat!(env!("OUT_DIR"), "/listed_ops.rs"));

with_listed_ops! {
    InitExit { Init = "Init", InitThread = "Init_thread", Finalize = "Finalize", Abort = "Abort" }
    BlockingP2p {
        Send = "Send", Ssend = "Ssend", Bsend = "Bsend", Rsend = "Rsend", Recv = "Recv",
        Sendrecv = "Sendrecv", SendrecvReplace = "Sendrecv_replace",
    }
    NonblockingP2p {
        Isend = "Isend", Issend = "Issend", Ibsend = "Ibsend", Irsend = "Irsend", Irecv = "Irecv",
    }
    Persistent {
        SendInit = "Send_init", SsendInit = "Ssend_init", RecvInit = "Recv_init",
        Start = "Start", Startall = "Startall", RequestFree = "Request_free",
    }
    Completion {
        Wait = "Wait", Waitall = "Waitall", Waitany = "Waitany", Waitsome = "Waitsome",
        Test = "Test", Testall = "Testall", Testany = "Testany", Testsome = "Testsome",
    }
    Probe {
        Probe = "Probe", Iprobe = "Iprobe", Mprobe = "Mprobe", Improbe = "Improbe",
        Mrecv = "Mrecv", Imrecv = "Imrecv",
    }
    Collective {
        Barrier = "Barrier", Bcast = "Bcast", Reduce = "Reduce", Allreduce = "Allreduce",
        Gather = "Gather", Gatherv = "Gatherv", Scatter = "Scatter", Scatterv = "Scatterv",
        Allgather = "Allgather", Allgatherv = "Allgatherv", Alltoall = "Alltoall",
        Alltoallv = "Alltoallv", Alltoallw = "Alltoallw", ReduceScatter = "Reduce_scatter",
        ReduceScatterBlock = "Reduce_scatter_block", Scan = "Scan", Exscan = "Exscan",
    }
    NonblockingCollective {
        Ibarrier = "Ibarrier", Ibcast = "Ibcast", Ireduce = "Ireduce", Iallreduce = "Iallreduce",
        Igather = "Igather", Igatherv = "Igatherv", Iscatter = "Iscatter", Iscatterv = "Iscatterv",
        Iallgather = "Iallgather", Iallgatherv = "Iallgatherv", Ialltoall = "Ialltoall",
        Ialltoallv = "Ialltoallv", Ialltoallw = "Ialltoallw", IreduceScatter = "Ireduce_scatter",
        IreduceScatterBlock = "Ireduce_scatter_block", Iscan = "Iscan", Iexscan = "Iexscan",
    }
    CommManagement {
        CommDup = "Comm_dup", CommSplit = "Comm_split", CommSplitType = "Comm_split_type",
        CommCreate = "Comm_create", CommFree = "Comm_free", CartCreate = "Cart_create",
        CartSub = "Cart_sub", GraphCreate = "Graph_create", DistGraphCreate = "Dist_graph_create",
        DistGraphCreateAdjacent = "Dist_graph_create_adjacent",
    }
    Profiling { Pcontrol = "Pcontrol" }
}

/// The function families of the interception contract (see docs/TRACING.md's
/// coverage table). Tests check coverage per family, so that a missing wrapper
/// shows up as a named gap rather than a count mismatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Family {
    /// Init, Init_thread, Finalize, Abort.
    InitExit,
    /// Blocking point-to-point.
    BlockingP2p,
    /// Nonblocking point-to-point.
    NonblockingP2p,
    /// Persistent requests.
    Persistent,
    /// Wait/Test and their all/any/some forms.
    Completion,
    /// Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv.
    Probe,
    /// Blocking collectives.
    Collective,
    /// Nonblocking collectives.
    NonblockingCollective,
    /// Communicator and topology constructors and Comm_free.
    CommManagement,
    /// `MPI_Pcontrol`: the standard's hook for the application to talk to
    /// its profiler. Its level marks a context boundary for the analysis
    /// (and imported traces' context delimiters become one).
    Profiling,
    /// Persistent collectives of MPI 4 (`Barrier_init`, `Allreduce_init`,
    /// `Neighbor_alltoall_init`, ...): the event of the `I` form, whose
    /// request is persistent; each `MPI_Start` of it runs the collective.
    PersistentCollective,
    /// Partitioned point-to-point of MPI 4 (`Psend_init`, `Precv_init`,
    /// `Pready`, `Pready_range`, `Pready_list`, `Parrived`): a persistent
    /// request whose buffer the sender marks ready partition by partition
    /// and the receiver can poll partition by partition.
    Partitioned,
    /// One-sided communication (issue 36): window constructors,
    /// `Win_attach`/`Win_detach` and `Win_free`; the communication calls
    /// (`Put`, `Get`, the accumulates, `Fetch_and_op`, `Compare_and_swap`
    /// and their request forms); active-target synchronisation (fence and
    /// PSCW) and passive-target locks and flushes. Each records its
    /// [`Rma`] detail.
    OneSided,
    // The families below are recorded without detail (see
    // [`Family::is_generic`]), but for `Io`, which became detailed in its
    // place (the variants' order is their serialised index).
    // A generic call's event names the function, its
    // communicator where it has one, the bytes of its first buffer, the
    // request it created and its time. Issues that give a family its
    // detailed event move its functions to a detailed family.
    /// Request queries and cancellation (`Cancel`, `Test_cancelled`,
    /// `Request_get_status`, generalized requests).
    Request,
    /// Communicator constructors whose lineage is not recorded yet
    /// (intercommunicators, `Comm_idup`, `Comm_create_group`, ...).
    CommConstruct,
    /// Communicator, topology and attribute queries and settings
    /// (`Comm_rank`, `Cart_shift`, `Comm_set_attr`, ...).
    CommQuery,
    /// Group constructors and queries.
    Group,
    /// Datatype constructors and queries, packing, reduction operations.
    Datatype,
    /// Neighbourhood collectives, blocking and nonblocking
    /// (`Neighbor_alltoall`, `Ineighbor_allgatherv`, ...).
    Neighborhood,
    /// MPI-IO (issue 36): files (`File_open`, `File_close`, `File_delete`,
    /// sizes, `File_sync`), views, seeks, and data access in every form
    /// (explicit offsets, individual and shared file pointers, collective,
    /// split collective and nonblocking). Each records its [`Io`] detail.
    Io,
    /// Dynamic processes: spawn, ports, connect and accept.
    DynamicProcess,
    /// MPI 4 sessions.
    Session,
    /// The environment: initialisation queries, errors and error handlers,
    /// info objects, memory, the buffer of buffered sends.
    Environment,
    /// The large-count (`_c`) forms of MPI 4.
    LargeCount,
    /// Window queries and settings: attributes, names, info, error
    /// handlers, the group, `Win_shared_query`.
    WinQuery,
    /// File queries and settings: the file's size, position, view, group,
    /// amode, info, atomicity and error handlers. (Last, as the variants'
    /// order is their serialised index.)
    IoQuery,
}

impl Family {
    /// A short lower-case name: the timeline export's slice category and
    /// the coverage table's row.
    pub fn slug(self) -> &'static str {
        match self {
            Family::InitExit => "init",
            Family::BlockingP2p => "p2p",
            Family::NonblockingP2p => "p2p-nonblocking",
            Family::Persistent => "p2p-persistent",
            Family::Completion => "completion",
            Family::Probe => "probe",
            Family::Collective => "collective",
            Family::NonblockingCollective => "collective-nonblocking",
            Family::CommManagement => "communicator",
            Family::Profiling => "profiling",
            Family::Request => "request",
            Family::CommConstruct => "communicator-other",
            Family::CommQuery => "communicator-query",
            Family::Group => "group",
            Family::Datatype => "datatype",
            Family::Neighborhood => "neighborhood",
            Family::PersistentCollective => "collective-persistent",
            Family::Partitioned => "partitioned",
            Family::OneSided => "one-sided",
            Family::Io => "io",
            Family::DynamicProcess => "dynamic-process",
            Family::Session => "session",
            Family::Environment => "environment",
            Family::LargeCount => "large-count",
            Family::WinQuery => "one-sided-query",
            Family::IoQuery => "io-query",
        }
    }

    /// Whether the family's calls are recorded without detail: the event
    /// names the function, its communicator (when it has one), the bytes
    /// of its first count and datatype in [`Event::value`], the request it
    /// created and its time, and nothing else. Such calls are counted and
    /// shown by every tool, so that no call is dropped in silence, but
    /// replay, simulation and code generation cannot reproduce them.
    pub const fn is_generic(self) -> bool {
        !matches!(
            self,
            Family::InitExit
                | Family::BlockingP2p
                | Family::NonblockingP2p
                | Family::Persistent
                | Family::Completion
                | Family::Probe
                | Family::Collective
                | Family::NonblockingCollective
                | Family::CommManagement
                | Family::Profiling
                | Family::Neighborhood
                | Family::PersistentCollective
                | Family::Partitioned
                | Family::OneSided
                | Family::Io
        )
    }
}

/// [`Op::has_comm`] of every operation, by code.
const HAS_COMM: [bool; Op::ALL.len()] = {
    let mut t = [false; Op::ALL.len()];
    let mut i = 0;
    while i < Op::ALL.len() {
        t[i] = Op::ALL[i].names_a_comm();
        i += 1;
    }
    t
};

impl Op {
    /// Whether the call names a communicator (everything but init/exit,
    /// completion calls, Start, Startall, Request_free, the calls on one
    /// partition of a request and the constructors from groups).
    ///
    /// A table lookup: the tracer asks it of every call it records (the
    /// codec, the raw log), and the chain of tests below cost about fifty
    /// instructions per call (callgrind on a traced send-receive loop).
    #[inline]
    pub fn has_comm(self) -> bool {
        HAS_COMM[self as usize]
    }

    /// [`Op::has_comm`], computed (once per operation, at compile time).
    const fn names_a_comm(self) -> bool {
        // A one-sided call names its window, not a communicator: the
        // event's `comm` holds the window only where it records its
        // [`Rma`] detail (see [`Event::names_comm`]), so that an event an
        // earlier tracer wrote without detail decodes as it was written.
        // The window constructors take a communicator (listed `comm`).
        if self.is_generic() || matches!(self.family(), Family::OneSided | Family::Io) {
            return listed_has_comm(self);
        }
        !matches!(
            self.family(),
            Family::InitExit | Family::Completion | Family::Profiling
        ) && !matches!(self, Op::Start | Op::Startall | Op::RequestFree)
            && !self.is_partition_call()
            && !self.is_from_groups()
    }

    /// Whether the call is recorded without detail (see
    /// [`Family::is_generic`]).
    #[inline]
    pub const fn is_generic(self) -> bool {
        // Every call the tracer records asks this (through
        // [`Op::has_comm`]): the hand-written operations, the common ones,
        // answer without the family table.
        self as u16 > Op::Pcontrol as u16 && self.family().is_generic()
    }

    /// Whether the call can block waiting for another rank: blocking
    /// point-to-point, `Wait*`, blocking probes and `Mrecv`, blocking
    /// collectives and communicator constructors. The analysis cuts
    /// contexts at loops that contain such a call; a loop of posts or
    /// polls alone is part of an enclosing iteration.
    pub fn can_wait(self) -> bool {
        match self.family() {
            Family::BlockingP2p | Family::Collective | Family::CommManagement => true,
            Family::Completion => {
                matches!(self, Op::Wait | Op::Waitall | Op::Waitany | Op::Waitsome)
            }
            Family::Probe => matches!(self, Op::Probe | Op::Mprobe | Op::Mrecv),
            _ => false,
        }
    }

    /// Whether the call posts one point-to-point send of its own, in any
    /// mode (blocking, nonblocking, or as a persistent request's
    /// template): what message matching pairs with a receive. `Sendrecv`
    /// both sends and receives and is not counted here.
    pub fn is_send(self) -> bool {
        matches!(
            self,
            Op::Send
                | Op::Ssend
                | Op::Bsend
                | Op::Rsend
                | Op::Isend
                | Op::Issend
                | Op::Ibsend
                | Op::Irsend
                | Op::SendInit
                | Op::SsendInit
                | Op::BsendInit
                | Op::RsendInit
                | Op::PsendInit
        )
    }

    /// Whether the call makes a persistent point-to-point request
    /// (`Send_init` in any mode, `Recv_init`, or the partitioned
    /// `Psend_init` and `Precv_init`): a template that each `MPI_Start`
    /// posts again.
    pub fn is_persistent_init(self) -> bool {
        matches!(
            self,
            Op::SendInit
                | Op::SsendInit
                | Op::BsendInit
                | Op::RsendInit
                | Op::RecvInit
                | Op::PsendInit
                | Op::PrecvInit
        )
    }

    /// Whether the call duplicates its communicator (`Comm_dup`,
    /// `Comm_dup_with_info`, `Comm_idup`, `Comm_idup_with_info`): the new
    /// one has the parent's group (and remote group), ranks and topology.
    pub fn is_comm_dup(self) -> bool {
        matches!(
            self,
            Op::CommDup | Op::CommDupWithInfo | Op::CommIdup | Op::CommIdupWithInfo
        )
    }

    /// Whether the call makes a communicator of groups alone, with no
    /// parent communicator (MPI 4's `Comm_create_from_group` and
    /// `Intercomm_create_from_groups`): collective over the group(s)
    /// only, matched by their string tag (recorded as its hash in
    /// [`CommCreate::key`]).
    pub const fn is_from_groups(self) -> bool {
        matches!(
            self,
            Op::CommCreateFromGroup | Op::IntercommCreateFromGroups
        )
    }

    /// Whether the call makes an inter-communicator of two groups
    /// (`Intercomm_create`, `Intercomm_create_from_groups`): its lineage
    /// holds the local group in [`CommCreate::sources`], the remote one in
    /// [`CommCreate::members`], the leaders in [`CommCreate::dims`] and the
    /// tag in [`CommCreate::key`].
    pub fn makes_intercomm(self) -> bool {
        matches!(self, Op::IntercommCreate | Op::IntercommCreateFromGroups)
    }

    /// Whether the call makes a partitioned request (`Psend_init`,
    /// `Precv_init`). Partitioned sends match partitioned receives only
    /// (MPI 4.0, chapter 4), so message matching keeps them on channels of
    /// their own; their transfer's count is the whole buffer's,
    /// partitions times the count of one.
    pub fn is_partitioned_init(self) -> bool {
        matches!(self, Op::PsendInit | Op::PrecvInit)
    }

    /// The communicator id a message this call posts is matched on, for
    /// the tools that key messages by (communicator, source, destination,
    /// tag): `comm` itself, or with [`CommId::PARTITIONED_CHANNELS`] set
    /// for a partitioned request's.
    pub fn channel_comm(self, comm: u32) -> u32 {
        if self.is_partitioned_init() {
            comm | CommId::PARTITIONED_CHANNELS
        } else {
            comm
        }
    }

    /// Whether the call makes a window (`Win_create`, `Win_allocate`,
    /// `Win_allocate_shared`, `Win_create_dynamic`): collective over its
    /// communicator, it makes a window of the same group, recorded like a
    /// communicator ([`Rma`]).
    pub fn makes_window(self) -> bool {
        matches!(
            self,
            Op::WinCreate | Op::WinAllocate | Op::WinAllocateShared | Op::WinCreateDynamic
        )
    }

    /// Whether every member of the communicator or window makes the call,
    /// in the same order as its other such calls: the window constructors
    /// (on their communicator), `Win_fence` and `Win_free` (on the
    /// window). The other one-sided synchronisation involves only the
    /// ranks it names.
    pub fn is_window_collective(self) -> bool {
        self.makes_window() || matches!(self, Op::WinFence | Op::WinFree)
    }

    /// Whether the call opens a file (`File_open`): a constructor over its
    /// communicator, whose new id is the file ([`Io`]).
    pub fn opens_file(self) -> bool {
        self == Op::FileOpen
    }

    /// Whether every rank that opened the file makes the call, in the same
    /// order as its other such calls: `File_open` (on its communicator),
    /// `File_close`, `File_set_view`, `File_set_size`, `File_preallocate`,
    /// `File_sync`, `File_seek_shared`, and the collective data accesses
    /// (`_all`, `_at_all`, `_ordered`, their split `_begin` and
    /// nonblocking forms; a split collective's `_end` completes its
    /// `_begin` and is not counted again).
    pub fn is_file_collective(self) -> bool {
        use Op::*;
        matches!(
            self,
            FileOpen
                | FileClose
                | FileSetView
                | FileSetSize
                | FilePreallocate
                | FileSync
                | FileSeekShared
                | FileReadAll
                | FileWriteAll
                | FileReadAtAll
                | FileWriteAtAll
                | FileReadOrdered
                | FileWriteOrdered
                | FileReadAllBegin
                | FileWriteAllBegin
                | FileReadAtAllBegin
                | FileWriteAtAllBegin
                | FileReadOrderedBegin
                | FileWriteOrderedBegin
                | FileIreadAll
                | FileIwriteAll
                | FileIreadAtAll
                | FileIwriteAtAll
        )
    }

    /// Whether the call begins a split collective data access
    /// (`File_read_all_begin` and its kin): its buffer is MPI's until the
    /// file's matching `_end`, which every tool that issues or models the
    /// call pairs with it.
    pub const fn is_split_begin(self) -> bool {
        use Op::*;
        matches!(
            self,
            FileReadAllBegin
                | FileWriteAllBegin
                | FileReadAtAllBegin
                | FileWriteAtAllBegin
                | FileReadOrderedBegin
                | FileWriteOrderedBegin
        )
    }

    /// Whether the call ends a split collective data access
    /// (`File_read_all_end` and its kin; see [`Op::is_split_begin`]).
    pub const fn is_split_end(self) -> bool {
        use Op::*;
        matches!(
            self,
            FileReadAllEnd
                | FileWriteAllEnd
                | FileReadAtAllEnd
                | FileWriteAtAllEnd
                | FileReadOrderedEnd
                | FileWriteOrderedEnd
        )
    }

    /// Whether the call acts on one partition of a live partitioned
    /// request (`Pready`, `Pready_range`, `Pready_list`, `Parrived`): it
    /// names the request in [`Event::reqs`] and no communicator.
    pub const fn is_partition_call(self) -> bool {
        matches!(
            self,
            Op::Pready | Op::PreadyRange | Op::PreadyList | Op::Parrived
        )
    }

    /// True for collectives, blocking, nonblocking or persistent, the
    /// neighbourhood ones included: every member of the communicator takes
    /// part, so the peer is implicit. A persistent collective's `_init` is
    /// itself collective and ordered like the others (MPI 4.0 §6.13).
    pub fn is_collective(self) -> bool {
        matches!(
            self.family(),
            Family::Collective
                | Family::NonblockingCollective
                | Family::Neighborhood
                | Family::PersistentCollective
        )
    }

    /// Whether the call is a neighbourhood collective: collective over its
    /// communicator, but moving data only between the neighbours of its
    /// virtual topology, so its count lists have one entry per neighbour
    /// (in- or out-degree), not per rank.
    pub fn is_neighborhood(self) -> bool {
        self.family() == Family::Neighborhood
            || (self.family() == Family::PersistentCollective
                && self.name().starts_with("Neighbor_"))
    }

    /// Whether the call makes a persistent collective request (MPI 4's
    /// `Allreduce_init`, `Neighbor_alltoall_init`, ...): its arguments are
    /// those of the `I` form, and each `MPI_Start` of the request runs it.
    pub fn is_persistent_collective(self) -> bool {
        self.family() == Family::PersistentCollective
    }

    /// The blocking collective whose arguments a nonblocking or persistent
    /// one takes (`Ialltoallv` and `Alltoallv_init` are `Alltoallv`,
    /// `Ineighbor_alltoall` is `Neighbor_alltoall`); any other call is its
    /// own. Where two ranks' calls must agree, and where replay, codegen
    /// and the simulator choose the arguments, they compare this.
    pub fn blocking_form(self) -> Op {
        let name = self.name();
        let base = if self.is_persistent_collective() {
            name.strip_suffix("_init").map(str::to_string)
        } else if self.is_nonblocking_collective() {
            name.strip_prefix('I').map(|rest| {
                let mut c = rest.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
        } else {
            None
        };
        base.and_then(|b| Op::from_name(&b)).unwrap_or(self)
    }

    /// Whether the call is a nonblocking collective (it creates a request):
    /// the `I` forms of the collectives and of the neighbourhood
    /// collectives.
    pub fn is_nonblocking_collective(self) -> bool {
        self.family() == Family::NonblockingCollective
            || matches!(
                self,
                Op::IneighborAllgather
                    | Op::IneighborAllgatherv
                    | Op::IneighborAlltoall
                    | Op::IneighborAlltoallv
                    | Op::IneighborAlltoallw
            )
    }
}

/// A communicator, named by its creation order on this rank.
///
/// `0` is `MPI_COMM_WORLD` and `1` is `MPI_COMM_SELF`; every constructor call
/// (even one that returns `MPI_COMM_NULL`) takes the next id. Because
/// constructors are collective over their parent, SPMD ranks give the same id
/// to the "same" communicator, which is what lets traces of different ranks
/// merge. The creation event ([`CommCreate`]) is the communicator's lineage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CommId(pub u32);

impl CommId {
    /// `MPI_COMM_WORLD`.
    pub const WORLD: CommId = CommId(0);
    /// `MPI_COMM_SELF`.
    pub const SELF: CommId = CommId(1);
    /// The first id handed to a created communicator.
    pub const FIRST_CREATED: u32 = 2;
    /// Set in the communicator of a partitioned message's channel by the
    /// tools that key messages by (communicator, source, destination,
    /// tag): partitioned sends match partitioned receives only. (Ids
    /// count a rank's constructor calls and never reach it.)
    pub const PARTITIONED_CHANNELS: u32 = 1 << 31;
}

/// A request, named by its creation order on this rank (starting at 0).
///
/// Handles are reused by MPI and may even change under a persistent request
/// (Open MPI swaps it at `MPI_Start`), so the shim never stores raw handles in
/// events: it maps each live handle to the id of the call that created it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReqId(pub u64);

/// A point-to-point endpoint as the application named it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Peer {
    /// A concrete rank, as a world rank and as a rank in the call's communicator.
    Rank {
        /// Rank in `MPI_COMM_WORLD` (absolute, as in the raw log).
        world: i32,
        /// Rank in the communicator the call used.
        local: i32,
    },
    /// `MPI_ANY_SOURCE`; the matched source is in [`Event::matched`].
    Any,
    /// `MPI_PROC_NULL`.
    Null,
}

impl Peer {
    /// The world rank of a concrete peer; `None` for a wildcard or
    /// `MPI_PROC_NULL` (message matching keys channels by world rank).
    pub fn world(self) -> Option<i32> {
        match self {
            Peer::Rank { world, .. } => Some(world),
            _ => None,
        }
    }
}

/// A tag as the application gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Tag {
    /// A concrete tag.
    Value(i32),
    /// `MPI_ANY_TAG`.
    Any,
}

impl Tag {
    /// A concrete tag's value; `None` for `MPI_ANY_TAG`.
    pub fn value(self) -> Option<i32> {
        match self {
            Tag::Value(v) => Some(v),
            Tag::Any => None,
        }
    }
}

/// One side of a message transfer: what was sent or what was posted to receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Transfer {
    /// Destination (send side) or source (receive side).
    pub peer: Peer,
    /// Message tag.
    pub tag: Tag,
    /// Element count.
    pub count: i64,
    /// Size in bytes of one element of the datatype (`MPI_Type_size`).
    pub dsize: i64,
    /// Which datatype, when it is predefined (so that replay can reduce
    /// over the same type: 16 bytes may be one complex number or two
    /// doubles).
    pub dtype: crate::Datatype,
}

impl Transfer {
    /// A collective's buffer: collectives have no peer and no tag, so both
    /// are fixed (`Peer::Null`, tag 0) and the raw form prints only count and
    /// datatype size.
    pub fn collective(count: i64, dsize: i64) -> Transfer {
        Transfer {
            peer: Peer::Null,
            tag: Tag::Value(0),
            count,
            dsize,
            dtype: crate::Datatype::UNKNOWN,
        }
    }

    /// The same transfer with its datatype named.
    pub fn typed(self, dtype: crate::Datatype) -> Transfer {
        Transfer { dtype, ..self }
    }

    /// Bytes moved: count times datatype size.
    pub fn bytes(&self) -> i64 {
        self.count * self.dsize
    }
}

/// What a wildcard receive or a probe actually matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Matched {
    /// The request this outcome belongs to, for completions; `None` for the
    /// blocking call that itself matched (Recv, Probe, Mprobe, ...).
    pub req: Option<ReqId>,
    /// Matched source, as a world rank.
    pub source: i32,
    /// Matched tag.
    pub tag: i32,
}

/// A reduction operation. Built-in operations keep their name so that replay
/// can re-issue them; user-defined operations replay as `MPI_SUM` of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduceOp {
    /// MPI_MAX.
    Max,
    /// MPI_MIN.
    Min,
    /// MPI_SUM.
    Sum,
    /// MPI_PROD.
    Prod,
    /// MPI_LAND.
    Land,
    /// MPI_BAND.
    Band,
    /// MPI_LOR.
    Lor,
    /// MPI_BOR.
    Bor,
    /// MPI_LXOR.
    Lxor,
    /// MPI_BXOR.
    Bxor,
    /// MPI_MAXLOC.
    Maxloc,
    /// MPI_MINLOC.
    Minloc,
    /// A user-defined operation.
    Other,
    /// `MPI_REPLACE` (one-sided accumulates; traces before issue 36 have
    /// it as [`ReduceOp::Other`]).
    Replace,
    /// `MPI_NO_OP` (`Get_accumulate` and `Fetch_and_op` as an atomic read).
    NoOp,
}

impl ReduceOp {
    /// Every reduction op, in raw-log name order.
    pub const ALL: [ReduceOp; 15] = [
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Land,
        ReduceOp::Band,
        ReduceOp::Lor,
        ReduceOp::Bor,
        ReduceOp::Lxor,
        ReduceOp::Bxor,
        ReduceOp::Maxloc,
        ReduceOp::Minloc,
        ReduceOp::Other,
        ReduceOp::Replace,
        ReduceOp::NoOp,
    ];

    /// Raw-log spelling, e.g. `sum`.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Land => "land",
            ReduceOp::Band => "band",
            ReduceOp::Lor => "lor",
            ReduceOp::Bor => "bor",
            ReduceOp::Lxor => "lxor",
            ReduceOp::Bxor => "bxor",
            ReduceOp::Maxloc => "maxloc",
            ReduceOp::Minloc => "minloc",
            ReduceOp::Other => "other",
            ReduceOp::Replace => "replace",
            ReduceOp::NoOp => "no_op",
        }
    }
}

/// How a communicator-creating call built its result: the lineage that lets
/// replay and extrapolation re-create it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CommCreate {
    /// The id given to the new communicator; `None` when MPI returned
    /// `MPI_COMM_NULL` (the id is still consumed, see [`CommId`]).
    pub new: Option<CommId>,
    /// Size of the new communicator (0 for `MPI_COMM_NULL`); of an
    /// inter-communicator, its local group's.
    pub size: i32,
    /// Comm_split colour (`None` = `MPI_UNDEFINED`) and key; Comm_split_type
    /// key.
    pub color: Option<i32>,
    /// Comm_split / Comm_split_type key; Intercomm_create's tag;
    /// Intercomm_merge's `high`.
    pub key: Option<i32>,
    /// Comm_split_type split type.
    pub split_type: Option<i32>,
    /// Cartesian or graph dimensions / Cart_sub remain_dims / graph index;
    /// Intercomm_create's local and remote leader.
    pub dims: Vec<i32>,
    /// Cartesian periods.
    pub periods: Vec<i32>,
    /// Graph edges, or dist-graph destinations (ranks in the parent);
    /// Intercomm_create's peer communicator, at the local leader (the one
    /// rank where it is significant).
    pub edges: Vec<i32>,
    /// Dist-graph sources (ranks in the parent); Intercomm_create's local
    /// group, as world ranks.
    pub sources: Vec<i32>,
    /// Comm_create group members, Intercomm_create's remote group and
    /// Intercomm_merge's new communicator, as world ranks in rank order.
    pub members: Vec<i32>,
    /// Whether reordering was allowed.
    pub reorder: Option<bool>,
}

impl CommCreate {
    /// The lineage of a new communicator with every construction detail
    /// still empty; the wrapper of each constructor fills in its own.
    pub fn new(new: Option<CommId>, size: i32) -> CommCreate {
        CommCreate {
            new,
            size,
            color: None,
            key: None,
            split_type: None,
            dims: Vec::new(),
            periods: Vec::new(),
            edges: Vec::new(),
            sources: Vec::new(),
            members: Vec::new(),
            reorder: None,
        }
    }
}

/// One intercepted MPI call.
///
/// Fields that an operation does not use stay at their empty value (`None`,
/// empty vector). The raw log prints exactly the fields that are set, in a
/// fixed order (see [`crate::raw`]). Message contents are never recorded.
// The hand-written `PartialEq` below is the derived relation (every field,
// compared the same way), only faster on empty lists, so the derived `Hash`
// agrees with it.
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Debug, Eq, Hash, Serialize, Deserialize)]
pub struct Event {
    /// The MPI operation.
    pub op: Op,
    /// Call-site signature: a hash of (module name, offset) of the calling
    /// frames, so that it is the same on every rank and across runs
    /// regardless of ASLR.
    pub site: u64,
    /// Index of the calling thread on this rank (0 = the thread that called
    /// the first MPI function).
    pub thread: u32,
    /// The communicator the call used.
    pub comm: CommId,
    /// The caller's rank in `comm` (-1 for calls without a communicator).
    /// With a peer's local rank it gives the peer relative to the caller,
    /// the location-independent endpoint that lets SPMD ranks merge
    /// (Wu and Mueller 2012 §2): see [`Event::relative`].
    pub comm_rank: i32,
    /// Send side (send, sendrecv, collectives' send buffer).
    pub send: Option<Transfer>,
    /// Receive side (recv, sendrecv, probes, collectives' receive buffer).
    pub recv: Option<Transfer>,
    /// Root of a rooted collective, as a rank in `comm`.
    pub root: Option<i32>,
    /// Reduction operation.
    pub redop: Option<ReduceOp>,
    /// `MPI_IN_PLACE` given as the send buffer (or receive buffer, for the
    /// non-root side of rooted calls where the standard allows it).
    pub in_place: bool,
    /// Per-peer send counts of v/w collectives; the partitions that
    /// `Pready_range` (low and high) and `Pready_list` (the list) mark
    /// ready. 64-bit, as the large-count (`_c`) bindings of MPI 4 pass
    /// them: the same event as the `int` form, so nothing downstream tells
    /// the two apart.
    pub send_counts: Vec<i64>,
    /// Per-peer receive counts of v/w collectives (and Reduce_scatter).
    pub recv_counts: Vec<i64>,
    /// Per-peer send datatype sizes of Alltoallw.
    pub send_dsizes: Vec<i32>,
    /// Per-peer receive datatype sizes of Alltoallw.
    pub recv_dsizes: Vec<i32>,
    /// Request created by this call (nonblocking, persistent, Imrecv).
    pub req: Option<ReqId>,
    /// Requests handed to a completion call, Start/Startall or Request_free,
    /// in argument order (`MPI_REQUEST_NULL` entries are left out); the
    /// partitioned request of `Pready*` and `Parrived`.
    pub reqs: Vec<ReqId>,
    /// Requests this call completed (Wait*, Test*), in completion order.
    pub done: Vec<ReqId>,
    /// For Test/Iprobe/Improbe/Parrived: whether the flag came back true.
    pub flag: Option<bool>,
    /// Matched source and tag of wildcard receives and of probes.
    pub matched: Vec<Matched>,
    /// Message handle id of Mprobe/Improbe (created) and Mrecv/Imrecv (used).
    pub message: Option<u64>,
    /// Communicator construction details (of a window too, see [`Rma`]).
    pub create: Option<Box<CommCreate>>,
    /// One-sided details: the window's memory, an operation's target side,
    /// a synchronisation's assert and group, a lock.
    pub rma: Option<Box<Rma>>,
    /// MPI-IO details: a file's access mode, a view, where a data access
    /// starts, a seek or a size.
    pub io: Option<Box<Io>>,
    /// Free-form integer argument: Init_thread (required, provided) packed as
    /// `required * 16 + provided`, Abort error code, the partitions of
    /// `Psend_init`/`Precv_init`, the partition of `Pready`/`Parrived`,
    /// and for calls recorded
    /// without detail ([`Family::is_generic`]) the bytes of their first
    /// count and datatype.
    pub value: Option<i64>,
    /// The MPI error class the call returned, when it returned an error
    /// (under `MPI_ERRORS_RETURN`). A failed call did nothing, and its
    /// arguments may be the reason (a null handle, a freed one), so it is
    /// recorded by name, time and class only; matching, `check`, replay,
    /// simulation and codegen pass over it (see [`Event::failed`]).
    pub error: Option<i32>,
    /// Timing, never part of the raw log.
    pub time: Timing,
}

/// What a one-sided call records beyond its window, its origin buffer and
/// its target rank (issue 36).
///
/// A window lives in the communicators' id space: its constructor
/// (`Win_create`, `Win_allocate`, `Win_allocate_shared`,
/// `Win_create_dynamic`) is recorded as a communicator constructor over its
/// communicator's group ([`Event::create`]), and every later call on it
/// names it in [`Event::comm`]. Target ranks are therefore ranks in that
/// group, and they translate to world ranks, merge as relative peers and
/// extrapolate exactly as point-to-point peers do: an operation's target is
/// the peer of its origin transfer ([`Event::send`] for `Put` and the
/// accumulates, [`Event::recv`] for `Get` and the results of
/// `Get_accumulate`, `Fetch_and_op` and `Compare_and_swap`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rma {
    /// A window constructor, `Win_attach` or `Win_detach`: the memory this
    /// rank exposes, in bytes (0 for a dynamic window, which attaches its
    /// memory later), and the window's displacement unit (1 for
    /// attach/detach and dynamic windows, whose displacements are
    /// addresses).
    Window {
        /// Bytes of memory.
        size: i64,
        /// The displacement unit in bytes.
        disp_unit: i32,
    },
    /// A communication call (`Put`, `Get`, the accumulates, `Fetch_and_op`,
    /// `Compare_and_swap` and their request forms): where in the target's
    /// window the data lands, and the target datatype.
    Target {
        /// The target displacement, in the window's displacement units
        /// (of a dynamic window 0: its displacements are addresses on the
        /// target, which differ from run to run and mean nothing to
        /// replay).
        disp: i64,
        /// The target count.
        count: i64,
        /// The target datatype's size in bytes.
        dsize: i64,
        /// The target datatype, when it is predefined.
        dtype: crate::Datatype,
    },
    /// Active-target synchronisation (`Win_fence`, `Win_post`, `Win_start`,
    /// `Win_complete`, `Win_wait`, `Win_test`) and the calls of a whole
    /// window (`Win_lock_all`, `Win_unlock_all`, `Win_flush_all`,
    /// `Win_flush_local_all`, `Win_sync`, `Win_free`): the `assert`
    /// argument (0 where the call has none), and for `Win_post` and
    /// `Win_start` the group, as ranks in the window's group.
    Sync {
        /// The `assert` argument, in the trace's bits ([`Rma::MODES`]).
        assert: i32,
        /// The exposure or access group of `Win_post` / `Win_start`.
        group: Vec<i32>,
    },
    /// Passive-target calls on one target (`Win_lock`, `Win_unlock`,
    /// `Win_flush`, `Win_flush_local`): the target, and for `Win_lock` the
    /// lock type and `assert`.
    Lock {
        /// The target rank.
        peer: Peer,
        /// `Win_lock`'s lock type: exclusive or shared (`None` for the
        /// other calls).
        exclusive: Option<bool>,
        /// `Win_lock`'s `assert` in the trace's bits ([`Rma::MODES`]; 0
        /// for the other calls).
        assert: i32,
    },
}

/// What an MPI-IO call records beyond its file and its data (issue 36).
///
/// A file lives in the communicators' id space, as a window does:
/// `File_open` is recorded as a constructor over its communicator's group
/// ([`Event::create`], whose `new` is the file), and every later call on
/// the file names it in [`Event::comm`], so that the collective file calls
/// are collectives of the file and a rank's place in it is its rank in the
/// opening communicator. A data access records its data as a transfer to
/// no peer ([`Peer::Null`]): [`Event::send`] for a write, [`Event::recv`]
/// for a read, with the memory side's count and datatype, so that bytes
/// are counted, folded and extrapolated as message sizes are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Io {
    /// `File_open`: the access mode in the trace's bits ([`Io::MODES`]),
    /// and which file: a hash of its path (FNV-1a of the bytes), the same
    /// on every rank and run for the same path, which says which opens
    /// name one file without keeping the path, which can be private.
    Open {
        /// The access mode in the trace's bits.
        amode: i32,
        /// FNV-1a of the path.
        path: u64,
    },
    /// `File_set_view`: the displacement in bytes, and the bytes of data
    /// of one etype, of one filetype, and the filetype's lower bound and
    /// extent (a filetype with holes, a strided view, has more extent than
    /// data; its bounds say how far into the file its data reaches).
    View {
        /// The view's displacement in bytes.
        disp: i64,
        /// Bytes of one etype (`MPI_Type_size`).
        etype: i64,
        /// Bytes of data of one filetype (`MPI_Type_size`).
        filetype: i64,
        /// The filetype's lower bound in bytes.
        lb: i64,
        /// The filetype's extent in bytes.
        extent: i64,
    },
    /// A data access: where it starts, in etypes of the view: the
    /// explicit offset of the `_at` forms, the individual file pointer's
    /// position before the call for the others, and [`Io::SHARED`] for the
    /// shared file pointer's accesses (`_shared`, `_ordered`), whose
    /// position another rank's access decides; and the bytes of the view's
    /// etype, with which a trace file stores the offset relative to the
    /// caller's block (see `codec`): "rank r accesses block r" is then the
    /// same parameter on every rank, which merges and extrapolates.
    Access {
        /// The offset in etypes, or [`Io::SHARED`].
        offset: i64,
        /// The bytes of the view's etype (1 for the default view).
        etype: i64,
    },
    /// A call on the file with nothing more to record: `File_close`,
    /// `File_sync`, a split collective's `_end` (its data is its
    /// `_begin`'s).
    Handle,
    /// `File_seek`, `File_seek_shared` (an offset in etypes and where it
    /// counts from), `File_set_size` and `File_preallocate` (a size in
    /// bytes, `whence` 0).
    Seek {
        /// The offset or the size.
        offset: i64,
        /// [`Io::SEEK_SET`], [`Io::SEEK_CUR`] or [`Io::SEEK_END`].
        whence: i32,
    },
}

impl Io {
    /// `MPI_MODE_RDONLY` as the trace records an access mode. MPICH and
    /// Open MPI happen to share their values; the trace keeps its own, as
    /// it does for one-sided asserts, so that a third library cannot change
    /// what a trace means.
    pub const MODE_RDONLY: i32 = 1;
    /// `MPI_MODE_WRONLY` (see [`Io::MODE_RDONLY`]).
    pub const MODE_WRONLY: i32 = 2;
    /// `MPI_MODE_RDWR` (see [`Io::MODE_RDONLY`]).
    pub const MODE_RDWR: i32 = 4;
    /// `MPI_MODE_CREATE` (see [`Io::MODE_RDONLY`]).
    pub const MODE_CREATE: i32 = 8;
    /// `MPI_MODE_EXCL` (see [`Io::MODE_RDONLY`]).
    pub const MODE_EXCL: i32 = 16;
    /// `MPI_MODE_DELETE_ON_CLOSE` (see [`Io::MODE_RDONLY`]).
    pub const MODE_DELETE_ON_CLOSE: i32 = 32;
    /// `MPI_MODE_UNIQUE_OPEN` (see [`Io::MODE_RDONLY`]).
    pub const MODE_UNIQUE_OPEN: i32 = 64;
    /// `MPI_MODE_SEQUENTIAL` (see [`Io::MODE_RDONLY`]).
    pub const MODE_SEQUENTIAL: i32 = 128;
    /// `MPI_MODE_APPEND` (see [`Io::MODE_RDONLY`]).
    pub const MODE_APPEND: i32 = 256;
    /// Every access-mode bit, in the order of the constants above.
    pub const MODES: [i32; 9] = [
        Io::MODE_RDONLY,
        Io::MODE_WRONLY,
        Io::MODE_RDWR,
        Io::MODE_CREATE,
        Io::MODE_EXCL,
        Io::MODE_DELETE_ON_CLOSE,
        Io::MODE_UNIQUE_OPEN,
        Io::MODE_SEQUENTIAL,
        Io::MODE_APPEND,
    ];
    /// The offset of an access through the shared file pointer.
    pub const SHARED: i64 = -1;
    /// `MPI_SEEK_SET`.
    pub const SEEK_SET: i32 = 0;
    /// `MPI_SEEK_CUR`.
    pub const SEEK_CUR: i32 = 1;
    /// `MPI_SEEK_END`.
    pub const SEEK_END: i32 = 2;

    /// The path hash [`Io::Open`] records: 64-bit FNV-1a, which needs no
    /// key, so the hash of a path is the same in every run and tool.
    pub fn path_hash(path: &[u8]) -> u64 {
        path.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

impl Rma {
    /// `MPI_MODE_NOCHECK` as the trace records an `assert`. The MPI
    /// libraries number the assert bits differently (MPICH's `NOCHECK` is
    /// 1024, Open MPI's 1), so the tracer translates them into these bits
    /// and replay back into the replaying library's.
    pub const MODE_NOCHECK: i32 = 1;
    /// `MPI_MODE_NOPRECEDE` (see [`Rma::MODE_NOCHECK`]).
    pub const MODE_NOPRECEDE: i32 = 2;
    /// `MPI_MODE_NOPUT` (see [`Rma::MODE_NOCHECK`]).
    pub const MODE_NOPUT: i32 = 4;
    /// `MPI_MODE_NOSTORE` (see [`Rma::MODE_NOCHECK`]).
    pub const MODE_NOSTORE: i32 = 8;
    /// `MPI_MODE_NOSUCCEED` (see [`Rma::MODE_NOCHECK`]).
    pub const MODE_NOSUCCEED: i32 = 16;
    /// Every assert bit, in the order of the constants above.
    pub const MODES: [i32; 5] = [
        Rma::MODE_NOCHECK,
        Rma::MODE_NOPRECEDE,
        Rma::MODE_NOPUT,
        Rma::MODE_NOSTORE,
        Rma::MODE_NOSUCCEED,
    ];
}

/// Field by field, as a derived `PartialEq` would, but lists are compared
/// only when they are not empty: most calls leave every list empty, and the
/// analysis compares millions of events with their interned twins, where a
/// byte comparison per empty list was a tenth of the time. Every field is
/// named (no `..`), so a new field cannot be left out.
impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
            a.len() == b.len() && (a.is_empty() || a == b)
        }
        let Event {
            op,
            site,
            thread,
            comm,
            comm_rank,
            send,
            recv,
            root,
            redop,
            in_place,
            send_counts,
            recv_counts,
            send_dsizes,
            recv_dsizes,
            req,
            reqs,
            done,
            flag,
            matched,
            message,
            create,
            rma,
            io,
            value,
            error,
            time,
        } = self;
        *op == other.op
            && *site == other.site
            && *thread == other.thread
            && *comm == other.comm
            && *comm_rank == other.comm_rank
            && *send == other.send
            && *recv == other.recv
            && *root == other.root
            && *redop == other.redop
            && *in_place == other.in_place
            && same(send_counts, &other.send_counts)
            && same(recv_counts, &other.recv_counts)
            && same(send_dsizes, &other.send_dsizes)
            && same(recv_dsizes, &other.recv_dsizes)
            && *req == other.req
            && same(reqs, &other.reqs)
            && same(done, &other.done)
            && *flag == other.flag
            && same(matched, &other.matched)
            && *message == other.message
            && *create == other.create
            && *rma == other.rma
            && *io == other.io
            && *value == other.value
            && *error == other.error
            && *time == other.time
    }
}

/// Timing of one event, in nanoseconds since the rank's first event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Timing {
    /// When the call was entered.
    pub enter_ns: u64,
    /// Time spent inside MPI.
    pub dur_ns: u64,
    /// Computation time since the calling thread left its previous MPI call.
    pub compute_ns: u64,
}

impl Event {
    /// An event of `op` with every parameter empty; wrappers fill in what the
    /// operation has.
    pub fn new(op: Op) -> Event {
        Event {
            op,
            site: 0,
            thread: 0,
            comm: CommId::WORLD,
            comm_rank: -1,
            send: None,
            recv: None,
            root: None,
            redop: None,
            in_place: false,
            send_counts: Vec::new(),
            recv_counts: Vec::new(),
            send_dsizes: Vec::new(),
            recv_dsizes: Vec::new(),
            req: None,
            reqs: Vec::new(),
            done: Vec::new(),
            flag: None,
            matched: Vec::new(),
            message: None,
            create: None,
            rma: None,
            io: None,
            value: None,
            error: None,
            time: Timing::default(),
        }
    }

    /// Whether the call was recorded without detail: a call of a family
    /// without detail ([`Family::is_generic`]), or a one-sided or MPI-IO
    /// call whose detail is missing (an earlier tracer's one-sided calls;
    /// Open MPI's Fortran MPI-IO calls, which reach no C entry point).
    /// Replay, simulation and code generation pass over such calls.
    pub fn without_detail(&self) -> bool {
        self.op.is_generic()
            || (self.op.family() == Family::OneSided && self.rma.is_none())
            || (self.op.family() == Family::Io && self.io.is_none() && self.op != Op::FileDelete)
    }

    /// Whether the call returned an error: it did nothing, so everything
    /// that acts on the trace (matching, `check`, replay, simulation,
    /// codegen) passes over it as it passes over a call without detail.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Whether the call names a communicator, a window ([`Rma`]) or a file
    /// ([`Io`]; windows and files live in the communicators' id space):
    /// then [`Event::comm`] and
    /// [`Event::comm_rank`] are set, the raw log prints `comm=`, and the
    /// codec keeps the caller's rank relative to its world rank.
    pub fn names_comm(&self) -> bool {
        self.op.has_comm() || self.rma.is_some() || self.io.is_some()
    }

    /// Turns this event into [`Event::new`]`(op)` but keeps the heap blocks
    /// of its lists (emptied). A tracer that records every call into one
    /// renewed event per thread allocates nothing per call once the lists
    /// have grown: an allocation and a free per list and call were a
    /// measurable part of the tracer's cost on NPB CG.
    pub fn renew(&mut self, op: Op) {
        let mut counts = [
            std::mem::take(&mut self.send_counts),
            std::mem::take(&mut self.recv_counts),
        ];
        let mut dsizes = [
            std::mem::take(&mut self.send_dsizes),
            std::mem::take(&mut self.recv_dsizes),
        ];
        let (mut reqs, mut done, mut matched) = (
            std::mem::take(&mut self.reqs),
            std::mem::take(&mut self.done),
            std::mem::take(&mut self.matched),
        );
        counts.iter_mut().for_each(Vec::clear);
        dsizes.iter_mut().for_each(Vec::clear);
        reqs.clear();
        done.clear();
        matched.clear();
        let [send_counts, recv_counts] = counts;
        let [send_dsizes, recv_dsizes] = dsizes;
        *self = Event {
            send_counts,
            recv_counts,
            send_dsizes,
            recv_dsizes,
            reqs,
            done,
            matched,
            ..Event::new(op)
        };
    }

    /// A peer relative to the caller within the call's communicator
    /// (`local - comm_rank`), or `None` for wildcards, `MPI_PROC_NULL`, or
    /// when the caller's rank is unknown.
    pub fn relative(&self, peer: Peer) -> Option<i32> {
        match peer {
            Peer::Rank { local, .. } if self.comm_rank >= 0 && local >= 0 => {
                Some(local - self.comm_rank)
            }
            _ => None,
        }
    }

    /// Total bytes this call hands to MPI to send (v/w variants summed).
    pub fn bytes_sent(&self) -> i64 {
        let base = self.send.map_or(0, |t| t.bytes());
        if !self.send_dsizes.is_empty() {
            return self
                .send_counts
                .iter()
                .zip(&self.send_dsizes)
                .map(|(&c, &d)| c * i64::from(d))
                .sum();
        }
        if !self.send_counts.is_empty() {
            let dsize = self.send.map_or(0, |t| t.dsize);
            return self.send_counts.iter().sum::<i64>() * dsize;
        }
        base
    }
}

/// A consumer of events, in the manner of ripgrep's `Sink`: the shim *pushes*
/// each event as the call returns, and the sink decides what to keep.
///
/// Implementations must be cheap per event (the shim's budget is a few hundred
/// nanoseconds per call) and must never panic on well-formed events. Errors
/// are reported, not thrown: a sink that fails returns the error once and the
/// shim then stops tracing while the application goes on.
pub trait EventSink: Send {
    /// Takes one event. Called in the rank's call order (per thread).
    fn push(&mut self, event: &Event) -> Result<(), crate::Error>;
    /// Flushes everything; called once, at `MPI_Finalize` or `MPI_Abort`.
    fn finish(&mut self) -> Result<(), crate::Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every nonblocking and persistent collective has a blocking form of
    /// the same family kind (global or neighbourhood), and only those
    /// change; the names give the truth (`Ialltoallv`, `Alltoallv_init`).
    #[test]
    fn every_nonblocking_and_persistent_collective_has_its_blocking_form() {
        let mut changed = 0;
        for &op in Op::ALL {
            let b = op.blocking_form();
            if op.is_nonblocking_collective() || op.is_persistent_collective() {
                assert_ne!(b, op, "{}", op.name());
                assert!(
                    matches!(b.family(), Family::Collective | Family::Neighborhood),
                    "{} -> {}",
                    op.name(),
                    b.name()
                );
                assert_eq!(b.is_neighborhood(), op.is_neighborhood(), "{}", op.name());
                assert!(
                    op.name() == format!("{}_init", b.name())
                        || op.name().to_lowercase() == format!("i{}", b.name().to_lowercase()),
                    "{} -> {}",
                    op.name(),
                    b.name()
                );
                changed += 1;
            } else {
                assert_eq!(b, op, "{}", op.name());
            }
        }
        // 17 + 5 nonblocking, 17 + 5 persistent.
        assert_eq!(changed, 44);
    }

    #[test]
    fn a_renewed_event_equals_a_new_one_and_keeps_its_lists_blocks() {
        let mut e = Event::new(Op::Waitall);
        e.site = 7;
        e.thread = 2;
        e.comm_rank = 3;
        e.send = Some(Transfer::collective(4, 8));
        e.root = Some(1);
        e.in_place = true;
        e.send_counts = vec![1, 2, 3];
        e.recv_counts = vec![4; 9];
        e.send_dsizes = vec![8];
        e.recv_dsizes = vec![8, 8];
        e.reqs = vec![ReqId(1), ReqId(2)];
        e.done = vec![ReqId(2)];
        e.matched = vec![Matched {
            req: Some(ReqId(2)),
            source: 5,
            tag: 6,
        }];
        e.value = Some(9);
        e.time.dur_ns = 11;
        let before = [
            e.send_counts.capacity(),
            e.recv_counts.capacity(),
            e.reqs.capacity(),
        ];
        let (reqs, matched) = (e.reqs.as_ptr(), e.matched.as_ptr());
        e.renew(Op::Send);
        assert_eq!(e, Event::new(Op::Send));
        assert_eq!(
            [
                e.send_counts.capacity(),
                e.recv_counts.capacity(),
                e.reqs.capacity()
            ],
            before
        );
        assert_eq!((e.reqs.as_ptr(), e.matched.as_ptr()), (reqs, matched));
    }

    /// Equality sees every field, lists included: an event with all its
    /// fields set equals its clone, and changing any one field (a list
    /// emptied, shortened or changed in one item among them) makes it
    /// differ.
    #[test]
    fn events_are_equal_exactly_when_every_field_is() {
        let mut full = Event::new(Op::Alltoallw);
        full.send_counts = vec![1, 2];
        full.recv_counts = vec![3];
        full.send_dsizes = vec![4];
        full.recv_dsizes = vec![5];
        full.reqs = vec![ReqId(1)];
        full.done = vec![ReqId(2)];
        full.matched = vec![Matched {
            req: None,
            source: 1,
            tag: 2,
        }];
        full.create = Some(Box::new(CommCreate::new(Some(CommId(2)), 4)));
        full.time.enter_ns = 3;
        assert_eq!(full, full.clone());
        let changes: [fn(&mut Event); 13] = [
            |e| e.send_counts[1] = 9,
            |e| e.send_counts.truncate(1),
            |e| e.recv_counts.clear(),
            |e| e.send_dsizes[0] = 9,
            |e| e.recv_dsizes.push(5),
            |e| e.reqs[0] = ReqId(9),
            |e| e.done.clear(),
            |e| e.matched[0].tag = 9,
            |e| e.create = None,
            |e| e.time.enter_ns = 4,
            |e| e.site = 1,
            |e| e.value = Some(1),
            |e| e.flag = Some(true),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = full.clone();
            change(&mut other);
            assert_ne!(full, other, "change {i}");
            assert_ne!(other, full, "change {i}");
        }
    }
}
