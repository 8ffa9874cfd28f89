//! Generates the wrappers of every MPI function that is recorded without
//! detail, from the `mpi.h` of the MPI the shim is built for.
//!
//! The MPI compiler wrapper (`MPICC`, the one mpi-sys also uses, default
//! `mpicc.mpich`) preprocesses `#include <mpi.h>`; every prototype it
//! declares whose function `trace/mpi-functions.txt` lists in a family
//! recorded without detail gets a wrapper of the same C signature, which
//! forwards to `PMPI_*` and records a generic event (`src/ffi/generic.rs`).
//! Functions with detailed events are hand-written in `src/ffi/c.rs`. The
//! symbol test (`tests/interception.rs`) holds the result against what
//! `libmpi` exports. The build also names the implementation for the
//! shim's messages.

// `Listed::comm` is for the operation codes; the wrappers find the
// communicator argument in the prototype itself.
#[allow(dead_code)]
#[path = "../trace/listed.rs"]
mod listed;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use listed::{DETAILED, variant};

/// Listed functions with a hand-written wrapper: `MPI_Query_thread` does
/// not record (it fixes a thread's index on its rank, and replay issues it
/// on its own threads for that, see `src/ffi/c.rs`); `MPI_Session_init`
/// and `MPI_Session_finalize` record as generic calls do, and start and end
/// the tracer of a program without `MPI_Init` (`src/ffi/session.rs`; MPI 4
/// only: an MPI without sessions declares neither).
const HAND_WRAPPED: &[&str] = &["Query_thread", "Session_init", "Session_finalize"];

/// The calls of which Open MPI's Fortran bindings have a `_cptr` form.
/// (`Win_allocate`'s and `Win_allocate_shared`'s, in detail, are written by
/// hand in `src/ffi/fortran/onesided.rs`.)
const CPTR: &[&str] = &["Alloc_mem", "Win_shared_query"];

/// Prototypes of MPI-1 functions that MPI 3.0 removed: Open MPI 4.1 still
/// exports them for old binaries but no longer declares them.
const REMOVED: &[(&str, &str)] = &[
    ("MPI_Address", "void *location, MPI_Aint *address"),
    (
        "MPI_Errhandler_create",
        "MPI_Handler_function *function, MPI_Errhandler *errhandler",
    ),
    (
        "MPI_Errhandler_get",
        "MPI_Comm comm, MPI_Errhandler *errhandler",
    ),
    (
        "MPI_Errhandler_set",
        "MPI_Comm comm, MPI_Errhandler errhandler",
    ),
    ("MPI_Type_extent", "MPI_Datatype datatype, MPI_Aint *extent"),
    (
        "MPI_Type_hindexed",
        "int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype",
    ),
    (
        "MPI_Type_hvector",
        "int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype",
    ),
    (
        "MPI_Type_lb",
        "MPI_Datatype datatype, MPI_Aint *displacement",
    ),
    (
        "MPI_Type_struct",
        "int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype array_of_types[], MPI_Datatype *newtype",
    ),
    (
        "MPI_Type_ub",
        "MPI_Datatype datatype, MPI_Aint *displacement",
    ),
];

