//! The generated program's data: every ranklist, value sequence, parameter
//! and timing histogram of the trace, flattened into C arrays of words.
//! Each is stored once however often the program refers to it, so the
//! tables grow with the trace's compressed size, not with its events.

use std::collections::HashMap;
use std::fmt::Write;

use trace::{Dist, Param, PathClass, PathTiming, RankList, Shape, ValueSeq};

/// The tables under construction.
#[derive(Default)]
pub(crate) struct Tables {
    /// Ranklists: sections, then per section `d, start, (iterations,
    /// stride) * d`.
    rl: Vec<i64>,
    /// Word offset of ranklist `i` in `rl`.
    rl_at: Vec<usize>,
    rl_ids: HashMap<Vec<i64>, usize>,
    /// Value sequences ([`ValueSeq::flatten`]).
    sq: Vec<i64>,
    sq_ids: HashMap<Vec<i64>, usize>,
    /// Parameters: variants `n, (ranklist offset, absolute, sequence
    /// offset) * n`, then phase groups `m, (ranklist offset, k, parameter
    /// offset * k) * m`.
    pa: Vec<i64>,
    /// Word offset of parameter `i` in `pa` (what `rs_next(i)` reads).
    pa_at: Vec<usize>,
    /// Histograms: bins and their width in log2 classes
    /// ([`trace::Histogram::width`]), then per bin `count, min, max, mean`
    /// and its neighbourhood's samples
    /// ([`trace::Histogram::neighbourhood`]).
    tm: Vec<f64>,
    tm_ids: HashMap<Vec<u64>, usize>,
    /// Per event node, the offsets of its first, steady, last and total
    /// computation histograms.
    tm_at: Vec<usize>,
    /// Per event node, where the quantiles of its first, steady and last
    /// path class start ([`compress::quantile_start`]).
    tm_q: Vec<u64>,
    /// Per event node, how many ranks' executions its timing holds.
    tm_share: Vec<u64>,
    /// Per event node, the ranks that compute by its timing (a rank's
    /// place among them is where it takes the accidents dealt:
    /// `rs_tm_slot`).
    tm_rl: Vec<usize>,
}

impl Tables {
    /// The id of a ranklist (what `rs_in[id]` answers for this rank).
    pub(crate) fn ranklist(&mut self, r: &RankList) -> usize {
        let words = ranklist_words(r);
        if let Some(&id) = self.rl_ids.get(&words) {
            return id;
        }
        let id = self.rl_at.len();
        self.rl_at.push(self.rl.len());
        self.rl.extend_from_slice(&words);
        self.rl_ids.insert(words, id);
        id
    }

    fn seq(&mut self, s: &ValueSeq) -> usize {
        let mut words = Vec::new();
        s.flatten(&mut words);
        if let Some(&at) = self.sq_ids.get(&words) {
            return at;
        }
        let at = self.sq.len();
        self.sq.extend_from_slice(&words);
        self.sq_ids.insert(words, at);
        at
    }

    /// The words of a parameter, appended to `pa`; returns their offset.
    fn param_words(&mut self, p: &Param) -> usize {
        let mut words = vec![p.variants().len() as i64];
        for v in p.variants() {
            let rl = self.ranklist(v.ranks());
            words.extend([
                self.rl_at[rl] as i64,
                i64::from(v.is_absolute()),
                self.seq(v.values()) as i64,
            ]);
        }
        words.push(p.phased().len() as i64);
        for g in p.phased() {
            let rl = self.ranklist(g.ranks());
            words.extend([self.rl_at[rl] as i64, g.phases().len() as i64]);
            for ph in g.phases() {
                words.push(self.param_words(ph) as i64);
            }
        }
        let at = self.pa.len();
        self.pa.extend_from_slice(&words);
        at
    }

    /// A parameter's id (what `rs_next(id)` reads).
    pub(crate) fn param(&mut self, p: &Param) -> usize {
        let at = self.param_words(p);
        self.pa_at.push(at);
        self.pa_at.len() - 1
    }

