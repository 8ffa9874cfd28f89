//! The program: the trace's loops as C loops, each event node as its MPI
//! call with its parameters, guarded by its ranklist where that differs
//! from the enclosing one.

use std::collections::{BTreeSet, HashMap};

use trace::seq::SeqForm;
use trace::{Datatype, EventNode, Family, LoopNode, MNode, Op, Param, RankList, ReduceOp};

use crate::Error;
use crate::tables::{Tables, int};

/// The list parameters by position (see [`trace::Shape::list_names`]).
const SEND_COUNTS: usize = 0;
const RECV_COUNTS: usize = 1;
const SEND_DSIZES: usize = 2;
const RECV_DSIZES: usize = 3;
const REQS: usize = 4;
const DIMS: usize = 7;
const PERIODS: usize = 8;
const EDGES: usize = 9;
const SOURCES: usize = 10;
const MEMBERS: usize = 11;

/// Builds the program text and its tables.
pub(crate) struct Emitter<'a> {
    pub(crate) tables: Tables,
    /// The statements of `main` after `rs_setup`.
    pub(crate) body: String,
    indent: usize,
    labels: &'a HashMap<u64, String>,
    loops: usize,
    /// The path class of an event here: 0 outside loops, else from the
    /// innermost loop's index.
    class: String,
    /// Datatype codes the program names.
    pub(crate) types: BTreeSet<u8>,
    /// Whether the trace has buffered sends (the program attaches a buffer).
    pub(crate) buffered: bool,
    /// Whether the program issues MPI-IO (it sets up a scratch directory).
    pub(crate) io: bool,
    /// Event nodes emitted.
    pub(crate) events: usize,
    /// The seed of the computation draws.
    seed: u64,
}

/// One side of a transfer: the C expressions of its fields.
struct Side {
    count: String,
    dtype: String,
}

