//! Synthetic event streams shared by the bounded-memory tests and the
//! benchmark (included with `#[path]` from `benches/compress.rs`).

#![allow(dead_code)]

use trace::{CommId, Event, Op, Peer, ReduceOp, ReqId, Tag, Timing, Transfer};

/// World rank used by the synthetic streams: an interior rank of an 8×8 grid.
pub const RANK: i32 = 27;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// A 2D 5-point stencil time loop on rank 27 of an 8×8 grid:
///
/// ```text
/// Init
/// for it in 0.. {
///     if it.is_multiple_of(10) { Barrier }
///     for d in 0..4 { Irecv(nbr[d], tag d); Isend(nbr[d], tag d) }
///     Waitall(the 8 requests of this iteration)
///     for k in 0..3 { Allreduce(1 double, sum) }
/// }
/// ```
///
/// Peers rotate, request ids grow by 8 per iteration, and computation times
/// vary, so nothing but the structure repeats exactly.
pub struct Stencil {
    left: u64,
    it: u64,
    queue: Vec<Event>,
    rng: u64,
    started: bool,
}

pub fn stencil(events: u64) -> Stencil {
    Stencil {
        left: events,
        it: 0,
        queue: Vec::new(),
        rng: 0x9e37_79b9_7f4a_7c15,
        started: false,
    }
}

impl Stencil {
    fn timed(&mut self, mut e: Event) -> Event {
        let r = xorshift(&mut self.rng);
        e.time = Timing {
            enter_ns: 0,
            dur_ns: 500 + r % 2000,
            compute_ns: 10_000 + (r >> 20) % 5000,
        };
        e
    }

    fn iteration(&mut self) {
        let it = self.it;
        self.it += 1;
        if it.is_multiple_of(10) {
            let mut b = Event::new(Op::Barrier);
            b.site = 0x5100;
            self.queue.push(b);
        }
        let nbr = [RANK - 8, RANK + 8, RANK - 1, RANK + 1];
        let base = it * 8;
        for (d, &p) in nbr.iter().enumerate() {
            let peer = Peer::Rank { world: p, local: p };
            let xfer = Transfer {
                peer,
                tag: Tag::Value(d as i32),
                count: 1024,
                dsize: 8,
                dtype: trace::Datatype::from_name("double").unwrap(),
            };
            let mut r = Event::new(Op::Irecv);
            r.site = 0x5101;
            r.recv = Some(xfer);
            r.req = Some(ReqId(base + 2 * d as u64));
            let mut s = Event::new(Op::Isend);
            s.site = 0x5102;
            s.send = Some(xfer);
            s.req = Some(ReqId(base + 2 * d as u64 + 1));
            self.queue.push(r);
            self.queue.push(s);
        }
        let mut w = Event::new(Op::Waitall);
        w.site = 0x5103;
        w.reqs = (base..base + 8).map(ReqId).collect();
        w.done = w.reqs.clone();
        self.queue.push(w);
        for _ in 0..3 {
            let mut a = Event::new(Op::Allreduce);
            a.site = 0x5104;
            a.comm = CommId::WORLD;
            a.send = Some(Transfer {
                peer: Peer::Null,
                tag: Tag::Value(0),
                count: 1,
                dsize: 8,
                dtype: trace::Datatype::from_name("double_precision").unwrap(),
            });
            a.redop = Some(ReduceOp::Sum);
            self.queue.push(a);
        }
        self.queue.reverse();
    }
}

impl Iterator for Stencil {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if !self.started {
            self.started = true;
            let mut e = Event::new(Op::Init);
            e.site = 0x5000;
            return Some(e);
        }
        if self.queue.is_empty() {
            self.iteration();
        }
        let e = self.queue.pop()?;
        Some(self.timed(e))
    }
}

