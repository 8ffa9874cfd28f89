//! The MPI side of causal gates ([`replay::gates`]): the all-to-all that
//! tells each sender which of its messages are held, and the tokens that
//! release them, on a communicator over `MPI_COMM_WORLD` that only replay uses
//! (through `PMPI_*`, so a tracer preloaded into the replay never sees
//! them).

use std::collections::HashSet;
use std::ffi::c_int;
use std::time::{Duration, Instant};

use anyhow::Result;
use mpi_sys::*;
use replay::gates::{Chan, Flow, Gate, SendCounter, Wait, deadlocked, inconsistent, issued};
use trace::{Event, ReqId};

use crate::rc::check;

/// The tag of every token.
const TOKEN: c_int = 7;

/// The most events for which rank 0 checks holds against the causal order
/// of the whole trace ([`inconsistent`]); beyond, only holds that wait on
/// each other are found ([`deadlocked`]) and the time bound does the rest.
const CAUSALITY_EVENTS: u64 = 20_000_000;

/// One rank's gates while it replays.
pub struct Gates {
    /// Replay's own communicator over the world ([`own_world`]).
    comm: MPI_Comm,
    /// The gates this rank opens, by position, and the next one.
    open: Vec<Gate>,
    next: usize,
    /// This rank's messages that wait for a token: channel (with the
    /// receiver as peer) and index.
    held: HashSet<(Chan, u64)>,
    counter: SendCounter,
    /// Tokens received and not used yet: (receiver, communicator
    /// instance, tag, index).
    tokens: HashSet<(i32, u64, i32, u64)>,
    /// Tokens in flight and their buffers.
    sent: Vec<(MPI_Request, Box<[i64; 3]>)>,
    /// How long a held message waits for its token before it is sent
    /// anyway (a hold the replay cannot honour, see [`Self::before`]).
    bound: Duration,
    /// Holds given up.
    pub given_up: u64,
}

impl Gates {
    /// Sets up the gates of this rank (collective over the world): `mine`
    /// are the gates it opens, computed from its own events, which `events`
    /// expands again to place its held sends. `bound` caps the wait for a
    /// token. Holds that contradict the causal order of `trace` are given
    /// up here (rank 0 decides for all) and counted in
    /// [`Self::given_up`].
    pub fn new(
        mine: Vec<Gate>,
        events: impl Iterator<Item = Event>,
        trace: &trace::MergedTrace,
        world: MPI_Comm,
        bound: Duration,
    ) -> Result<Gates> {
        let (mut size, mut rank, comm) = (0 as c_int, 0 as c_int, own_world(world)?);
        // SAFETY: world is valid.
        check(unsafe { PMPI_Comm_size(world, &mut size) }, "MPI_Comm_size")?;
        // SAFETY: world is valid.
        check(unsafe { PMPI_Comm_rank(world, &mut rank) }, "MPI_Comm_rank")?;
        let p = size as usize;
        let mut by_sender: Vec<Vec<i64>> = vec![Vec::new(); p];
        for g in &mine {
            if let Some(b) = usize::try_from(g.sender)
                .ok()
                .and_then(|s| by_sender.get_mut(s))
            {
                b.extend([g.comm as i64, i64::from(g.tag), g.k as i64]);
            }
        }
        let scounts: Vec<c_int> = by_sender.iter().map(|b| b.len() as c_int).collect();
        let mut rcounts = vec![0 as c_int; p];
        check(
            // SAFETY: both arrays hold one int per rank.
            unsafe {
                PMPI_Alltoall(
                    scounts.as_ptr().cast(),
                    1,
                    RSMPI_INT32_T,
                    rcounts.as_mut_ptr().cast(),
                    1,
                    RSMPI_INT32_T,
                    comm,
                )
            },
            "MPI_Alltoall",
        )?;
        let (sdispls, rdispls) = (displacements(&scounts), displacements(&rcounts));
        let sendbuf: Vec<i64> = by_sender.concat();
        let mut recvbuf = vec![0i64; rcounts.iter().map(|&n| n as usize).sum::<usize>().max(1)];
        check(
            // SAFETY: counts and displacements describe the two buffers, in
            // 64-bit integers.
            unsafe {
                PMPI_Alltoallv(
                    sendbuf.as_ptr().cast(),
                    scounts.as_ptr(),
                    sdispls.as_ptr(),
                    RSMPI_INT64_T,
                    recvbuf.as_mut_ptr().cast(),
                    rcounts.as_ptr(),
                    rdispls.as_ptr(),
                    RSMPI_INT64_T,
                    comm,
                )
            },
            "MPI_Alltoallv",
        )?;
        let mut held = HashSet::new();
        for (receiver, (&n, &d)) in rcounts.iter().zip(&rdispls).enumerate() {
            for t in recvbuf[d as usize..(d + n) as usize].chunks_exact(3) {
                held.insert(((t[0] as u64, receiver as i32, t[1] as i32), t[2] as u64));
            }
        }
        let given_up = give_up(&mine, &mut held, events, trace, comm, p)?;
        Ok(Gates {
            comm,
            open: mine,
            next: 0,
            held,
            counter: SendCounter::new(rank as u32, p as i64),
            tokens: HashSet::new(),
            sent: Vec::new(),
            bound,
            given_up,
        })
    }

