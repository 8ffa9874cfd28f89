//! Point-to-point calls: blocking and nonblocking sends and receives,
//! `Sendrecv`, probes and matched probes, with the untraced waits that let
//! a wildcard receive or a probe find the message the trace says it found.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use mpi_sys::*;
use trace::{Event, Op, Peer, Tag};

use super::comm::world_to_local;
use super::requests::Keep;
use super::{Replayer, blank_status, check, elements, request_null};

/// The buffer attached for buffered sends (Bsend, Ibsend).
const BSEND_BYTES: usize = 64 << 20;

/// How long, once this rank has diverged from the trace, a probe waits for
/// a message the trace says is there: an earlier wildcard receive may have
/// taken it. Before any divergence the wait is unbounded (the message must
/// come; `--timeout` guards against traces that cannot complete).
const DIVERGED_WAIT: Duration = Duration::from_millis(200);

/// `MPI_Isend` and its synchronous and ready forms.
type SendFn = unsafe extern "C" fn(
    *const c_void,
    c_int,
    MPI_Datatype,
    c_int,
    c_int,
    MPI_Comm,
    *mut MPI_Request,
) -> c_int;

/// `MPI_MESSAGE_NULL`: a message handle before a matched probe sets it,
/// and that of a probe that matched nothing.
fn message_null() -> MPI_Message {
    // SAFETY: reading an initialised mpi-sys constant.
    unsafe { RSMPI_MESSAGE_NULL }
}

