//! The membrane to the OTF2 library: the generated bindings, and a safe
//! writer and reader over them. Every `unsafe` block of the crate is here;
//! the mapping between rankscale's events and OTF2's records
//! ([`crate::export`], [`crate::import`]) is safe code.
//!
//! The reader reads the global definitions, then one location after another
//! (grouped by process, as the handler asks), so that it holds one event
//! chunk at a time, not one per location.
//!
//! The writer follows the order the OTF2 documentation prescribes for a
//! serial writer: events first (one event writer per location, closed as
//! soon as its location is done, so that one rank's buffers are held at a
//! time), then the local and global definitions, which can only then be
//! complete (a location's event count). A callback never unwinds into the
//! library: a panic in a handler is caught, the read stops, and the error
//! names it.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]
mod sys {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

use sys::*;

/// `OTF2_UNDEFINED_UINT32`: "no such reference" for 32-bit references
/// (string, region, communicator, group, root).
pub const UNDEFINED_U32: u32 = u32::MAX;

/// OTF2's collective operation codes (`OTF2_COLLECTIVE_OP_*`).
pub mod collective {
    use super::sys;
    /// `MPI_Barrier`.
    pub const BARRIER: u8 = sys::OTF2_COLLECTIVE_OP_BARRIER as u8;
    /// `MPI_Bcast`.
    pub const BCAST: u8 = sys::OTF2_COLLECTIVE_OP_BCAST as u8;
    /// `MPI_Gather`.
    pub const GATHER: u8 = sys::OTF2_COLLECTIVE_OP_GATHER as u8;
    /// `MPI_Gatherv`.
    pub const GATHERV: u8 = sys::OTF2_COLLECTIVE_OP_GATHERV as u8;
    /// `MPI_Scatter`.
    pub const SCATTER: u8 = sys::OTF2_COLLECTIVE_OP_SCATTER as u8;
    /// `MPI_Scatterv`.
    pub const SCATTERV: u8 = sys::OTF2_COLLECTIVE_OP_SCATTERV as u8;
    /// `MPI_Allgather`.
    pub const ALLGATHER: u8 = sys::OTF2_COLLECTIVE_OP_ALLGATHER as u8;
    /// `MPI_Allgatherv`.
    pub const ALLGATHERV: u8 = sys::OTF2_COLLECTIVE_OP_ALLGATHERV as u8;
    /// `MPI_Alltoall`.
    pub const ALLTOALL: u8 = sys::OTF2_COLLECTIVE_OP_ALLTOALL as u8;
    /// `MPI_Alltoallv`.
    pub const ALLTOALLV: u8 = sys::OTF2_COLLECTIVE_OP_ALLTOALLV as u8;
    /// `MPI_Alltoallw`.
    pub const ALLTOALLW: u8 = sys::OTF2_COLLECTIVE_OP_ALLTOALLW as u8;
    /// `MPI_Allreduce`.
    pub const ALLREDUCE: u8 = sys::OTF2_COLLECTIVE_OP_ALLREDUCE as u8;
    /// `MPI_Reduce`.
    pub const REDUCE: u8 = sys::OTF2_COLLECTIVE_OP_REDUCE as u8;
    /// `MPI_Reduce_scatter`.
    pub const REDUCE_SCATTER: u8 = sys::OTF2_COLLECTIVE_OP_REDUCE_SCATTER as u8;
    /// `MPI_Reduce_scatter_block`.
    pub const REDUCE_SCATTER_BLOCK: u8 = sys::OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK as u8;
    /// `MPI_Scan`.
    pub const SCAN: u8 = sys::OTF2_COLLECTIVE_OP_SCAN as u8;
    /// `MPI_Exscan`.
    pub const EXSCAN: u8 = sys::OTF2_COLLECTIVE_OP_EXSCAN as u8;
}

fn detail(d: &str) -> String {
    if d.is_empty() {
        String::new()
    } else {
        format!(": {d}")
    }
}

/// What the OTF2 library reported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A library call failed; the library's own error name and text.
    #[error("OTF2 library: {call}: {name}: {text}")]
    Library {
        /// The OTF2 function.
        call: &'static str,
        /// The error code's name (`OTF2_ERROR_...`).
        name: String,
        /// Its description.
        text: String,
    },
    /// A library call that returns a handle returned none.
    #[error("OTF2 library: {0} failed{d}", d = detail(.1))]
    NoHandle(&'static str, String),
    /// A path or string with a NUL byte, which C strings cannot hold.
    #[error("{0:?} contains a NUL byte")]
    Nul(String),
    /// A handler stopped the read.
    #[error("{0}")]
    Stopped(String),
}

thread_local! {
    /// What the library said last about an error (its message text, not
    /// printed): the detail an [`Error::Library`] adds to the code's name.
    static LAST: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

// SAFETY: called by the library on an error with NUL-terminated strings
// (or null) valid for the call; it only copies the message text.
unsafe extern "C" fn on_error(
    _user: *mut c_void,
    _file: *const std::os::raw::c_char,
    _line: u64,
    _function: *const std::os::raw::c_char,
    code: OTF2_ErrorCode,
    message: *const std::os::raw::c_char,
    _va: *mut __va_list_tag,
) -> OTF2_ErrorCode {
    if !message.is_null() {
        // SAFETY: a NUL-terminated string from the library, read here only.
        let m = unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned();
        let _ = catch_unwind(|| LAST.with(|l| *l.borrow_mut() = m));
    }
    code
}

/// Routes the library's error reports to [`LAST`] instead of its own
/// printing to stderr, once per process: the errors reach the user once,
/// through rankscale's message.
fn quiet() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a callback of the library's signature that
        // touches no user data.
        unsafe {
            OTF2_Error_RegisterCallback(Some(on_error), std::ptr::null_mut());
        }
    });
    LAST.with(|l| l.borrow_mut().clear());
}

/// The library's last error text, taken. It is the message's format
/// string (its arguments are a C `va_list`, not read here), so it ends
/// where the first placeholder begins.
fn last_message() -> String {
    let m = LAST.with(|l| std::mem::take(&mut *l.borrow_mut()));
    let m = m.split('%').next().unwrap_or("");
    m.trim_end_matches([' ', ':', '\'', '!', '.']).to_string()
}

