//! The canonical raw text form of events: one event per line.
//!
//! This grammar is a contract. The tracer's raw mode (`RANKSCALE_RAW=DIR`)
//! writes it per rank, and `rankscale show --expand RANK` prints it from a
//! compressed trace, so that lossless compression is checked with `diff`.
//! It therefore holds no timing and no raw handles, and every field has
//! exactly one spelling. The grammar is documented in docs/TRACING.md; in short:
//!
//! ```text
//! line     = OP " site=" (HEX16 | "none") [" thread=" N] [" comm=" N] {" " field}
//!            (a call that failed, with `error=`, has no `comm=`)
//! field    = "send=" xfer | "recv=" xfer | "root=" N | "redop=" NAME | "inplace"
//!          | "scounts=" list | "rcounts=" list | "sdsizes=" list | "rdsizes=" list
//!          | "req=" N | "reqs=" list | "done=" list | "flag=" 0|1
//!          | "match=" m {"," m} | "msg=" N | "new=" (N|"null") " size=" N
//!          | "color=" (N|"undef") | "key=" N | "stype=" N | "dims=" list
//!          | "periods=" list | "edges=" list | "sources=" list | "members=" list
//!          | "reorder=" 0|1 | "win=" SIZE "/" DISP_UNIT
//!          | "target=" DISP "/" COUNT "/" DSIZE [":" TYPE] | "assert=" N
//!          | "group=" list | "lock=" peer "/" ("shared"|"exclusive"|"none") "/" N
//!          | "file=" AMODE "/" PATH_HASH_HEX | "view=" DISP "/" ETYPE "/" FILETYPE "/" LB "/" EXTENT
//!          | "offset=" (N | "shared") "/" ETYPE | "seek=" OFFSET "/" WHENCE | "file"
//!          | "value=" N | "error=" CLASS
//! xfer     = peer "/" tag "/" COUNT "/" DSIZE [":" TYPE]  (point-to-point, probes)
//!          | COUNT "/" DSIZE [":" TYPE]           (collectives, MPI-IO: no peer, no tag)
//! TYPE     = a predefined datatype's name (`double_complex`) or "derived"
//! peer     = WORLD_RANK | "any" | "null"
//! tag      = N | "any"                            m    = (REQ | "-") ":" SRC ":" TAG
//! list     = [N {"," N}]
//! ```
//!
//! Fields appear in the order above, and only when set. `site=none` is
//! site 0: a call whose record has no call site (an imported one).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::Error;
use crate::event::{
    CommCreate, CommId, Event, EventSink, Io, Matched, Op, Peer, ReduceOp, ReqId, Rma, Tag,
    Transfer,
};

/// The file name of rank `rank`'s raw log inside the raw directory.
pub fn rank_file_name(rank: i32) -> String {
    format!("rank-{rank:05}.txt")
}

fn write_list<T: std::fmt::Display>(out: &mut String, key: &str, items: &[T]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(out, " {key}=");
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{x}");
    }
}

fn write_peer(out: &mut String, peer: Peer) {
    match peer {
        Peer::Rank { world, .. } => {
            let _ = write!(out, "{world}");
        }
        Peer::Any => out.push_str("any"),
        Peer::Null => out.push_str("null"),
    }
}

fn write_xfer(out: &mut String, key: &str, t: &Transfer, collective: bool) {
    let _ = write!(out, " {key}=");
    if collective {
        // Collectives have no peer and no tag: only count and datatype size.
        let _ = write!(out, "{}/{}", t.count, t.dsize);
        write_type(out, t.dtype);
        return;
    }
    write_peer(out, t.peer);
    match t.tag {
        Tag::Value(v) => {
            let _ = write!(out, "/{v}");
        }
        Tag::Any => out.push_str("/any"),
    }
    let _ = write!(out, "/{}/{}", t.count, t.dsize);
    write_type(out, t.dtype);
}

/// The datatype's name after the size, when it was recorded.
fn write_type(out: &mut String, dtype: crate::Datatype) {
    if dtype.is_known() {
        out.push(':');
        out.push_str(dtype.name());
    }
}