impl Replayer<'_> {
    /// The blocking sends `Send`, `Ssend`, `Bsend` and `Rsend`. Returns the
    /// bytes sent.
    pub(super) fn send(&mut self, e: &Event) -> Result<f64> {
        let t = e.send.context("send side missing")?;
        let (n, ty, b) = self.side(&t)?;
        let bytes = elements(n, t.dsize) as f64;
        let c = self.comm(e.comm)?;
        let (p, tag) = (Self::peer(t.peer), Self::tag(t.tag));
        // Yielding on MPICH: a blocking send that waits for its
        // receiver busy-polls; its nonblocking PMPI form
        // completed by test-and-sleep does not (like the
        // collectives, a tracer preloaded into the replay does
        // not see it).
        let nonblocking = match e.op {
            Op::Send => Some(PMPI_Isend as SendFn),
            Op::Ssend => Some(PMPI_Issend as SendFn),
            Op::Rsend => Some(PMPI_Irsend as SendFn),
            _ => None,
        }
        .filter(|_| self.yield_colls);
        if let Some(f) = nonblocking {
            // SAFETY: MPI_Request is an integer (MPICH) or a pointer (Open
            // MPI), for which all-zero bits are valid; the call sets it.
            let mut req: MPI_Request = unsafe { std::mem::zeroed() };
            // SAFETY: `b` holds `n` elements of `ty` and outlives the
            // request, which `await_request` completes before `b` drops;
            // `c` comes from this replay's table.
            let rc = unsafe { f(b.as_ptr().cast(), n, ty, p, tag, c, &mut req) };
            check(rc, e.op.name())?;
            self.await_request(&mut req)?;
            return Ok(bytes);
        }
        let f = match e.op {
            Op::Send => MPI_Send,
            Op::Ssend => MPI_Ssend,
            Op::Bsend => {
                self.attach_bsend()?;
                MPI_Bsend
            }
            _ => MPI_Rsend,
        };
        // SAFETY: `b` holds `n` elements of `ty` and lives across the call;
        // `c` comes from this replay's table; a Bsend has its buffer
        // attached.
        let rc = unsafe { f(b.as_ptr().cast(), n, ty, p, tag, c) };
        check(rc, e.op.name())?;
        Ok(bytes)
    }

    /// A blocking `Recv`, after the untraced wait for the message the trace
    /// says it matched.
    pub(super) fn recv(&mut self, e: &Event) -> Result<f64> {
        let t = e.recv.context("receive side missing")?;
        let (n, ty, mut b) = self.side(&t)?;
        let c = self.comm(e.comm)?;
        self.await_match(e, c)?;
        self.yield_for_message(Self::peer(t.peer), Self::tag(t.tag), c)?;
        let mut ms = blank_status();
        // SAFETY: `b` has room for `n` elements of `ty` and lives across the
        // call; `ms` is a valid status; `c` comes from this replay's table.
        let rc = unsafe {
            MPI_Recv(
                b.as_mut_ptr().cast(),
                n,
                ty,
                Self::peer(t.peer),
                Self::tag(t.tag),
                c,
                &mut ms,
            )
        };
        check(rc, "MPI_Recv")?;
        self.check_match(e, c, &ms)?;
        Ok(0.0)
    }

    /// `Sendrecv`. Returns the bytes sent.
    pub(super) fn sendrecv(&mut self, e: &Event) -> Result<f64> {
        let (s, r) = both_sides(e)?;
        let (sn, sty, sb) = self.side(&s)?;
        let (rn, rty, mut rb) = self.side(&r)?;
        let bytes = elements(sn, s.dsize) as f64;
        let c = self.comm(e.comm)?;
        // SAFETY: `sb` holds `sn` elements of `sty` and `rb` has room for `rn`
        // of `rty`, both living across the call; `c` comes from this
        // replay's table; the status is ignored.
        let rc = unsafe {
            MPI_Sendrecv(
                sb.as_ptr().cast(),
                sn,
                sty,
                Self::peer(s.peer),
                Self::tag(s.tag),
                rb.as_mut_ptr().cast(),
                rn,
                rty,
                Self::peer(r.peer),
                Self::tag(r.tag),
                c,
                RSMPI_STATUS_IGNORE,
            )
        };
        check(rc, "MPI_Sendrecv")?;
        Ok(bytes)
    }

    /// `Sendrecv_replace`. Returns the bytes sent.
    pub(super) fn sendrecv_replace(&mut self, e: &Event) -> Result<f64> {
        let (s, r) = both_sides(e)?;
        let (n, ty, mut b) = self.side(&s)?;
        let bytes = elements(n, s.dsize) as f64;
        let c = self.comm(e.comm)?;
        // SAFETY: `b` holds `n` elements of `ty` and lives across the call;
        // `c` comes from this replay's table; the status is ignored.
        let rc = unsafe {
            MPI_Sendrecv_replace(
                b.as_mut_ptr().cast(),
                n,
                ty,
                Self::peer(s.peer),
                Self::tag(s.tag),
                Self::peer(r.peer),
                Self::tag(r.tag),
                c,
                RSMPI_STATUS_IGNORE,
            )
        };
        check(rc, "MPI_Sendrecv_replace")?;
        Ok(bytes)
    }

    /// MPI 4's `Isendrecv` and `Isendrecv_replace`: one request for both
    /// halves, which keeps both buffers (one for the `_replace` form) and,
    /// like an `Irecv`'s, its communicator. Returns the bytes sent.
    #[cfg(rankscale_mpi4)]
    pub(super) fn isendrecv(&mut self, e: &Event) -> Result<f64> {
        let (s, r) = both_sides(e)?;
        let (sn, sty, mut sb) = self.side(&s)?;
        let bytes = elements(sn, s.dsize) as f64;
        let c = self.comm(e.comm)?;
        let (dest, stag) = (Self::peer(s.peer), Self::tag(s.tag));
        let (src, rtag) = (Self::peer(r.peer), Self::tag(r.tag));
        let mut h = request_null();
        let keep = if e.op == Op::IsendrecvReplace {
            // SAFETY: `sb` holds `sn` elements of `sty`; it moves into the
            // request table with the request `h` (its heap block stays in
            // place), so it outlives every use MPI makes of it; `c` comes
            // from this replay's table.
            let rc = unsafe {
                MPI_Isendrecv_replace(
                    sb.as_mut_ptr().cast(),
                    sn,
                    sty,
                    dest,
                    stag,
                    src,
                    rtag,
                    c,
                    &mut h,
                )
            };
            check(rc, e.op.name())?;
            Keep::buffer(sb)
        } else {
            let (rn, rty, mut rb) = self.side(&r)?;
            // SAFETY: `sb` holds `sn` elements of `sty` and `rb` has room
            // for `rn` of `rty`; both move into the request table with `h`
            // (their heap blocks stay in place); `c` as above.
            let rc = unsafe {
                MPI_Isendrecv(
                    sb.as_ptr().cast(),
                    sn,
                    sty,
                    dest,
                    stag,
                    rb.as_mut_ptr().cast(),
                    rn,
                    rty,
                    src,
                    rtag,
                    c,
                    &mut h,
                )
            };
            check(rc, e.op.name())?;
            Keep {
                bytes: vec![sb, rb],
                ..Keep::default()
            }
        };
        self.new_req(e.req, h, keep, false);
        if let Some(q) = e.req.and_then(|id| self.reqs.get_mut(&id.0)) {
            q.comm = Some(c);
        }
        Ok(bytes)
    }

    /// The nonblocking sends and the persistent send requests; the buffer
    /// goes into the request table with the request. Returns the bytes
    /// sent.
    pub(super) fn isend(&mut self, e: &Event) -> Result<f64> {
        let t = e.send.context("send side missing")?;
        let (n, ty, b) = self.side(&t)?;
        let bytes = elements(n, t.dsize) as f64;
        let c = self.comm(e.comm)?;
        let (p, tag) = (Self::peer(t.peer), Self::tag(t.tag));
        let mut h = request_null();
        let f = match e.op {
            Op::Isend => MPI_Isend,
            Op::Issend => MPI_Issend,
            Op::Ibsend => {
                self.attach_bsend()?;
                MPI_Ibsend
            }
            Op::Irsend => MPI_Irsend,
            Op::SendInit => MPI_Send_init,
            Op::BsendInit => {
                self.attach_bsend()?;
                MPI_Bsend_init
            }
            Op::RsendInit => MPI_Rsend_init,
            _ => MPI_Ssend_init,
        };
        // SAFETY: `b` holds `n` elements of `ty`; it moves into the request
        // table with the request `h` (its heap block stays in place), so it
        // outlives every use MPI makes of it; `c` comes from this replay's
        // table.
        let rc = unsafe { f(b.as_ptr().cast(), n, ty, p, tag, c, &mut h) };
        check(rc, e.op.name())?;
        let persistent = e.op.is_persistent_init();
        self.new_req(e.req, h, Keep::buffer(b), persistent);
        Ok(bytes)
    }

    /// `Irecv` and the persistent `Recv_init`; the buffer goes into the
    /// request table with the request, which remembers its communicator to
    /// check the source it matches.
    pub(super) fn irecv(&mut self, e: &Event) -> Result<f64> {
        let t = e.recv.context("receive side missing")?;
        let (n, ty, mut b) = self.side(&t)?;
        let c = self.comm(e.comm)?;
        let mut h = request_null();
        let f = if e.op == Op::Irecv {
            MPI_Irecv
        } else {
            MPI_Recv_init
        };
        // SAFETY: `b` has room for `n` elements of `ty`; it moves into the
        // request table with the request `h` (its heap block stays in
        // place), so it outlives every use MPI makes of it; `c` comes from
        // this replay's table.
        let rc = unsafe {
            f(
                b.as_mut_ptr().cast(),
                n,
                ty,
                Self::peer(t.peer),
                Self::tag(t.tag),
                c,
                &mut h,
            )
        };
        check(rc, e.op.name())?;
        self.new_req(e.req, h, Keep::buffer(b), e.op == Op::RecvInit);
        if let Some(r) = e.req.and_then(|id| self.reqs.get_mut(&id.0)) {
            r.comm = Some(c);
        }
        Ok(0.0)
    }

    /// `Probe` and `Iprobe`; one the trace says found a message first
    /// waits (untraced) for it.
    pub(super) fn probe(&mut self, e: &Event) -> Result<f64> {
        let t = e.recv.context("probe without a source")?;
        let c = self.comm(e.comm)?;
        let (src, tag) = (Self::peer(t.peer), Self::tag(t.tag));
        let mut ms = blank_status();
        let mut f: c_int = 1;
        if e.op == Op::Probe {
            self.await_probe(e, c, src, tag)?;
            // SAFETY: `c` comes from this replay's table; `ms` is a valid
            // status.
            check(unsafe { MPI_Probe(src, tag, c, &mut ms) }, "MPI_Probe")?;
        } else {
            if e.flag == Some(true) {
                self.await_probe(e, c, src, tag)?;
            }
            // SAFETY: `c` comes from this replay's table; `f` and `ms` are
            // valid out-parameters.
            let rc = unsafe { MPI_Iprobe(src, tag, c, &mut f, &mut ms) };
            check(rc, "MPI_Iprobe")?;
        }
        self.check_probe(e, c, f, &ms)?;
        Ok(0.0)
    }

    /// `Mprobe` and `Improbe`: the message they match is kept by the
    /// trace's message id for its `Mrecv`, or, if the application's probe
    /// matched none, among the stray messages.
    pub(super) fn mprobe(&mut self, e: &Event) -> Result<f64> {
        let t = e.recv.context("probe without a source")?;
        let c = self.comm(e.comm)?;
        let (src, tag) = (Self::peer(t.peer), Self::tag(t.tag));
        let mut msg = message_null();
        let mut ms = blank_status();
        let mut f: c_int = 1;
        if e.op == Op::Mprobe {
            self.await_probe(e, c, src, tag)?;
            // SAFETY: `c` comes from this replay's table; `msg` and `ms` are
            // valid out-parameters.
            let rc = unsafe { MPI_Mprobe(src, tag, c, &mut msg, &mut ms) };
            check(rc, "MPI_Mprobe")?;
        } else {
            if e.flag == Some(true) {
                self.await_probe(e, c, src, tag)?;
            }
            // SAFETY: `c` comes from this replay's table; `f`, `msg` and `ms`
            // are valid out-parameters.
            let rc = unsafe { MPI_Improbe(src, tag, c, &mut f, &mut msg, &mut ms) };
            check(rc, "MPI_Improbe")?;
        }
        self.check_probe(e, c, f, &ms)?;
        if msg != message_null() {
            match e.message {
                Some(id) => {
                    self.msgs.insert(id, msg);
                }
                None => self.stray.push((c, ms.MPI_SOURCE, ms.MPI_TAG, msg)),
            }
        }
        Ok(0.0)
    }

    /// `Mrecv` and `Imrecv` of a message a matched probe kept (by message
    /// id, or a stray one that fits); nothing when there is none.
    pub(super) fn mrecv(&mut self, e: &Event) -> Result<f64> {
        let t = e.recv.context("receive side missing")?;
        let (n, ty, mut b) = self.side(&t)?;
        let mut msg = e
            .message
            .and_then(|id| self.msgs.remove(&id))
            .unwrap_or(message_null());
        if msg == message_null() {
            // The probe found nothing in the replay (a divergence
            // already counted): an earlier polling probe may
            // have matched the message.
            let c = self.comm(e.comm)?;
            let (src, tag) = (Self::peer(t.peer), Self::tag(t.tag));
            // SAFETY: reading initialised mpi-sys constants.
            let (any_source, any_tag) = unsafe { (RSMPI_ANY_SOURCE, RSMPI_ANY_TAG) };
            let fits = |&(sc, s, g, _): &(MPI_Comm, c_int, c_int, MPI_Message)| {
                sc == c && (src == any_source || s == src) && (tag == any_tag || g == tag)
            };
            match self.stray.iter().position(fits) {
                Some(i) => msg = self.stray.remove(i).3,
                None => return Ok(0.0),
            }
        }
        if e.op == Op::Mrecv {
            // SAFETY: `b` has room for `n` elements of `ty` and lives across
            // the call; `msg` is a message a probe of this replay matched;
            // the status is ignored.
            let rc =
                unsafe { MPI_Mrecv(b.as_mut_ptr().cast(), n, ty, &mut msg, RSMPI_STATUS_IGNORE) };
            check(rc, "MPI_Mrecv")?;
        } else {
            let mut h = request_null();
            // SAFETY: `b` has room for `n` elements of `ty` and moves into
            // the request table with the request `h`; `msg` is a message a
            // probe of this replay matched.
            let rc = unsafe { MPI_Imrecv(b.as_mut_ptr().cast(), n, ty, &mut msg, &mut h) };
            check(rc, "MPI_Imrecv")?;
            self.new_req(e.req, h, Keep::buffer(b), false);
        }
        Ok(0.0)
    }

    /// Attaches the buffer of buffered sends, once per process (the
    /// threads of a rank share it, as MPI wants).
    fn attach_bsend(&mut self) -> Result<()> {
        static ATTACHED: Mutex<bool> = Mutex::new(false);
        let mut attached = ATTACHED
            .lock()
            .map_err(|_| anyhow!("bsend lock poisoned"))?;
        if !*attached {
            // Lives until the process ends, past MPI_Finalize.
            let b: &'static mut [u8] = Box::leak(vec![0u8; BSEND_BYTES].into_boxed_slice());
            check(
                // SAFETY: the buffer is never freed and nothing else uses it.
                unsafe { PMPI_Buffer_attach(b.as_mut_ptr().cast(), BSEND_BYTES as c_int) },
                "MPI_Buffer_attach",
            )?;
            *attached = true;
        }
        Ok(())
    }

    /// In yield mode, waits by test-and-sleep (outside the traced API)
    /// until a message from `src` with `tag` can be received, so that the
    /// blocking call that follows returns at once instead of busy-polling.
    fn yield_for_message(&self, src: c_int, tag: c_int, c: MPI_Comm) -> Result<()> {
        // SAFETY: reading an initialised constant.
        if !self.opts.yield_wait || src == unsafe { RSMPI_PROC_NULL } {
            return Ok(());
        }
        self.yield_for_message_always(src, tag, c).map(drop)
    }

    /// Waits (outside the traced API) until a message from `src` with
    /// `tag` is there, whatever the mode: before an Iprobe or Improbe that
    /// the trace says found one, and before a wildcard receive. False when
    /// it gave up after [`DIVERGED_WAIT`] on a rank that has diverged.
    fn yield_for_message_always(&self, src: c_int, tag: c_int, c: MPI_Comm) -> Result<bool> {
        let start = Instant::now();
        let mut backoff = self.backoff();
        loop {
            let mut f: c_int = 0;
            check(
                // SAFETY: `c` is a live communicator; the status is ignored.
                unsafe { PMPI_Iprobe(src, tag, c, &mut f, RSMPI_STATUS_IGNORE) },
                "MPI_Iprobe",
            )?;
            if f != 0 {
                return Ok(true);
            }
            if self.diverged > 0 && start.elapsed() > DIVERGED_WAIT {
                return Ok(false);
            }
            backoff.pause();
        }
    }

    /// The source (local rank in `c`) and tag that a wildcard receive or
    /// probe of the trace matched; `None` for a call without wildcards.
    fn expected_match(e: &Event, c: MPI_Comm) -> Result<Option<(c_int, c_int)>> {
        let (Some(m), Some(t)) = (e.matched.first(), e.recv) else {
            return Ok(None);
        };
        let (any_source, any_tag) = (t.peer == Peer::Any, t.tag == Tag::Any);
        if !any_source && !any_tag {
            return Ok(None);
        }
        let src = if any_source {
            world_to_local(c, &[m.source], true)?[0]
        } else {
            Self::peer(t.peer)
        };
        let tag = if any_tag { m.tag } else { Self::tag(t.tag) };
        Ok(Some((src, tag)))
    }

    /// For a wildcard receive or probe that the trace says matched a given
    /// message: waits (untraced) until that message has arrived, so that
    /// the traced wildcard call most likely matches the same one. (Another
    /// matching message may still come first; [`Self::check_match`] then
    /// counts the divergence.)
    fn await_match(&mut self, e: &Event, c: MPI_Comm) -> Result<()> {
        if let Some((src, tag)) = Self::expected_match(e, c)?
            && !self.yield_for_message_always(src, tag, c)?
        {
            self.diverged += 1;
        }
        Ok(())
    }

    /// Before a probe that the trace says found a message: waits (untraced)
    /// until the message it found is there, so that the traced probe finds
    /// it too (a blocking probe then returns at once, even in yield mode).
    fn await_probe(&mut self, e: &Event, c: MPI_Comm, src: c_int, tag: c_int) -> Result<()> {
        let (s, t) = Self::expected_match(e, c)?.unwrap_or((src, tag));
        if !self.yield_for_message_always(s, t, c)? {
            self.diverged += 1;
        }
        Ok(())
    }

    /// After a probe: counts a divergence if it found a message where the
    /// application's did not (a polling loop), or another one.
    fn check_probe(&mut self, e: &Event, c: MPI_Comm, found: c_int, st: &MPI_Status) -> Result<()> {
        if e.flag.is_some() && e.flag != Some(found != 0) {
            self.diverged += 1;
            return Ok(());
        }
        if found != 0 {
            self.check_match(e, c, st)?;
        }
        Ok(())
    }

    /// After a blocking wildcard receive or a probe that found a message:
    /// counts a divergence if it matched another source or tag than the
    /// trace's.
    fn check_match(&mut self, e: &Event, c: MPI_Comm, st: &MPI_Status) -> Result<()> {
        if let Some((src, tag)) = Self::expected_match(e, c)?
            && (st.MPI_SOURCE != src || st.MPI_TAG != tag)
        {
            self.diverged += 1;
        }
        Ok(())
    }
}

/// The send and receive sides of a call that does both (`Sendrecv` and
/// its forms).
fn both_sides(e: &Event) -> Result<(trace::Transfer, trace::Transfer)> {
    Ok((
        e.send.context("send side")?,
        e.recv.context("receive side")?,
    ))
}
