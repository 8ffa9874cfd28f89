//! Events for the tests of this crate and of the crates that build traces
//! (the compressor's): one event of every operation, set as the shim sets
//! it. Enabled by the `fixtures` feature, which only dev-dependencies turn
//! on.

use crate::event::{
    CommCreate, CommId, Event, Io, Matched, Op, Peer, ReduceOp, ReqId, Rma, Tag, Timing, Transfer,
};

pub(crate) fn rank_peer(world: i32, local: i32) -> Peer {
    Peer::Rank { world, local }
}

pub(crate) fn p2p(peer: Peer, tag: Tag) -> Transfer {
    Transfer {
        peer,
        tag,
        count: 1024,
        dsize: 8,
        dtype: crate::Datatype::UNKNOWN,
    }
}

fn coll(count: i64) -> Transfer {
    // What the shim's `coll()` builds: no peer, no tag.
    Transfer {
        peer: Peer::Null,
        tag: Tag::Value(0),
        count,
        dsize: 4,
        dtype: crate::Datatype::UNKNOWN,
    }
}

fn lineage() -> CommCreate {
    CommCreate {
        new: Some(CommId(2)),
        size: 4,
        color: None,
        key: None,
        split_type: None,
        dims: vec![],
        periods: vec![],
        edges: vec![],
        sources: vec![],
        members: vec![],
        reorder: None,
    }
}

/// One event per operation, with its fields set the way the shim sets
/// them (pmpi-shim/src/ffi/c.rs), on rank 5 of 8.
pub fn every_op() -> Vec<Event> {
    let mut out = Vec::new();
    for &op in Op::ALL {
        let mut e = Event::new(op);
        e.site = 0x1234_5678_9abc_def0 ^ (op as u64);
        if op.has_comm() {
            e.comm_rank = 2;
        }
        e.time = Timing {
            enter_ns: 1,
            dur_ns: 2,
            compute_ns: 3,
        };
        let filled = fill_p2p(op, &mut e) || fill_collective(op, &mut e) || fill_comm(op, &mut e);
        if !filled {
            // Calls recorded without detail: a communicator where the
            // function has one, bytes, and a created request.
            if op.has_comm() {
                e.comm = CommId(3);
            }
            e.value = Some(4096);
            e.req = op.name().ends_with("_init").then_some(ReqId(44));
        }
        out.push(e);
    }
    out
}