fn check(call: &'static str, code: OTF2_ErrorCode) -> Result<(), Error> {
    if code == OTF2_SUCCESS as OTF2_ErrorCode {
        return Ok(());
    }
    // SAFETY: both functions return pointers to static, NUL-terminated
    // strings owned by the library (or NULL for an unknown code, checked).
    let (name, text) = unsafe {
        let text = |p: *const std::os::raw::c_char| {
            if p.is_null() {
                format!("error code {code}")
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        (
            text(OTF2_Error_GetName(code)),
            text(OTF2_Error_GetDescription(code)),
        )
    };
    let detail = last_message();
    let text = if detail.is_empty() {
        text
    } else {
        format!("{text} ({detail})")
    };
    Err(Error::Library { call, name, text })
}

/// `p`, or the error that `call` returned no handle.
fn handle<T>(p: *mut T, call: &'static str) -> Result<*mut T, Error> {
    if p.is_null() {
        Err(Error::NoHandle(call, last_message()))
    } else {
        Ok(p)
    }
}

fn cstring(s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::Nul(s.into()))
}

/// A region's role, as OTF2 classifies MPI calls (tools such as Scalasca
/// group calls by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A function (computation, `MPI_Init`, communicator management).
    Function,
    /// Point-to-point communication.
    Point2Point,
    /// A barrier.
    Barrier,
    /// One to all (`Bcast`, `Scatter`).
    One2All,
    /// All to one (`Reduce`, `Gather`).
    All2One,
    /// All to all (`Allreduce`, `Alltoall`, `Allgather`).
    All2All,
    /// Other collectives (`Scan`).
    Other,
}

fn role(r: Role) -> OTF2_RegionRole {
    (match r {
        Role::Function => OTF2_REGION_ROLE_FUNCTION,
        Role::Point2Point => OTF2_REGION_ROLE_POINT2POINT,
        Role::Barrier => OTF2_REGION_ROLE_BARRIER,
        Role::One2All => OTF2_REGION_ROLE_COLL_ONE2ALL,
        Role::All2One => OTF2_REGION_ROLE_COLL_ALL2ONE,
        Role::All2All => OTF2_REGION_ROLE_COLL_ALL2ALL,
        Role::Other => OTF2_REGION_ROLE_COLL_OTHER,
    }) as OTF2_RegionRole
}

/// An OTF2 event record, as written and as read. References are the
/// archive's definition ids; ranks in records are ranks in the record's
/// communicator, as OTF2 has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A region (an MPI call) is entered.
    Enter(u32),
    /// A region is left.
    Leave(u32),
    /// A blocking send: receiver, communicator, tag, bytes.
    MpiSend(u32, u32, u32, u64),
    /// A nonblocking send: receiver, communicator, tag, bytes, request.
    MpiIsend(u32, u32, u32, u64, u64),
    /// A nonblocking send's completion: request.
    MpiIsendComplete(u64),
    /// A nonblocking receive is posted: request.
    MpiIrecvRequest(u64),
    /// A blocking receive: sender, communicator, tag, bytes.
    MpiRecv(u32, u32, u32, u64),
    /// A nonblocking receive completes: sender, communicator, tag,
    /// bytes, request.
    MpiIrecv(u32, u32, u32, u64, u64),
    /// A collective begins.
    CollectiveBegin,
    /// A collective ends: operation (`OTF2_COLLECTIVE_OP_*`),
    /// communicator, root ([`UNDEFINED_U32`] for none), bytes sent and
    /// received.
    CollectiveEnd(u8, u32, u32, u64, u64),
}

/// The size of the archive's event chunks: OTF2's smallest
/// (`OTF2_CHUNK_SIZE_MIN`). A reader holds one chunk per location at once
/// (and a writer one per open location), so at thousands of ranks the
/// chunk size is the memory: 256 KiB holds a 4,096-rank archive in 1 GiB
/// where OTF2's usual 1 MiB takes 4 GiB.
const EVENT_CHUNK: u64 = 256 * 1024;

/// An OTF2 archive being written. Dropping it without [`Writer::finish`]
/// closes the library's handles but leaves an incomplete archive.
pub struct Writer {
    archive: *mut OTF2_Archive,
    evt: HashMap<u64, *mut OTF2_EvtWriter>,
    attrs: *mut OTF2_AttributeList,
}

// SAFETY: OTF2 calls these when a buffer is full. They only say "flush"
// and give no timestamp correction; they touch no memory.
unsafe extern "C" fn pre_flush(
    _user: *mut c_void,
    _file: OTF2_FileType,
    _location: OTF2_LocationRef,
    _caller: *mut c_void,
    _final: bool,
) -> OTF2_FlushType {
    OTF2_FLUSH as OTF2_FlushType
}

// SAFETY: as `pre_flush`: no memory is touched.
unsafe extern "C" fn post_flush(
    _user: *mut c_void,
    _file: OTF2_FileType,
    _location: OTF2_LocationRef,
) -> OTF2_TimeStamp {
    0
}

static FLUSH: OTF2_FlushCallbacks = OTF2_FlushCallbacks {
    otf2_pre_flush: Some(pre_flush),
    otf2_post_flush: Some(post_flush),
};

impl Writer {
    /// Creates the archive `dir/name.otf2` (with `dir/name/` for its
    /// per-location files), opened for events. `dir` must not hold an
    /// archive of that name already: the library refuses to overwrite.
    pub fn create(dir: &Path, name: &str) -> Result<Writer, Error> {
        quiet();
        let path = cstring(&dir.display().to_string())?;
        let cname = cstring(name)?;
        // SAFETY: both strings are valid NUL-terminated C strings for the
        // call's duration; the library copies them.
        let archive = handle(
            unsafe {
                OTF2_Archive_Open(
                    path.as_ptr(),
                    cname.as_ptr(),
                    OTF2_FILEMODE_WRITE as OTF2_FileMode,
                    EVENT_CHUNK,
                    4 * 1024 * 1024,
                    OTF2_SUBSTRATE_POSIX as OTF2_FileSubstrate,
                    OTF2_COMPRESSION_NONE as OTF2_Compression,
                )
            },
            "OTF2_Archive_Open",
        )?;
        let mut w = Writer {
            archive,
            evt: HashMap::new(),
            attrs: std::ptr::null_mut(),
        };
        // SAFETY: `archive` is the live handle opened above; FLUSH is a
        // static that outlives it; the creator string is copied.
        unsafe {
            check(
                "OTF2_Archive_SetFlushCallbacks",
                OTF2_Archive_SetFlushCallbacks(archive, &FLUSH, std::ptr::null_mut()),
            )?;
            check(
                "OTF2_Archive_SetSerialCollectiveCallbacks",
                OTF2_Archive_SetSerialCollectiveCallbacks(archive),
            )?;
            let creator = cstring(concat!("rankscale ", env!("CARGO_PKG_VERSION")))?;
            check(
                "OTF2_Archive_SetCreator",
                OTF2_Archive_SetCreator(archive, creator.as_ptr()),
            )?;
            check(
                "OTF2_Archive_OpenEvtFiles",
                OTF2_Archive_OpenEvtFiles(archive),
            )?;
            w.attrs = handle(OTF2_AttributeList_New(), "OTF2_AttributeList_New")?;
        }
        Ok(w)
    }