/// A collective call being written: what its stages need to choose its
/// arguments, passed as one.
struct Coll<'e> {
    e: &'e EventNode,
    /// Nonblocking or persistent: a request holds its buffers and lists.
    nb: bool,
    /// The call's name without `MPI_`.
    name: &'static str,
    /// Its blocking form's name, which chooses the arguments.
    base: &'static str,
    /// The arguments after the communicator (see [`request_args`]).
    req: &'static str,
    in_place: bool,
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(labels: &'a HashMap<u64, String>, seed: u64) -> Emitter<'a> {
        Emitter {
            tables: Tables::default(),
            body: String::new(),
            indent: 1,
            labels,
            loops: 0,
            class: "0".into(),
            seed,
            types: BTreeSet::new(),
            buffered: false,
            io: false,
            events: 0,
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.body.push_str("    ");
        }
        self.body.push_str(s);
        self.body.push('\n');
    }

    fn open(&mut self, s: &str) {
        self.line(s);
        self.indent += 1;
    }

    fn close(&mut self) {
        self.indent -= 1;
        self.line("}");
    }

    /// Nodes executed by the ranks of `within` (no guard where a node's
    /// ranklist is the same).
    pub(crate) fn nodes(&mut self, nodes: &[MNode], within: &RankList) -> Result<(), Error> {
        for n in nodes {
            let guard = n.ranks() != within;
            if guard {
                let id = self.tables.ranklist(n.ranks());
                self.open(&format!("if (rs_in[{id}]) {{ /* ranks {} */", n.ranks()));
            }
            match n {
                MNode::Event(e) => self.event(e)?,
                MNode::Loop(l) => self.lp(l)?,
                _ => {
                    return Err(Error::Malformed {
                        op: "?",
                        what: "a node of a newer trace format".into(),
                    });
                }
            }
            if guard {
                self.close();
            }
        }
        Ok(())
    }

    fn lp(&mut self, l: &LoopNode) -> Result<(), Error> {
        let k = self.loops;
        self.loops += 1;
        let count = self.value(l.counts(), l.ranks());
        self.open(&format!(
            "for (int64_t i{k} = 0, reps{k} = {count}; i{k} < reps{k}; i{k}++) {{"
        ));
        let outer = std::mem::replace(&mut self.class, format!("RS_CLS(i{k}, reps{k})"));
        self.nodes(l.body(), l.ranks())?;
        self.class = outer;
        self.close();
        Ok(())
    }

    /// The C expression of parameter `p` on the ranks `ranks`: a literal
    /// (or a literal minus the rank, for an absolute peer) where every rank
    /// has the same constant, else the next value from the tables.
    fn value(&mut self, p: &Param, ranks: &RankList) -> String {
        if let Some((value, abs)) = constant(p, ranks) {
            return if abs {
                format!("({} - rs_rank)", int(value))
            } else {
                int(value)
            };
        }
        format!("rs_next({})", self.tables.param(p))
    }

    /// A list parameter read into scratch slot `slot`; the C expression of
    /// its length.
    fn list(&mut self, e: &EventNode, which: usize, slot: usize) -> String {
        let Some(l) = e.lists().get(which) else {
            return "0".into();
        };
        let lens = self.tables.param(l.lens());
        let cols: Vec<String> = l
            .columns()
            .iter()
            .map(|c| self.tables.param(c).to_string())
            .collect();
        let cols = if cols.is_empty() {
            "0".into()
        } else {
            cols.join(", ")
        };
        format!(
            "rs_list({slot}, {lens}, {}, {}, (const int[]){{{cols}}})",
            l.width(),
            l.columns().len()
        )
    }

    /// The expression of fixed parameter `name`.
    fn field(&mut self, e: &EventNode, name: &str) -> Option<String> {
        let i = e.shape().param_names().iter().position(|n| *n == name)?;
        Some(self.value(&e.params()[i], e.ranks()))
    }

    fn need(&mut self, e: &EventNode, name: &str) -> Result<String, Error> {
        self.field(e, name).ok_or_else(|| Error::Malformed {
            op: e.shape().op().name(),
            what: format!("no {name} parameter"),
        })
    }

    /// Declares a transfer side's count and datatype (`{p}_n`, `{p}_t`):
    /// none and `MPI_BYTE` where the call has no such side (the receive
    /// side of a gather off its root, say).
    fn side(&mut self, e: &EventNode, p: &str, code: Datatype) -> Result<Side, Error> {
        self.side_as(e, p, code, false)
    }

    /// [`Emitter::side`]; with `raw`, the recorded count and datatype size
    /// are declared too (`{p}_c`, `{p}_ds`, before `--bytes-scale`): an
    /// MPI-IO access's offset is kept relative to the caller's block of
    /// that many bytes.
    fn side_as(
        &mut self,
        e: &EventNode,
        p: &str,
        code: Datatype,
        raw: bool,
    ) -> Result<Side, Error> {
        let dir = if p == "s" { "send" } else { "recv" };
        match (
            self.field(e, &format!("{dir}.count")),
            self.field(e, &format!("{dir}.dsize")),
        ) {
            (Some(count), Some(dsize)) => {
                let code = if code.is_known() { code.0 } else { 0 };
                self.types.insert(code);
                let (count, dsize) = if raw {
                    self.line(&format!("const int64_t {p}_c = {count};"));
                    self.line(&format!("const int64_t {p}_ds = {dsize};"));
                    (format!("{p}_c"), format!("{p}_ds"))
                } else {
                    (count, dsize)
                };
                self.line(&format!("const int {p}_n = rs_count({count});"));
                self.line(&format!(
                    "const MPI_Datatype {p}_t = rs_dt(RS_T{code}, {dsize});"
                ));
            }
            _ => {
                if raw {
                    self.line(&format!("const int64_t {p}_c = 0, {p}_ds = 1;"));
                }
                self.line(&format!("const int {p}_n = 0;"));
                self.line(&format!("const MPI_Datatype {p}_t = MPI_BYTE;"));
            }
        }
        self.line(&format!("(void){p}_n;"));
        self.line(&format!("(void){p}_t;"));
        Ok(Side {
            count: format!("{p}_n"),
            dtype: format!("{p}_t"),
        })
    }

    /// Declares a point-to-point side's peer and tag (`{p}_peer`,
    /// `{p}_tag`); `cr` is the caller's rank in the communicator.
    fn endpoint(&mut self, e: &EventNode, p: &str) -> Result<(), Error> {
        let dir = if p == "s" { "send" } else { "recv" };
        let peer = self.need(e, &format!("{dir}.peer"))?;
        let local = self.need(e, &format!("{dir}.local"))?;
        let tag = self.need(e, &format!("{dir}.tag"))?;
        let peer_c = peer_expr(&peer, &local);
        let tag_c = match tag.parse::<i64>() {
            _ if tag == "INT64_MIN" => "MPI_ANY_TAG".to_string(),
            Ok(t) => t.to_string(),
            Err(_) => format!("rs_tag({tag})"),
        };
        self.line(&format!("const int {p}_peer = {peer_c};"));
        self.line(&format!("const int {p}_tag = {tag_c};"));
        Ok(())
    }

    /// Declares `c` (the communicator) and, when `rank` is set, `cr` (the
    /// caller's rank in it).
    fn comm(&mut self, e: &EventNode, rank: bool) -> Result<(), Error> {
        let c = self.need(e, "comm")?;
        let c = match c.as_str() {
            "0" => "MPI_COMM_WORLD".to_string(),
            "1" => "MPI_COMM_SELF".to_string(),
            _ => format!("rs_comm({c})"),
        };
        self.line(&format!("const MPI_Comm c = {c};"));
        if rank {
            let off = self.need(e, "comm_rank")?;
            let cr = if off == "0" {
                "rs_rank".to_string()
            } else {
                format!("rs_rank + {off}")
            };
            self.line(&format!("const int64_t cr = {cr};"));
            self.line("(void)cr;");
        }
        Ok(())
    }

    /// Declares `rq`, the id of the request the call creates.
    fn new_request(&mut self, e: &EventNode) -> Result<(), Error> {
        let rq = self.need(e, "req")?;
        self.line(&format!("const int64_t rq = {rq};"));
        Ok(())
    }

    fn event(&mut self, e: &EventNode) -> Result<(), Error> {
        let shape = *e.shape();
        let op = shape.op();
        if shape.thread() != 0 {
            return Err(Error::Threads);
        }
        let node = self.timing_node(e);
        self.events += 1;
        let site = self
            .labels
            .get(&shape.site())
            .map_or_else(|| format!("site {:016x}", shape.site()), Clone::clone)
            .replace("*/", "* /");
        self.open(&format!("{{ /* {}: {site} */", op.name()));
        // Init's computation too (it runs after `rs_setup`): replay draws
        // it, and one draw less would shift every later draw of the rank's
        // stream, so that the benchmark and replay would sleep different
        // (equally likely) times; on NPB MG that alone moved the run time
        // by a quarter.
        self.line(&format!("rs_compute({node}, {});", self.class));
        self.call(e, site)?;
        self.close();
        Ok(())
    }

    /// The C expression of the timing table an event's computation is
    /// drawn from. Ranks that compute differently draw from their own
    /// group's timing, as replay's projection of the trace gives each
    /// rank.
    fn timing_node(&mut self, e: &EventNode) -> String {
        let shape = *e.shape();
        let mut node = String::new();
        if let Some((last, rest)) = e.timing_variants().split_last() {
            for v in rest {
                let rl = self.tables.ranklist(v.ranks());
                let t = self.tables.timing(v.timing(), v.ranks(), &shape, self.seed);
                node.push_str(&format!("rs_in[{rl}] ? {t} : "));
            }
            node.push_str(
                &self
                    .tables
                    .timing(last.timing(), last.ranks(), &shape, self.seed)
                    .to_string(),
            );
        } else {
            node = self
                .tables
                .timing(e.timing(), e.ranks(), &shape, self.seed)
                .to_string();
        }
        node
    }

    /// The MPI call of an event, by its operation (`site` names it in the
    /// error for one the generator does not write).
    fn call(&mut self, e: &EventNode, site: String) -> Result<(), Error> {
        let shape = *e.shape();
        let op = shape.op();
        let name = op.name();
        match op {
            // A call that returned an error did nothing.
            _ if shape.failed() => {
                self.line(&format!("/* MPI_{name}: returned an error, not issued */"));
            }
            Op::Init => self.line("/* MPI_Init opened the program */"),
            Op::InitThread => self.line("/* MPI_Init_thread opened the program */"),
            Op::Finalize => {
                self.line("rs_finish();");
                self.line("MPI_Finalize();");
            }
            Op::Abort => {
                self.comm(e, false)?;
                let v = self.field(e, "value").unwrap_or_else(|| "1".into());
                self.line(&format!("MPI_Abort(c, (int)({v}));"));
            }
            Op::Pcontrol => {
                let v = self.field(e, "value").unwrap_or_else(|| "0".into());
                self.line(&format!("MPI_Pcontrol((int)({v}));"));
            }
            // Before the sends: `Put` and its kin send too.
            op if op.family() == Family::OneSided => self.one_sided(e, op)?,
            op if op.family() == Family::Io => self.io(e, op)?,
            // Before the sends: `Psend_init` is one too.
            op if op.family() == Family::Partitioned => self.partitioned(e, op)?,
            op if op.is_send() || matches!(op, Op::Recv | Op::Irecv | Op::RecvInit) => {
                self.p2p(e, op)?
            }
            Op::Sendrecv | Op::SendrecvReplace => self.sendrecv(e, op)?,
            Op::Isendrecv | Op::IsendrecvReplace => self.isendrecv(e, op)?,
            op if op.family() == Family::Completion
                || matches!(op, Op::Start | Op::Startall | Op::RequestFree | Op::Cancel) =>
            {
                self.requests(e, op)
            }
            op if op.is_collective() => self.collective(e, op)?,
            Op::CommDup
            | Op::CommDupWithInfo
            | Op::CommIdup
            | Op::CommIdupWithInfo
            | Op::CommCreateGroup
            | Op::CommSplit
            | Op::CommSplitType
            | Op::CartCreate
            | Op::CartSub
            | Op::CommCreate
            | Op::GraphCreate
            | Op::DistGraphCreate
            | Op::DistGraphCreateAdjacent
            | Op::IntercommCreate
            | Op::IntercommMerge => self.constructor(e, op)?,
            op if op.is_from_groups() => self.groups_constructor(e, op)?,
            Op::Probe | Op::Iprobe | Op::Mprobe | Op::Improbe => self.probe(e, op)?,
            Op::Mrecv | Op::Imrecv => self.matched_recv(e, op)?,
            Op::CommFree => {
                let c = self.need(e, "comm")?;
                self.line(&format!("MPI_Comm_free(rs_newcomm({c}));"));
            }
            // Recorded without detail: the benchmark cannot issue it (a
            // request it made is MPI_REQUEST_NULL to the completion calls).
            op if op.is_generic() => {
                self.line(&format!(
                    "/* MPI_{name}: recorded without detail, not issued */"
                ));
            }
            _ => {
                return Err(Error::Unsupported {
                    op: op.name(),
                    site,
                });
            }
        }
        Ok(())
    }

    /// Closes an `#if MPI_VERSION >= 4` block of call `op`: built against
    /// an older `mpi.h`, the benchmark stops there and says why.
    fn end_mpi4(&mut self, op: Op) {
        self.line("#else");
        self.line(&format!(
            "rs_fail(\"MPI_{} needs an MPI 4 library (this mpi.h is older)\", 0, 0);",
            op.name()
        ));
        self.line("#endif");
    }

    /// The communicator `c`, and the send and receive sides with their
    /// peers and tags (`s_peer`, `s_tag`, `r_peer`, `r_tag`), of a call
    /// that both sends and receives.
    fn both_sides(&mut self, e: &EventNode) -> Result<(Side, Side), Error> {
        let shape = *e.shape();
        self.comm(e, true)?;
        let s = self.side(e, "s", shape.send_type())?;
        self.endpoint(e, "s")?;
        let r = self.side(e, "r", shape.recv_type())?;
        self.endpoint(e, "r")?;
        Ok((s, r))
    }

    /// `Sendrecv` and `Sendrecv_replace`: both sides with their peers and
    /// tags; the replacing one on a single buffer large enough for either
    /// message.
    fn sendrecv(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let (s, r) = self.both_sides(e)?;
        if op == Op::Sendrecv {
            self.line(&format!(
                "MPI_Sendrecv(rs_buf(0, {sn}, {st}), {sn}, {st}, s_peer, s_tag, rs_buf(1, {rn}, \
                 {rt}), {rn}, {rt}, r_peer, r_tag, c, MPI_STATUS_IGNORE);",
                sn = s.count,
                st = s.dtype,
                rn = r.count,
                rt = r.dtype
            ));
        } else {
            self.line(&format!(
                "MPI_Sendrecv_replace(rs_buf(1, {sn} > {rn} ? {sn} : {rn}, {st}), {sn}, {st}, \
                 s_peer, s_tag, r_peer, r_tag, c, MPI_STATUS_IGNORE);",
                sn = s.count,
                st = s.dtype,
                rn = r.count,
            ));
        }
        Ok(())
    }

    /// MPI 4's `Isendrecv` and `Isendrecv_replace`: one request buffer
    /// for both halves (the receive's after the send's; the replacing
    /// one's large enough for either message), kept until the request
    /// completes. Compiled where `mpi.h` is MPI 4, as partitioned calls.
    fn isendrecv(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let (s, r) = self.both_sides(e)?;
        self.new_request(e)?;
        let (sn, st, rn, rt) = (s.count, s.dtype, r.count, r.dtype);
        self.line("#if MPI_VERSION >= 4");
        self.line(&format!(
            "const int64_t sb = (int64_t)({sn}) * (int64_t)rs_span({st});"
        ));
        self.line(&format!(
            "const int64_t rb = (int64_t)({rn}) * (int64_t)rs_span({rt});"
        ));
        if op == Op::Isendrecv {
            self.line("char *b = rs_rqbuf(rq, sb + rb, MPI_BYTE);");
            self.line(&format!(
                "MPI_Isendrecv(b, {sn}, {st}, s_peer, s_tag, b + sb, {rn}, {rt}, r_peer, r_tag, \
                 c, rs_req(rq));"
            ));
        } else {
            self.line("void *b = rs_rqbuf(rq, sb > rb ? sb : rb, MPI_BYTE);");
            self.line(&format!(
                "MPI_Isendrecv_replace(b, {sn}, {st}, s_peer, s_tag, r_peer, r_tag, c, \
                 rs_req(rq));"
            ));
        }
        self.end_mpi4(op);
        Ok(())
    }

    /// Calls on a list of requests (completions, starts, frees, cancels):
    /// the runtime's `rs_requests` issues them on the recorded request ids.
    fn requests(&mut self, e: &EventNode, op: Op) {
        let which = match op {
            Op::Wait => "RS_WAIT",
            Op::Waitall => "RS_WAITALL",
            Op::Waitany => "RS_WAITANY",
            Op::Waitsome => "RS_WAITSOME",
            Op::Test => "RS_TEST",
            Op::Testall => "RS_TESTALL",
            Op::Testany => "RS_TESTANY",
            Op::Testsome => "RS_TESTSOME",
            Op::Start => "RS_START",
            Op::Startall => "RS_STARTALL",
            Op::Cancel => "RS_CANCEL",
            _ => "RS_FREE",
        };
        let n = self.list(e, REQS, 0);
        self.line(&format!("const int64_t n = {n};"));
        self.line(&format!("rs_requests({which}, rs_lists[0], n);"));
    }

    /// The probes: blocking or not (a flag), and the matched ones
    /// (`Mprobe`, `Improbe`) with the message handle they take, by the
    /// recorded message id.
    fn probe(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let name = op.name();
        self.comm(e, true)?;
        self.endpoint(e, "r")?;
        let message = self.field(e, "message");
        let (flag, flag_decl) = if matches!(op, Op::Iprobe | Op::Improbe) {
            (", &flag", "int flag = 0;")
        } else {
            ("", "")
        };
        if !flag_decl.is_empty() {
            self.line(flag_decl);
        }
        let msg = match (&message, op) {
            (_, Op::Probe | Op::Iprobe) => String::new(),
            (Some(id), _) => {
                self.line(&format!("const int64_t mid = {id};"));
                ", rs_msg(mid), rs_msg_status(mid)".into()
            }
            (None, _) => ", &rs_null_msg".into(),
        };
        let status = if msg.contains("rs_msg_status") {
            ""
        } else {
            ", MPI_STATUS_IGNORE"
        };
        self.line(&format!("MPI_{name}(r_peer, r_tag, c{flag}{msg}{status});"));
        Ok(())
    }

    /// `Mrecv` and `Imrecv`: the receive of a message a matched probe
    /// took, no longer than the message (`rs_msg_fit`).
    fn matched_recv(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let shape = *e.shape();
        let r = self.side(e, "r", shape.recv_type())?;
        let (msg, fit) = match self.field(e, "message") {
            Some(id) => {
                self.line(&format!("const int64_t mid = {id};"));
                ("rs_taken_msg(mid)", "rs_msg_fit(mid, r_n, r_t)")
            }
            // MPI_Mrecv sets the handle to MPI_MESSAGE_NULL: set
            // again for every call.
            None => (
                "(rs_no_proc_msg = MPI_MESSAGE_NO_PROC, &rs_no_proc_msg)",
                "r_n",
            ),
        };
        self.line(&format!("const int m_n = {fit};"));
        if op == Op::Imrecv {
            self.new_request(e)?;
            self.line(&format!("void *b = rs_rqbuf(rq, m_n, {t});", t = r.dtype));
            self.line(&format!(
                "MPI_Imrecv(b, m_n, {t}, {msg}, rs_req(rq));",
                t = r.dtype
            ));
        } else {
            self.line(&format!(
                "MPI_Mrecv(rs_buf(1, m_n, {t}), m_n, {t}, {msg}, MPI_STATUS_IGNORE);",
                t = r.dtype
            ));
        }
        Ok(())
    }

    /// One-sided point-to-point calls: blocking ones on the blocking
    /// buffers, nonblocking and persistent ones on their request's own.
    fn p2p(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let shape = *e.shape();
        let send = !matches!(op, Op::Recv | Op::Irecv | Op::RecvInit);
        let nb = op.family() != trace::Family::BlockingP2p;
        let (p, ty) = if send {
            ("s", shape.send_type())
        } else {
            ("r", shape.recv_type())
        };
        self.buffered |= matches!(op, Op::Bsend | Op::Ibsend | Op::BsendInit);
        self.comm(e, true)?;
        let x = self.side(e, p, ty)?;
        self.endpoint(e, p)?;
        let (name, n, t) = (op.name(), x.count, x.dtype);
        if nb {
            self.new_request(e)?;
            self.line(&format!("void *b = rs_rqbuf(rq, {n}, {t});"));
            self.line(&format!(
                "MPI_{name}(b, {n}, {t}, {p}_peer, {p}_tag, c, rs_req(rq));"
            ));
        } else {
            let (slot, status) = if send {
                (0, "")
            } else {
                (1, ", MPI_STATUS_IGNORE")
            };
            self.line(&format!(
                "MPI_{name}(rs_buf({slot}, {n}, {t}), {n}, {t}, {p}_peer, {p}_tag, c{status});"
            ));
        }
        Ok(())
    }

    /// MPI 4 partitioned communication: `Psend_init` and `Precv_init` on
    /// their request's own buffer, cut into the application's partitions;
    /// `Pready*` and `Parrived` on the request they name. Compiled where
    /// `mpi.h` is MPI 4 (a trace of MPICH 4 built against Open MPI 4.1
    /// stops at its first partitioned call and says why).
    fn partitioned(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let name = op.name();
        let parts = self.need(e, "value");
        self.line("#if MPI_VERSION >= 4");
        if op.is_partitioned_init() {
            let shape = *e.shape();
            let send = op == Op::PsendInit;
            let (p, ty) = if send {
                ("s", shape.send_type())
            } else {
                ("r", shape.recv_type())
            };
            self.comm(e, true)?;
            let x = self.side(e, p, ty)?;
            self.endpoint(e, p)?;
            self.new_request(e)?;
            let (n, t) = (x.count, x.dtype);
            self.line(&format!("const int64_t parts = {};", parts?));
            self.line(&format!("void *b = rs_rqbuf(rq, {n}, {t});"));
            self.line(&format!(
                "MPI_{name}(b, (int)parts, ({n}) / (parts > 0 ? parts : 1), {t}, {p}_peer, \
                 {p}_tag, c, MPI_INFO_NULL, rs_req(rq));"
            ));
        } else {
            let n = self.list(e, REQS, 0);
            self.line(&format!("const int64_t n = {n};"));
            self.line("MPI_Request h = n > 0 ? *rs_req(rs_lists[0][0]) : MPI_REQUEST_NULL;");
            match op {
                Op::Pready => self.line(&format!("MPI_Pready((int)({}), h);", parts?)),
                Op::Parrived => {
                    self.line("int flag = 0;");
                    self.line(&format!("MPI_Parrived(h, (int)({}), &flag);", parts?));
                }
                _ => {
                    let m = self.list(e, SEND_COUNTS, 1);
                    self.line(&format!("const int64_t m = {m};"));
                    self.line("int *l = rs_ints(1, rs_lists[1], m, 2, 0);");
                    self.line(&if op == Op::PreadyRange {
                        "MPI_Pready_range(l[0], l[1], h);".to_string()
                    } else {
                        "MPI_Pready_list((int)m, l, h);".to_string()
                    });
                }
            }
        }
        self.end_mpi4(op);
        Ok(())
    }

    /// MPI 4's constructors from groups: the groups made of the world's
    /// by the world ranks recorded, and a string tag of the benchmark's
    /// own made of the recorded tag's hash (as replay makes it).
    fn groups_constructor(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let nc = self.new_comm(e);
        let key = self.field(e, "key").unwrap_or_else(|| "0".into());
        self.line("#if MPI_VERSION >= 4");
        self.line("char tag[32];");
        self.line(&format!(
            "snprintf(tag, sizeof tag, \"rankscale-%d\", (int)({key}));"
        ));
        let groups: &[(usize, usize)] = if op == Op::CommCreateFromGroup {
            &[(0, MEMBERS)]
        } else {
            &[(0, SOURCES), (1, MEMBERS)]
        };
        for &(k, which) in groups {
            let n = self.list(e, which, k);
            self.line(&format!("const int64_t n{k} = {n};"));
            self.line(&format!(
                "MPI_Group g{k} = rs_group(rs_ints({k}, rs_lists[{k}], n{k}, n{k}, 0), n{k});"
            ));
        }
        if op == Op::CommCreateFromGroup {
            self.line(&format!(
                "MPI_Comm_create_from_group(g0, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, {nc});"
            ));
            self.line("MPI_Group_free(&g0);");
        } else {
            let n = self.list(e, DIMS, 2);
            self.line(&format!("const int64_t n2 = {n};"));
            self.line("int *l2 = rs_ints(2, rs_lists[2], n2, 2, 0);");
            self.line(&format!(
                "MPI_Intercomm_create_from_groups(g0, l2[0], g1, l2[1], tag, MPI_INFO_NULL, \
                 MPI_ERRORS_ARE_FATAL, {nc});"
            ));
            self.line("MPI_Group_free(&g0);");
            self.line("MPI_Group_free(&g1);");
        }
        self.end_mpi4(op);
        Ok(())
    }

    /// The C expression of the slot for the communicator a constructor
    /// makes: the recorded id's, or a scratch handle where it made none.
    fn new_comm(&mut self, e: &EventNode) -> String {
        match self.field(e, "new_comm") {
            Some(id) => format!("rs_newcomm({id})"),
            None => "&rs_null_comm".into(),
        }
    }

    /// Communicator constructors.
    fn constructor(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        self.comm(e, true)?;
        let nc = self.new_comm(e);
        match op {
            Op::CommDup | Op::CommIdup | Op::CommIdupWithInfo | Op::CommDupWithInfo => {
                self.dup(e, op, &nc)?
            }
            Op::CommSplit | Op::CommSplitType => self.split(e, op, &nc),
            Op::CommCreate | Op::CommCreateGroup => self.create_from_members(e, op, &nc),
            Op::GraphCreate | Op::DistGraphCreate | Op::DistGraphCreateAdjacent => {
                self.graph_create(e, op, &nc)
            }
            Op::IntercommCreate | Op::IntercommMerge => self.intercomm(e, op, &nc),
            _ => self.cart(e, op, &nc),
        }
        Ok(())
    }

    /// The duplications, blocking or not, with or without info (the
    /// application's info is not recorded); `nc` is the new
    /// communicator's slot.
    fn dup(&mut self, e: &EventNode, op: Op, nc: &str) -> Result<(), Error> {
        match op {
            Op::CommDup => self.line(&format!("MPI_Comm_dup(c, {nc});")),
            Op::CommIdup => {
                self.new_request(e)?;
                self.line("rs_rqbuf(rq, 0, MPI_BYTE);");
                self.line(&format!("MPI_Comm_idup(c, {nc}, rs_req(rq));"));
            }
            Op::CommIdupWithInfo => {
                self.new_request(e)?;
                self.line("rs_rqbuf(rq, 0, MPI_BYTE);");
                self.line("#if MPI_VERSION >= 4");
                self.line(&format!(
                    "MPI_Comm_idup_with_info(c, MPI_INFO_NULL, {nc}, rs_req(rq));"
                ));
                self.line("#else");
                self.line(&format!("MPI_Comm_idup(c, {nc}, rs_req(rq));"));
                self.line("#endif");
            }
            _ => self.line(&format!("MPI_Comm_dup_with_info(c, MPI_INFO_NULL, {nc});")),
        }
        Ok(())
    }

    /// `Comm_split` (by colour) and `Comm_split_type` (by kind), with the
    /// recorded key, relative to the caller where it was.
    fn split(&mut self, e: &EventNode, op: Op, nc: &str) {
        if op == Op::CommSplit {
            let color = self
                .field(e, "color")
                .map_or_else(|| "MPI_UNDEFINED".into(), |v| format!("rs_self({v}, cr)"));
            let key = self.field(e, "key").unwrap_or_else(|| "0".into());
            self.line(&format!(
                "MPI_Comm_split(c, {color}, rs_self({key}, cr), {nc});"
            ));
        } else {
            let kind = self
                .field(e, "split_type")
                .map_or_else(|| "MPI_UNDEFINED".into(), |v| format!("(int)({v})"));
            let key = self.field(e, "key").unwrap_or_else(|| "0".into());
            self.line(&format!(
                "MPI_Comm_split_type(c, {kind}, rs_self({key}, cr), MPI_INFO_NULL, {nc});"
            ));
        }
    }

    /// `Comm_create` and `Comm_create_group`: the group of the recorded
    /// members (ranks in the communicator).
    fn create_from_members(&mut self, e: &EventNode, op: Op, nc: &str) {
        let n = self.list(e, MEMBERS, 0);
        self.line(&format!("const int64_t nm = {n};"));
        self.line("MPI_Group g = rs_group(rs_ints(0, rs_lists[0], nm, nm, 0), nm);");
        if op == Op::CommCreateGroup {
            let tag = self.field(e, "key").unwrap_or_else(|| "0".into());
            self.line(&format!("MPI_Comm_create_group(c, g, (int)({tag}), {nc});"));
        } else {
            self.line(&format!("MPI_Comm_create(c, g, {nc});"));
        }
        self.line("MPI_Group_free(&g);");
    }

    /// The graph topologies: the recorded index/degree, edge and source
    /// lists in the argument order of each constructor.
    fn graph_create(&mut self, e: &EventNode, op: Op, nc: &str) {
        let reorder = self.field(e, "reorder").unwrap_or_else(|| "0".into());
        for (k, which) in [(0, DIMS), (1, EDGES), (2, SOURCES)] {
            let n = self.list(e, which, k);
            self.line(&format!("const int64_t n{k} = {n};"));
            self.line(&format!(
                "int *l{k} = rs_ints({k}, rs_lists[{k}], n{k}, n{k}, 0);"
            ));
            self.line(&format!("(void)l{k};"));
        }
        self.line(&match op {
            Op::GraphCreate => {
                format!("MPI_Graph_create(c, (int)n0, l0, l1, (int)({reorder}), {nc});")
            }
            Op::DistGraphCreate => format!(
                "MPI_Dist_graph_create(c, (int)n2, l2, l0, l1, rs_unweighted, MPI_INFO_NULL, \
                 (int)({reorder}), {nc});"
            ),
            _ => format!(
                "MPI_Dist_graph_create_adjacent(c, (int)n2, l2, rs_unweighted, (int)n1, l1, \
                 rs_unweighted, MPI_INFO_NULL, (int)({reorder}), {nc});"
            ),
        });
    }

    /// The intercommunicators: `Intercomm_create` from the recorded
    /// leaders and peer communicator, `Intercomm_merge` with the recorded
    /// `high`.
    fn intercomm(&mut self, e: &EventNode, op: Op, nc: &str) {
        if op == Op::IntercommCreate {
            // The leaders in dims, the peer communicator (at the local
            // leader) in edges, the tag as the key.
            let tag = self.field(e, "key").unwrap_or_else(|| "0".into());
            for (k, which) in [(0, DIMS), (1, EDGES)] {
                let n = self.list(e, which, k);
                self.line(&format!("const int64_t n{k} = {n};"));
                self.line(&format!(
                    "int *l{k} = rs_ints({k}, rs_lists[{k}], n{k}, 2, 0);"
                ));
            }
            self.line("const MPI_Comm peer = n1 > 0 ? rs_comm(l1[0]) : c;");
            self.line(&format!(
                "MPI_Intercomm_create(c, l0[0], peer, l0[1], rs_self({tag}, cr), {nc});"
            ));
        } else {
            let high = self.field(e, "key").unwrap_or_else(|| "0".into());
            self.line(&format!(
                "MPI_Intercomm_merge(c, rs_self({high}, cr), {nc});"
            ));
        }
    }

    /// The Cartesian topologies: `Cart_sub` with the dimensions it keeps,
    /// `Cart_create` with the dimensions and periods.
    fn cart(&mut self, e: &EventNode, op: Op, nc: &str) {
        if op == Op::CartSub {
            let nd = self.list(e, DIMS, 0);
            self.line(&format!("const int64_t nd = {nd};"));
            self.line(&format!(
                "MPI_Cart_sub(c, rs_ints(0, rs_lists[0], nd, nd, 0), {nc});"
            ));
        } else {
            let reorder = self.field(e, "reorder").unwrap_or_else(|| "0".into());
            let nd = self.list(e, DIMS, 0);
            self.line(&format!("const int64_t nd = {nd};"));
            let np = self.list(e, PERIODS, 1);
            self.line(&format!("const int64_t np = {np};"));
            self.line("int *dims = rs_ints(0, rs_lists[0], nd, nd, 0);");
            self.line("int *periods = rs_ints(1, rs_lists[1], np, nd, 0);");
            self.line(&format!(
                "MPI_Cart_create(c, (int)nd, dims, periods, (int)({reorder}), {nc});"
            ));
        }
    }

    /// The reduction operation of an event.
    fn reduction(&mut self, e: &EventNode) -> String {
        // A trace from before reductions were recorded has none: a sum,
        // as replay takes it.
        match e.shape().redop() {
            Some(ReduceOp::Other) => "rs_user_op".into(),
            None => "MPI_SUM".into(),
            Some(op) => format!("MPI_{}", op.name().to_uppercase()),
        }
    }

    /// One-sided calls (see the runtime's one-sided part): windows of the
    /// recorded sizes, operations with the recorded target displacement,
    /// count and datatype, synchronisation with the recorded asserts,
    /// groups and lock types. An event without its one-sided detail (an
    /// older tracer's) is not issued, as calls without detail are not.
    fn one_sided(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let name = op.name();
        let names = e.shape().param_names();
        if !names
            .iter()
            .any(|n| matches!(*n, "win.size" | "target.disp" | "assert"))
        {
            self.line(&format!(
                "/* MPI_{name}: recorded without detail, not issued */"
            ));
            return Ok(());
        }
        if matches!(
            op,
            Op::WinCreate | Op::WinAllocate | Op::WinAllocateShared | Op::WinCreateDynamic
        ) {
            self.comm(e, false)?;
            let new = self.need(e, "new_comm")?;
            let size = self.need(e, "win.size")?;
            let unit = self.need(e, "win.disp_unit")?;
            let kind = match op {
                Op::WinCreate => 0,
                Op::WinAllocate => 1,
                Op::WinAllocateShared => 2,
                _ => 3,
            };
            self.line(&format!(
                "rs_win_create({kind}, {new}, {size}, (int)({unit}), c);"
            ));
            return Ok(());
        }
        let w = self.need(e, "comm")?;
        if op == Op::WinFree {
            self.line(&format!("rs_win_free({w});"));
            return Ok(());
        }
        self.line(&format!("rs_window *w = rs_win({w});"));
        let off = self.need(e, "comm_rank")?;
        self.line(&format!("const int64_t cr = rs_rank + {off};"));
        self.line("(void)cr;");
        match op {
            Op::Put | Op::Rput | Op::Accumulate | Op::Raccumulate | Op::Get | Op::Rget => {
                let (p, ty) = if matches!(op, Op::Get | Op::Rget) {
                    ("r", e.shape().recv_type())
                } else {
                    ("s", e.shape().send_type())
                };
                let x = self.side(e, p, ty)?;
                self.endpoint(e, p)?;
                self.line(&format!("(void){p}_tag;"));
                self.target(e, p)?;
                let (n, t) = (x.count, x.dtype);
                let red = if matches!(op, Op::Accumulate | Op::Raccumulate) {
                    format!(", {}", self.reduction(e))
                } else {
                    String::new()
                };
                let args = format!("{n}, {t}, {p}_peer, t_d, t_n, t_t{red}, w->win");
                if matches!(op, Op::Rput | Op::Raccumulate | Op::Rget) {
                    self.new_request(e)?;
                    self.line(&format!("void *b = rs_rqbuf(rq, {n}, {t});"));
                    self.line(&format!("MPI_{name}(b, {args}, rs_req(rq));"));
                } else {
                    self.line(&format!("void *b = rs_wbuf(w, {p}_peer, {n}, {t});"));
                    self.line(&format!("MPI_{name}(b, {args});"));
                }
            }
            Op::GetAccumulate | Op::RgetAccumulate | Op::FetchAndOp | Op::CompareAndSwap => {
                let shape = *e.shape();
                let s = self.side(e, "s", shape.send_type())?;
                let r = self.side(e, "r", shape.recv_type())?;
                self.endpoint(e, "r")?;
                self.line("(void)r_tag;");
                self.target(e, "r")?;
                let (sn, st, rn, rt) = (s.count, s.dtype, r.count, r.dtype);
                if op == Op::RgetAccumulate {
                    self.new_request(e)?;
                    self.line(&format!("void *b = rs_rqbuf(rq, {sn}, {st});"));
                    self.line(&format!(
                        "void *rb = rs_keep(rq, rs_buf(1, {rn}, {rt}), (size_t)({rn} < 1 ? 1 : \
                         {rn}) * rs_span({rt}));"
                    ));
                } else {
                    self.line(&format!("void *b = rs_wbuf(w, r_peer, {sn}, {st});"));
                    self.line(&format!("void *rb = rs_wbuf(w, r_peer, {rn}, {rt});"));
                }
                let red = self.reduction(e);
                let call = match op {
                    Op::GetAccumulate => format!(
                        "MPI_Get_accumulate(b, {sn}, {st}, rb, {rn}, {rt}, r_peer, t_d, t_n, \
                         t_t, {red}, w->win)"
                    ),
                    Op::RgetAccumulate => format!(
                        "MPI_Rget_accumulate(b, {sn}, {st}, rb, {rn}, {rt}, r_peer, t_d, t_n, \
                         t_t, {red}, w->win, rs_req(rq))"
                    ),
                    Op::FetchAndOp => {
                        format!("MPI_Fetch_and_op(b, rb, {st}, r_peer, t_d, {red}, w->win)")
                    }
                    _ => {
                        self.line(&format!("void *cb = rs_wbuf(w, r_peer, 1, {st});"));
                        format!("MPI_Compare_and_swap(b, cb, rb, {st}, r_peer, t_d, w->win)")
                    }
                };
                self.line(&format!("{call};"));
            }
            Op::WinFence | Op::WinLockAll => {
                let a = self.need(e, "assert")?;
                self.line(&format!("MPI_{name}(rs_assert({a}), w->win);"));
                if op == Op::WinFence {
                    self.line("rs_wdone(w, -1);");
                }
            }
            Op::WinPost | Op::WinStart => {
                let a = self.need(e, "assert")?;
                let n = self.list(e, 7, 0);
                self.line(&format!("const int64_t ng = {n};"));
                let (keep, f) = if op == Op::WinPost {
                    ("exposure", "rs_post")
                } else {
                    ("access", "rs_start")
                };
                self.line(&format!(
                    "MPI_Group g = rs_wgroup(w, rs_lists[0], ng, cr, &w->{keep});"
                ));
                self.line(&format!("{f}(w, g, rs_assert({a}), ng);"));
            }
            Op::WinComplete => self.line("rs_complete(w);"),
            Op::WinWait => self.line("rs_wait(w);"),
            Op::WinTest => {
                let f = self.need(e, "flag")?;
                self.line(&format!("rs_test(w, {f});"));
            }
            Op::WinLock | Op::WinUnlock | Op::WinFlush | Op::WinFlushLocal => {
                let peer = self.need(e, "lock.peer")?;
                let local = self.need(e, "lock.local")?;
                self.line(&format!("const int l_peer = {};", peer_expr(&peer, &local)));
                if op == Op::WinLock {
                    let a = self.need(e, "assert")?;
                    let x = self
                        .field(e, "lock.exclusive")
                        .unwrap_or_else(|| "0".into());
                    self.line(&format!(
                        "MPI_Win_lock(({x}) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, l_peer, \
                         rs_assert({a}), w->win);"
                    ));
                } else {
                    self.line(&format!("MPI_{name}(l_peer, w->win);"));
                    self.line("rs_wdone(w, l_peer);");
                }
            }
            Op::WinUnlockAll | Op::WinFlushAll | Op::WinFlushLocalAll | Op::WinSync => {
                self.line(&format!("MPI_{name}(w->win);"));
                if op != Op::WinSync {
                    self.line("rs_wdone(w, -1);");
                }
            }
            Op::WinAttach | Op::WinDetach => {
                let size = self.need(e, "win.size")?;
                let f = if op == Op::WinAttach {
                    "rs_attach"
                } else {
                    "rs_detach"
                };
                self.line(&format!("{f}(w, {size});"));
            }
            _ => {
                return Err(Error::Malformed {
                    op: name,
                    what: "a one-sided call codegen does not know".into(),
                });
            }
        }
        Ok(())
    }

    /// MPI-IO (see the runtime's MPI-IO part), as replay issues it: files
    /// by their trace id, opened over the recorded communicator with the
    /// recorded access mode in the scratch directory under the recorded
    /// path hash; views of stand-in datatypes of the recorded sizes and
    /// bounds; seeks, sizes and syncs as recorded; every data access with
    /// the recorded count and datatype at the recorded offset. A call
    /// recorded without its detail (from Fortran on Open MPI) is not
    /// issued, but for `File_delete`, which names its path's hash alone.
    fn io(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let name = op.name();
        let names = e.shape().param_names();
        let detailed = match op {
            Op::FileOpen => names.contains(&"file.amode") && names.contains(&"new_comm"),
            Op::FileDelete => names.contains(&"value"),
            _ => e.shape().names_comm(),
        };
        if !detailed {
            self.line(&format!(
                "/* MPI_{name}: recorded without detail, not issued */"
            ));
            return Ok(());
        }
        self.io = true;
        match op {
            Op::FileOpen => {
                self.comm(e, false)?;
                let id = self.need(e, "new_comm")?;
                let amode = self.need(e, "file.amode")?;
                let path = self.need(e, "file.path")?;
                self.line(&format!("rs_file_open({id}, c, {amode}, {path});"));
                return Ok(());
            }
            Op::FileDelete => {
                let path = self.need(e, "value")?;
                self.line(&format!("rs_file_delete({path});"));
                return Ok(());
            }
            _ => {}
        }
        let id = self.need(e, "comm")?;
        self.line(&format!("const int64_t fid = {id};"));
        if op == Op::FileClose {
            self.line("rs_file_close(fid);");
            return Ok(());
        }
        self.line("rs_fileh *f = rs_file(fid);");
        if names.contains(&"offset") {
            return self.io_access(e, op);
        }
        if let Some(offset) = self.field(e, "seek.offset") {
            self.line(&format!("const MPI_Offset o = (MPI_Offset)({offset});"));
            let args = match op {
                Op::FileSeek | Op::FileSeekShared => {
                    format!("o, rs_whence({})", self.need(e, "seek.whence")?)
                }
                _ => "o".to_string(),
            };
            self.line(&format!(
                "rs_io(\"MPI_{name}\", MPI_{name}(f->fh, {args}));"
            ));
        } else if names.contains(&"view.disp") {
            let v: Vec<String> = ["disp", "etype", "filetype", "lb", "extent"]
                .iter()
                .map(|k| self.need(e, &format!("view.{k}")))
                .collect::<Result<_, _>>()?;
            self.line(&format!("rs_file_view(f, {});", v.join(", ")));
        } else if op == Op::FileSync {
            self.line("rs_io(\"MPI_File_sync\", MPI_File_sync(f->fh));");
        } else if op.is_split_end() {
            self.line("void *b = rs_split_take(f);");
            self.line(&format!(
                "rs_io(\"MPI_{name}\", MPI_{name}(f->fh, b, MPI_STATUS_IGNORE));"
            ));
            self.line("free(b);");
        } else {
            return Err(Error::Malformed {
                op: name,
                what: "an MPI-IO call without the detail of its kind".into(),
            });
        }
        Ok(())
    }

    /// An MPI-IO data access in any form, on file `f`: the recorded count
    /// and datatype (the application's predefined type or a stand-in of
    /// its size), at the recorded offset (the explicit-offset forms; the
    /// individual pointer's forms move the pointer there first if it is
    /// elsewhere, outside the traced API), on the blocking buffers, the
    /// request's own (nonblocking forms: the trace's completion calls
    /// complete them) or one kept with the file until the split
    /// collective's `_end`.
    fn io_access(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let name = op.name();
        let write = name.starts_with("File_write") || name.starts_with("File_iwrite");
        let (p, ty) = if write {
            ("s", e.shape().send_type())
        } else {
            ("r", e.shape().recv_type())
        };
        let shared = name.contains("_shared") || name.contains("_ordered");
        let explicit = name.contains("_at");
        let x = self.side_as(e, p, ty, true)?;
        let (n, t) = (x.count, x.dtype);
        if !shared {
            let off = self.need(e, "comm_rank")?;
            let stored = self.need(e, "offset")?;
            let etype = self.need(e, "offset.etype")?;
            self.line(&format!(
                "const MPI_Offset o = rs_io_offset({stored}, rs_rank + {off}, {p}_c, {p}_ds, \
                 {etype});"
            ));
            if !explicit {
                self.line("rs_reposition(f, o);");
            }
        }
        let at = if explicit { "o, " } else { "" };
        let call = |tail: &str| {
            format!("rs_io(\"MPI_{name}\", MPI_{name}(f->fh, {at}b, {n}, {t}{tail}));")
        };
        // The blocking calls' buffers: slot 0 writes, slot 1 reads.
        let blocking = format!("void *b = rs_buf({}, {n}, {t});", u8::from(!write));
        if op.is_split_begin() {
            self.line(&format!("void *b = rs_split_buf(f, {n}, {t});"));
            self.line(&call(""));
        } else if !name.starts_with("File_i") {
            self.line(&blocking);
            self.line(&call(", MPI_STATUS_IGNORE"));
        } else if e.shape().param_names().contains(&"req") {
            self.new_request(e)?;
            self.line(&format!("void *b = rs_rqbuf(rq, {n}, {t});"));
            self.line(&call(", rs_req(rq)"));
        } else {
            // A request the trace does not name completes at once.
            self.line(&blocking);
            self.line("MPI_Request h = MPI_REQUEST_NULL;");
            self.line(&call(", &h"));
            self.line("PMPI_Wait(&h, MPI_STATUS_IGNORE);");
        }
        self.line(&format!("rs_io_count({}, {n}, {t});", u8::from(write)));
        Ok(())
    }

    /// Declares an operation's target displacement, count and datatype
    /// (`t_d`, `t_n`, `t_t`) for target `{p}_peer`.
    fn target(&mut self, e: &EventNode, p: &str) -> Result<(), Error> {
        let disp = self.need(e, "target.disp")?;
        let count = self.need(e, "target.count")?;
        let dsize = self.need(e, "target.dsize")?;
        let code = self
            .field(e, "target.dtype")
            .and_then(|c| c.parse::<u8>().ok())
            .map(Datatype)
            .filter(|d| d.is_known())
            .map_or(0, |d| d.0);
        self.types.insert(code);
        self.line(&format!("const int t_n = rs_count({count});"));
        self.line(&format!(
            "const MPI_Datatype t_t = rs_dt(RS_T{code}, {dsize});"
        ));
        self.line(&format!(
            "const MPI_Aint t_d = rs_disp(w, {p}_peer, {disp});"
        ));
        // Fetch_and_op and Compare_and_swap take no target count or type.
        self.line("(void)t_n;");
        self.line("(void)t_t;");
        Ok(())
    }

    /// Blocking, nonblocking and persistent collectives.
    fn collective(&mut self, e: &EventNode, op: Op) -> Result<(), Error> {
        let shape = *e.shape();
        // Nonblocking and persistent calls make a request, which holds
        // their buffers.
        let base = op.blocking_form();
        let c = Coll {
            e,
            nb: base != op,
            name: op.name(),
            // The operation's blocking form chooses the arguments.
            base: base.name(),
            req: request_args(op.name()),
            in_place: shape.in_place(),
        };
        let root = self.collective_setup(&c, op)?;
        let (e, nb, name, base, in_place) = (c.e, c.nb, c.name, c.base, c.in_place);
        match base {
            "Neighbor_allgather" | "Neighbor_alltoall" => self.neighbor_fixed(&c)?,
            "Neighbor_allgatherv" | "Neighbor_alltoallv" => {
                self.vector(e, base, name, ("outdeg", "indeg"), (false, false), nb)?
            }
            "Barrier" => {
                if nb {
                    self.line("rs_rqbuf(rq, 0, MPI_BYTE);");
                }
                self.line(&format!("MPI_{name}(c{});", c.req));
            }
            "Bcast" => self.bcast(&c)?,
            "Reduce" | "Allreduce" | "Scan" | "Exscan" => self.reduce(&c)?,
            "Gather" | "Scatter" | "Allgather" | "Alltoall" => self.fixed(&c, root.is_some())?,
            "Gatherv" | "Scatterv" | "Allgatherv" | "Alltoallv" => {
                self.vector(e, base, name, ("np", "np"), (root.is_some(), in_place), nb)?
            }
            "Alltoallw" => self.alltoallw(e, name, in_place, nb, None),
            "Neighbor_alltoallw" => self.alltoallw(e, name, false, nb, Some(("outdeg", "indeg"))),
            "Reduce_scatter" | "Reduce_scatter_block" => self.reduce_scatter(&c)?,
            _ => {
                return Err(Error::Unsupported {
                    op: name,
                    site: String::new(),
                });
            }
        }
        Ok(())
    }

    /// What every collective declares before its arguments: `c`, the
    /// request `rq` of a nonblocking one, `root` where it has one
    /// (returned), `np` (the communicator's size) and, for a
    /// neighbourhood collective, the degrees (lists and buffers hold one
    /// block per neighbour).
    fn collective_setup(&mut self, c: &Coll<'_>, op: Op) -> Result<Option<String>, Error> {
        self.comm(c.e, false)?;
        if c.nb {
            self.new_request(c.e)?;
        }
        let root = self.field(c.e, "root");
        if let Some(r) = &root {
            self.line(&format!("const int root = (int)({r});"));
        }
        self.line("int np = 1;");
        self.line("MPI_Comm_size(c, &np);");
        self.line("(void)np;");
        if op.is_neighborhood() {
            // Lists and buffers of one block per neighbour.
            self.line("int indeg = 0, outdeg = 0;");
            self.line("rs_degrees(c, &indeg, &outdeg);");
        }
        Ok(root)
    }

    /// `Neighbor_allgather` and `Neighbor_alltoall`: one count per side,
    /// buffers of a block per neighbour (the send side's only for the
    /// all-to-all).
    fn neighbor_fixed(&mut self, c: &Coll<'_>) -> Result<(), Error> {
        let shape = *c.e.shape();
        let s = self.side(c.e, "s", shape.send_type())?;
        let r = self.side(c.e, "r", shape.recv_type())?;
        let sf = if c.base == "Neighbor_alltoall" {
            "outdeg"
        } else {
            "1"
        };
        self.buffers(
            c.nb,
            &format!("(int64_t){} * {sf}", s.count),
            &s.dtype,
            &format!("(int64_t){} * indeg", r.count),
            &r.dtype,
        );
        self.line(&format!(
            "MPI_{name}(sb, {sn}, {st}, rb, {rn}, {rt}, c{req});",
            name = c.name,
            sn = s.count,
            st = s.dtype,
            rn = r.count,
            rt = r.dtype,
            req = c.req
        ));
        Ok(())
    }

    /// `Bcast`: one buffer, from the root.
    fn bcast(&mut self, c: &Coll<'_>) -> Result<(), Error> {
        let shape = *c.e.shape();
        let s = self.side(c.e, "s", shape.send_type())?;
        self.buffers(c.nb, &s.count, &s.dtype, "0", &s.dtype);
        self.line(&format!(
            "MPI_{name}(sb, {n}, {t}, root, c{req});",
            name = c.name,
            n = s.count,
            t = s.dtype,
            req = c.req
        ));
        Ok(())
    }

    /// The reductions and scans: one count, the reduction operation, a
    /// root for `Reduce`.
    fn reduce(&mut self, c: &Coll<'_>) -> Result<(), Error> {
        let shape = *c.e.shape();
        let s = self.side(c.e, "s", shape.send_type())?;
        let opx = self.reduction(c.e);
        self.buffers(c.nb, &s.count, &s.dtype, &s.count, &s.dtype);
        let sp = if c.in_place { "MPI_IN_PLACE" } else { "sb" };
        let root = if c.base == "Reduce" { ", root" } else { "" };
        self.line(&format!(
            "MPI_{name}({sp}, rb, {n}, {t}, {opx}{root}, c{req});",
            name = c.name,
            n = s.count,
            t = s.dtype,
            req = c.req
        ));
        Ok(())
    }

    /// `Gather`, `Scatter`, `Allgather` and `Alltoall`: one count per
    /// side, a block per rank on the side that has one per rank; `rooted`
    /// where the call has a root.
    fn fixed(&mut self, c: &Coll<'_>, rooted: bool) -> Result<(), Error> {
        let shape = *c.e.shape();
        let s = self.side(c.e, "s", shape.send_type())?;
        let r = self.side(c.e, "r", shape.recv_type())?;
        let (sf, rf) = match c.base {
            "Scatter" => ("np", "1"),
            "Alltoall" => ("np", "np"),
            _ => ("1", "np"),
        };
        self.buffers(
            c.nb,
            &format!("(int64_t){} * {sf}", s.count),
            &s.dtype,
            &format!("(int64_t){} * {rf}", r.count),
            &r.dtype,
        );
        let (sp, rp) = places(c.in_place, c.base == "Scatter");
        let root = if rooted { ", root" } else { "" };
        self.line(&format!(
            "MPI_{name}({sp}, {sn}, {st}, {rp}, {rn}, {rt}{root}, c{req});",
            name = c.name,
            sn = s.count,
            st = s.dtype,
            rn = r.count,
            rt = r.dtype,
            req = c.req
        ));
        Ok(())
    }

    /// `Reduce_scatter` (per-rank counts from the recorded list) and
    /// `Reduce_scatter_block` (one count per rank).
    fn reduce_scatter(&mut self, c: &Coll<'_>) -> Result<(), Error> {
        let shape = *c.e.shape();
        let r = self.side(c.e, "r", shape.recv_type())?;
        let opx = self.reduction(c.e);
        let counts = if c.base == "Reduce_scatter" {
            let n = self.list(c.e, RECV_COUNTS, 1);
            self.line(&format!("const int64_t nr = {n};"));
            let l = keep_ints(c.nb, "rc", "rs_ints(2, rs_lists[1], nr, np, 1)", "np");
            self.line(&l);
            self.line("const int64_t tot = rs_sum(rc, np);");
            "rc".to_string()
        } else {
            self.line(&format!("const int64_t tot = (int64_t){} * np;", r.count));
            r.count.clone()
        };
        self.buffers(c.nb, "tot", &r.dtype, "tot", &r.dtype);
        let sp = if c.in_place { "MPI_IN_PLACE" } else { "sb" };
        self.line(&format!(
            "MPI_{name}({sp}, rb, {counts}, {t}, {opx}, c{req});",
            name = c.name,
            t = r.dtype,
            req = c.req
        ));
        Ok(())
    }

    /// Declares `sb` and `rb`, room for `s` elements of `st` and `r` of
    /// `rt`: the request's own memory for a nonblocking call, the two
    /// blocking buffers otherwise.
    fn buffers(&mut self, nb: bool, s: &str, st: &str, r: &str, rt: &str) {
        if nb {
            self.line(&format!(
                "char *sb = rs_rqbuf(rq, ({s}) * (int64_t)rs_span({st}) + ({r}) * \
                 (int64_t)rs_span({rt}), MPI_BYTE);"
            ));
            self.line(&format!("char *rb = sb + ({s}) * (int64_t)rs_span({st});"));
        } else {
            self.line(&format!("char *sb = rs_buf(0, {s}, {st});"));
            self.line(&format!("char *rb = rs_buf(1, {r}, {rt});"));
        }
        self.line("(void)sb;");
        self.line("(void)rb;");
    }

    /// The v collectives: per-peer counts on one side or both, lists of
    /// `lens` (send, receive) entries: the communicator's size, or the
    /// out- and in-degree of a neighbourhood collective.
    fn vector(
        &mut self,
        e: &EventNode,
        base: &str,
        name: &str,
        (ls, lr): (&str, &str),
        (rooted, in_place): (bool, bool),
        nb: bool,
    ) -> Result<(), Error> {
        let shape = *e.shape();
        let req = request_args(name);
        let root = if rooted { ", root" } else { "" };
        let (sp, rp) = places(in_place, base == "Scatterv");
        let s = self.side(e, "s", shape.send_type())?;
        let r = self.side(e, "r", shape.recv_type())?;
        let sc = self.list(e, SEND_COUNTS, 0);
        let rcn = self.list(e, RECV_COUNTS, 1);
        self.line(&format!("const int64_t n0 = {sc}, n1 = {rcn};"));
        for (var, expr, len) in [
            ("sc", format!("rs_ints(0, rs_lists[0], n0, {ls}, 1)"), ls),
            ("rc", format!("rs_ints(1, rs_lists[1], n1, {lr}, 1)"), lr),
            ("sd", format!("rs_displs(2, sc, {ls})"), ls),
            ("rd", format!("rs_displs(3, rc, {lr})"), lr),
        ] {
            let l = keep_ints(nb, var, &expr, len);
            self.line(&l);
            self.line(&format!("(void){var};"));
        }
        // The side without a list has one count of its own.
        let (se, re) = match base {
            "Gatherv" | "Allgatherv" | "Neighbor_allgatherv" => {
                (format!("(int64_t){}", s.count), format!("rs_sum(rc, {lr})"))
            }
            "Scatterv" => (format!("rs_sum(sc, {ls})"), format!("(int64_t){}", r.count)),
            _ => (format!("rs_sum(sc, {ls})"), format!("rs_sum(rc, {lr})")),
        };
        self.line(&format!("const int64_t se = {se}, re = {re};"));
        self.buffers(nb, "se", &s.dtype, "re", &r.dtype);
        let (sn, st, rn, rt) = (&s.count, &s.dtype, &r.count, &r.dtype);
        self.line(&match base {
            "Gatherv" => format!("MPI_{name}({sp}, {sn}, {st}, {rp}, rc, rd, {rt}{root}, c{req});"),
            "Scatterv" => {
                format!("MPI_{name}({sp}, sc, sd, {st}, {rp}, {rn}, {rt}{root}, c{req});")
            }
            "Allgatherv" | "Neighbor_allgatherv" => {
                format!("MPI_{name}({sp}, {sn}, {st}, {rp}, rc, rd, {rt}, c{req});")
            }
            _ => format!("MPI_{name}({sp}, sc, sd, {st}, {rp}, rc, rd, {rt}, c{req});"),
        });
        Ok(())
    }

    /// Alltoallw: per-peer counts and datatype sizes on both sides, byte
    /// displacements (`int`). With `neighbors` (out-degree, in-degree),
    /// Neighbor_alltoallw: lists of one entry per neighbour and `MPI_Aint`
    /// displacements.
    fn alltoallw(
        &mut self,
        e: &EventNode,
        name: &str,
        in_place: bool,
        nb: bool,
        neighbors: Option<(&str, &str)>,
    ) {
        let req = request_args(name);
        let sp = if in_place { "MPI_IN_PLACE" } else { "sb" };
        let (ls, lr) = neighbors.unwrap_or(("np", "np"));
        let lists: Vec<String> = [SEND_COUNTS, RECV_COUNTS, SEND_DSIZES, RECV_DSIZES]
            .iter()
            .map(|&k| self.list(e, k, k))
            .collect();
        for (k, l) in lists.iter().enumerate() {
            self.line(&format!("const int64_t n{k} = {l};"));
        }
        let owner = if nb { "rq" } else { "-1" };
        for (var, expr, len) in [
            ("sc", format!("rs_ints(0, rs_lists[0], n0, {ls}, 1)"), ls),
            ("rc", format!("rs_ints(1, rs_lists[1], n1, {lr}, 1)"), lr),
        ] {
            let l = keep_ints(nb, var, &expr, len);
            self.line(&l);
        }
        if neighbors.is_some() {
            self.line(&format!("MPI_Aint *sd = rs_aints({owner}, 0, {ls});"));
            self.line(&format!("MPI_Aint *rd = rs_aints({owner}, 1, {lr});"));
        } else {
            for (var, expr) in [
                ("sd", "rs_ints(4, rs_lists[0], 0, np, 0)"),
                ("rd", "rs_ints(5, rs_lists[1], 0, np, 0)"),
            ] {
                let l = keep_ints(nb, var, expr, "np");
                self.line(&l);
            }
        }
        self.line(&format!(
            "MPI_Datatype *stys = rs_types({owner}, 0, rs_lists[2], n2, {ls});"
        ));
        self.line(&format!(
            "MPI_Datatype *rtys = rs_types({owner}, 1, rs_lists[3], n3, {lr});"
        ));
        let cast = if neighbors.is_some() {
            "MPI_Aint"
        } else {
            "int"
        };
        self.line("int64_t sbytes = 0, rbytes = 0;");
        self.open(&format!("for (int i = 0; i < {ls}; i++) {{"));
        self.line(&format!("sd[i] = ({cast})sbytes;"));
        self.line("sbytes += (int64_t)sc[i] * (int64_t)rs_span(stys[i]);");
        self.close();
        self.open(&format!("for (int i = 0; i < {lr}; i++) {{"));
        self.line(&format!("rd[i] = ({cast})rbytes;"));
        self.line("rbytes += (int64_t)rc[i] * (int64_t)rs_span(rtys[i]);");
        self.close();
        self.buffers(nb, "sbytes", "MPI_BYTE", "rbytes", "MPI_BYTE");
        self.line(&format!(
            "MPI_{name}({sp}, sc, sd, stys, rb, rc, rd, rtys, c{req});"
        ));
    }
}