/// One-sided calls with their [`Rma`] details, one of each kind: a window
/// made over a communicator, operations of every form on relative targets
/// (with `MPI_PROC_NULL` among them), fence, PSCW with groups, and
/// passive-target calls of both lock types. Recorded by world rank 5 at
/// window rank 2.
pub fn rma_events() -> Vec<Event> {
    use Op::*;
    let target = |disp, count, dsize| Rma::Target {
        disp,
        count,
        dsize,
        dtype: crate::Datatype::from_name("double").unwrap_or(crate::Datatype::UNKNOWN),
    };
    let sync = |assert, group: Vec<i32>| Rma::Sync { assert, group };
    let lock = |peer, exclusive, assert| Rma::Lock {
        peer,
        exclusive,
        assert,
    };
    let mut out = Vec::new();
    let mut push = |op: Op, f: &dyn Fn(&mut Event)| {
        let mut e = Event::new(op);
        e.site = 0x0bad_cafe ^ (op as u64);
        e.comm = CommId(7);
        e.comm_rank = 2;
        f(&mut e);
        out.push(e);
    };
    for op in [WinCreate, WinAllocate, WinAllocateShared, WinCreateDynamic] {
        push(op, &|e| {
            e.comm = CommId(0);
            e.comm_rank = 5;
            e.create = Some(Box::new(crate::event::CommCreate::new(Some(CommId(7)), 8)));
            e.rma = Some(Box::new(Rma::Window {
                size: if op == WinCreateDynamic { 0 } else { 8 * 100 },
                disp_unit: if op == WinCreateDynamic { 1 } else { 8 },
            }));
        });
    }
    for op in [WinAttach, WinDetach] {
        push(op, &|e| {
            e.rma = Some(Box::new(Rma::Window {
                size: 4096,
                disp_unit: 1,
            }))
        });
    }
    push(Put, &|e| {
        e.send = Some(p2p(rank_peer(6, 3), Tag::Value(0)));
        e.rma = Some(Box::new(target(11, 4, 8)));
    });
    push(Rput, &|e| {
        e.send = Some(p2p(Peer::Null, Tag::Value(0)));
        e.rma = Some(Box::new(target(0, 4, 8)));
        e.req = Some(ReqId(3));
    });
    push(Get, &|e| {
        e.recv = Some(p2p(rank_peer(4, 1), Tag::Value(0)));
        e.rma = Some(Box::new(target(-1, 1, 40)));
    });
    push(Accumulate, &|e| {
        e.send = Some(p2p(rank_peer(6, 3), Tag::Value(0)));
        e.redop = Some(ReduceOp::Sum);
        e.rma = Some(Box::new(target(9, 4, 8)));
    });
    push(GetAccumulate, &|e| {
        e.send = Some(p2p(rank_peer(6, 3), Tag::Value(0)));
        e.recv = Some(p2p(rank_peer(6, 3), Tag::Value(0)));
        e.redop = Some(ReduceOp::Sum);
        e.rma = Some(Box::new(target(9, 4, 8)));
    });
    push(CompareAndSwap, &|e| {
        e.send = Some(p2p(rank_peer(0, 0), Tag::Value(0)));
        e.recv = Some(p2p(rank_peer(0, 0), Tag::Value(0)));
        e.rma = Some(Box::new(target(0, 1, 8)));
    });
    push(WinFence, &|e| e.rma = Some(Box::new(sync(0, Vec::new()))));
    push(WinPost, &|e| e.rma = Some(Box::new(sync(4, vec![1, 3]))));
    push(WinStart, &|e| e.rma = Some(Box::new(sync(0, vec![1, 3]))));
    push(WinComplete, &|e| {
        e.rma = Some(Box::new(sync(0, Vec::new())))
    });
    push(WinLock, &|e| {
        e.rma = Some(Box::new(lock(rank_peer(6, 3), Some(true), 0)))
    });
    push(WinLock, &|e| {
        e.rma = Some(Box::new(lock(rank_peer(5, 2), Some(false), 4)))
    });
    push(WinUnlock, &|e| {
        e.rma = Some(Box::new(lock(rank_peer(6, 3), None, 0)))
    });
    push(WinFlush, &|e| {
        e.rma = Some(Box::new(lock(Peer::Null, None, 0)))
    });
    push(WinLockAll, &|e| e.rma = Some(Box::new(sync(4, Vec::new()))));
    out
}

/// MPI-IO calls with their [`Io`] details, one of each kind: an open over
/// a communicator, a view with holes, writes and reads at explicit offsets
/// and through both file pointers (blocking, collective, nonblocking), a
/// seek and a size. Recorded by world rank 5 at rank 2 of the file.
pub fn io_events() -> Vec<Event> {
    use Op::*;
    let data = |count| {
        Transfer::collective(count, 4)
            .typed(crate::Datatype::from_name("int").unwrap_or(crate::Datatype::UNKNOWN))
    };
    let mut out = Vec::new();
    let mut push = |op: Op, f: &dyn Fn(&mut Event)| {
        let mut e = Event::new(op);
        e.site = 0x0f11_e000 ^ (op as u64);
        e.comm = CommId(9);
        e.comm_rank = 2;
        f(&mut e);
        out.push(e);
    };
    push(FileOpen, &|e| {
        e.comm = CommId(0);
        e.comm_rank = 5;
        e.create = Some(Box::new(crate::event::CommCreate::new(Some(CommId(9)), 8)));
        e.io = Some(Box::new(Io::Open {
            amode: Io::MODE_CREATE | Io::MODE_WRONLY,
            path: Io::path_hash(b"checkpoint.dat"),
        }));
    });
    push(FileSetView, &|e| {
        e.io = Some(Box::new(Io::View {
            disp: 4096,
            etype: 4,
            filetype: 32,
            lb: 8,
            extent: 256,
        }))
    });
    push(FileWriteAtAll, &|e| {
        e.send = Some(data(1024));
        e.io = Some(Box::new(Io::Access {
            offset: 2048,
            etype: 4,
        }));
    });
    push(FileWrite, &|e| {
        e.send = Some(data(8));
        e.io = Some(Box::new(Io::Access {
            offset: 0,
            etype: 1,
        }));
    });
    push(FileIreadAt, &|e| {
        e.recv = Some(data(8));
        e.req = Some(ReqId(12));
        e.io = Some(Box::new(Io::Access {
            offset: 16,
            etype: 4,
        }));
    });
    push(FileReadOrdered, &|e| {
        e.recv = Some(data(8));
        e.io = Some(Box::new(Io::Access {
            offset: Io::SHARED,
            etype: 4,
        }));
    });
    push(FileSeek, &|e| {
        e.io = Some(Box::new(Io::Seek {
            offset: -8,
            whence: Io::SEEK_CUR,
        }))
    });
    push(FileClose, &|e| e.io = Some(Box::new(Io::Handle)));
    push(FileSetSize, &|e| {
        e.io = Some(Box::new(Io::Seek {
            offset: 1 << 40,
            whence: Io::SEEK_SET,
        }))
    });
    out
}