    fn dist(&mut self, d: &Dist) -> usize {
        let h = d.histogram();
        let bins = h.bins();
        let key: Vec<u64> = std::iter::once(u64::from(h.width()))
            .chain(bins.iter().enumerate().flat_map(|(i, b)| {
                [
                    b.count(),
                    b.min(),
                    b.max(),
                    b.avg().to_bits(),
                    h.neighbourhood(i),
                ]
            }))
            .collect();
        if let Some(&at) = self.tm_ids.get(&key) {
            return at;
        }
        let at = self.tm.len();
        self.tm.extend([bins.len() as f64, f64::from(h.width())]);
        for (i, b) in bins.iter().enumerate() {
            self.tm.extend([
                b.count() as f64,
                b.min() as f64,
                b.max() as f64,
                b.avg(),
                h.neighbourhood(i) as f64,
            ]);
        }
        self.tm_ids.insert(key, at);
        at
    }

    /// Records event node `node`'s computation histograms, which the
    /// executions of the ranks in `group` make up (a rank's place among
    /// them deals the accidents, as in replay's projection), and the starts
    /// of its quantiles for `seed` (nodes are numbered in the order they
    /// are recorded here).
    pub(crate) fn timing(
        &mut self,
        t: &PathTiming,
        group: &RankList,
        shape: &Shape,
        seed: u64,
    ) -> usize {
        self.tm_share.push(group.len().max(1));
        let rl = self.ranklist(group);
        self.tm_rl.push(rl);
        for class in [PathClass::First, PathClass::Steady, PathClass::Last] {
            self.tm_q.push(compress::quantile_start(seed, shape, class));
        }
        let total = t.total();
        let ats = [
            self.dist(t.first().compute()),
            self.dist(t.steady().compute()),
            self.dist(t.last().compute()),
            self.dist(total.compute()),
        ];
        self.tm_at.extend(ats);
        self.tm_at.len() / 4 - 1
    }

    /// Bytes of the tables' words (for the size report).
    pub(crate) fn words(&self) -> usize {
        self.rl.len() + self.sq.len() + self.pa.len() + self.tm.len()
    }

    /// The tables as C definitions.
    pub(crate) fn write_c(&self, out: &mut String) {
        let _ = writeln!(out, "#define RS_NRL {}", self.rl_at.len().max(1));
        let _ = writeln!(out, "#define RS_NPARAM {}", self.pa_at.len().max(1));
        array(out, "int64_t", "RS_RL", &self.rl, |v| int(*v));
        array(out, "int", "RS_RL_AT", &self.rl_at, |v| v.to_string());
        array(out, "int64_t", "RS_SQ", &self.sq, |v| int(*v));
        array(out, "int64_t", "RS_PA", &self.pa, |v| int(*v));
        array(out, "int", "RS_PA_AT", &self.pa_at, |v| v.to_string());
        array(out, "double", "RS_TM", &self.tm, |v| format!("{v:e}"));
        array(out, "int", "RS_TM_AT", &self.tm_at, |v| v.to_string());
        let _ = writeln!(out, "#define RS_NTM {}", (self.tm_at.len() / 4).max(1));
        array(out, "uint64_t", "RS_TM_Q", &self.tm_q, |v| {
            format!("{v}ULL")
        });
        array(out, "double", "RS_TM_SHARE", &self.tm_share, |v| {
            format!("{v}.0")
        });
        array(out, "int", "RS_TM_RL", &self.tm_rl, |v| v.to_string());
    }
}

/// A ranklist's words: sections, then per section `d, start, (iterations,
/// stride) * d`.
fn ranklist_words(r: &RankList) -> Vec<i64> {
    let mut w = vec![r.sections().len() as i64];
    for s in r.sections() {
        w.push(s.dims().len() as i64);
        w.push(i64::from(s.start()));
        for &(it, st) in s.dims() {
            w.extend([i64::from(it), i64::from(st)]);
        }
    }
    w
}

/// A C integer literal of any `i64` (the smallest one has no literal).
pub(crate) fn int(v: i64) -> String {
    if v == i64::MIN {
        "INT64_MIN".into()
    } else if v > i64::from(i32::MAX) || v < i64::from(i32::MIN) {
        format!("{v}LL")
    } else {
        v.to_string()
    }
}

/// `static const T NAME[] = {...};`, twelve values to a line (one zero
/// for an empty table: C has no empty arrays).
fn array<T>(out: &mut String, ty: &str, name: &str, v: &[T], f: impl Fn(&T) -> String) {
    let _ = writeln!(out, "static const {ty} {name}[] = {{");
    if v.is_empty() {
        out.push_str("    0,\n");
    }
    for chunk in v.chunks(12) {
        out.push_str("   ");
        for x in chunk {
            let _ = write!(out, " {},", f(x));
        }
        out.push('\n');
    }
    out.push_str("};\n");
}