/// Appends the canonical line for `ev` (without the newline) to `out`.
pub fn format_event(ev: &Event, out: &mut String) {
    // Site 0 is no site: an imported call, whose format records none.
    if ev.site == 0 {
        let _ = write!(out, "{} site=none", ev.op.name());
    } else {
        let _ = write!(out, "{} site={:016x}", ev.op.name(), ev.site);
    }
    if ev.thread != 0 {
        let _ = write!(out, " thread={}", ev.thread);
    }
    // A failed call's communicator is not recorded (its arguments are not
    // read): no `comm=`, which would name the world.
    if ev.names_comm() && !ev.failed() {
        let _ = write!(out, " comm={}", ev.comm.0);
    }
    if let Some(t) = &ev.send {
        write_xfer(out, "send", t, ev.op.is_collective() || ev.io.is_some());
    }
    if let Some(t) = &ev.recv {
        write_xfer(out, "recv", t, ev.op.is_collective() || ev.io.is_some());
    }
    if let Some(r) = ev.root {
        let _ = write!(out, " root={r}");
    }
    if let Some(op) = ev.redop {
        let _ = write!(out, " redop={}", op.name());
    }
    if ev.in_place {
        out.push_str(" inplace");
    }
    write_list(out, "scounts", &ev.send_counts);
    write_list(out, "rcounts", &ev.recv_counts);
    write_list(out, "sdsizes", &ev.send_dsizes);
    write_list(out, "rdsizes", &ev.recv_dsizes);
    if let Some(r) = ev.req {
        let _ = write!(out, " req={}", r.0);
    }
    let reqs: Vec<u64> = ev.reqs.iter().map(|r| r.0).collect();
    write_list(out, "reqs", &reqs);
    let done: Vec<u64> = ev.done.iter().map(|r| r.0).collect();
    write_list(out, "done", &done);
    if let Some(f) = ev.flag {
        let _ = write!(out, " flag={}", u8::from(f));
    }
    if !ev.matched.is_empty() {
        out.push_str(" match=");
        for (i, m) in ev.matched.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match m.req {
                Some(r) => {
                    let _ = write!(out, "{}", r.0);
                }
                None => out.push('-'),
            }
            let _ = write!(out, ":{}:{}", m.source, m.tag);
        }
    }
    if let Some(m) = ev.message {
        let _ = write!(out, " msg={m}");
    }
    if let Some(c) = &ev.create {
        match c.new {
            Some(id) => {
                let _ = write!(out, " new={}", id.0);
            }
            None => out.push_str(" new=null"),
        }
        let _ = write!(out, " size={}", c.size);
        if let Some(color) = c.color {
            let _ = write!(out, " color={color}");
        } else if c.key.is_some() && c.split_type.is_none() {
            out.push_str(" color=undef");
        }
        if let Some(k) = c.key {
            let _ = write!(out, " key={k}");
        }
        if let Some(s) = c.split_type {
            let _ = write!(out, " stype={s}");
        }
        write_list(out, "dims", &c.dims);
        write_list(out, "periods", &c.periods);
        write_list(out, "edges", &c.edges);
        write_list(out, "sources", &c.sources);
        write_list(out, "members", &c.members);
        if let Some(r) = c.reorder {
            let _ = write!(out, " reorder={}", u8::from(r));
        }
    }
    if let Some(r) = ev.rma.as_deref() {
        write_rma(out, r);
    }
    if let Some(io) = ev.io.as_deref() {
        write_io(out, io);
    }
    if let Some(v) = ev.value {
        let _ = write!(out, " value={v}");
    }
    if let Some(c) = ev.error {
        let _ = write!(out, " error={c}");
    }
}