    fn writer(&mut self, loc: u64) -> Result<*mut OTF2_EvtWriter, Error> {
        if let Some(&w) = self.evt.get(&loc) {
            return Ok(w);
        }
        // SAFETY: the archive is open for events (create); the returned
        // writer lives until CloseEvtWriter in finish.
        let w = handle(
            unsafe { OTF2_Archive_GetEvtWriter(self.archive, loc) },
            "OTF2_Archive_GetEvtWriter",
        )?;
        self.evt.insert(loc, w);
        Ok(w)
    }

    /// Closes location `loc`'s event writer once its events are all
    /// written, which frees its buffer (the export writes rank after rank,
    /// so it holds one rank's buffers at a time).
    pub fn close_location(&mut self, loc: u64) -> Result<(), Error> {
        if let Some(w) = self.evt.remove(&loc) {
            // SAFETY: `w` is a live event writer of this archive, removed
            // from the map so that it is closed once.
            check("OTF2_Archive_CloseEvtWriter", unsafe {
                OTF2_Archive_CloseEvtWriter(self.archive, w)
            })?;
        }
        Ok(())
    }

    /// Writes one event record of location `loc` at `time`, with these
    /// attributes (attribute reference and value).
    pub fn event(
        &mut self,
        loc: u64,
        time: u64,
        rec: Record,
        attrs: &[(u32, AttrValue)],
    ) -> Result<(), Error> {
        let w = self.writer(loc)?;
        let a = self.attrs;
        // SAFETY: `w` is a live event writer of this archive and `a` the
        // live attribute list, which the writer empties after each record.
        let code = unsafe {
            for &(attr, value) in attrs {
                match value {
                    AttrValue::String(v) => check(
                        "OTF2_AttributeList_AddStringRef",
                        OTF2_AttributeList_AddStringRef(a, attr, v),
                    )?,
                    AttrValue::U64(v) => check(
                        "OTF2_AttributeList_AddUint64",
                        OTF2_AttributeList_AddUint64(a, attr, v),
                    )?,
                }
            }
            match rec {
                Record::Enter(r) => OTF2_EvtWriter_Enter(w, a, time, r),
                Record::Leave(r) => OTF2_EvtWriter_Leave(w, a, time, r),
                Record::MpiSend(to, c, tag, len) => {
                    OTF2_EvtWriter_MpiSend(w, a, time, to, c, tag, len)
                }
                Record::MpiIsend(to, c, tag, len, req) => {
                    OTF2_EvtWriter_MpiIsend(w, a, time, to, c, tag, len, req)
                }
                Record::MpiIsendComplete(req) => OTF2_EvtWriter_MpiIsendComplete(w, a, time, req),
                Record::MpiIrecvRequest(req) => OTF2_EvtWriter_MpiIrecvRequest(w, a, time, req),
                Record::MpiRecv(from, c, tag, len) => {
                    OTF2_EvtWriter_MpiRecv(w, a, time, from, c, tag, len)
                }
                Record::MpiIrecv(from, c, tag, len, req) => {
                    OTF2_EvtWriter_MpiIrecv(w, a, time, from, c, tag, len, req)
                }
                Record::CollectiveBegin => OTF2_EvtWriter_MpiCollectiveBegin(w, a, time),
                Record::CollectiveEnd(op, c, root, sent, recvd) => {
                    OTF2_EvtWriter_MpiCollectiveEnd(w, a, time, op, c, root, sent, recvd)
                }
            }
        };
        check("OTF2_EvtWriter_*", code)
    }

    /// Closes the event files and writes the definitions that `defs`
    /// gives, then closes the archive.
    pub fn finish(mut self, defs: &Definitions) -> Result<(), Error> {
        self.close_events()?;
        self.write_local_definitions(defs)?;
        let g = self.global_definitions()?;
        g.clock_and_strings(defs)?;
        g.attributes(defs)?;
        g.regions(defs)?;
        g.system_tree(defs)?;
        g.locations(defs)?;
        g.groups(defs)?;
        g.comms(defs)?;
        // SAFETY: the archive is live: only this call and drop close it,
        // and drop skips it once it is null (set below). Closing it closes
        // the definition writers.
        let code = unsafe { OTF2_Archive_Close(self.archive) };
        self.archive = std::ptr::null_mut();
        check("OTF2_Archive_Close", code)
    }

    /// Closes every location's event writer still open, then the event
    /// files: the first step of [`Writer::finish`], since OTF2 writes the
    /// definitions after the events.
    fn close_events(&mut self) -> Result<(), Error> {
        let archive = self.archive;
        // SAFETY: the event writers were opened by `writer` and are
        // drained from the map, so each is closed once; the archive is
        // live.
        unsafe {
            for (_, w) in self.evt.drain() {
                check(
                    "OTF2_Archive_CloseEvtWriter",
                    OTF2_Archive_CloseEvtWriter(archive, w),
                )?;
            }
            check(
                "OTF2_Archive_CloseEvtFiles",
                OTF2_Archive_CloseEvtFiles(archive),
            )
        }
    }