fn main() {
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc.mpich".to_string());
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-changed=../trace/mpi-functions.txt");
    println!("cargo:rerun-if-changed=../trace/listed.rs");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let show = Command::new(&mpicc)
        .arg("-show")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let imp = if show.contains("openmpi") {
        "openmpi"
    } else {
        "mpich"
    };
    println!("cargo:rustc-env=RANKSCALE_SHIM_MPI={imp}");
    // MPI 4 calls (persistent collectives) are wrapped in detail where the
    // MPI has them (see mpi-helpers' build script).
    println!("cargo::rustc-check-cfg=cfg(rankscale_mpi4)");
    if std::env::var("DEP_RANKSCALE_HELPERS_MPI4").as_deref() == Ok("1") {
        println!("cargo:rustc-cfg=rankscale_mpi4");
    }

    let src = out_dir.join("mpi_h.c");
    std::fs::write(&src, "#include <mpi.h>\n").expect("write mpi_h.c");
    let pre = Command::new(&mpicc)
        .args(["-E", "-P"])
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {mpicc} to read mpi.h: {e}"));
    assert!(
        pre.status.success(),
        "{mpicc} -E failed on #include <mpi.h>: {}",
        String::from_utf8_lossy(&pre.stderr)
    );
    let header = strip_attributes(&String::from_utf8_lossy(&pre.stdout));
    let (mut protos, typedefs) = parse_header(&header);
    if imp == "openmpi" {
        for (name, params) in REMOVED {
            protos
                .entry((*name).to_string())
                .or_insert_with(|| ("int".to_string(), (*params).to_string()));
        }
    }

    let listed =
        std::fs::read_to_string("../trace/mpi-functions.txt").expect("trace/mpi-functions.txt");
    let mut code = String::new();
    let mut fortran = String::new();
    let mut skipped = Vec::new();
    let all = listed::parse(&listed);
    let family: HashMap<&str, &str> = all.iter().map(|l| (l.name, l.family)).collect();
    for l in &all {
        let name = l.name;
        if DETAILED.contains(&l.family)
            || HAND_WRAPPED.contains(&name)
            || large_twin_in_detail(name, &family)
        {
            continue;
        }
        let c_name = format!("MPI_{name}");
        let Some((ret, params)) = protos.get(&c_name) else {
            continue; // not in this implementation (MPI 4 on Open MPI 4.1)
        };
        match wrapper(name, ret, params, &typedefs) {
            Ok(w) => code.push_str(&w),
            Err(why) => skipped.push(format!("{c_name}: {why}")),
        }
        // Open MPI's Fortran bindings call `PMPI_*` directly, so the C
        // wrapper never sees a Fortran call: each function gets Fortran
        // entry points of its own. MPICH's `mpif.h` and `use mpi` reach the
        // C wrapper, and so do its `use mpi_f08` buffer routines
        // (`_f08ts_`), but not its other `use mpi_f08` routines (`_f08_`).
        let interfaces = if imp == "openmpi" { "all" } else { "f08" };
        if let Some(w) = fortran_wrapper(name, "", ret, params, &typedefs, interfaces) {
            fortran.push_str(&w);
        }
        // Open MPI's `mpif.h` and `use mpi` also have `TYPE(C_PTR)` forms
        // of the calls that return memory (`MPI_ALLOC_MEM_CPTR`, ...):
        // the same arguments, the same record.
        if imp == "openmpi" && CPTR.contains(&name) {
            fortran.extend(fortran_wrapper(
                name, "_cptr", ret, params, &typedefs, "all",
            ));
        }
    }
    for s in &skipped {
        println!("cargo:warning=no generic wrapper for {s}");
    }
    std::fs::write(out_dir.join("generic_wrappers.rs"), code).expect("write generic_wrappers.rs");
    std::fs::write(out_dir.join("fortran_generic.rs"), fortran).expect("write fortran_generic.rs");
}

/// Whether `name` is a large-count (`_c`) function whose `int` twin has a
/// detailed event: `src/ffi/c.rs` wraps it by hand (`large_twin!`) with
/// the twin's event. The twin is detailed when the list does not name it
/// (the hand-written point-to-point and collective calls) or names it in a
/// detailed family.
fn large_twin_in_detail(name: &str, family: &HashMap<&str, &str>) -> bool {
    name.strip_suffix("_c")
        .is_some_and(|twin| family.get(twin).is_none_or(|f| DETAILED.contains(f)))
}