    /// Whether a stage before the event at `p` is still to be released,
    /// and the request whose completion reaches it.
    pub fn pending_stage(&self, p: u64) -> Option<Option<ReqId>> {
        let g = self.open.get(self.next)?;
        (g.after < issued(p)).then_some(g.once)
    }

    /// Releases the next gate.
    pub fn release_next(&mut self) -> Result<()> {
        let Some(g) = self.open.get(self.next).copied() else {
            return Ok(());
        };
        self.next += 1;
        let buf = Box::new([g.comm as i64, i64::from(g.tag), g.k as i64]);
        // SAFETY: a null request handle, filled by MPI.
        let mut r: MPI_Request = unsafe { RSMPI_REQUEST_NULL };
        check(
            // SAFETY: the boxed buffer stays in `self.sent` until the send
            // completes in `complete`.
            unsafe {
                PMPI_Isend(
                    buf.as_ptr().cast(),
                    3,
                    RSMPI_INT64_T,
                    g.sender,
                    TOKEN,
                    self.comm,
                    &mut r,
                )
            },
            "MPI_Isend",
        )?;
        self.sent.push((r, buf));
        Ok(())
    }

    /// Before issuing `e`: waits until every message it sends that is held
    /// has its token. A token that does not come within the bound (the
    /// hold asks for an order the application had only by chance, such as
    /// a message slower than a later one of the same sender) is given up:
    /// the message goes and the replay counts it. `pause` is one pause of
    /// the wait.
    pub fn before(&mut self, e: &Event, mut pause: impl FnMut()) -> Result<()> {
        // Nothing held (any more): no send needs naming.
        if self.held.is_empty() {
            return Ok(());
        }
        for (c, k) in self.counter.sends(e) {
            if !self.held.remove(&(c, k)) {
                continue;
            }
            let want = (c.1, c.0, c.2, k);
            let start = Instant::now();
            while !self.tokens.remove(&want) {
                if !self.receive()? {
                    if start.elapsed() > self.bound {
                        self.given_up += 1;
                        break;
                    }
                    pause();
                }
            }
        }
        Ok(())
    }