/// The value and absoluteness of a parameter that every rank of `ranks`
/// has as the same constant (however many variants the merge kept: one
/// per position class, say), or `None`.
/// The C expression of a peer argument from the expressions of its
/// recorded world peer and local offset (`cr` is the caller's rank).
fn peer_expr(peer: &str, local: &str) -> String {
    match (peer.parse::<i64>(), local.parse::<i64>()) {
        _ if peer == "INT64_MIN" => "MPI_ANY_SOURCE".to_string(),
        (Ok(v), _) if v == i64::MIN + 1 => "MPI_PROC_NULL".to_string(),
        (Ok(_), Ok(0)) => "(int)cr".to_string(),
        (Ok(_), Ok(l)) if l > 0 => format!("(int)(cr + {l})"),
        (Ok(_), Ok(l)) => format!("(int)(cr - {})", l.unsigned_abs()),
        _ => format!("rs_peer({peer}, {local}, cr)"),
    }
}

fn constant(p: &Param, ranks: &RankList) -> Option<(i64, bool)> {
    if !p.phased().is_empty() {
        return None;
    }
    let mut it = p.variants().iter().map(|v| match v.values().form() {
        SeqForm::Const { value, .. } => Some((value, v.is_absolute())),
        _ => None,
    });
    let first = it.next()??;
    for v in it {
        if v? != first {
            return None;
        }
    }
    ranks
        .iter()
        .all(|r| p.variants().iter().any(|v| v.ranks().contains(r)))
        .then_some(first)
}