/// The one-sided fields ([`Rma`]): `win=` of a window's memory, `target=`
/// of an operation's target side, `assert=` and `group=` of a
/// synchronisation (`assert=` always, so that a `Sync` with assert 0 is
/// spelled), `lock=` of a passive-target call.
fn write_rma(out: &mut String, r: &Rma) {
    match r {
        Rma::Window { size, disp_unit } => {
            let _ = write!(out, " win={size}/{disp_unit}");
        }
        Rma::Target {
            disp,
            count,
            dsize,
            dtype,
        } => {
            let _ = write!(out, " target={disp}/{count}/{dsize}");
            write_type(out, *dtype);
        }
        Rma::Sync { assert, group } => {
            let _ = write!(out, " assert={assert}");
            write_list(out, "group", group);
        }
        Rma::Lock {
            peer,
            exclusive,
            assert,
        } => {
            out.push_str(" lock=");
            write_peer(out, *peer);
            let kind = match exclusive {
                Some(true) => "exclusive",
                Some(false) => "shared",
                None => "none",
            };
            let _ = write!(out, "/{kind}/{assert}");
        }
    }
}

/// The MPI-IO fields ([`Io`]): `file=` of an open (the access mode in the
/// trace's bits and the path's hash in hex), `view=` of a view, `offset=`
/// and etype bytes of a data access (`shared` for the shared file
/// pointer), `seek=` of a
/// seek or a size, a bare `file` for a call on the file with nothing more.
fn write_io(out: &mut String, io: &Io) {
    let _ = match io {
        Io::Open { amode, path } => write!(out, " file={amode}/{path:x}"),
        Io::View {
            disp,
            etype,
            filetype,
            lb,
            extent,
        } => write!(out, " view={disp}/{etype}/{filetype}/{lb}/{extent}"),
        Io::Access { offset, etype } if *offset == Io::SHARED => {
            write!(out, " offset=shared/{etype}")
        }
        Io::Access { offset, etype } => write!(out, " offset={offset}/{etype}"),
        Io::Seek { offset, whence } => write!(out, " seek={offset}/{whence}"),
        Io::Handle => write!(out, " file"),
    };
}

/// The canonical line for `ev`, without the newline.
pub fn event_line(ev: &Event) -> String {
    let mut s = String::with_capacity(96);
    format_event(ev, &mut s);
    s
}

fn bad(line: usize, msg: impl Into<String>) -> Error {
    Error::RawSyntax {
        line,
        msg: msg.into(),
    }
}

fn num<T: std::str::FromStr>(line: usize, key: &str, v: &str) -> Result<T, Error> {
    v.parse()
        .map_err(|_| bad(line, format!("field `{key}`: `{v}` is not a number")))
}

fn list<T: std::str::FromStr>(line: usize, key: &str, v: &str) -> Result<Vec<T>, Error> {
    v.split(',').map(|x| num(line, key, x)).collect()
}

fn parse_peer(line: usize, v: &str) -> Result<Peer, Error> {
    Ok(match v {
        "any" => Peer::Any,
        "null" => Peer::Null,
        _ => {
            let world = num(line, "peer", v)?;
            // The raw form is absolute: the local rank is not part of it.
            Peer::Rank { world, local: -1 }
        }
    })
}

/// A field's value without its `:TYPE` suffix, and that datatype
/// (unknown when there is none).
fn split_type<'a>(line: usize, key: &str, v: &'a str) -> Result<(&'a str, crate::Datatype), Error> {
    Ok(match v.split_once(':') {
        Some((v, name)) => (
            v,
            crate::Datatype::from_name(name)
                .ok_or_else(|| bad(line, format!("field `{key}`: unknown datatype `{name}`")))?,
        ),
        None => (v, crate::Datatype::UNKNOWN),
    })
}

fn parse_xfer(line: usize, key: &str, v: &str) -> Result<Transfer, Error> {
    let (v, dtype) = split_type(line, key, v)?;
    let parts: Vec<&str> = v.split('/').collect();
    if let [count, dsize] = parts[..] {
        // The collective form (see `write_xfer`).
        return Ok(
            Transfer::collective(num(line, key, count)?, num(line, key, dsize)?).typed(dtype),
        );
    }
    let [peer, tag, count, dsize] = parts[..] else {
        return Err(bad(
            line,
            format!("field `{key}` needs peer/tag/count/dsize"),
        ));
    };
    Ok(Transfer {
        peer: parse_peer(line, peer)?,
        tag: if tag == "any" {
            Tag::Any
        } else {
            Tag::Value(num(line, key, tag)?)
        },
        count: num(line, key, count)?,
        dsize: num(line, key, dsize)?,
        dtype,
    })
}