    /// Receives one token if one is there.
    fn receive(&mut self) -> Result<bool> {
        let mut f: c_int = 0;
        // SAFETY: replay's own communicator; a plain-data status.
        let mut st: MPI_Status = unsafe { std::mem::zeroed() };
        check(
            // SAFETY: as above.
            unsafe { PMPI_Iprobe(RSMPI_ANY_SOURCE, TOKEN, self.comm, &mut f, &mut st) },
            "MPI_Iprobe",
        )?;
        if f == 0 {
            return Ok(false);
        }
        let mut t = [0i64; 3];
        check(
            // SAFETY: the probed token: three 64-bit integers into `t`.
            unsafe {
                PMPI_Recv(
                    t.as_mut_ptr().cast(),
                    3,
                    RSMPI_INT64_T,
                    st.MPI_SOURCE,
                    TOKEN,
                    self.comm,
                    RSMPI_STATUS_IGNORE,
                )
            },
            "MPI_Recv",
        )?;
        self.tokens
            .insert((st.MPI_SOURCE, t[0] as u64, t[1] as i32, t[2] as u64));
        Ok(true)
    }

    /// After issuing the event at `p`: releases the messages held for it.
    pub fn after(&mut self, p: u64) -> Result<()> {
        while self
            .open
            .get(self.next)
            .is_some_and(|g| g.after <= issued(p))
        {
            self.release_next()?;
        }
        Ok(())
    }

    /// Completes the tokens this rank sent (before the end barrier).
    pub fn complete(&mut self) -> Result<()> {
        for (r, _) in &mut self.sent {
            // SAFETY: a live request of a token send; its buffer is alive.
            check(unsafe { PMPI_Wait(r, RSMPI_STATUS_IGNORE) }, "MPI_Wait")?;
        }
        self.sent.clear();
        Ok(())
    }

    /// After the end barrier: drops unused tokens (of holds given up) and
    /// frees replay's communicator.
    pub fn finish(mut self) -> Result<()> {
        while self.receive()? {}
        // SAFETY: replay's own communicator, no longer used.
        check(unsafe { PMPI_Comm_free(&mut self.comm) }, "MPI_Comm_free")
    }
}

/// The tag of the point-to-point agreement that creates replay's
/// communicator ([`own_world`]); nothing else is in flight then.
const CREATE: c_int = 0x7273;

/// Replay's own communicator over all ranks of `world`.
///
/// It is made with `MPI_Comm_create_group`, not `MPI_Comm_dup`: Open MPI
/// 4.1 agrees on a new communicator's context id with nonblocking
/// allreduces on the parent, which advance the parent's libnbc tag counter,
/// and that counter runs through the fixed tags (-50, -51) with which
/// `MPI_Dist_graph_create` distributes its edges. A counter shifted by one
/// `MPI_Comm_dup` of the world made the application's later
/// `Dist_graph_create` hang in four of ten replays of `subcomm` (three
/// `MPI_Ibarrier` calls on the world in the application itself do the
/// same). `MPI_Comm_create_group` agrees over the group with
/// point-to-point messages, so the world's collective state stays as the
/// application left it.
fn own_world(world: MPI_Comm) -> Result<MPI_Comm> {
    // SAFETY: reading initialised mpi-sys constants.
    let (mut group, mut comm) = unsafe { (RSMPI_GROUP_NULL, RSMPI_COMM_NULL) };
    // SAFETY: world is valid; `group` and `comm` receive new handles and
    // the group is freed once the communicator exists.
    unsafe {
        check(PMPI_Comm_group(world, &mut group), "MPI_Comm_group")?;
        let rc = PMPI_Comm_create_group(world, group, CREATE, &mut comm);
        PMPI_Group_free(&mut group);
        check(rc, "MPI_Comm_create_group")?;
    }
    Ok(comm)
}

