//! Small traces built through the compressor, for the tests of the crates
//! that read traces (extrapolation, code generation): one generator here
//! instead of a copy in each crate's tests. Enabled by the `fixtures`
//! feature, which only dev-dependencies turn on.

use trace::{Event, Op, Peer, Tag, TraceFile, Transfer};

/// A point-to-point transfer of 4 doubles to or from world rank `world`
/// (the same rank in the communicator), with tag `tag`.
pub fn transfer(world: u32, tag: i32) -> Transfer {
    Transfer {
        peer: Peer::Rank {
            world: world as i32,
            local: world as i32,
        },
        tag: Tag::Value(tag),
        count: 4,
        dsize: 8,
        dtype: trace::Datatype::UNKNOWN,
    }
}

/// A ring of `p` ranks: 3 iterations of `P / 2` Sendrecvs to the right
/// neighbour (a loop whose length grows with P) and an Allreduce, as the
/// tracer records them. The Sendrecv's site is `base + 1` and the
/// Allreduce's `base + 2`, so that a test can move them as a rebuild
/// without debug information would; the Sendrecvs are made on thread
/// `thread` (0: the main one).
pub fn ring(p: u32, base: u64, thread: u32) -> TraceFile {
    let ranks = (0..p)
        .map(|r| {
            let mut events = Vec::new();
            // Calls on a communicator carry the caller's rank in it, Init
            // and Finalize none.
            let mut push = |mut e: Event| {
                if e.op.has_comm() {
                    e.comm_rank = r as i32;
                }
                events.push(e);
            };
            push(Event::new(Op::Init));
            for _ in 0..3 {
                for _ in 0..p / 2 {
                    let mut e = Event::new(Op::Sendrecv);
                    e.site = base + 1;
                    e.thread = thread;
                    e.send = Some(transfer((r + 1) % p, 7));
                    e.recv = Some(transfer((r + p - 1) % p, 7));
                    push(e);
                }
                let mut e = Event::new(Op::Allreduce);
                e.site = base + 2;
                e.send = Some(Transfer::collective(1, 8));
                push(e);
            }
            push(Event::new(Op::Finalize));
            events
        })
        .collect();
    crate::from_rank_events(ranks).expect("a ring of at least one rank")
}