fn parse_match(line: usize, v: &str) -> Result<Vec<Matched>, Error> {
    v.split(',')
        .map(|m| {
            let parts: Vec<&str> = m.split(':').collect();
            let [req, src, tag] = parts[..] else {
                return Err(bad(line, "field `match` needs req:src:tag"));
            };
            Ok(Matched {
                req: if req == "-" {
                    None
                } else {
                    Some(ReqId(num(line, "match", req)?))
                },
                source: num(line, "match", src)?,
                tag: num(line, "match", tag)?,
            })
        })
        .collect()
}

/// Parses one canonical line back into an event (timing zero, local peer
/// ranks unknown: `-1`). `line_no` is only used in error messages.
///
/// `parse_line(event_line(e))` gives `e` back up to timing and local ranks,
/// which is what tests rely on to compare raw logs structurally.
pub fn parse_line(text: &str, line_no: usize) -> Result<Event, Error> {
    let mut toks = text.split_ascii_whitespace();
    let op_name = toks.next().ok_or_else(|| bad(line_no, "empty line"))?;
    let op = Op::from_name(op_name)
        .ok_or_else(|| bad(line_no, format!("unknown operation `{op_name}`")))?;
    let mut ev = Event::new(op);
    let mut create: Option<CommCreate> = None;
    let cc = |c: &mut Option<CommCreate>| -> Result<(), Error> {
        if c.is_none() {
            return Err(bad(line_no, "communicator field before `new=`"));
        }
        Ok(())
    };
    for tok in toks {
        if tok == "inplace" {
            ev.in_place = true;
            continue;
        }
        if tok == "file" {
            ev.io = Some(Box::new(Io::Handle));
            continue;
        }
        let (k, v) = tok
            .split_once('=')
            .ok_or_else(|| bad(line_no, format!("`{tok}` is not key=value")))?;
        let l = line_no;
        match k {
            "site" if v == "none" => ev.site = 0,
            "site" => {
                ev.site = u64::from_str_radix(v, 16)
                    .map_err(|_| bad(l, format!("site `{v}` is not hex")))?
            }
            "thread" => ev.thread = num(l, k, v)?,
            "comm" => ev.comm = CommId(num(l, k, v)?),
            "send" => ev.send = Some(parse_xfer(l, k, v)?),
            "recv" => ev.recv = Some(parse_xfer(l, k, v)?),
            "root" => ev.root = Some(num(l, k, v)?),
            "redop" => {
                ev.redop = Some(
                    ReduceOp::ALL
                        .into_iter()
                        .find(|o| o.name() == v)
                        .ok_or_else(|| bad(l, format!("unknown redop `{v}`")))?,
                )
            }
            "scounts" => ev.send_counts = list(l, k, v)?,
            "rcounts" => ev.recv_counts = list(l, k, v)?,
            "sdsizes" => ev.send_dsizes = list(l, k, v)?,
            "rdsizes" => ev.recv_dsizes = list(l, k, v)?,
            "req" => ev.req = Some(ReqId(num(l, k, v)?)),
            "reqs" => ev.reqs = list(l, k, v)?.into_iter().map(ReqId).collect(),
            "done" => ev.done = list(l, k, v)?.into_iter().map(ReqId).collect(),
            "flag" => ev.flag = Some(num::<u8>(l, k, v)? != 0),
            "match" => ev.matched = parse_match(l, v)?,
            "msg" => ev.message = Some(num(l, k, v)?),
            "value" => ev.value = Some(num(l, k, v)?),
            "error" => ev.error = Some(num(l, k, v)?),
            "win" => {
                let (size, unit) = v
                    .split_once('/')
                    .ok_or_else(|| bad(l, "field `win` needs size/disp_unit"))?;
                ev.rma = Some(Box::new(Rma::Window {
                    size: num(l, k, size)?,
                    disp_unit: num(l, k, unit)?,
                }));
            }
            "target" => {
                let (v, dtype) = split_type(l, k, v)?;
                let parts: Vec<&str> = v.split('/').collect();
                let [disp, count, dsize] = parts[..] else {
                    return Err(bad(l, "field `target` needs disp/count/dsize"));
                };
                ev.rma = Some(Box::new(Rma::Target {
                    disp: num(l, k, disp)?,
                    count: num(l, k, count)?,
                    dsize: num(l, k, dsize)?,
                    dtype,
                }));
            }
            "assert" => {
                ev.rma = Some(Box::new(Rma::Sync {
                    assert: num(l, k, v)?,
                    group: Vec::new(),
                }))
            }
            "group" => match ev.rma.as_deref_mut() {
                Some(Rma::Sync { group, .. }) => *group = list(l, k, v)?,
                _ => return Err(bad(l, "field `group` before `assert=`")),
            },
            "lock" => {
                let parts: Vec<&str> = v.split('/').collect();
                let [peer, kind, assert] = parts[..] else {
                    return Err(bad(l, "field `lock` needs peer/type/assert"));
                };
                let exclusive = match kind {
                    "exclusive" => Some(true),
                    "shared" => Some(false),
                    "none" => None,
                    _ => return Err(bad(l, format!("field `lock`: unknown lock type `{kind}`"))),
                };
                ev.rma = Some(Box::new(Rma::Lock {
                    peer: parse_peer(l, peer)?,
                    exclusive,
                    assert: num(l, k, assert)?,
                }));
            }
            "file" => {
                let (amode, path) = v
                    .split_once('/')
                    .ok_or_else(|| bad(l, "field `file` needs amode/path"))?;
                let path = u64::from_str_radix(path, 16)
                    .map_err(|_| bad(l, format!("field `file`: path `{path}` is not hex")))?;
                ev.io = Some(Box::new(Io::Open {
                    amode: num(l, k, amode)?,
                    path,
                }));
            }
            "view" => {
                let parts: Vec<&str> = v.split('/').collect();
                let [disp, etype, filetype, lb, extent] = parts[..] else {
                    return Err(bad(l, "field `view` needs disp/etype/filetype/lb/extent"));
                };
                ev.io = Some(Box::new(Io::View {
                    disp: num(l, k, disp)?,
                    etype: num(l, k, etype)?,
                    filetype: num(l, k, filetype)?,
                    lb: num(l, k, lb)?,
                    extent: num(l, k, extent)?,
                }));
            }
            "offset" => {
                let (offset, etype) = v
                    .split_once('/')
                    .ok_or_else(|| bad(l, "field `offset` needs offset/etype"))?;
                let offset = if offset == "shared" {
                    Io::SHARED
                } else {
                    num(l, k, offset)?
                };
                ev.io = Some(Box::new(Io::Access {
                    offset,
                    etype: num(l, k, etype)?,
                }));
            }
            "seek" => {
                let (offset, whence) = v
                    .split_once('/')
                    .ok_or_else(|| bad(l, "field `seek` needs offset/whence"))?;
                ev.io = Some(Box::new(Io::Seek {
                    offset: num(l, k, offset)?,
                    whence: num(l, k, whence)?,
                }));
            }
            "new" => {
                let new = if v == "null" {
                    None
                } else {
                    Some(CommId(num(l, k, v)?))
                };
                create = Some(CommCreate::new(new, 0));
            }
            _ => {
                cc(&mut create)?;
                let c = create.as_mut().expect("checked above");
                match k {
                    "size" => c.size = num(l, k, v)?,
                    "color" => {
                        c.color = if v == "undef" {
                            None
                        } else {
                            Some(num(l, k, v)?)
                        }
                    }
                    "key" => c.key = Some(num(l, k, v)?),
                    "stype" => c.split_type = Some(num(l, k, v)?),
                    "dims" => c.dims = list(l, k, v)?,
                    "periods" => c.periods = list(l, k, v)?,
                    "edges" => c.edges = list(l, k, v)?,
                    "sources" => c.sources = list(l, k, v)?,
                    "members" => c.members = list(l, k, v)?,
                    "reorder" => c.reorder = Some(num::<u8>(l, k, v)? != 0),
                    _ => return Err(bad(l, format!("unknown field `{k}`"))),
                }
            }
        }
    }
    ev.create = create.map(Box::new);
    Ok(ev)
}

