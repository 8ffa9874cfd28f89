//! Turns `mpi-functions.txt` (the MPI functions after the hand-written
//! operations, in code order, with their family) into the tail of the
//! `ops!` invocation in `src/event.rs`, so that the list of operation codes
//! has one source that the shim's wrapper generator reads too.

use std::fmt::Write as _;

fn main() {
    println!("cargo:rerun-if-changed=mpi-functions.txt");
    let text = std::fs::read_to_string("mpi-functions.txt").expect("compress/mpi-functions.txt");
    // Groups of consecutive lines of one family, in file order.
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut with_comm = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(family), Some(name)) = (words.next(), words.next()) else {
            panic!(
                "mpi-functions.txt line {}: expected FAMILY NAME [comm]",
                n + 1
            );
        };
        match words.next() {
            None => {}
            Some("comm") => with_comm.push(name.to_string()),
            Some(w) => panic!("mpi-functions.txt line {}: unknown flag {w:?}", n + 1),
        }
        match groups.last_mut() {
            Some((f, names)) if f == family => names.push(name.to_string()),
            _ => groups.push((family.to_string(), vec![name.to_string()])),
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
    let arms: Vec<String> = with_comm
        .iter()
        .map(|n| format!("Op::{}", variant(n)))
        .collect();
    let _ = write!(
        out,
        "/// Whether a listed operation names a communicator argument.\n\
         fn listed_has_comm(op: Op) -> bool {{\n    {}\n}}\n",
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

/// `File_open` -> `FileOpen`, `Type_create_f90_real` -> `TypeCreateF90Real`.
fn variant(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            let first = c.next().map(|f| f.to_ascii_uppercase());
            first.into_iter().chain(c).collect::<String>()
        })
        .collect()
}
