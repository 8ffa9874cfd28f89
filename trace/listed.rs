//! `mpi-functions.txt`, read: shared by `trace/build.rs` (the operation
//! codes), `pmpi-shim/build.rs` (the generated wrappers) and a test of
//! `trace` (the families below agree with `Family::is_generic`), each
//! including this file with `#[path]`.

/// One line: `FAMILY NAME [comm]`.
pub struct Listed<'a> {
    /// The family, as `trace::Family` names it.
    pub family: &'a str,
    /// The function without `MPI_`.
    pub name: &'a str,
    /// Whether the function takes a communicator by value.
    pub comm: bool,
}

/// The families whose functions have hand-written, detailed events; every
/// other family's are recorded without detail.
pub const DETAILED: &[&str] = &[
    "InitExit",
    "BlockingP2p",
    "NonblockingP2p",
    "Persistent",
    "Completion",
    "Probe",
    "Collective",
    "NonblockingCollective",
    "CommManagement",
    "Profiling",
    "Neighborhood",
    "PersistentCollective",
    "Partitioned",
    "OneSided",
    "Io",
];

/// The lines of the list, in code order (blank lines and `#` comments
/// left out); a malformed line panics with its number, failing the build.
pub fn parse(text: &str) -> Vec<Listed<'_>> {
    let mut out = Vec::new();
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
        let comm = match words.next() {
            None => false,
            Some("comm") => true,
            Some(w) => panic!("mpi-functions.txt line {}: unknown flag {w:?}", n + 1),
        };
        out.push(Listed { family, name, comm });
    }
    out
}

/// The `Op` variant of a function: `File_open` -> `FileOpen`,
/// `Type_create_f90_real` -> `TypeCreateF90Real`.
pub fn variant(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase())
                .into_iter()
                .chain(c)
                .collect::<String>()
        })
        .collect()
}