    /// Empty local definitions, one file per location: OTF2's readers
    /// (otf2-print among them) open every location's.
    fn write_local_definitions(&mut self, defs: &Definitions) -> Result<(), Error> {
        let archive = self.archive;
        // SAFETY: the archive is live; each definition writer is opened
        // and closed here, once.
        unsafe {
            check(
                "OTF2_Archive_OpenDefFiles",
                OTF2_Archive_OpenDefFiles(archive),
            )?;
            for loc in defs.locations.iter().map(|l| l.id) {
                let d = handle(
                    OTF2_Archive_GetDefWriter(archive, loc),
                    "OTF2_Archive_GetDefWriter",
                )?;
                check(
                    "OTF2_Archive_CloseDefWriter",
                    OTF2_Archive_CloseDefWriter(archive, d),
                )?;
            }
            check(
                "OTF2_Archive_CloseDefFiles",
                OTF2_Archive_CloseDefFiles(archive),
            )
        }
    }

    /// The archive's global definition writer, which the library closes
    /// with the archive.
    fn global_definitions(&self) -> Result<GlobalDefs<'_>, Error> {
        // SAFETY: the archive is live; the handle is checked.
        let g = handle(
            unsafe { OTF2_Archive_GetGlobalDefWriter(self.archive) },
            "OTF2_Archive_GetGlobalDefWriter",
        )?;
        Ok(GlobalDefs {
            g,
            _archive: std::marker::PhantomData,
        })
    }
}

/// The global definition writer of a [`Writer`]'s archive, borrowed from
/// it so that it cannot outlive the archive: one method per kind of
/// definition, called by [`Writer::finish`] in the order the definitions
/// are written in.
struct GlobalDefs<'w> {
    /// Live while the borrowed archive is: only
    /// [`Writer::global_definitions`] makes one, from a checked handle.
    g: *mut OTF2_GlobalDefWriter,
    _archive: std::marker::PhantomData<&'w Writer>,
}

impl GlobalDefs<'_> {
    /// The clock (resolution, offset, length) and every string, by its
    /// index: the definitions below refer to both.
    fn clock_and_strings(&self, defs: &Definitions) -> Result<(), Error> {
        let g = self.g;
        let (res, offset, length) = defs.clock;
        // SAFETY: `g` is live (see the field); each string is
        // NUL-terminated and copied by the library during its call.
        unsafe {
            check(
                "OTF2_GlobalDefWriter_WriteClockProperties",
                OTF2_GlobalDefWriter_WriteClockProperties(g, res, offset, length, offset),
            )?;
            for (id, s) in defs.strings.iter().enumerate() {
                let c = cstring(s)?;
                check(
                    "OTF2_GlobalDefWriter_WriteString",
                    OTF2_GlobalDefWriter_WriteString(g, id as u32, c.as_ptr()),
                )?;
            }
        }
        Ok(())
    }

    /// The attributes, with the OTF2 type of their values.
    fn attributes(&self, defs: &Definitions) -> Result<(), Error> {
        for a in &defs.attributes {
            let kind = match a.kind {
                AttrKind::String => OTF2_TYPE_STRING,
                AttrKind::U64 => OTF2_TYPE_UINT64,
                AttrKind::Other => OTF2_TYPE_INT64,
            };
            // SAFETY: `g` is live (see the field); plain values only.
            check("OTF2_GlobalDefWriter_WriteAttribute", unsafe {
                OTF2_GlobalDefWriter_WriteAttribute(
                    self.g,
                    a.id,
                    a.name,
                    a.description,
                    kind as OTF2_Type,
                )
            })?;
        }
        Ok(())
    }

    /// The regions, every one an MPI call with its role.
    fn regions(&self, defs: &Definitions) -> Result<(), Error> {
        for r in &defs.regions {
            // SAFETY: `g` is live (see the field); plain values only.
            check("OTF2_GlobalDefWriter_WriteRegion", unsafe {
                OTF2_GlobalDefWriter_WriteRegion(
                    self.g,
                    r.id,
                    r.name,
                    r.name,
                    r.description,
                    role(r.role),
                    OTF2_PARADIGM_MPI as OTF2_Paradigm,
                    OTF2_REGION_FLAG_NONE as OTF2_RegionFlag,
                    UNDEFINED_U32,
                    0,
                    0,
                )
            })?;
        }
        Ok(())
    }

    /// The system tree (one machine node) and a location group (a
    /// process) per rank, once each, under it.
    fn system_tree(&self, defs: &Definitions) -> Result<(), Error> {
        let g = self.g;
        // SAFETY: `g` is live (see the field); plain values only.
        unsafe {
            check(
                "OTF2_GlobalDefWriter_WriteSystemTreeNode",
                OTF2_GlobalDefWriter_WriteSystemTreeNode(
                    g,
                    0,
                    defs.machine.0,
                    defs.machine.1,
                    UNDEFINED_U32,
                ),
            )?;
            let mut written = std::collections::HashSet::new();
            for l in defs.locations.iter().filter(|l| written.insert(l.group)) {
                check(
                    "OTF2_GlobalDefWriter_WriteLocationGroup",
                    OTF2_GlobalDefWriter_WriteLocationGroup(
                        g,
                        l.group,
                        l.group_name,
                        OTF2_LOCATION_GROUP_TYPE_PROCESS as OTF2_LocationGroupType,
                        0,
                        UNDEFINED_U32,
                    ),
                )?;
            }
        }
        Ok(())
    }

    /// The locations (a rank's threads) with their event counts.
    fn locations(&self, defs: &Definitions) -> Result<(), Error> {
        for l in &defs.locations {
            // SAFETY: `g` is live (see the field); plain values only.
            check("OTF2_GlobalDefWriter_WriteLocation", unsafe {
                OTF2_GlobalDefWriter_WriteLocation(
                    self.g,
                    l.id,
                    l.name,
                    OTF2_LOCATION_TYPE_CPU_THREAD as OTF2_LocationType,
                    l.events,
                    l.group,
                )
            })?;
        }
        Ok(())
    }

    /// The groups: of locations, or a communicator's of ranks.
    fn groups(&self, defs: &Definitions) -> Result<(), Error> {
        for gr in &defs.groups {
            let kind = if gr.locations {
                OTF2_GROUP_TYPE_COMM_LOCATIONS
            } else {
                OTF2_GROUP_TYPE_COMM_GROUP
            };
            // SAFETY: `g` is live (see the field); the member slice
            // outlives the call, which copies it.
            check("OTF2_GlobalDefWriter_WriteGroup", unsafe {
                OTF2_GlobalDefWriter_WriteGroup(
                    self.g,
                    gr.id,
                    gr.name,
                    kind as OTF2_GroupType,
                    OTF2_PARADIGM_MPI as OTF2_Paradigm,
                    OTF2_GROUP_FLAG_NONE as OTF2_GroupFlag,
                    gr.members.len() as u32,
                    gr.members.as_ptr(),
                )
            })?;
        }
        Ok(())
    }

    /// The communicators, each with its group.
    fn comms(&self, defs: &Definitions) -> Result<(), Error> {
        for c in &defs.comms {
            // SAFETY: `g` is live (see the field); plain values only.
            check("OTF2_GlobalDefWriter_WriteComm", unsafe {
                OTF2_GlobalDefWriter_WriteComm(
                    self.g,
                    c.id,
                    c.name,
                    c.group,
                    c.parent,
                    OTF2_COMM_FLAG_NONE as OTF2_CommFlag,
                )
            })?;
        }
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // SAFETY: the attribute list and the archive are live unless
        // already released (null); closing an archive closes its writers.
        unsafe {
            if !self.attrs.is_null() {
                OTF2_AttributeList_Delete(self.attrs);
            }
            if !self.archive.is_null() {
                OTF2_Archive_Close(self.archive);
            }
        }
    }
}

