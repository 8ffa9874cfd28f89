//! Plugins for endpoint patterns that no grid position decides (Wu and Mueller 2012
//! §4: NPB CG's partners at power-of-two distances in a row plus a
//! transpose partner).
//!
//! A plugin names each peer symbolically, as a pattern and a step, from the
//! executing rank and the rank count; extrapolation then fits the symbolic
//! values like any other field and turns them back into ranks at the target.
//! The same holds for tags and counts that a rank computes from its place
//! in a decomposition (NPB BT numbers each message by the cell it belongs
//! to, a different number on every rank at every stage): field patterns name
//! them, scoped to the functions that compute them.
//! [`Plugin`] is the Rust interface; [`SpecPlugin`] reads a small TOML spec
//! whose patterns are expressions in `rank`, `P` and the step `k` (see
//! `extrap/specs/npb-cg.toml` and `npb-bt.toml`), so that users need not
//! recompile.

use serde::Deserialize;

use crate::expr::{Env, Expr};

/// A field other than a peer that a plugin may name symbolically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// A message tag (`send.tag`, `recv.tag`).
    Tag,
    /// An element count (`send.count`, `recv.count`).
    Count,
}

impl Field {
    /// The field an encoded parameter name denotes, if a plugin may name it.
    pub fn of(param: &str) -> Option<Field> {
        if param.ends_with(".tag") {
            Some(Field::Tag)
        } else if param.ends_with(".count") {
            Some(Field::Count)
        } else {
            None
        }
    }

    fn parse(name: &str) -> Result<Field, String> {
        match name {
            "tag" => Ok(Field::Tag),
            "count" => Ok(Field::Count),
            _ => Err(format!(
                "field {name:?}: a field pattern names a \"tag\" or a \"count\""
            )),
        }
    }
}

/// A source of symbolic endpoints.
pub trait Plugin: Send + Sync {
    /// The plugin's name, for reports.
    fn name(&self) -> &str;
    /// `peer` (a world rank) as seen from `rank` of `size` ranks: the index
    /// of the pattern that gives it and the step, or `None`.
    fn symbolic(&self, rank: u64, size: u64, peer: u64) -> Option<(u32, i64)>;
    /// The world rank that pattern `pattern` at step `k` gives `rank` of
    /// `size` ranks.
    fn concrete(&self, rank: u64, size: u64, pattern: u32, k: i64) -> Option<u64>;
    /// The process grid the pattern lays `size` ranks out on, slowest
    /// dimension first (NPB CG's `nprows x npcols`), in which counts and
    /// loop lengths are fitted; `None` fits them in P alone.
    fn grid(&self, size: u64) -> Option<Vec<u64>> {
        let _ = size;
        None
    }
    /// The field patterns that may name `field` in calls from `function`,
    /// each with its number of steps at `size` ranks. Extrapolation gives
    /// each occurrence of the field the pattern and step that explain the
    /// value of every rank at once: a count may be the same at several
    /// stages of one rank (NPB SP's interior cells), but not of all.
    /// Plugins without field patterns have none.
    fn field_patterns(&self, field: Field, function: &str, size: u64) -> Vec<(u32, i64)> {
        let _ = (field, function, size);
        Vec::new()
    }
    /// Whether the plugin has field patterns at all: naming fields needs
    /// every rank's events of an input at once, naming peers only one
    /// rank's at a time.
    fn names_fields(&self) -> bool {
        false
    }
    /// The value that field pattern `pattern` at step `k` gives `rank` of
    /// `size` ranks.
    fn concrete_field(&self, rank: u64, size: u64, pattern: u32, k: i64) -> Option<i64> {
        let _ = (rank, size, pattern, k);
        None
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    name: String,
    /// Variables (from `let`, or `P`) that name the process grid, slowest
    /// dimension first.
    #[serde(default)]
    grid: Vec<String>,
    #[serde(default, rename = "let")]
    lets: Vec<NamedExpr>,
    #[serde(rename = "peer")]
    peers: Vec<PeerSpec>,
    #[serde(default, rename = "field")]
    fields: Vec<FieldSpec>,
    #[serde(default, rename = "param")]
    params: Vec<ParamSpec>,
}

/// A value of the run that the traces do not show and the user gives
/// (`--plugin-param NAME=VALUE`): NPB SP's grid points per dimension, which
/// its message sizes follow.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamSpec {
    name: String,
    /// What the value is, for the message that asks for it.
    about: String,
    /// The value when none is given: an expression of the parameters
    /// declared before it (NPB BT's run grid is its compiled class's
    /// unless `inputbt.data` says otherwise).
    default: Option<String>,
}