/// Removes `__attribute__((...))`, `__asm__(...)` and similar annotations,
/// which carry no part of the C signature that the wrapper needs.
fn strip_attributes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = ["__attribute__", "__asm__", "__declspec"]
        .iter()
        .filter_map(|k| rest.find(k))
        .min()
    {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let Some(open) = after.find('(') else {
            rest = "";
            break;
        };
        let mut depth = 0usize;
        let mut end = after.len();
        for (j, c) in after[open..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The `MPI_` prototypes (name -> (return type, parameter list)) and the
/// typedefs (name -> type) of a preprocessed header.
type Protos = BTreeMap<String, (String, String)>;

fn parse_header(header: &str) -> (Protos, HashMap<String, String>) {
    let mut protos = BTreeMap::new();
    let mut typedefs = HashMap::new();
    for chunk in header.split([';', '{', '}']) {
        let c = chunk.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(def) = c.strip_prefix("typedef ") {
            if !def.contains('(')
                && let Some(pos) = def.rfind(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            {
                typedefs.insert(def[pos + 1..].to_string(), def[..=pos].trim().to_string());
            }
            continue;
        }
        let c = c.strip_prefix("extern ").unwrap_or(&c);
        let Some(open) = c.find('(') else { continue };
        let (head, tail) = (c[..open].trim_end(), &c[open..]);
        let Some(pos) = head.rfind(|ch: char| !(ch.is_alphanumeric() || ch == '_')) else {
            continue;
        };
        let name = &head[pos + 1..];
        if !name.starts_with("MPI_") || !tail.ends_with(')') {
            continue;
        }
        let ret = head[..=pos].trim().to_string();
        let params = tail[1..tail.len() - 1].trim().to_string();
        if ret.is_empty() || params.contains('(') {
            continue;
        }
        protos.insert(name.to_string(), (ret, params));
    }
    (protos, typedefs)
}

/// What the generic recorder needs to know of a parameter.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `MPI_Comm` by value.
    Comm,
    /// `MPI_Datatype` by value.
    Datatype,
    /// An integer by value (a count, possibly).
    Int,
    /// `MPI_Request *`, not an array.
    RequestOut,
    /// `MPI_Request` by value: a request the call is about
    /// (`Grequest_complete`, `Request_get_status`).
    Request,
    /// Anything else.
    Other,
}

/// The Rust type and kind of one C parameter (without its name).
fn param(p: &str, typedefs: &HashMap<String, String>) -> Result<(String, Kind), String> {
    let pointer = p.contains('*') || p.contains('[');
    let array = p.contains('[');
    let words: Vec<&str> = p
        .split(|c: char| c == '*' || c == '[' || c == ']' || c.is_whitespace())
        .filter(|w| !w.is_empty() && !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !matches!(*w, "const" | "volatile" | "restrict" | "__restrict"))
        .collect();
    // The last word is the parameter's name when a type precedes it.
    let ty_words: &[&str] = match words.as_slice() {
        [] => return Err(format!("empty parameter in {p:?}")),
        [only] => std::slice::from_ref(only),
        [ty @ .., last] if !is_type_word(last, typedefs) => ty,
        all => all,
    };
    let ty = ty_words.join(" ");
    if pointer {
        let kind = if ty == "MPI_Request" && !array && p.matches('*').count() == 1 {
            Kind::RequestOut
        } else {
            Kind::Other
        };
        return Ok(("*mut c_void".to_string(), kind));
    }
    match ty.as_str() {
        "MPI_Comm" => return Ok(("MPI_Comm".to_string(), Kind::Comm)),
        "MPI_Request" => return Ok(("MPI_Request".to_string(), Kind::Request)),
        "MPI_Datatype" => return Ok(("MPI_Datatype".to_string(), Kind::Datatype)),
        _ => {}
    }
    let rust = scalar(&ty, typedefs, 0)?;
    let kind = if matches!(rust.as_str(), "c_int" | "i64") {
        Kind::Int
    } else {
        Kind::Other
    };
    Ok((rust, kind))
}

/// Whether a word names a type (a C keyword or a typedef) rather than a
/// parameter.
fn is_type_word(w: &str, typedefs: &HashMap<String, String>) -> bool {
    matches!(
        w,
        "int" | "long" | "short" | "char" | "void" | "double" | "float" | "unsigned" | "signed"
    ) || typedefs.contains_key(w)
}

/// The Rust type of a C scalar type, following typedefs.
fn scalar(ty: &str, typedefs: &HashMap<String, String>, depth: u32) -> Result<String, String> {
    let base = match ty {
        "int" | "signed int" | "signed" => "c_int",
        "unsigned" | "unsigned int" => "u32",
        "long" | "long int" | "long long" | "long long int" | "signed long" => "i64",
        "unsigned long" | "unsigned long int" | "unsigned long long" => "u64",
        "double" => "f64",
        "float" => "f32",
        _ => {
            let def = typedefs
                .get(ty)
                .ok_or_else(|| format!("unknown type {ty:?}"))?;
            if depth > 8 {
                return Err(format!("typedef loop at {ty:?}"));
            }
            if def.contains('*') {
                return Ok("*mut c_void".to_string());
            }
            let def = def.strip_prefix("struct ").unwrap_or(def);
            return scalar(def.trim(), typedefs, depth + 1);
        }
    };
    Ok(base.to_string())
}

/// The parameters of a prototype, typed; `None` for a variadic one.
fn params_of(
    params: &str,
    typedefs: &HashMap<String, String>,
) -> Result<Vec<(String, Kind)>, String> {
    if params == "void" {
        return Ok(Vec::new());
    }
    params
        .split(',')
        .map(|p| {
            if p.trim() == "..." {
                Err("variadic".to_string())
            } else {
                param(p, typedefs)
            }
        })
        .collect()
}

/// Which arguments a record without detail reads, as indices: the same
/// for the C and the Fortran wrappers of a function.
struct Roles {
    /// The first communicator.
    comm: Option<usize>,
    /// The first count followed by a datatype (the datatype is next).
    count: Option<usize>,
    /// The request the call makes (`MPI_Request *`; not `MPI_Cancel`'s,
    /// which is an argument, not a result).
    request: Option<usize>,
    /// The request the call is about: `MPI_Cancel`'s (through its
    /// pointer) or one passed by value.
    named: Option<usize>,
    /// Whether the request it makes is persistent (`*_init`).
    persistent: bool,
}

fn roles(name: &str, args: &[(String, Kind)]) -> Roles {
    let first = |kind: Kind| args.iter().position(|(_, k)| *k == kind);
    Roles {
        comm: first(Kind::Comm),
        count: args
            .windows(2)
            .position(|w| w[0].1 == Kind::Int && w[1].1 == Kind::Datatype),
        request: first(Kind::RequestOut).filter(|_| name != "Cancel"),
        named: if name == "Cancel" {
            Some(0)
        } else {
            first(Kind::Request)
        },
        persistent: name.ends_with("_init") || name.ends_with("_init_c"),
    }
}

/// The Fortran entry points of one function recorded without detail, named
/// `mpi_NAME{suffix}` (an
/// invocation of `fortran_generic!` in `src/ffi/fortran.rs`: `all`
/// interfaces, or `f08` alone), or `None`
/// for a function that returns no error code (`MPI_Aint_add`: a Fortran
/// function, not a subroutine) or whose prototype the C wrapper refused
/// too. The Fortran binding passes every C argument by reference in the
/// same order, then `ierror`, then one hidden length per `CHARACTER`
/// argument (a C `char` pointer); the entry points take that many
/// pointer-sized arguments and forward them unchanged. What the record
/// needs is read through the argument indices: the first communicator,
/// the first count and datatype, the request made (`MPI_Request *`) and
/// the request the call is about.
fn fortran_wrapper(
    name: &str,
    suffix: &str,
    ret: &str,
    params: &str,
    typedefs: &HashMap<String, String>,
    interfaces: &str,
) -> Option<String> {
    if scalar(ret, typedefs, 0).ok()? != "c_int" {
        return None;
    }
    let args = params_of(params, typedefs).ok()?;
    let strings = if params == "void" {
        0
    } else {
        params
            .split(',')
            .filter(|p| p.contains("char") && (p.contains('*') || p.contains('[')))
            .count()
    };
    let ierr = args.len();
    let n = ierr + 1 + strings;
    let r = roles(name, &args);
    let opt = |i: Option<usize>| i.map_or("None".to_string(), |i| format!("Some({i})"));
    let (comm, request, named) = (opt(r.comm), opt(r.request), opt(r.named));
    let bytes = r.count.map_or("None".to_string(), |i| {
        format!("Some(({i}, {}, {}))", args[i].0 == "i64", i + 1)
    });
    let persistent = r.persistent;
    let lower = format!("{}{suffix}", name.to_ascii_lowercase());
    let upper = format!("MPI_{}", lower.to_ascii_uppercase());
    let names: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    Some(format!(
        "fortran_generic!({interfaces} {lower}, \"{upper}\", FSpec {{ op: Op::{}, comm: {comm}, \
         bytes: {bytes}, request: {request}, named: {named}, persistent: {persistent}, \
         ierr: {ierr} }}, ({}));\n",
        variant(name),
        names.join(", ")
    ))
}

/// The Rust source of one wrapper.
fn wrapper(
    name: &str,
    ret: &str,
    params: &str,
    typedefs: &HashMap<String, String>,
) -> Result<String, String> {
    let ret_ty = scalar(ret, typedefs, 0)?;
    // What the recorder is told the call returned: functions returning a
    // value rather than an error code cannot fail.
    let ok = match ret_ty.as_str() {
        "c_int" => "rc",
        "i64" => "0",
        other => return Err(format!("return type {other}")),
    };
    let args = params_of(params, typedefs)?;
    let names: Vec<String> = (0..args.len()).map(|i| format!("a{i}")).collect();
    let decl: String = args
        .iter()
        .zip(&names)
        .map(|((t, _), n)| format!("{n}: {t}"))
        .collect::<Vec<_>>()
        .join(", ");
    let pass = names.join(", ");
    let r = roles(name, &args);
    let comm = r.comm.map_or("None".to_string(), |i| format!("Some(a{i})"));
    let bytes = r.count.map_or("None".to_string(), |i| {
        let count = if args[i].0 == "i64" {
            format!("a{i}")
        } else {
            format!("i64::from(a{i})")
        };
        format!("Some(({count}, a{}))", i + 1)
    });
    let request = r.request.map_or("std::ptr::null()".to_string(), |i| {
        format!("a{i} as *const MPI_Request")
    });
    let variant = variant(name);
    let persistent = r.persistent;
    // The request the call names, read before the call, which may free it.
    let named = match r.named {
        Some(i) if name == "Cancel" => format!(
            "// SAFETY: `MPI_Cancel`'s argument points to the request it cancels.\n    \
             let named = unsafe {{ request_behind(s.tracer(), a{i} as *const MPI_Request) }};"
        ),
        Some(i) => format!("let named = named_request(s.tracer(), a{i});"),
        None => "let named = None;".to_string(),
    };
    let mut s = String::new();
    let _ = write!(
        s,
        r#"
unsafe extern "C" {{
    fn PMPI_{name}({decl}) -> {ret_ty};
}}

#[doc = "Interposes `MPI_{name}`: forwards to `PMPI_{name}` and records the call without detail."]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_{name}({decl}) -> {ret_ty} {{
    let ret = return_address!();
    let Some(s) = Scope::enter(ret) else {{
        // SAFETY: the application's arguments go unchanged to the library's
        // own implementation, exactly as without the shim.
        return unsafe {{ PMPI_{name}({pass}) }};
    }};
    {named}
    // SAFETY: as above.
    let rc = unsafe {{ PMPI_{name}({pass}) }};
    let status: c_int = {ok};
    let call = Call {{
        op: Op::{variant},
        rc: status,
        comm: {comm},
        bytes: {bytes},
        persistent: {persistent},
        named,
    }};
    // SAFETY: the request pointer is null or the application's
    // `MPI_Request *` argument, which MPI wrote when the call succeeded.
    unsafe {{ record(s, call, {request}) }};
    rc
}}
"#,
    );
    Ok(s)
}
