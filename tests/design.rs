//! The structure docs/DESIGN.md promises, checked against the code: the
//! crate graph its table draws is the one the manifests declare, and no
//! crate's modules depend on each other in a cycle (but through the
//! crate's `Error` type, which every module may name).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every package of the workspace: name and directory.
fn packages() -> Vec<(String, PathBuf)> {
    let text = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let top: toml::Table = toml::from_str(&text).unwrap();
    let members = top["workspace"]["members"].as_array().unwrap();
    let mut dirs: Vec<PathBuf> = vec![root()];
    dirs.extend(members.iter().map(|m| root().join(m.as_str().unwrap())));
    dirs.into_iter()
        .map(|d| {
            let t: toml::Table =
                toml::from_str(&std::fs::read_to_string(d.join("Cargo.toml")).unwrap()).unwrap();
            (t["package"]["name"].as_str().unwrap().to_string(), d)
        })
        .collect()
}

/// The workspace crates each package depends on (normal dependencies,
/// optional ones included), as its manifest declares them.
fn declared() -> BTreeMap<String, BTreeSet<String>> {
    let pkgs = packages();
    let names: BTreeSet<&str> = pkgs.iter().map(|(n, _)| n.as_str()).collect();
    pkgs.iter()
        .map(|(name, dir)| {
            let t: toml::Table =
                toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
            let deps = t
                .get("dependencies")
                .and_then(|d| d.as_table())
                .map(|d| {
                    d.keys()
                        .filter(|k| names.contains(k.as_str()))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            (name.clone(), deps)
        })
        .collect()
}

/// The crate graph docs/DESIGN.md draws: its table "crate | depends on".
fn drawn() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("docs/DESIGN.md")).unwrap();
    let names = |cell: &str| -> Vec<String> {
        cell.split(',')
            .map(|s| s.trim().trim_matches('`').to_string())
            .filter(|s| !s.is_empty() && s != "none")
            .collect()
    };
    let mut graph = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("| crate | depends on") {
            inside = true;
            continue;
        }
        if !inside || line.starts_with("| ---") {
            continue;
        }
        let Some(row) = line.strip_prefix('|') else {
            break;
        };
        let cells: Vec<&str> = row.split('|').collect();
        assert!(cells.len() >= 2, "a row of the crate table: {line}");
        let deps: BTreeSet<String> = names(cells[1]).into_iter().collect();
        for c in names(cells[0]) {
            graph.insert(c, deps.clone());
        }
    }
    graph
}

#[test]
fn the_crate_graph_in_design_md_is_the_manifests() {
    let (drawn, declared) = (drawn(), declared());
    assert!(!drawn.is_empty(), "docs/DESIGN.md has no crate table");
    let mut wrong = Vec::new();
    for name in drawn.keys().chain(declared.keys()).collect::<BTreeSet<_>>() {
        let (d, m) = (drawn.get(name), declared.get(name));
        if d != m {
            wrong.push(format!("{name}: DESIGN.md says {d:?}, Cargo.toml {m:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // No sideways edge into the analysis from the export or replay.
    for c in ["otf2", "replay"] {
        assert!(!declared[c].contains("analysis"), "{c} depends on analysis");
    }
}

/// A module's path (`a::b`) from its file under `src` (`a/b.rs`,
/// `a/b/mod.rs`); `lib.rs` and `main.rs` are the root, "".
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("lib" | "main" | "mod")
    ) {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The paths that follow `prefix` (`crate::` or `super::`) in `code`, as
/// segment lists.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let segs: Vec<String> = rest[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The module graph of one crate (the library where there is one): an
/// edge from each module to every module
/// of the same crate it names by a `crate::` or `super::` path (tests and
/// comments left out), but to the crate's `Error` type or `error` module,
/// and but to the modules it is inside or holds.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    // A binary beside a library is a crate of its own (replay's `main.rs`).
    if src.join("lib.rs").exists() {
        files.retain(|f| f != &src.join("main.rs"));
    }
    let code: BTreeMap<String, String> = files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let text = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default()
                .lines()
                .map(|l| l.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            (module_of(f.strip_prefix(src).unwrap()), text)
        })
        .collect();
    let longest = |segs: &[String]| -> String {
        (1..=segs.len())
            .rev()
            .map(|i| segs[..i].join("::"))
            .find(|m| code.contains_key(m))
            .unwrap_or_default()
    };
    let mut graph = BTreeMap::new();
    for (m, text) in &code {
        let mut to = BTreeSet::new();
        let parent: Vec<String> = m
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        for segs in paths_after(text, "crate::") {
            if matches!(segs[0].as_str(), "Error" | "error" | "Result") {
                continue;
            }
            to.insert(longest(&segs));
        }
        for segs in paths_after(text, "super::") {
            // `super::super::x`: one level up for each `super`.
            let ups = 1 + segs.iter().take_while(|s| *s == "super").count();
            let segs = &segs[ups - 1..];
            if segs.is_empty() || matches!(segs[0].as_str(), "Error" | "error") {
                continue;
            }
            let mut full = parent[..parent.len().saturating_sub(ups)].to_vec();
            full.extend(segs.iter().cloned());
            to.insert(longest(&full));
        }
        // A module and the ones inside it are one unit (a type's methods
        // split over the files of its submodules, which name it through
        // `super::`): only edges between separate subtrees can close a
        // cycle.
        to.retain(|t| !nested(t, m) && !nested(m, t));
        graph.insert(m.clone(), to);
    }
    graph
}

/// Whether module `inner` is `outer` or inside it (the root holds all).
fn nested(inner: &str, outer: &str) -> bool {
    outer.is_empty() || inner == outer || inner.starts_with(&format!("{outer}::"))
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_crate_has_a_cycle_of_modules() {
    let mut found = Vec::new();
    for (name, dir) in packages() {
        for c in cycles(&module_graph(&dir.join("src"))) {
            found.push(format!("{name}: {}", c.join(", ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

/// The checker finds a cycle where there is one: two modules naming each
/// other, and one reached through `super::`.
#[test]
fn the_cycle_finder_sees_a_cycle() {
    let dir = std::env::temp_dir().join(format!("rankscale-design-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c;\n").unwrap();
    std::fs::write(dir.join("a/mod.rs"), "use crate::b::f;\n").unwrap();
    std::fs::write(
        dir.join("a/x.rs"),
        "use super::super::c::g; use super::Thing;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "use crate::a::Thing; // crate::c is a comment\n",
    )
    .unwrap();
    std::fs::write(dir.join("c.rs"), "use crate::a::x::h; use crate::Error;\n").unwrap();
    let g = module_graph(&dir);
    let mut found = cycles(&g);
    found.sort();
    assert_eq!(found, [vec!["a", "b"], vec!["a::x", "c"]], "{g:?}");
    assert!(!g["b"].contains("c") && !g["c"].contains(""), "{g:?}");
    // `a::x` naming `a` (its parent) is no edge.
    assert!(!g["a::x"].contains("a"), "{g:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