/// The global definitions of an archive, by their ids. Strings are
/// referred to by their index in `strings`.
#[derive(Clone, Debug, Default)]
pub struct Definitions {
    /// Timer resolution (ticks per second), global offset and trace
    /// length, in ticks.
    pub clock: (u64, u64, u64),
    /// Every string, its index its reference.
    pub strings: Vec<String>,
    /// The system tree's root: name and class (string references).
    pub machine: (u32, u32),
    /// One location (a rank's thread) each.
    pub locations: Vec<LocationDef>,
    /// Regions (MPI calls).
    pub regions: Vec<RegionDef>,
    /// Groups of locations or of ranks.
    pub groups: Vec<GroupDef>,
    /// Communicators.
    pub comms: Vec<CommDef>,
    /// Attributes (string-valued).
    pub attributes: Vec<AttributeDef>,
    /// Read side: every location group (process) as (id, name), in
    /// definition order.
    pub location_groups: Vec<(u32, u32)>,
}

/// A location and its location group (its process).
#[derive(Clone, Debug, Default)]
pub struct LocationDef {
    /// The location id.
    pub id: u64,
    /// Its name (string reference).
    pub name: u32,
    /// Its location group (process) id.
    pub group: u32,
    /// The group's name (string reference).
    pub group_name: u32,
    /// How many events it has.
    pub events: u64,
    /// Whether it is a CPU thread (read side; written ones all are).
    pub thread: bool,
}

/// A region.
#[derive(Clone, Debug)]
pub struct RegionDef {
    /// The region id.
    pub id: u32,
    /// Its name (string reference).
    pub name: u32,
    /// Its description (string reference).
    pub description: u32,
    /// Its role.
    pub role: Role,
    /// Whether its paradigm is MPI (read side).
    pub mpi: bool,
}

/// A group: of locations (all of a communicator's processes, the
/// `COMM_LOCATIONS` group) or of ranks (indices into that group).
#[derive(Clone, Debug)]
pub struct GroupDef {
    /// The group id.
    pub id: u32,
    /// Its name (string reference).
    pub name: u32,
    /// `true` for the locations group, `false` for a communicator's group.
    pub locations: bool,
    /// Read side: a `COMM_SELF` group (each rank alone; no members).
    pub comm_self: bool,
    /// Its members.
    pub members: Vec<u64>,
}

/// A communicator.
#[derive(Clone, Debug)]
pub struct CommDef {
    /// The communicator id.
    pub id: u32,
    /// Its name (string reference).
    pub name: u32,
    /// Its group.
    pub group: u32,
    /// Its parent ([`UNDEFINED_U32`] for none).
    pub parent: u32,
}

/// An attribute's value on a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrValue {
    /// A string (its reference).
    String(u32),
    /// An unsigned integer.
    U64(u64),
}

/// The attributes a reader wants delivered with each record.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted {
    /// A string attribute: its value's reference goes to
    /// [`Handler::event`].
    pub string: Option<u32>,
    /// An unsigned attribute: its value goes to [`Handler::event`].
    pub number: Option<u32>,
    /// A second string attribute: its value's reference goes to
    /// [`Handler::event`].
    pub label: Option<u32>,
}

/// The wanted attributes' values on one record (see [`Wanted`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Values {
    /// The string attribute's value (a string reference).
    pub string: Option<u32>,
    /// The unsigned attribute's value.
    pub number: Option<u64>,
    /// The second string attribute's value (a string reference).
    pub label: Option<u32>,
}

/// An attribute.
#[derive(Clone, Debug)]
pub struct AttributeDef {
    /// The attribute id.
    pub id: u32,
    /// Its name (string reference).
    pub name: u32,
    /// Its description (string reference).
    pub description: u32,
    /// The type of its values.
    pub kind: AttrKind,
}

/// The type of an attribute's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// Strings.
    String,
    /// Unsigned 64-bit integers.
    U64,
    /// Any other OTF2 type (read side).
    Other,
}

/// What a read delivers, definitions first, then every location's events
/// in time order.
pub trait Handler {
    /// The global definitions, once, before any event. Returns the
    /// attributes whose values [`Handler::event`] should receive, and the
    /// locations to read, in groups (a process's threads): each group's
    /// locations are read one after another, all of a location's events
    /// in order, and then [`Handler::group_done`] is called.
    fn definitions(&mut self, defs: Definitions) -> Result<(Wanted, Vec<Vec<u64>>), String>;
    /// Every location of group `group` has been read.
    fn group_done(&mut self, group: usize) -> Result<(), String>;
    /// One event record of location `loc` at `time` (ticks), with the
    /// wanted attributes' values that the record carries.
    fn event(&mut self, loc: u64, time: u64, rec: Record, values: Values) -> Result<(), String>;
}

struct ReadState<'a> {
    defs: Definitions,
    handler: &'a mut dyn Handler,
    wanted: Wanted,
    error: Option<String>,
}

fn slot<T: Clone + Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize(i + 1, T::default());
    }
    &mut v[i]
}

