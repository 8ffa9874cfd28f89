//! Turns `mpi-functions.txt` (the MPI functions after the hand-written
//! operations, in code order, with their family) into the tail of the
//! `ops!` invocation in `src/event.rs`, so that the list of operation codes
//! has one source that the shim's wrapper generator reads too.

use std::fmt::Write as _;

// `DETAILED` is for the shim's generator and the consistency test.
#[allow(dead_code)]
#[path = "listed.rs"]
mod listed;

use listed::{parse, variant};

fn main() {
    println!("cargo:rerun-if-changed=mpi-functions.txt");
    println!("cargo:rerun-if-changed=listed.rs");
    let text = std::fs::read_to_string("mpi-functions.txt").expect("trace/mpi-functions.txt");
    let lines = parse(&text);
    // Groups of consecutive lines of one family, in file order.
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for l in &lines {
        match groups.last_mut() {
            Some((f, names)) if *f == l.family => names.push(l.name),
            _ => groups.push((l.family, vec![l.name])),
        }
    }
    let mut out = String::from(
        "/// Calls the `ops!` macro with the hand-written groups given, followed\n\
         /// by the groups of `mpi-functions.txt`.\n\
         macro_rules! with_listed_ops {\n    ($($hand:tt)*) => {\n        ops! {\n            $($hand)*\n",
    );
    for (family, names) in &groups {
        let _ = write!(out, "            {family} {{");
        for name in names {
            let _ = write!(out, " {} = \"{name}\",", variant(name));
        }
        out.push_str(" }\n");
    }
    out.push_str("        }\n    };\n}\n\n");
    let arms: Vec<String> = lines
        .iter()
        .filter(|l| l.comm)
        .map(|l| format!("Op::{}", variant(l.name)))
        .collect();
    let _ = write!(
        out,
        "/// Whether a listed operation names a communicator argument.\n\
         const fn listed_has_comm(op: Op) -> bool {{\n    {}\n}}\n",
        if arms.is_empty() {
            "false".to_string()
        } else {
            format!("matches!(op, {})", arms.join(" | "))
        }
    );
    let path =
        std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("listed_ops.rs");
    std::fs::write(path, out).expect("write listed_ops.rs");
}