/// A declared parameter of a spec, with its value once given.
struct Param {
    name: String,
    about: String,
    value: Option<i64>,
    default: Option<Expr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldSpec {
    #[allow(dead_code)]
    name: String,
    /// `tag` or `count`.
    param: String,
    expr: String,
    steps: Option<String>,
    /// The functions whose calls the pattern applies to (by name, a
    /// Fortran trailing underscore ignored); every call when empty. A tag
    /// pattern that numbers cells would otherwise also claim a constant tag
    /// of another call that happens to equal one cell's number.
    #[serde(default)]
    functions: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedExpr {
    name: String,
    expr: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerSpec {
    #[allow(dead_code)]
    name: String,
    expr: String,
    /// Number of steps `k = 0 .. steps - 1` (default 1: no steps).
    steps: Option<String>,
}

struct Pattern {
    expr: Expr,
    steps: Option<Expr>,
}

impl Pattern {
    /// The number of steps `k = 0 ..` in `env` (1 without `steps`), at most
    /// 65,536.
    fn steps(&self, env: &Env) -> Option<i64> {
        let n = match &self.steps {
            Some(s) => s.eval(env).ok()?,
            None => 1,
        };
        Some(n.clamp(0, 1 << 16))
    }
}

struct FieldPattern {
    field: Field,
    functions: Vec<String>,
    pattern: Pattern,
}

/// A function name without the trailing underscores of Fortran name
/// mangling.
fn bare(name: &str) -> &str {
    name.trim_end_matches('_')
}

/// A plugin read from a spec file.
pub struct SpecPlugin {
    name: String,
    grid: Vec<String>,
    lets: Vec<(String, Expr)>,
    patterns: Vec<Pattern>,
    fields: Vec<FieldPattern>,
    /// The declared parameters.
    params: Vec<Param>,
}

impl std::str::FromStr for SpecPlugin {
    type Err = String;

    /// Parses a spec (TOML): `name`, `[[param]]` tables of `name` and
    /// `about` (values the user gives, see [`SpecPlugin::set_param`]),
    /// `[[let]]` tables of `name` and `expr` evaluated in order, `[[peer]]`
    /// tables of `name`, `expr` and optional `steps`, and `[[field]]` tables
    /// of `name`, `param` (`tag` or `count`), `expr`, optional `steps` and
    /// optional `functions`.
    fn from_str(text: &str) -> Result<SpecPlugin, String> {
        let f: SpecFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let lets = f
            .lets
            .into_iter()
            .map(|l| Ok((l.name, l.expr.parse::<Expr>()?)))
            .collect::<Result<Vec<_>, String>>()?;
        let patterns = f
            .peers
            .into_iter()
            .map(|p| {
                Ok(Pattern {
                    expr: p.expr.parse()?,
                    steps: p.steps.map(|s| s.parse()).transpose()?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        if patterns.is_empty() {
            return Err("the spec has no [[peer]] pattern".into());
        }
        let fields = f
            .fields
            .into_iter()
            .map(|p| {
                Ok(FieldPattern {
                    field: Field::parse(&p.param)?,
                    functions: p.functions,
                    pattern: Pattern {
                        expr: p.expr.parse()?,
                        steps: p.steps.map(|s| s.parse()).transpose()?,
                    },
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let params = f
            .params
            .into_iter()
            .map(|p| {
                Ok(Param {
                    name: p.name,
                    about: p.about,
                    value: None,
                    default: p.default.map(|d| d.parse()).transpose()?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(SpecPlugin {
            name: f.name,
            grid: f.grid,
            lets,
            patterns,
            fields,
            params,
        })
    }
}

impl SpecPlugin {
    /// Gives the spec's parameter `name` (declared in a `[[param]]` table)
    /// its value for this run.
    pub fn set_param(&mut self, name: &str, value: i64) -> Result<(), String> {
        if let Some(p) = self.params.iter_mut().find(|p| p.name == name) {
            p.value = Some(value);
            return Ok(());
        }
        let declared: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
        if declared.is_empty() {
            Err(format!(
                "the spec declares no parameters, so {name:?} cannot be set"
            ))
        } else {
            Err(format!(
                "the spec has no parameter {name:?} (it declares {})",
                declared.join(", ")
            ))
        }
    }

    /// The variables at step `k`: `rank`, `P`, `k`, the parameters and the
    /// `let`s, which may use the step (NPB BT's cell at stage `k`); an
    /// error names the parameter or `let` that has no value.
    fn try_env(&self, rank: u64, size: u64, k: i64) -> Result<Env, String> {
        let mut env = Env::new();
        let int = |v: u64| i64::try_from(v).map_err(|_| format!("{v} is out of range"));
        env.insert("rank".into(), int(rank)?);
        env.insert("P".into(), int(size)?);
        env.insert("k".into(), k);
        for p in &self.params {
            let v = match (p.value, &p.default) {
                (Some(v), _) => v,
                (None, Some(d)) => d
                    .eval(&env)
                    .map_err(|err| format!("parameter {}'s default: {err}", p.name))?,
                (None, None) => {
                    return Err(format!(
                        "the spec needs --plugin-param {}=VALUE: {}",
                        p.name, p.about
                    ));
                }
            };
            env.insert(p.name.clone(), v);
        }
        for (name, e) in &self.lets {
            let v = e.eval(&env).map_err(|err| format!("let {name}: {err}"))?;
            env.insert(name.clone(), v);
        }
        Ok(env)
    }

    /// [`SpecPlugin::try_env`] where a failure only means "no value".
    fn env(&self, rank: u64, size: u64, k: i64) -> Option<Env> {
        self.try_env(rank, size, k).ok()
    }

    /// The step `k` (from 0 up to the pattern's steps) at which `pattern`
    /// gives `value` for `rank` of `size` ranks.
    fn step_of(&self, p: &Pattern, rank: u64, size: u64, value: i64) -> Option<i64> {
        (0..p.steps(&self.env(rank, size, 0)?)?).find(|&k| {
            self.env(rank, size, k)
                .and_then(|env| p.expr.eval(&env).ok())
                == Some(value)
        })
    }

    /// Checks that every pattern evaluates for every rank of a run of
    /// `size` ranks, so that a broken spec is reported once, clearly.
    pub fn check(&self, size: u64) -> Result<(), String> {
        let env = self.try_env(0, size, 0)?;
        let all = self
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("peer {}", i + 1), p))
            .chain(
                self.fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| (format!("field {}", i + 1), &f.pattern)),
            );
        for (what, p) in all {
            if let Some(s) = &p.steps {
                s.eval(&env).map_err(|e| format!("{what}: steps: {e}"))?;
            }
            p.expr.eval(&env).map_err(|e| format!("{what}: {e}"))?;
        }
        for g in &self.grid {
            if !env.contains_key(g) {
                return Err(format!("grid: unknown variable {g}"));
            }
        }
        let grid = self.grid(size).unwrap_or_default();
        if !grid.is_empty() && grid.iter().product::<u64>() != size {
            return Err(format!(
                "grid: {} does not multiply to {size} ranks",
                self.grid.join(" x ")
            ));
        }
        Ok(())
    }
}

impl Plugin for SpecPlugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn symbolic(&self, rank: u64, size: u64, peer: u64) -> Option<(u32, i64)> {
        let peer = i64::try_from(peer).ok()?;
        self.patterns
            .iter()
            .enumerate()
            .find_map(|(i, p)| self.step_of(p, rank, size, peer).map(|k| (i as u32, k)))
    }

    fn grid(&self, size: u64) -> Option<Vec<u64>> {
        if self.grid.is_empty() {
            return None;
        }
        let env = self.env(0, size, 0)?;
        self.grid
            .iter()
            .map(|g| env.get(g).and_then(|&v| u64::try_from(v).ok()))
            .collect()
    }

    fn concrete(&self, rank: u64, size: u64, pattern: u32, k: i64) -> Option<u64> {
        let p = self.patterns.get(pattern as usize)?;
        let v = p.expr.eval(&self.env(rank, size, k)?).ok()?;
        u64::try_from(v).ok().filter(|&v| v < size)
    }

    fn names_fields(&self) -> bool {
        !self.fields.is_empty()
    }

    fn field_patterns(&self, field: Field, function: &str, size: u64) -> Vec<(u32, i64)> {
        let Some(env) = self.env(0, size, 0) else {
            return Vec::new();
        };
        self.fields
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.field == field
                    && (f.functions.is_empty()
                        || f.functions.iter().any(|g| bare(g) == bare(function)))
            })
            .filter_map(|(i, f)| Some((i as u32, f.pattern.steps(&env)?)))
            .collect()
    }

    fn concrete_field(&self, rank: u64, size: u64, pattern: u32, k: i64) -> Option<i64> {
        let f = self.fields.get(pattern as usize)?;
        f.pattern.expr.eval(&self.env(rank, size, k)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cg() -> SpecPlugin {
        include_str!("../specs/npb-cg.toml").parse().unwrap()
    }

    #[test]
    fn the_cg_spec_gives_npb_partners() {
        let p = cg();
        // 8 ranks: 2 rows of 4; rank 2's row partners, farthest first as
        // NPB's reduce_exch_proc lists them: 0 (k=0), 3 (k=1); its
        // transpose partner is 4 (NPB's exch_proc), rank 1 its own.
        assert_eq!(p.grid(8), Some(vec![2, 4]));
        assert_eq!(p.symbolic(2, 8, 0), Some((0, 0)));
        assert_eq!(p.symbolic(2, 8, 3), Some((0, 1)));
        assert_eq!(p.symbolic(2, 8, 4), Some((1, 0)));
        assert_eq!(p.symbolic(1, 8, 1), Some((1, 0)));
        assert_eq!(p.symbolic(2, 8, 7), None);
        // 16 ranks: 4x4, transpose of rank 6 (row 1, column 2) is 9.
        assert_eq!(p.concrete(6, 16, 1, 0), Some(9));
        assert_eq!(p.concrete(6, 16, 0, 0), Some(4));
        assert_eq!(p.concrete(6, 16, 0, 1), Some(7));
        for size in [4u64, 8, 16, 32, 64, 128] {
            p.check(size).unwrap();
            for r in 0..size {
                let t = p.concrete(r, size, 1, 0).unwrap();
                assert_eq!(
                    p.concrete(t, size, 1, 0),
                    Some(r),
                    "transpose is an involution"
                );
            }
        }
    }

    #[test]
    fn the_bt_spec_numbers_cells_by_stage_in_their_functions_only() {
        let mut p: SpecPlugin = include_str!("../specs/npb-bt.toml").parse().unwrap();
        assert!(p.check(9).unwrap_err().contains("n=VALUE"));
        p.set_param("n", 64).unwrap();
        p.check(9).unwrap();
        assert_eq!(p.grid(36), Some(vec![6, 6]));
        // 9 ranks (p = 3): rank 1 at x = 1, y = 0 sends its x-sweep
        // messages tagged 3007 at stage 0 and 3000 at stage 1, as a traced
        // NPB BT S run records (x_solve.f:204); its x successor is rank 2
        // and its x predecessor rank 0.
        let fw = "x_send_solve_info_";
        assert_eq!(p.field_patterns(Field::Tag, fw, 9), vec![(0, 3)]);
        assert_eq!(p.concrete_field(1, 9, 0, 0), Some(3007));
        assert_eq!(p.concrete_field(1, 9, 0, 1), Some(3000));
        // Calls elsewhere (copy_faces' constant tags) are not named.
        assert!(p.field_patterns(Field::Tag, "copy_faces_", 9).is_empty());
        // The forward solve buffer holds 30 values per point of the
        // largest cell's face: 64 points over 3 cells give 22, 21, 21.
        assert_eq!(p.field_patterns(Field::Count, fw, 9), vec![(6, 1)]);
        assert_eq!(p.concrete_field(1, 9, 6, 0), Some(30 * 22 * 22));
        // copy_faces' buffers by side (east, west, north, south, top,
        // bottom): rank 4 at x = y = 1 owns cells (1, 1, 0), (2, 0, 1) and
        // (0, 2, 2); the two off the west boundary add faces of 21 x 22
        // and 22 x 21 points, 10 values each.
        assert_eq!(
            p.field_patterns(Field::Count, "copy_faces_", 9),
            vec![(8, 6)]
        );
        assert_eq!(p.concrete_field(4, 9, 8, 1), Some(10 * (21 * 22 + 22 * 21)));
        // Every face a rank sends east is a face its neighbour takes from
        // the west: over all ranks the opposite sides add up the same.
        for size in [9u64, 25, 36, 49, 100] {
            let side = |k: i64| -> i64 {
                (0..size)
                    .map(|r| p.concrete_field(r, size, 8, k).unwrap())
                    .sum()
            };
            assert_eq!(
                (side(0), side(2), side(4)),
                (side(1), side(3), side(5)),
                "{size}"
            );
        }
        assert_eq!(p.symbolic(1, 9, 2), Some((3, 0)));
        assert_eq!(p.symbolic(1, 9, 0), Some((0, 0)));
        // At every size, each stage's tag is a distinct cell of the rank's.
        for size in [9u64, 16, 25, 36] {
            let side = size.isqrt() as i64;
            for r in 0..size {
                let mut tags: Vec<i64> = (0..side)
                    .map(|k| p.concrete_field(r, size, 0, k).unwrap())
                    .collect();
                tags.sort_unstable();
                tags.dedup();
                assert_eq!(tags.len() as i64, side, "rank {r} of {size}");
            }
        }
        // A class A binary (n = 64) on a 56-point grid: the solve buffers
        // keep the compiled class's largest cell, 30 * (64/3 + 1)^2, the
        // faces follow the run's cells (56 over 3: 19, 19, 18), as
        // header.h's MAX_CELL_DIM and make_set.f have them: rank 4's two
        // cells off the west boundary sit at (y, z) = (1, 0) and (0, 1),
        // both 19 x 19.
        p.set_param("grid_n", 56).unwrap();
        assert_eq!(p.concrete_field(1, 9, 6, 0), Some(30 * 22 * 22));
        assert_eq!(p.concrete_field(4, 9, 8, 1), Some(10 * (19 * 19 + 19 * 19)));
        assert!(
            "name = \"x\"\n[[peer]]\nname = \"a\"\nexpr = \"rank\"\n[[field]]\nname = \"f\"\n\
             param = \"peer\"\nexpr = \"1\"\n"
                .parse::<SpecPlugin>()
                .is_err()
        );
    }

    #[test]
    fn bad_specs_are_rejected() {
        assert!("name = \"x\"".parse::<SpecPlugin>().is_err());
        assert!(
            "name = \"x\"\n[[peer]]\nname = \"a\"\nexpr = \"rank +\"\n"
                .parse::<SpecPlugin>()
                .is_err()
        );
        let p: SpecPlugin = "name = \"x\"\n[[peer]]\nname = \"a\"\nexpr = \"rank / q\"\n"
            .parse()
            .unwrap();
        assert!(p.check(4).unwrap_err().contains("unknown variable q"));
    }
}