/// Runs `f` on the read state behind `user`, catching a panic: the
/// callback's return code.
///
/// # Safety
/// `user` must be the `ReadState` that `read` registered.
unsafe fn with_state(
    user: *mut c_void,
    f: impl FnOnce(&mut ReadState<'_>) -> Result<(), String>,
) -> OTF2_CallbackCode {
    // SAFETY: the caller passes the pointer `read` registered, to a
    // ReadState that lives for the whole read and is not otherwise
    // borrowed while the library runs callbacks.
    let st = unsafe { &mut *(user as *mut ReadState<'_>) };
    if st.error.is_some() {
        return OTF2_CALLBACK_INTERRUPT as OTF2_CallbackCode;
    }
    match catch_unwind(AssertUnwindSafe(|| f(st))) {
        Ok(Ok(())) => OTF2_CALLBACK_SUCCESS as OTF2_CallbackCode,
        Ok(Err(e)) => {
            st.error = Some(e);
            OTF2_CALLBACK_INTERRUPT as OTF2_CallbackCode
        }
        Err(_) => {
            st.error = Some("internal error: a panic while reading the archive".into());
            OTF2_CALLBACK_INTERRUPT as OTF2_CallbackCode
        }
    }
}

unsafe extern "C" fn def_string(
    user: *mut c_void,
    id: OTF2_StringRef,
    s: *const std::os::raw::c_char,
) -> OTF2_CallbackCode {
    // SAFETY: the library passes a NUL-terminated string valid for the
    // callback, and the `user` that `read` registered.
    unsafe {
        let text = if s.is_null() {
            String::new()
        } else {
            CStr::from_ptr(s).to_string_lossy().into_owned()
        };
        with_state(user, |st| {
            *slot(&mut st.defs.strings, id as usize) = text;
            Ok(())
        })
    }
}

unsafe extern "C" fn def_clock(
    user: *mut c_void,
    res: u64,
    offset: u64,
    length: u64,
    _real: u64,
) -> OTF2_CallbackCode {
    // SAFETY: `user` is the state `read` registered.
    unsafe {
        with_state(user, |st| {
            st.defs.clock = (res, offset, length);
            Ok(())
        })
    }
}

unsafe extern "C" fn def_location_group(
    user: *mut c_void,
    id: OTF2_LocationGroupRef,
    name: OTF2_StringRef,
    _kind: OTF2_LocationGroupType,
    _parent: OTF2_SystemTreeNodeRef,
    _creator: OTF2_LocationGroupRef,
) -> OTF2_CallbackCode {
    // SAFETY: `user` is the state `read` registered.
    unsafe {
        with_state(user, |st| {
            st.defs.location_groups.push((id, name));
            Ok(())
        })
    }
}

unsafe extern "C" fn def_location(
    user: *mut c_void,
    id: OTF2_LocationRef,
    name: OTF2_StringRef,
    kind: OTF2_LocationType,
    events: u64,
    group: OTF2_LocationGroupRef,
) -> OTF2_CallbackCode {
    // SAFETY: `user` is the state `read` registered.
    unsafe {
        with_state(user, |st| {
            st.defs.locations.push(LocationDef {
                id,
                name,
                group,
                group_name: UNDEFINED_U32,
                events,
                thread: kind == OTF2_LOCATION_TYPE_CPU_THREAD as OTF2_LocationType,
            });
            Ok(())
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn def_region(
    user: *mut c_void,
    id: OTF2_RegionRef,
    name: OTF2_StringRef,
    _canonical: OTF2_StringRef,
    description: OTF2_StringRef,
    role_: OTF2_RegionRole,
    paradigm: OTF2_Paradigm,
    _flags: OTF2_RegionFlag,
    _file: OTF2_StringRef,
    _begin: u32,
    _end: u32,
) -> OTF2_CallbackCode {
    let r = match role_ as u32 {
        OTF2_REGION_ROLE_POINT2POINT => Role::Point2Point,
        OTF2_REGION_ROLE_BARRIER => Role::Barrier,
        OTF2_REGION_ROLE_COLL_ONE2ALL => Role::One2All,
        OTF2_REGION_ROLE_COLL_ALL2ONE => Role::All2One,
        OTF2_REGION_ROLE_COLL_ALL2ALL => Role::All2All,
        OTF2_REGION_ROLE_COLL_OTHER => Role::Other,
        _ => Role::Function,
    };
    // SAFETY: `user` is the state `read` registered.
    unsafe {
        with_state(user, |st| {
            st.defs.regions.push(RegionDef {
                id,
                name,
                description,
                role: r,
                mpi: paradigm == OTF2_PARADIGM_MPI as OTF2_Paradigm,
            });
            Ok(())
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn def_group(
    user: *mut c_void,
    id: OTF2_GroupRef,
    name: OTF2_StringRef,
    kind: OTF2_GroupType,
    _paradigm: OTF2_Paradigm,
    _flags: OTF2_GroupFlag,
    n: u32,
    members: *const u64,
) -> OTF2_CallbackCode {
    // SAFETY: the library passes `n` members at `members` (or null for
    // none), valid for the callback; `user` is the registered state.
    unsafe {
        let m = if members.is_null() || n == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(members, n as usize).to_vec()
        };
        with_state(user, |st| {
            st.defs.groups.push(GroupDef {
                id,
                name,
                locations: kind == OTF2_GROUP_TYPE_COMM_LOCATIONS as OTF2_GroupType,
                comm_self: kind == OTF2_GROUP_TYPE_COMM_SELF as OTF2_GroupType,
                members: m,
            });
            Ok(())
        })
    }
}

unsafe extern "C" fn def_comm(
    user: *mut c_void,
    id: OTF2_CommRef,
    name: OTF2_StringRef,
    group: OTF2_GroupRef,
    parent: OTF2_CommRef,
    _flags: OTF2_CommFlag,
) -> OTF2_CallbackCode {
    // SAFETY: `user` is the state `read` registered.
    unsafe {
        with_state(user, |st| {
            st.defs.comms.push(CommDef {
                id,
                name,
                group,
                parent,
            });
            Ok(())
        })
    }
}

unsafe extern "C" fn def_attribute(
    user: *mut c_void,
    id: OTF2_AttributeRef,
    name: OTF2_StringRef,
    description: OTF2_StringRef,
    kind: OTF2_Type,
) -> OTF2_CallbackCode {
    // SAFETY: `user` is the state `read` registered.
    unsafe {
        with_state(user, |st| {
            st.defs.attributes.push(AttributeDef {
                id,
                name,
                description,
                kind: match kind as u32 {
                    OTF2_TYPE_STRING => AttrKind::String,
                    OTF2_TYPE_UINT64 => AttrKind::U64,
                    _ => AttrKind::Other,
                },
            });
            Ok(())
        })
    }
}

/// Delivers one event with the wanted attribute read from `attrs`.
///
/// # Safety
/// `user` is the registered state; `attrs` is the record's attribute list
/// (or null), valid for the callback.
unsafe fn deliver(
    user: *mut c_void,
    loc: u64,
    time: u64,
    attrs: *mut OTF2_AttributeList,
    rec: Record,
) -> OTF2_CallbackCode {
    // SAFETY: as the function's contract says.
    unsafe {
        with_state(user, |st| {
            let mut v = Values::default();
            if !attrs.is_null() {
                let has =
                    |a: Option<u32>| a.filter(|&a| OTF2_AttributeList_TestAttributeByID(attrs, a));
                let string_of = |a: u32| {
                    let mut r: OTF2_StringRef = UNDEFINED_U32;
                    (OTF2_AttributeList_GetStringRef(attrs, a, &mut r)
                        == OTF2_SUCCESS as OTF2_ErrorCode)
                        .then_some(r)
                };
                v.string = has(st.wanted.string).and_then(string_of);
                v.label = has(st.wanted.label).and_then(string_of);
                if let Some(a) = has(st.wanted.number) {
                    let mut n: u64 = 0;
                    if OTF2_AttributeList_GetUint64(attrs, a, &mut n)
                        == OTF2_SUCCESS as OTF2_ErrorCode
                    {
                        v.number = Some(n);
                    }
                }
            }
            st.handler.event(loc, time, rec, v)
        })
    }
}

/// The event callbacks: each the library's signature for its record,
/// handing the record to [`deliver`].
macro_rules! callbacks {
    ($($name:ident($($arg:ident: $ty:ty),*) => $rec:expr;)*) => {$(
        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $name(
            loc: OTF2_LocationRef,
            t: OTF2_TimeStamp,
            _position: u64,
            user: *mut c_void,
            a: *mut OTF2_AttributeList,
            $($arg: $ty),*
        ) -> OTF2_CallbackCode {
            // SAFETY: the library's arguments, valid for the callback.
            unsafe { deliver(user, loc, t, a, $rec) }
        }
    )*};
}

callbacks! {
    ev_enter(region: OTF2_RegionRef) => Record::Enter(region);
    ev_leave(region: OTF2_RegionRef) => Record::Leave(region);
    ev_send(to: u32, c: OTF2_CommRef, tag: u32, len: u64) => Record::MpiSend(to, c, tag, len);
    ev_isend(to: u32, c: OTF2_CommRef, tag: u32, len: u64, req: u64) =>
        Record::MpiIsend(to, c, tag, len, req);
    ev_isend_complete(req: u64) => Record::MpiIsendComplete(req);
    ev_irecv_request(req: u64) => Record::MpiIrecvRequest(req);
    ev_recv(from: u32, c: OTF2_CommRef, tag: u32, len: u64) => Record::MpiRecv(from, c, tag, len);
    ev_irecv(from: u32, c: OTF2_CommRef, tag: u32, len: u64, req: u64) =>
        Record::MpiIrecv(from, c, tag, len, req);
    ev_coll_begin() => Record::CollectiveBegin;
    ev_coll_end(op: OTF2_CollectiveOp, c: OTF2_CommRef, root: u32, sent: u64, recvd: u64) =>
        Record::CollectiveEnd(op, c, root, sent, recvd);
}

/// The outcome of a read call: a handler's stop (which interrupted it)
/// before the library's own code.
fn read_done(
    st: &mut ReadState<'_>,
    call: &'static str,
    code: OTF2_ErrorCode,
) -> Result<(), Error> {
    match st.error.take() {
        Some(e) => Err(Error::Stopped(e)),
        None => check(call, code),
    }
}

/// Reads the archive whose anchor file is `anchor` (`traces.otf2`):
/// global definitions to `handler.definitions`, then every location's
/// events in time order to `handler.event`.
pub fn read(anchor: &Path, handler: &mut dyn Handler) -> Result<(), Error> {
    quiet();
    let path = cstring(&anchor.display().to_string())?;
    let mut st = ReadState {
        defs: Definitions::default(),
        handler,
        wanted: Wanted::default(),
        error: None,
    };
    // SAFETY: the reader handle is checked and closed on every path below;
    // the callback structs are created, filled with functions of the
    // matching signatures and deleted in the functions called here; `st`
    // outlives every call that can run a callback and is only reached
    // through the registered pointer meanwhile.
    unsafe {
        let reader = handle(
            OTF2_Reader_Open(path.as_ptr()),
            "OTF2_Reader_Open (is it an OTF2 anchor file?)",
        )?;
        let _close = CloseReader(reader);
        check(
            "OTF2_Reader_SetSerialCollectiveCallbacks",
            OTF2_Reader_SetSerialCollectiveCallbacks(reader),
        )?;
        // Every access to the state from here on goes through this one
        // pointer, the library's callbacks' and these functions' alike.
        let st = &mut st as *mut ReadState<'_>;
        let groups = read_global_definitions(reader, st)?;
        read_events(reader, st, &groups)
    }
}

/// Closes a reader when dropped: on every path out of [`read`].
struct CloseReader(*mut OTF2_Reader);

impl Drop for CloseReader {
    fn drop(&mut self) {
        // SAFETY: the live reader `read` opened, closed once.
        unsafe {
            OTF2_Reader_Close(self.0);
        }
    }
}

/// Reads the global definitions into the state behind `st` and hands
/// them to its handler, which answers with the attributes it wants and
/// the locations to read, in groups (returned).
///
/// # Safety
/// `reader` is a live reader; `st` is the read state, valid for the call
/// and reached only through this pointer meanwhile.
unsafe fn read_global_definitions(
    reader: *mut OTF2_Reader,
    st: *mut ReadState<'_>,
) -> Result<Vec<Vec<u64>>, Error> {
    let user = st as *mut c_void;
    // SAFETY: as the function's contract says; the callback set is
    // created, filled with functions of the matching signatures and
    // deleted here; the definition reader is closed here.
    unsafe {
        let gdr = handle(
            OTF2_Reader_GetGlobalDefReader(reader),
            "OTF2_Reader_GetGlobalDefReader",
        )?;
        let dcb = handle(
            OTF2_GlobalDefReaderCallbacks_New(),
            "OTF2_GlobalDefReaderCallbacks_New",
        )?;
        OTF2_GlobalDefReaderCallbacks_SetStringCallback(dcb, Some(def_string));
        OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(dcb, Some(def_clock));
        OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(dcb, Some(def_location_group));
        OTF2_GlobalDefReaderCallbacks_SetLocationCallback(dcb, Some(def_location));
        OTF2_GlobalDefReaderCallbacks_SetRegionCallback(dcb, Some(def_region));
        OTF2_GlobalDefReaderCallbacks_SetGroupCallback(dcb, Some(def_group));
        OTF2_GlobalDefReaderCallbacks_SetCommCallback(dcb, Some(def_comm));
        OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(dcb, Some(def_attribute));
        let code = OTF2_Reader_RegisterGlobalDefCallbacks(reader, gdr, dcb, user);
        OTF2_GlobalDefReaderCallbacks_Delete(dcb);
        check("OTF2_Reader_RegisterGlobalDefCallbacks", code)?;
        let mut n: u64 = 0;
        let code = OTF2_Reader_ReadAllGlobalDefinitions(reader, gdr, &mut n);
        read_done(&mut *st, "OTF2_Reader_ReadAllGlobalDefinitions", code)?;
        OTF2_Reader_CloseGlobalDefReader(reader, gdr);
        let defs = std::mem::take(&mut (*st).defs);
        let (wanted, groups) = (*st).handler.definitions(defs).map_err(Error::Stopped)?;
        (*st).wanted = wanted;
        Ok(groups)
    }
}

/// Reads the events of the locations in `groups`: one location at a
/// time, its reader closed when it is read, so that the library holds
/// one event chunk, not one per location; the handler hears when each
/// group is done.
///
/// # Safety
/// `reader` is a live reader whose global definitions are read; `st` is
/// the read state, valid for the call and reached only through this
/// pointer meanwhile.
unsafe fn read_events(
    reader: *mut OTF2_Reader,
    st: *mut ReadState<'_>,
    groups: &[Vec<u64>],
) -> Result<(), Error> {
    // SAFETY: as the function's contract says; the files opened here are
    // closed here.
    unsafe {
        for &l in groups.iter().flatten() {
            check(
                "OTF2_Reader_SelectLocation",
                OTF2_Reader_SelectLocation(reader, l),
            )?;
        }
        let has_defs = OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS as OTF2_ErrorCode;
        check("OTF2_Reader_OpenEvtFiles", OTF2_Reader_OpenEvtFiles(reader))?;
        let ecb = event_callbacks()?;
        for (g, locs) in groups.iter().enumerate() {
            for &l in locs {
                read_location(reader, l, has_defs, &ecb, st)?;
            }
            (*st).handler.group_done(g).map_err(Error::Stopped)?;
        }
        if has_defs {
            OTF2_Reader_CloseDefFiles(reader);
        }
        OTF2_Reader_CloseEvtFiles(reader);
        Ok(())
    }
}

/// The event callbacks a read registers for every location, deleted when
/// dropped.
struct EvtCallbacks(*mut OTF2_EvtReaderCallbacks);

impl Drop for EvtCallbacks {
    fn drop(&mut self) {
        // SAFETY: the callback set `event_callbacks` created, deleted once.
        unsafe { OTF2_EvtReaderCallbacks_Delete(self.0) }
    }
}

/// A callback set with a callback for every record that [`Record`] has.
fn event_callbacks() -> Result<EvtCallbacks, Error> {
    // SAFETY: the set is checked, owned by the returned guard (which
    // deletes it once), and filled with functions of the matching
    // signatures.
    unsafe {
        let ecb = EvtCallbacks(handle(
            OTF2_EvtReaderCallbacks_New(),
            "OTF2_EvtReaderCallbacks_New",
        )?);
        let e = ecb.0;
        OTF2_EvtReaderCallbacks_SetEnterCallback(e, Some(ev_enter));
        OTF2_EvtReaderCallbacks_SetLeaveCallback(e, Some(ev_leave));
        OTF2_EvtReaderCallbacks_SetMpiSendCallback(e, Some(ev_send));
        OTF2_EvtReaderCallbacks_SetMpiIsendCallback(e, Some(ev_isend));
        OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(e, Some(ev_isend_complete));
        OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(e, Some(ev_irecv_request));
        OTF2_EvtReaderCallbacks_SetMpiRecvCallback(e, Some(ev_recv));
        OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(e, Some(ev_irecv));
        OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(e, Some(ev_coll_begin));
        OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(e, Some(ev_coll_end));
        Ok(ecb)
    }
}

/// Reads location `l`: its local definitions where the archive has them
/// (which the library needs read before the events), then its events,
/// through the callbacks `ecb`, to the state behind `st`.
///
/// # Safety
/// As [`read_events`]; `l` is a location selected before the files were
/// opened.
unsafe fn read_location(
    reader: *mut OTF2_Reader,
    l: u64,
    has_defs: bool,
    ecb: &EvtCallbacks,
    st: *mut ReadState<'_>,
) -> Result<(), Error> {
    let user = st as *mut c_void;
    // SAFETY: as the function's contract says; the definition and event
    // readers of the location are opened and closed here.
    unsafe {
        if has_defs {
            let d = OTF2_Reader_GetDefReader(reader, l);
            if !d.is_null() {
                let mut k: u64 = 0;
                OTF2_Reader_ReadAllLocalDefinitions(reader, d, &mut k);
                OTF2_Reader_CloseDefReader(reader, d);
            }
        }
        let r = handle(
            OTF2_Reader_GetEvtReader(reader, l),
            "OTF2_Reader_GetEvtReader",
        )?;
        check(
            "OTF2_Reader_RegisterEvtCallbacks",
            OTF2_Reader_RegisterEvtCallbacks(reader, r, ecb.0, user),
        )?;
        let mut n: u64 = 0;
        let code = OTF2_Reader_ReadAllLocalEvents(reader, r, &mut n);
        read_done(&mut *st, "OTF2_Reader_ReadAllLocalEvents", code)?;
        OTF2_Reader_CloseEvtReader(reader, r);
        Ok(())
    }
}