/// Finds the holds that would wait forever and removes them from `held`
/// on every rank; returns how many of this rank's were given up. Each rank
/// places its held sends (position of the send event), rank 0 gathers
/// every wait, runs [`inconsistent`] (or [`deadlocked`] on very large
/// traces) and broadcasts the verdict.
fn give_up(
    mine: &[Gate],
    held: &mut HashSet<(Chan, u64)>,
    events: impl Iterator<Item = Event>,
    trace: &trace::MergedTrace,
    comm: MPI_Comm,
    p: usize,
) -> Result<u64> {
    let mut rank: c_int = 0;
    // SAFETY: a valid communicator and out-parameter.
    check(unsafe { PMPI_Comm_rank(comm, &mut rank) }, "MPI_Comm_rank")?;
    let local = placed_waits(held, events, rank as u32, p as i64);
    let releases = release_points(mine);
    let waits_all = gather_signed(&local, comm, p, rank)?;
    let rel_all = gather_signed(&releases, comm, p, rank)?;
    let mut verdict: Vec<i64> = Vec::new();
    if rank == 0 {
        let (waits, keys) = joined_waits(&waits_all, &rel_all);
        for i in impossible_waits(trace, p, &waits) {
            verdict.extend(keys[i]);
        }
    }
    let verdict = broadcast_verdict(verdict, comm)?;
    let mut given_up = 0;
    for v in verdict.chunks_exact(5) {
        if v[0] == i64::from(rank) {
            held.remove(&((v[1] as u64, v[2] as i32, v[3] as i32), v[4] as u64));
            given_up += 1;
        }
    }
    Ok(given_up)
}

/// This rank's waits, five integers each: the position of the send event
/// (1-based), the receiver, and the message (communicator instance, tag,
/// index) of every held send among `events`, those of world rank `rank`
/// of `world` ranks.
fn placed_waits(
    held: &HashSet<(Chan, u64)>,
    events: impl Iterator<Item = Event>,
    rank: u32,
    world: i64,
) -> Vec<i64> {
    let mut local: Vec<i64> = Vec::new();
    if !held.is_empty() {
        let mut counter = SendCounter::new(rank, world);
        for (i, e) in events.enumerate() {
            for (c, k) in counter.sends(&e) {
                if held.contains(&(c, k)) {
                    local.extend([
                        i as i64 + 1,
                        i64::from(c.1),
                        c.0 as i64,
                        i64::from(c.2),
                        k as i64,
                    ]);
                }
            }
        }
    }
    local
}

/// The receiver's release points, which the senders do not know, five
/// integers each (sender, communicator instance, tag, index, fine
/// position): each
/// receiver's gates travel with the waits they answer, so rank 0 joins
/// them by message.
fn release_points(mine: &[Gate]) -> Vec<i64> {
    let mut releases: Vec<i64> = Vec::new();
    for g in mine {
        releases.extend([
            i64::from(g.sender),
            g.comm as i64,
            i64::from(g.tag),
            g.k as i64,
            g.after as i64,
        ]);
    }
    releases
}

/// [`gather`] of signed integers, which travel as their bit patterns.
fn gather_signed(v: &[i64], comm: MPI_Comm, p: usize, rank: c_int) -> Result<Vec<Vec<i64>>> {
    let bits: Vec<u64> = v.iter().map(|&x| x as u64).collect();
    Ok(gather(&bits, comm, p, rank)?
        .into_iter()
        .map(|r| r.into_iter().map(|x| x as i64).collect())
        .collect())
}

/// On rank 0: every rank's waits ([`placed_waits`], by sender) joined
/// with the release point of their message ([`release_points`], by
/// receiver), each with the key that names it in the verdict (sender,
/// communicator, receiver, tag, index). A wait whose message no receiver
/// releases is left out.
fn joined_waits(waits_all: &[Vec<i64>], rel_all: &[Vec<i64>]) -> (Vec<Wait>, Vec<[i64; 5]>) {
    // (receiver, sender, comm, tag, k) -> after
    let mut after = std::collections::HashMap::new();
    for (receiver, rows) in rel_all.iter().enumerate() {
        for r in rows.chunks_exact(5) {
            after.insert((receiver as i64, r[0], r[1], r[2], r[3]), r[4] as u64);
        }
    }
    let mut waits = Vec::new();
    let mut keys = Vec::new();
    for (sender, rows) in waits_all.iter().enumerate() {
        for w in rows.chunks_exact(5) {
            let Some(&a) = after.get(&(w[1], sender as i64, w[2], w[3], w[4])) else {
                continue;
            };
            waits.push(Wait {
                sender: sender as i32,
                at: w[0] as u64,
                receiver: w[1] as i32,
                after: a,
            });
            keys.push([sender as i64, w[2], w[1], w[3], w[4]]);
        }
    }
    (waits, keys)
}