/// NPB CG's communication on rank 5 of a 4×4 process grid (class S, 16
/// ranks), as `rankscale show` prints the real one:
///
/// ```text
/// Init
/// loop {                                   // the timed iterations
///     for it in 0..25 {                    // conj_grad
///         for k in 0..2 { Irecv; Send; Wait }  // matrix-vector sum, row partners
///         Irecv; Send; Wait                     // transpose partner
///         for d in 0..2 { for k in 0..2 { Irecv; Send; Wait } }  // two dot products
///     }
///     for k in 0..2 { Irecv; Send; Wait }      // the residual's matrix-vector sum
/// }
/// ```
///
/// Its inner loops run twice per entry, so without speculation every
/// iteration of the loops around them is rebuilt from scratch.
pub fn cg(events: u64) -> impl Iterator<Item = Event> {
    let xfer = |peer: i32, tag: i32, count: i64| Transfer {
        peer: Peer::Rank {
            world: peer,
            local: peer,
        },
        tag: Tag::Value(tag),
        count,
        dsize: 8,
        dtype: trace::Datatype::from_name("double_precision").unwrap(),
    };
    let mut req = 0u64;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut exchange = move |out: &mut Vec<Event>, site: u64, peer: i32, count: i64| {
        let mut r = Event::new(Op::Irecv);
        r.site = site;
        r.recv = Some(xfer(peer, 1, count));
        r.req = Some(ReqId(req));
        let mut s = Event::new(Op::Send);
        s.site = site + 1;
        s.send = Some(xfer(peer, 1, count));
        let mut w = Event::new(Op::Wait);
        w.site = site + 2;
        w.reqs = vec![ReqId(req)];
        w.done = w.reqs.clone();
        req += 1;
        for mut e in [r, s, w] {
            let x = xorshift(&mut rng);
            e.time = Timing {
                enter_ns: 0,
                dur_ns: 2000 + x % 3000,
                compute_ns: 5000 + (x >> 20) % 2000,
            };
            out.push(e);
        }
    };
    let mut init = Event::new(Op::Init);
    init.site = 0x6000;
    let mut out = vec![init];
    let row = |k: u32| RANK ^ (1 << k);
    while (out.len() as u64) < events {
        for _ in 0..25 {
            for k in 0..2 {
                exchange(&mut out, 0x6010, row(k), 350);
            }
            exchange(&mut out, 0x6020, RANK ^ 5, 350);
            for d in 0..2u64 {
                for k in 0..2 {
                    exchange(&mut out, 0x6030 + 0x10 * d, row(k), 1);
                }
            }
        }
        for k in 0..2 {
            exchange(&mut out, 0x6050, row(k), 350);
        }
    }
    out.truncate(events as usize);
    out.into_iter()
}

/// `n` events that never repeat: every one from its own call site.
pub fn distinct(n: u64) -> impl Iterator<Item = Event> {
    (0..n).map(|i| {
        let mut e = Event::new(Op::Send);
        e.site = 0x1_0000_0000 + i;
        e.send = Some(Transfer {
            peer: Peer::Rank {
                world: (i % 64) as i32,
                local: (i % 64) as i32,
            },
            tag: Tag::Value((i % 7) as i32),
            count: (i % 4096) as i64,
            dsize: 8,
            dtype: trace::Datatype::UNKNOWN,
        });
        e.time = Timing {
            enter_ns: i,
            dur_ns: 100,
            compute_ns: 1000,
        };
        e
    })
}

/// `n` events drawn at random from 16 call sites with random peers, tags
/// and counts: little structure to find, many candidates to check.
pub fn random(n: u64, seed: u64) -> impl Iterator<Item = Event> {
    let mut x = seed | 1;
    (0..n).map(move |_| {
        let r = xorshift(&mut x);
        let op = [Op::Isend, Op::Irecv, Op::Send, Op::Recv][(r & 3) as usize];
        let mut e = Event::new(op);
        e.site = 0x7000 + ((r >> 2) & 15);
        let t = Transfer {
            peer: Peer::Rank {
                world: ((r >> 8) % 64) as i32,
                local: ((r >> 8) % 64) as i32,
            },
            tag: Tag::Value(((r >> 16) % 5) as i32),
            count: ((r >> 24) % 100_000) as i64,
            dsize: 4,
            // Unknown, predefined and derived types alike.
            dtype: trace::Datatype([0, 7, 20, 255][((r >> 40) % 4) as usize]),
        };
        if matches!(op, Op::Isend | Op::Send) {
            e.send = Some(t);
        } else {
            e.recv = Some(t);
        }
        if matches!(op, Op::Isend | Op::Irecv) {
            e.req = Some(ReqId(r >> 40));
        }
        e.time = Timing {
            enter_ns: 0,
            dur_ns: (r >> 44) % 1000,
            compute_ns: (r >> 50) % 10_000,
        };
        e
    })
}

/// The ping-pong benchmark on rank 0 (`benches/mpi/pingpong.c`): `reps`
/// times a Barrier and `iters` round trips (Send, then Recv, 8 bytes to
/// and from rank 1). Its outer iterations are long (`2 * iters + 1`
/// events), longer than a speculative iteration may buffer.
pub fn pingpong(reps: u64, iters: u64) -> impl Iterator<Item = Event> {
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let xfer = Transfer {
        peer: Peer::Rank { world: 1, local: 1 },
        tag: Tag::Value(1),
        count: 8,
        dsize: 1,
        dtype: trace::Datatype::from_name("char").unwrap(),
    };
    let mut init = Event::new(Op::Init);
    init.site = 0x7000;
    std::iter::once(init)
        .chain((0..reps).flat_map(move |_| {
            let mut b = Event::new(Op::Barrier);
            b.site = 0x7001;
            b.comm = CommId::WORLD;
            std::iter::once(b).chain((0..iters).flat_map(move |_| {
                let mut s = Event::new(Op::Send);
                s.site = 0x7002;
                s.send = Some(xfer);
                let mut r = Event::new(Op::Recv);
                r.site = 0x7003;
                r.recv = Some(xfer);
                [s, r]
            }))
        }))
        .map(move |mut e| {
            let r = xorshift(&mut rng);
            e.time = Timing {
                enter_ns: 0,
                dur_ns: 300 + r % 200,
                compute_ns: 50 + (r >> 20) % 50,
            };
            e
        })
}