/// The send and receive buffer arguments of a rooted or gathering
/// collective: `MPI_IN_PLACE` replaces the receive buffer of a scatter and
/// the send buffer of everything else.
fn places(in_place: bool, scatter: bool) -> (&'static str, &'static str) {
    match (in_place, scatter) {
        (true, false) => ("MPI_IN_PLACE", "rb"),
        (true, true) => ("sb", "MPI_IN_PLACE"),
        _ => ("sb", "rb"),
    }
}

/// `int *{name} = {expr};`, copied into the request's own memory for a
/// nonblocking call (its arrays must live until it completes).
fn keep_ints(nb: bool, name: &str, expr: &str, len: &str) -> String {
    if nb {
        format!("int *{name} = rs_keep_ints(rq, {expr}, {len});")
    } else {
        format!("int *{name} = {expr};")
    }
}

/// The arguments a collective call named `name` ends with after its
/// communicator: none for a blocking call, the request for an `I` form,
/// and `MPI_INFO_NULL` and the request for an MPI 4 persistent `_init`
/// form (the application's info is not recorded).
fn request_args(name: &str) -> &'static str {
    match Op::from_name(name) {
        Some(op) if op.is_persistent_collective() => ", MPI_INFO_NULL, rs_req(rq)",
        Some(op) if op.blocking_form() != op => ", rs_req(rq)",
        _ => "",
    }
}