/// Reads a whole raw log (one rank's file).
pub fn read_log(path: &Path) -> Result<Vec<Event>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        error: e,
    })?;
    text.lines()
        .enumerate()
        .map(|(i, l)| parse_line(l, i + 1))
        .collect::<Result<_, _>>()
        .map_err(|e| e.in_file(path))
}

/// An [`EventSink`] that writes the canonical raw log of one rank.
///
/// Output is buffered; [`EventSink::finish`] flushes it. The file is created
/// lazily by [`RawLogWriter::create`], so that a directory that cannot be
/// written is reported once, before any event is lost silently.
pub struct RawLogWriter {
    out: BufWriter<File>,
    path: PathBuf,
    line: String,
}

impl RawLogWriter {
    /// Creates `DIR/rank-NNNNN.txt` (and `DIR` if needed).
    pub fn create(dir: &Path, rank: i32) -> Result<RawLogWriter, Error> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |error| Error::Io { path, error }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(rank_file_name(rank));
        let file = File::create(&path).map_err(io(&path))?;
        Ok(RawLogWriter {
            out: BufWriter::with_capacity(1 << 16, file),
            path,
            line: String::with_capacity(128),
        })
    }
}

impl EventSink for RawLogWriter {
    fn push(&mut self, event: &Event) -> Result<(), Error> {
        self.line.clear();
        format_event(event, &mut self.line);
        self.line.push('\n');
        self.out
            .write_all(self.line.as_bytes())
            .map_err(|error| Error::Io {
                path: self.path.clone(),
                error,
            })
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.out.flush().map_err(|error| Error::Io {
            path: self.path.clone(),
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Event> {
        let mut a = Event::new(Op::Isend);
        a.site = 0xdead_beef;
        a.comm = CommId(3);
        a.send = Some(Transfer {
            peer: Peer::Rank {
                world: 5,
                local: -1,
            },
            tag: Tag::Value(7),
            count: 64,
            dsize: 8,
            dtype: crate::Datatype::UNKNOWN,
        });
        a.req = Some(ReqId(12));
        let mut b = Event::new(Op::Waitsome);
        b.thread = 2;
        b.reqs = vec![ReqId(12), ReqId(13)];
        b.done = vec![ReqId(13)];
        b.matched = vec![Matched {
            req: Some(ReqId(13)),
            source: 4,
            tag: 1,
        }];
        let mut c = Event::new(Op::CommSplit);
        c.create = Some(Box::new(CommCreate {
            key: Some(3),
            ..CommCreate::new(None, 0)
        }));
        let mut d = Event::new(Op::Alltoallw);
        d.send_counts = vec![1, 2];
        d.recv_counts = vec![3, 4];
        d.send_dsizes = vec![4, 8];
        d.recv_dsizes = vec![8, 4];
        d.in_place = true;
        let mut e = Event::new(Op::Recv);
        e.recv = Some(Transfer {
            peer: Peer::Any,
            tag: Tag::Any,
            count: 1,
            dsize: 4,
            dtype: crate::Datatype::UNKNOWN,
        });
        e.matched = vec![Matched {
            req: None,
            source: 2,
            tag: 9,
        }];
        let mut f = Event::new(Op::Allreduce);
        f.redop = Some(ReduceOp::Sum);
        vec![a, b, c, d, e, f]
    }

    #[test]
    fn raw_line_round_trips_through_the_parser() {
        for ev in sample() {
            let line = event_line(&ev);
            let back = parse_line(&line, 1).unwrap();
            assert_eq!(event_line(&back), line);
            assert_eq!(back.op, ev.op);
        }
    }

    #[test]
    fn raw_line_spelling_is_stable() {
        let lines: Vec<String> = sample().iter().map(event_line).collect();
        assert_eq!(
            lines[0],
            "Isend site=00000000deadbeef comm=3 send=5/7/64/8 req=12"
        );
        assert_eq!(
            lines[1],
            "Waitsome site=none thread=2 reqs=12,13 done=13 match=13:4:1"
        );
        assert_eq!(
            lines[2],
            "Comm_split site=none comm=0 new=null size=0 color=undef key=3"
        );
        assert_eq!(
            lines[4],
            "Recv site=none comm=0 recv=any/any/1/4 match=-:2:9"
        );
    }

    /// The MPI-IO fields print and parse back, spelled as the grammar says.
    #[cfg(feature = "fixtures")]
    #[test]
    fn io_fields_round_trip_through_the_parser() {
        let events = crate::fixtures::io_events();
        let lines: Vec<String> = events.iter().map(event_line).collect();
        for (ev, line) in events.iter().zip(&lines) {
            let back = parse_line(line, 1).unwrap();
            assert_eq!(&event_line(&back), line);
            assert_eq!(back.io, ev.io);
        }
        assert!(lines[0].contains(" file=10/"), "{}", lines[0]);
        assert!(lines[1].ends_with(" view=4096/4/32/8/256"), "{}", lines[1]);
        assert!(
            lines[2].contains(" send=1024/4:int") && lines[2].ends_with(" offset=2048/4"),
            "{}",
            lines[2]
        );
        assert!(lines[5].ends_with(" offset=shared/4"), "{}", lines[5]);
        assert!(lines[6].ends_with(" seek=-8/1"), "{}", lines[6]);
        assert!(lines[7].ends_with(" file"), "{}", lines[7]);
        for bad in [
            "file=1",
            "file=1/xyz",
            "view=1/2/3/4",
            "seek=4",
            "offset=x/1",
            "offset=3",
        ] {
            let line = format!("File_seek site=none comm=9 {bad}");
            assert!(parse_line(&line, 1).is_err(), "{line}");
        }
    }

    /// The one-sided fields print and parse back, spelled as the grammar
    /// says.
    #[cfg(feature = "fixtures")]
    #[test]
    fn one_sided_fields_round_trip_through_the_parser() {
        let events = crate::fixtures::rma_events();
        for ev in &events {
            let line = event_line(ev);
            let back = parse_line(&line, 1).unwrap();
            assert_eq!(event_line(&back), line);
            assert_eq!(
                back.rma,
                ev.rma.as_ref().map(|r| {
                    // The raw form is absolute: a lock's local rank is not in it.
                    let mut r = (**r).clone();
                    if let Rma::Lock {
                        peer: Peer::Rank { local, .. },
                        ..
                    } = &mut r
                    {
                        *local = -1;
                    }
                    Box::new(r)
                })
            );
        }
        let lines: Vec<String> = events.iter().map(event_line).collect();
        let find = |op: &str| {
            lines
                .iter()
                .find(|l| l.starts_with(&format!("{op} ")))
                .unwrap_or_else(|| panic!("no {op}"))
                .split_once(' ')
                .map(|(_, rest)| rest.split_once(' ').map_or("", |(_, r)| r).to_string())
                .unwrap_or_default()
        };
        assert_eq!(find("Win_create"), "comm=0 new=7 size=8 win=800/8");
        assert_eq!(find("Put"), "comm=7 send=6/0/1024/8 target=11/4/8:double");
        assert_eq!(find("Win_post"), "comm=7 assert=4 group=1,3");
        assert_eq!(find("Win_fence"), "comm=7 assert=0");
        assert_eq!(find("Win_lock"), "comm=7 lock=6/exclusive/0");
        assert_eq!(find("Win_flush"), "comm=7 lock=null/none/0");
        for bad in [
            "Put target=1/2",
            "Win_create win=8",
            "Win_post group=1",
            "Win_lock lock=1/open/0",
            "Win_lock lock=1/shared",
        ] {
            assert!(parse_line(bad, 1).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn malformed_lines_are_errors_not_panics() {
        for bad in [
            "",
            "Frobnicate site=0",
            "Send site=xyz",
            "Send send=1/2/3",
            "Send key=3",
            "Send match=1:2",
            "Send =",
            "Send flag=yes",
        ] {
            assert!(parse_line(bad, 1).is_err(), "{bad:?} should fail");
        }
    }
}