/// On rank 0: the waits (indices into `waits`) to give up, those against
/// the causal order of `trace`'s `p` ranks ([`inconsistent`]) or, beyond
/// [`CAUSALITY_EVENTS`], those that wait on each other ([`deadlocked`]).
fn impossible_waits(trace: &trace::MergedTrace, p: usize, waits: &[Wait]) -> Vec<usize> {
    if waits.is_empty() {
        Vec::new()
    } else if trace.total_events() <= CAUSALITY_EVENTS {
        let flows: Vec<Flow> = (0..p as u32)
            .map(|r| {
                trace
                    .rank_trace(r)
                    .map(|t| Flow::of(r, p as i64, t.expand()))
                    .unwrap_or_default()
            })
            .collect();
        inconsistent(&flows, waits)
    } else {
        deadlocked(waits)
    }
}

/// Rank 0's verdict (the keys of the waits given up, five integers each)
/// on every rank: its length, then its integers, broadcast from rank 0.
fn broadcast_verdict(mut verdict: Vec<i64>, comm: MPI_Comm) -> Result<Vec<i64>> {
    let mut n = verdict.len() as c_int;
    check(
        // SAFETY: one int, then `n` 64-bit integers, from rank 0.
        unsafe { PMPI_Bcast((&raw mut n).cast(), 1, RSMPI_INT32_T, 0, comm) },
        "MPI_Bcast",
    )?;
    verdict.resize(n as usize, 0);
    if n > 0 {
        check(
            // SAFETY: as above; `verdict` holds `n` integers.
            unsafe { PMPI_Bcast(verdict.as_mut_ptr().cast(), n, RSMPI_INT64_T, 0, comm) },
            "MPI_Bcast",
        )?;
    }
    Ok(verdict)
}

/// Gathers every rank's integers on rank 0 (outside the traced API), one
/// vector per rank (none elsewhere).
pub fn gather(mine: &[u64], comm: MPI_Comm, p: usize, rank: c_int) -> Result<Vec<Vec<u64>>> {
    let n = mine.len() as c_int;
    let mut counts = vec![0 as c_int; p];
    check(
        // SAFETY: one int per rank into `counts` on the root.
        unsafe {
            PMPI_Gather(
                (&raw const n).cast(),
                1,
                RSMPI_INT32_T,
                counts.as_mut_ptr().cast(),
                1,
                RSMPI_INT32_T,
                0,
                comm,
            )
        },
        "MPI_Gather",
    )?;
    let displs = displacements(&counts);
    let total: usize = counts.iter().map(|&c| c as usize).sum();
    let mut all = vec![0u64; if rank == 0 { total.max(1) } else { 1 }];
    check(
        // SAFETY: counts and displacements describe `all` on the root.
        unsafe {
            PMPI_Gatherv(
                mine.as_ptr().cast(),
                n,
                RSMPI_UINT64_T,
                all.as_mut_ptr().cast(),
                counts.as_ptr(),
                displs.as_ptr(),
                RSMPI_UINT64_T,
                0,
                comm,
            )
        },
        "MPI_Gatherv",
    )?;
    if rank != 0 {
        return Ok(Vec::new());
    }
    Ok(counts
        .iter()
        .zip(&displs)
        .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
        .collect())
}

/// The displacements of consecutive blocks of `counts` elements (for
/// the v forms of collectives).
pub fn displacements(counts: &[c_int]) -> Vec<c_int> {
    counts
        .iter()
        .scan(0, |acc, &n| {
            let d = *acc;
            *acc += n;
            Some(d)
        })
        .collect()
}