/// [`every_op`]'s point-to-point and partitioned calls: whether `op` is one.
fn fill_p2p(op: Op, e: &mut Event) -> bool {
    use Op::*;
    match op {
        Init | Finalize => {}
        InitThread => e.value = Some(3 * 16 + 3),
        Pcontrol => e.value = Some(2),
        Abort => {
            e.comm = CommId(0);
            e.value = Some(17);
        }
        Send | Ssend | Bsend | Rsend => e.send = Some(p2p(rank_peer(6, 6), Tag::Value(3))),
        Isend | Issend | Ibsend | Irsend | SendInit | SsendInit | BsendInit | RsendInit => {
            e.comm = CommId(3);
            e.send = Some(p2p(rank_peer(1, 0), Tag::Value(9)));
            e.req = Some(ReqId(41));
        }
        Irecv | RecvInit => {
            e.recv = Some(p2p(Peer::Any, Tag::Any));
            e.req = Some(ReqId(42));
        }
        Recv => {
            e.recv = Some(p2p(Peer::Any, Tag::Value(1)));
            e.matched = vec![Matched {
                req: None,
                source: 2,
                tag: 1,
            }];
        }
        Sendrecv | SendrecvReplace => {
            e.send = Some(p2p(rank_peer(4, 4), Tag::Value(0)));
            e.recv = Some(p2p(Peer::Null, Tag::Any));
        }
        Start | Startall | RequestFree => e.reqs = vec![ReqId(1), ReqId(2)],
        Wait | Waitall | Waitany | Waitsome => {
            e.reqs = vec![ReqId(7), ReqId(8), ReqId(9)];
            e.done = vec![ReqId(9), ReqId(7)];
            e.matched = vec![Matched {
                req: Some(ReqId(9)),
                source: 0,
                tag: 5,
            }];
        }
        Test | Testall | Testany | Testsome => {
            e.reqs = vec![ReqId(u64::MAX)];
            e.flag = Some(op != Testall);
            if op != Testall {
                e.done = vec![ReqId(u64::MAX)];
            }
        }
        Probe | Iprobe | Mprobe | Improbe => {
            e.recv = Some(p2p(Peer::Any, Tag::Any));
            e.matched = vec![Matched {
                req: None,
                source: 7,
                tag: 0,
            }];
            if matches!(op, Iprobe | Improbe) {
                e.flag = Some(true);
            }
            if matches!(op, Mprobe | Improbe) {
                e.message = Some(3);
            }
        }
        Mrecv | Imrecv => {
            e.message = Some(3);
            e.recv = Some(p2p(rank_peer(7, 7), Tag::Value(0)));
            if op == Imrecv {
                e.req = Some(ReqId(43));
            }
        }
        PsendInit | PrecvInit => {
            e.comm = CommId(3);
            let t = Some(p2p(rank_peer(1, 0), Tag::Value(9)));
            if op == PsendInit {
                e.send = t;
            } else {
                e.recv = t;
            }
            e.value = Some(4);
            e.req = Some(ReqId(45));
        }
        Pready | PreadyRange | PreadyList | Parrived => {
            e.reqs = vec![ReqId(45)];
            match op {
                PreadyRange => e.send_counts = vec![0, 3],
                PreadyList => e.send_counts = vec![2, 0, 3, 1],
                _ => e.value = Some(2),
            }
            if op == Parrived {
                e.flag = Some(false);
            }
        }
        _ => return false,
    }
    true
}

