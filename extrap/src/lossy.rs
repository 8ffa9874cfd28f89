//! Lossy extrapolation (Wu and Mueller 2012 §3.4): when a program has a minor,
//! rank-dependent pattern on top of its dominant one (NPB MG's distance-2
//! exchanges on a few ranks), the ranks of a position class no longer
//! record the same calls and no model continues them. Lossy mode keeps the
//! dominant pattern and drops the rest, at two levels:
//!
//! * within a rank, a user's *snippet* (the calls of one iteration of the
//!   dominant pattern) drives a finite-state machine that keeps collectives
//!   and complete matches of the snippet, and drops everything else;
//! * among the ranks of a class and across the input traces, a longest
//!   common subsequence keeps the calls every rank and every input share.
//!   It runs on the expanded sequences, where a loop weighs its event count
//!   by construction, and in two passes as the paper's: the common part is
//!   found first, then everything else is removed. The alignment is the
//!   inter-node merge's (exact dynamic programming up to a table limit,
//!   patience anchors beyond), so very long sequences stay affordable.
//!
//! The share of events dropped is reported for every input.

use std::collections::HashMap;
use std::hash::Hash;
use std::str::FromStr;

use trace::{Family, Op, Shape};

/// One step of a snippet: a call and the parameter values it must have.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Step {
    op: Op,
    fields: Vec<(String, i64)>,
}

/// A snippet: the calls of one iteration of the dominant pattern, one per
/// line, as `Op` or `Op field=value ...` with the field names of `rankscale
/// show` (`send.peer`, `recv.tag`, `send.count`, ...); `#` starts a comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    steps: Vec<Step>,
}

impl FromStr for Snippet {
    type Err = String;

    fn from_str(text: &str) -> Result<Snippet, String> {
        let mut steps = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let name = words.next().unwrap_or("");
            let op = Op::from_name(name.trim_start_matches("MPI_"))
                .ok_or_else(|| format!("line {}: unknown MPI call {name:?}", n + 1))?;
            let mut fields = Vec::new();
            for w in words {
                let (k, v) = w
                    .split_once('=')
                    .ok_or_else(|| format!("line {}: expected field=value, got {w:?}", n + 1))?;
                let v: i64 = v
                    .trim_start_matches('+')
                    .parse()
                    .map_err(|_| format!("line {}: {v:?} is not an integer", n + 1))?;
                fields.push((k.to_string(), v));
            }
            steps.push(Step { op, fields });
        }
        if steps.is_empty() {
            return Err("the snippet has no calls".into());
        }
        Ok(Snippet { steps })
    }
}

impl Snippet {
    fn matches(&self, k: usize, shape: &Shape, params: &[i64]) -> bool {
        let step = &self.steps[k];
        if shape.op() != step.op {
            return false;
        }
        let names = shape.param_names();
        step.fields.iter().all(|(f, v)| {
            names
                .iter()
                .position(|n| n == f)
                .is_some_and(|i| params.get(i) == Some(v))
        })
    }

    /// Which of a rank's events the snippet's state machine keeps (seed
    /// 001 Fig. 9): a collective (or another call all ranks make together,
    /// see `passes`) is accepted directly unless the machine is in the
    /// middle of a sequence; a call that starts or continues the
    /// snippet is held; a complete snippet accepts what it holds; any other
    /// call is an error that drops what is held and the call itself (a
    /// collective that interrupts a sequence drops the sequence but is
    /// kept).
    pub fn keep(&self, events: &[(Shape, &[i64])]) -> Vec<bool> {
        let mut keep = vec![false; events.len()];
        let mut held: Vec<usize> = Vec::new();
        for (i, (shape, params)) in events.iter().enumerate() {
            let k = held.len();
            if self.matches(k, shape, params) {
                held.push(i);
                if held.len() == self.steps.len() {
                    held.drain(..).for_each(|j| keep[j] = true);
                }
                continue;
            }
            held.clear();
            if self.matches(0, shape, params) {
                held.push(i);
                if self.steps.len() == 1 {
                    held.drain(..).for_each(|j| keep[j] = true);
                }
            } else if passes(shape.op()) {
                keep[i] = true;
            }
        }
        keep
    }
}

/// Whether a call outside the snippet is kept: collectives (Wu and Mueller 2012) and,
/// for the same reason, the calls every rank makes together (Init,
/// Finalize, communicator constructors, Pcontrol); and the calls recorded
/// without detail, which name no peer that could fail to extrapolate.
fn passes(op: Op) -> bool {
    op.is_collective()
        || op.is_generic()
        || matches!(
            op.family(),
            Family::InitExit | Family::CommManagement | Family::Profiling
        )
}

/// The index pairs of a longest common subsequence of `a` and `b`, items
/// being equal when their keys are, in order. Keys are interned to exact
/// ids, and the alignment is the merge's own
/// ([`compress::merge::common_subsequence`]: exact up to its table limit,
/// patience anchors beyond).
pub fn lcs<T, K: Hash + Eq>(a: &[T], b: &[T], key: impl Fn(&T) -> K) -> Vec<(usize, usize)> {
    let mut ids: HashMap<K, u64> = HashMap::new();
    let mut id = |x: &T| {
        let n = ids.len() as u64;
        *ids.entry(key(x)).or_insert(n)
    };
    let ka: Vec<u64> = a.iter().map(&mut id).collect();
    let kb: Vec<u64> = b.iter().map(&mut id).collect();
    compress::merge::common_subsequence(&ka, &kb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcs_finds_the_common_part() {
        let a = b"ABCBDAB";
        let b = b"BDCABA";
        let p = lcs(a, b, |x| *x);
        assert_eq!(p.len(), 4);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(p.iter().all(|&(i, j)| a[i] == b[j]));
        // A minor extra pattern in one sequence is dropped, the rest kept.
        let main: Vec<u8> = b"rrssw".repeat(10);
        let mut extra = main.clone();
        extra.splice(10..10, *b"xy");
        extra.splice(30..30, *b"xy");
        let p = lcs(&main, &extra, |x| *x);
        assert_eq!(p.len(), main.len());
    }

    #[test]
    fn snippets_parse_and_reject_junk() {
        let s: Snippet = "# one iteration\nIrecv\nIsend send.tag=1\nWaitall\n"
            .parse()
            .unwrap();
        assert_eq!(s.steps.len(), 3);
        assert_eq!(s.steps[1].fields, vec![("send.tag".to_string(), 1)]);
        assert!("Frobnicate".parse::<Snippet>().is_err());
        assert!("Isend tag".parse::<Snippet>().is_err());
        assert!("# nothing\n".parse::<Snippet>().is_err());
    }
}