/// [`every_op`]'s collectives: whether `op` is one.
fn fill_collective(op: Op, e: &mut Event) -> bool {
    use Op::*;
    match op {
        Barrier | Ibarrier => {}
        Bcast | Ibcast => {
            e.root = Some(0);
            e.send = Some(coll(10));
        }
        Reduce | Ireduce | Allreduce | Iallreduce | Scan | Iscan | Exscan | Iexscan => {
            e.send = Some(coll(1));
            e.redop = Some(ReduceOp::Sum);
            e.in_place = matches!(op, Allreduce);
            if matches!(op, Reduce | Ireduce) {
                e.root = Some(2);
            }
        }
        Gather | Igather | Scatter | Iscatter | Allgather | Iallgather | Alltoall | Ialltoall => {
            e.send = Some(coll(4));
            e.recv = Some(coll(4));
        }
        Gatherv | Igatherv | Allgatherv | Iallgatherv => {
            e.send = Some(coll(4));
            e.recv = Some(coll(0));
            e.recv_counts = vec![4, 4, 4, 4, 4, 4, 4, 5];
        }
        Scatterv | Iscatterv => {
            e.send = Some(coll(0));
            e.send_counts = vec![1, 2, 3, 4, 5, 6, 7, 8];
            e.recv = Some(coll(5));
            e.root = Some(5);
        }
        Alltoallv | Ialltoallv => {
            e.send = Some(coll(0));
            e.recv = Some(coll(0));
            e.send_counts = vec![1; 8];
            e.recv_counts = vec![2; 8];
        }
        Alltoallw | Ialltoallw => {
            e.in_place = true;
            e.send_counts = vec![1, 2];
            e.recv_counts = vec![3, 4];
            e.send_dsizes = vec![4, 8];
            e.recv_dsizes = vec![8, 4];
        }
        ReduceScatter | IreduceScatter => {
            e.recv = Some(coll(0));
            e.redop = Some(ReduceOp::Other);
            e.recv_counts = vec![1; 8];
        }
        ReduceScatterBlock | IreduceScatterBlock => {
            e.recv = Some(coll(3));
            e.redop = Some(ReduceOp::Maxloc);
        }
        _ => return false,
    }
    true
}

/// [`every_op`]'s communicator constructors and `Comm_free`: whether `op`
/// is one.
fn fill_comm(op: Op, e: &mut Event) -> bool {
    use Op::*;
    match op {
        CommDup
        | CommCreate
        | CommSplit
        | CommSplitType
        | CartCreate
        | CartSub
        | GraphCreate
        | DistGraphCreate
        | DistGraphCreateAdjacent => {
            e.comm = CommId(2);
            let mut c = lineage();
            match op {
                CommSplit => {
                    c.color = None;
                    c.key = Some(3);
                    c.new = None;
                    c.size = 0;
                }
                CommSplitType => {
                    c.key = Some(1);
                    c.split_type = Some(0);
                }
                CommCreate => c.members = vec![0, 2, 4, 6],
                CartCreate => {
                    c.dims = vec![2, 4];
                    c.periods = vec![1, 0];
                    c.reorder = Some(false);
                }
                CartSub => c.dims = vec![0, 1],
                GraphCreate => {
                    c.dims = vec![1, 2];
                    c.edges = vec![1, 0];
                    c.reorder = Some(true);
                }
                DistGraphCreate | DistGraphCreateAdjacent => {
                    c.sources = vec![4, 6];
                    c.edges = vec![6];
                    c.reorder = Some(false);
                }
                _ => c.color = Some(1),
            }
            e.create = Some(Box::new(c));
        }
        CommFree => e.comm = CommId(2),
        _ => return false,
    }
    true
}
