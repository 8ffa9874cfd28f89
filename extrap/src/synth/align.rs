//! Aligning the inputs' sequences of one class (runs of a call folded into
//! loops whose step count may change with the size) and fitting their fields.

use super::*;

/// A rank's events with runs folded: consecutive repetitions of a block of
/// one to [`MAX_BLOCK`] calls whose parameters step by a constant, zero
/// included (a loop over partners at 2^k, NPB CG's Irecv/Send/Wait per
/// partner, or as many calls as there are ranks).
pub(super) enum Item {
    One(usize),
    Run {
        start: usize,
        /// Calls per repetition.
        len: usize,
        count: usize,
        /// The step of every parameter of the block's calls, in order;
        /// `None` for a loop that runs once here, whose step only the other
        /// inputs show.
        delta: Option<Vec<i64>>,
    },
}

/// The longest block of calls a loop may repeat.
pub(super) const MAX_BLOCK: usize = 8;

/// The parameter steps from block `a` to block `b` (of `len` calls each),
/// if their calls match.
fn block_step(events: &[Ev], a: usize, b: usize, len: usize) -> Option<Vec<i64>> {
    // A block of several calls has distinct calls, so that it never
    // swallows a loop of one call (a ring's P/2 Sendrecvs and the
    // Allreduce after them stay a loop and a call).
    let distinct = |at: usize| {
        (0..len).all(|j| {
            (0..j)
                .all(|i| events.get(at + i).map(|e| e.shape) != events.get(at + j).map(|e| e.shape))
        })
    };
    if len > 1 && !distinct(a) {
        return None;
    }
    let mut d = Vec::new();
    for j in 0..len {
        let (x, y) = (events.get(a + j)?, events.get(b + j)?);
        if x.shape != y.shape || x.params.len() != y.params.len() {
            return None;
        }
        d.extend(y.params.iter().zip(&x.params).map(|(q, p)| q - p));
    }
    Some(d)
}

pub(super) fn fold_runs(events: &[Ev]) -> Vec<Item> {
    let mut out = Vec::new();
    let mut i = 0;
    'next: while i < events.len() {
        for len in 1..=MAX_BLOCK {
            if let Some(d) = block_step(events, i, i + len, len) {
                let mut count = 2;
                while block_step(events, i + (count - 1) * len, i + count * len, len).as_ref()
                    == Some(&d)
                {
                    count += 1;
                }
                out.push(Item::Run {
                    start: i,
                    len,
                    count,
                    delta: Some(d),
                });
                i += count * len;
                continue 'next;
            }
        }
        out.push(Item::One(i));
        i += 1;
    }
    out
}

/// `events` folded like `reference` (the largest input's items over
/// `ref_events`): where the reference has a loop, the same block of calls
/// here is a loop too, even when it runs only once (NPB CG's exchanges along
/// a processor row: one partner at 4 ranks, two at 16). `None` when the
/// calls do not follow the reference.
pub(super) fn fold_like(events: &[Ev], reference: &[Item], ref_events: &[Ev]) -> Option<Vec<Item>> {
    let mut out = Vec::with_capacity(reference.len());
    let mut i = 0;
    for it in reference {
        match it {
            Item::One(r) => {
                (events.get(i)?.shape == ref_events[*r].shape).then_some(())?;
                out.push(Item::One(i));
                i += 1;
            }
            Item::Run { start, len, .. } => {
                let same = |at: usize| {
                    (0..*len).all(|j| {
                        events.get(at + j).map(|e| e.shape) == Some(ref_events[start + j].shape)
                    })
                };
                if !same(i) {
                    return None;
                }
                let mut count = 1;
                let mut delta = None;
                while same(i + count * len) {
                    let d = block_step(events, i + (count - 1) * len, i + count * len, *len)?;
                    if delta.as_ref().is_some_and(|x| *x != d) {
                        break;
                    }
                    delta = Some(d);
                    count += 1;
                }
                out.push(Item::Run {
                    start: i,
                    len: *len,
                    count,
                    delta,
                });
                i += count * len;
            }
        }
    }
    (i == events.len()).then_some(out)
}

/// Where two folded sequences first differ in call or kind, if they do.
fn differs(a: &[Item], sa: &Stream, b: &[Item], sb: &Stream) -> Option<usize> {
    let kind = |it: &Item, s: &Stream| match it {
        Item::One(i) => (s.events[*i].shape, 0),
        Item::Run { start, len, .. } => (s.events[*start].shape, *len),
    };
    (0..a.len().min(b.len()))
        .find(|&i| kind(&a[i], sa) != kind(&b[i], sb))
        .or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// Where the folded sequences of the inputs first differ from the largest
/// input's in call or kind (the input and the item), if they do.
pub(super) fn items_differ(
    folded: &[Vec<Item>],
    kept: &[(usize, Stream)],
) -> Option<(usize, usize)> {
    let last = folded.len().checked_sub(1)?;
    folded
        .iter()
        .enumerate()
        .find_map(|(k, f)| differs(f, &kept[k].1, &folded[last], &kept[last].1).map(|i| (k, i)))
}

/// Folds every input's sequence: on its own, and where that does not match
/// the largest input's folding, like the largest input's (see
/// [`fold_like`]).
pub(super) fn fold_all(kept: &[(usize, Stream)]) -> Vec<Vec<Item>> {
    let mut folded: Vec<Vec<Item>> = kept.iter().map(|(_, s)| fold_runs(&s.events)).collect();
    let Some(last) = kept.len().checked_sub(1) else {
        return folded;
    };
    for k in 0..last {
        let (sk, sl) = (&kept[k].1, &kept[last].1);
        if differs(&folded[k], sk, &folded[last], sl).is_some()
            && let Some(f) = fold_like(&sk.events, &folded[last], &sl.events)
        {
            folded[k] = f;
        }
    }
    folded
}

/// One item of the target's sequence: a call `count` times, its
/// parameters stepping by `delta` (empty for a single call), with the
/// timing fitted for it.
pub(super) struct Target {
    pub(super) shape: Shape,
    pub(super) first: Vec<i64>,
    pub(super) count: usize,
    /// On the first target of a loop's block, the number of targets the
    /// block has (they repeat together, `count` times); 0 on the others.
    pub(super) block: usize,
    pub(super) delta: Vec<i64>,
    pub(super) timing: Option<PathTiming>,
    pub(super) means: [f64; 2],
}

impl Target {
    /// The parameters of step `step`.
    pub(super) fn params(&self, step: usize) -> Vec<i64> {
        if self.delta.is_empty() {
            return self.first.clone();
        }
        self.first
            .iter()
            .zip(&self.delta)
            .map(|(a, d)| a + d * step as i64)
            .collect()
    }

    /// The time an event of this item carries into the compressor (the
    /// means of its path class; leaves get their whole fitted timing
    /// afterwards).
    pub(super) fn time(&self) -> Timing {
        Timing {
            enter_ns: 0,
            dur_ns: self.means[1].max(0.0).round() as u64,
            compute_ns: self.means[0].max(0.0).round() as u64,
        }
    }
}

/// Fits the aligned items of the inputs (`folded[k]` over `kept[k]`):
/// every field of the first call, and for a loop its step count and the
/// step of every field; and its timing.
pub(super) fn fit_items(
    fitter: &mut Fitter<'_>,
    kept: &[(usize, Stream)],
    folded: &[Vec<Item>],
    kps: &[f64],
    method: Method,
    tally: &mut HashMap<String, usize>,
    choices: &mut Vec<TimingChoice>,
) -> Result<Vec<Target>, Error> {
    let last = kept.len() - 1;
    let mut tcache: HashMap<Vec<TSrc>, (PathTiming, [f64; 2])> = HashMap::new();
    let mut out = Vec::with_capacity(folded[last].len());
    for (i, it) in folded[last].iter().enumerate() {
        // Per input: the item's first call, calls per repetition, count and
        // parameter steps.
        let per: Vec<(usize, usize, usize, Option<&Vec<i64>>)> = folded
            .iter()
            .map(|f| match &f[i] {
                Item::One(j) => (*j, 1, 1, None),
                Item::Run {
                    start,
                    len,
                    count,
                    delta,
                } => (*start, *len, *count, delta.as_ref()),
            })
            .collect();
        let (len, run) = match it {
            Item::One(_) => (1, false),
            Item::Run { len, .. } => (*len, true),
        };
        let count = if run {
            let counts: Vec<i64> = per.iter().map(|p| p.2 as i64).collect();
            let ev = &kept[last].1.events[per[last].0];
            fitter
                .value(i, ev, LOOP_STEPS, fit::Kind::Count, &counts)?
                .max(0) as usize
        } else {
            1
        };
        // Where each call's steps start in the block's concatenated steps.
        let mut offset = 0;
        for j in 0..len {
            let ev = &kept[last].1.events[per[last].0 + j];
            let params: Vec<&[i64]> = kept
                .iter()
                .zip(&per)
                .map(|((_, s), p)| s.events[p.0 + j].params.as_slice())
                .collect();
            let first = fitter.event(i, ev, &params)?;
            let mut delta = Vec::new();
            if run {
                delta.reserve(first.len());
                for f in 0..ev.params.len() {
                    let (mut vals, mut grids) = (Vec::new(), Vec::new());
                    for (p, g) in per.iter().zip(fitter.grids) {
                        if let Some(d) = p.3 {
                            vals.push(d.get(offset + f).copied().unwrap_or(0));
                            grids.push(*g);
                        }
                    }
                    let kind = fit::Kind::Other;
                    delta.push(fitter.value_on(i, ev, "step of a field", kind, &vals, &grids)?);
                }
                offset += ev.params.len();
            }
            let key: Vec<TSrc> = kept
                .iter()
                .zip(&per)
                .map(|((_, s), p)| s.events[p.0 + j].timing)
                .collect();
            let (pt, means) = match tcache.get(&key) {
                Some(v) => v.clone(),
                None => {
                    let v = fit_timing(method, kept, &key, kps, tally, ev, choices);
                    tcache.insert(key, v.clone());
                    v
                }
            };
            out.push(Target {
                shape: ev.shape,
                first,
                count,
                block: if j == 0 { len } else { 0 },
                delta,
                timing: matches!(ev.timing, TSrc::Stats(..)).then_some(pt),
                means,
            });
        }
    }
    Ok(out)
}

/// Fits the fields of one class's events across the inputs.
pub(super) struct Fitter<'a> {
    class: &'a str,
    pub(super) grids: &'a [&'a [u64]],
    dims: &'a [u64],
    /// Fitted values by (kind, the inputs' values), with the law verified
    /// for them, if one was, which every field that takes the values from
    /// the cache also shares as its own.
    cache: HashMap<(fit::Kind, Vec<i64>), (i64, Option<fit::Model>)>,
    fields: &'a mut Vec<FieldFit>,
    seen: &'a mut BTreeSet<(String, String)>,
    /// Call-site labels, for reports.
    labels: &'a HashMap<u64, String>,
    /// Laws verified in other classes, shared across them.
    laws: Option<&'a mut Laws>,
    /// How far the stencil reaches, which bounds a peer's coefficients.
    reach: Option<u32>,
    /// Whether constants are laws to share too: only a class that one
    /// input alone has borrows them, and recording every constant field
    /// of every class costs time where none does.
    constants: bool,
    /// Fields of too few sizes, pooled across dimensions.
    pool: Option<&'a mut Pool>,
}

/// Laws verified per call site and field, with the class that verified
/// each: a class present in too few inputs to verify a law (NPB LU's inner
/// rows exist at two grid widths only) may take the law its call site
/// follows in a class with more, where that law reproduces its own values.
pub(super) type Laws = HashMap<(u64, String), Vec<(fit::Model, String)>>;

/// Fields whose values follow one dimension's size alone, shown at too
/// few sizes to verify a law, pooled across dimensions. A problem of equal
/// extent along its dimensions (NPB LU's 33^3 grid) sends the same count
/// for a block `y` ranks deep in y as for one `x` ranks wide in x: where
/// two such fields of one call (different classes, different dimensions)
/// agree on every size they share, their sizes together may be enough to
/// verify the law that each alone cannot. An extrapolation that meets such
/// a field collects them in a first pass (`collecting`), then fits each
/// from the pool ([`Fitter::pooled`]).
#[derive(Default)]
pub(super) struct Pool {
    /// Whether this pass collects (and fits nothing from) the pool.
    pub(super) collecting: bool,
    /// Whether a field met too few sizes and the pool might supply them.
    pub(super) short: bool,
    /// By call and field (without the site: a code sends along x and along
    /// y from two statements).
    pub(super) entries: HashMap<String, Vec<PoolEntry>>,
}

/// One field of a [`Pool`].
#[derive(PartialEq)]
pub(super) struct PoolEntry {
    /// The class that has it.
    class: String,
    /// The dimension whose size alone decides it.
    dim: usize,
    /// That dimension's sizes with the field's values.
    seen: fit::SizeValues,
}

/// The key of a field's laws: its call site, operation and field name.
fn law_key(ev: &Ev, field: &str) -> (u64, String) {
    (ev.shape.site(), format!("{} {field}", event_text(ev)))
}

/// The field name of a loop's step count.
const LOOP_STEPS: &str = "loop steps";

/// Longest period of a list's items that [`Fitter::list`] tries.
const MAX_LIST_PERIOD: usize = 24;

impl<'a> Fitter<'a> {
    pub(super) fn new(
        class: &'a str,
        grids: &'a [&'a [u64]],
        dims: &'a [u64],
        fields: &'a mut Vec<FieldFit>,
        seen: &'a mut BTreeSet<(String, String)>,
        labels: &'a HashMap<u64, String>,
    ) -> Fitter<'a> {
        Fitter {
            class,
            grids,
            dims,
            cache: HashMap::new(),
            fields,
            seen,
            labels,
            laws: None,
            reach: None,
            constants: false,
            pool: None,
        }
    }

    /// Pools the fields that show too few sizes of their dimension
    /// ([`Pool`]).
    pub(super) fn pooling(mut self, pool: &'a mut Pool) -> Fitter<'a> {
        self.pool = Some(pool);
        self
    }

    /// The value at the target of a field that follows dimension `dim`'s
    /// size alone (`seen`: its values by size) from the fields of the same
    /// call that follow another dimension's: each partner must agree with
    /// it on every size both have (at least one), and the law fitted on
    /// their sizes together must be verified (more sizes than unknowns).
    /// Every partner that qualifies must give the same value; `None`
    /// otherwise. The law, with the partner it rests on, names the fit.
    fn pooled(
        &self,
        key: &str,
        dim: usize,
        seen: &[(u64, i64)],
    ) -> Option<(i64, String, fit::Model)> {
        let pool = self.pool.as_deref()?;
        let d = self.dims.len();
        let mut found: Option<(i64, String, fit::Model)> = None;
        for PoolEntry {
            class,
            dim: dim2,
            seen: seen2,
        } in pool.entries.get(key)?
        {
            if *dim2 == dim {
                continue;
            }
            let shared: Vec<_> = seen
                .iter()
                .filter_map(|(s, v)| seen2.iter().find(|(s2, _)| s2 == s).map(|(_, v2)| (v, v2)))
                .collect();
            if shared.is_empty() || shared.iter().any(|(v, v2)| v != v2) {
                continue;
            }
            let mut union: Vec<(u64, i64)> = seen.iter().chain(seen2).copied().collect();
            union.sort_unstable();
            union.dedup();
            let sizes: Vec<[u64; 1]> = union.iter().map(|&(s, _)| [s]).collect();
            let points: Vec<(&[u64], i64)> = sizes
                .iter()
                .zip(&union)
                .map(|(g, &(_, v))| (g.as_slice(), v))
                .collect();
            let Ok(f) = fit::fit(&points, &[self.dims[dim]], fit::Kind::Count) else {
                continue;
            };
            if !f.verified || matches!(f.model, fit::Model::Const(_)) {
                continue;
            }
            let Some(law) = f.model.on_dim(dim) else {
                continue;
            };
            let (a, b) = (super::axis(dim, d), super::axis(*dim2, d));
            let text = format!(
                "{} (a law of one dimension's size, verified on the sizes of {a} here and of \
                 {b} in {class}, which agree where both have a size)",
                law.describe(d)
            );
            match &found {
                Some((v, _, _)) if *v != f.value => return None,
                Some(_) => {}
                None => found = Some((f.value, text, law)),
            }
        }
        found
    }

    /// Bounds peer laws by the stencil's widest reach (see
    /// [`fit::fit_within`]).
    pub(super) fn within(mut self, reach: u32) -> Fitter<'a> {
        self.reach = Some(reach);
        self
    }

    /// Shares constants as laws too, for classes that one input alone has
    /// ([`Fitter::one_input`]).
    pub(super) fn sharing_constants(mut self, yes: bool) -> Fitter<'a> {
        self.constants = yes;
        self
    }

    /// Shares verified laws with the other classes' fitters.
    pub(super) fn borrowing(mut self, laws: &'a mut Laws) -> Fitter<'a> {
        self.laws = Some(laws);
        self
    }

    /// The value of a law verified in another class that reproduces
    /// `points`, when every such law agrees at the target.
    ///
    /// One value says nothing about the law it follows by itself, so a
    /// class that one input alone has (the inner plane of a dimension
    /// that only the largest input makes 3 wide) is held to every law its
    /// call site verified elsewhere, the constants among them: the laws
    /// that reproduce its value must all agree at the target, and a value
    /// that none reproduces stays unverified. With two values or more the
    /// constants are left out, since they would contradict the law of a
    /// dimension those inputs never changed (NPB MG's `-(y - 1)*x`).
    fn borrowed(&self, ev: &Ev, field: &str, points: &[(&[u64], i64)]) -> Option<(i64, String)> {
        let key = law_key(ev, field);
        let single = match points.len() {
            0 => return None,
            n => n == 1,
        };
        let laws = self.laws.as_deref()?.get(&key)?;
        let d = self.dims.len();
        // Least-squares coefficients carry rounding error: `P - y*x`
        // evaluates to 47.99999999999996 at 4x4x4.
        // A constant is compared exactly: `MPI_PROC_NULL`'s code has no
        // exact double.
        let at = |m: &fit::Model, g: &[u64]| match m {
            fit::Model::Const(c) => Some(*c),
            m => {
                let x = m.eval(g);
                let r = x.round();
                ((x - r).abs() <= 1e-6 * r.abs().max(1.0)).then_some(r as i64)
            }
        };
        let mut fits = laws
            .iter()
            .filter(|(m, _)| single || !matches!(m, fit::Model::Const(_)))
            .filter(|(m, _)| points.iter().all(|&(g, v)| at(m, g) == Some(v)));
        let (m0, c0) = fits.next()?;
        let v0 = at(m0, self.dims)?;
        if fits.any(|(m, _)| at(m, self.dims) != Some(v0)) {
            return None;
        }
        Some((v0, format!("{} (verified at {c0})", m0.describe(d))))
    }

    /// The target's parameters of event `i` from the inputs' encoded
    /// parameters: the fixed ones field by field, then each list.
    pub(super) fn event(
        &mut self,
        i: usize,
        ev: &Ev,
        inputs: &[&[i64]],
    ) -> Result<Vec<i64>, Error> {
        let (nfixed, widths) = ev.shape.layout();
        let names = ev.shape.param_names();
        let lists = ev.shape.list_names();
        let mut out = Vec::with_capacity(ev.params.len());
        let mut vals = Vec::with_capacity(inputs.len());
        for j in 0..nfixed {
            vals.clear();
            vals.extend(inputs.iter().map(|p| p.get(j).copied().unwrap_or(0)));
            let field = names.get(j).copied().unwrap_or("?");
            // A plugin's symbols (pattern, step) are plain numbers to fit.
            let symbolic = vals.iter().any(|&v| v >= SYMBOL);
            let kind = if (field.ends_with(".peer") || field.ends_with(".local")) && !symbolic {
                fit::Kind::Peer
            } else if field.ends_with(".count") && !symbolic {
                fit::Kind::Count
            } else {
                fit::Kind::Other
            };
            out.push(self.value(i, ev, field, kind, &vals)?);
        }
        let mut cur = vec![nfixed; inputs.len()];
        for (li, &w) in widths.iter().enumerate() {
            let name = lists.get(li).copied().unwrap_or("list");
            let w = usize::from(w.max(1));
            let mut items: Vec<&[i64]> = Vec::with_capacity(inputs.len());
            let mut lens = Vec::with_capacity(inputs.len());
            for (p, c) in inputs.iter().zip(cur.iter_mut()) {
                let len = p.get(*c).copied().unwrap_or(0).max(0) as usize;
                let body = p.get(*c + 1..*c + 1 + len * w).unwrap_or(&[]);
                *c += 1 + len * w;
                lens.push(len as i64);
                items.push(body);
            }
            self.list(i, ev, name, w, &lens, &items, &mut out)?;
        }
        Ok(out)
    }

    /// One list: item by item when every input has the same length;
    /// otherwise its length is fitted (a list per peer has P entries) and
    /// its items must repeat with a period that every input shows, whose
    /// values are fitted one by one.
    #[allow(clippy::too_many_arguments)]
    fn list(
        &mut self,
        i: usize,
        ev: &Ev,
        name: &str,
        w: usize,
        lens: &[i64],
        items: &[&[i64]],
        out: &mut Vec<i64>,
    ) -> Result<(), Error> {
        let mut vals = Vec::with_capacity(items.len());
        if lens.iter().all(|&l| l == lens[0]) {
            out.push(lens[0]);
            for j in 0..lens[0] as usize * w {
                vals.clear();
                vals.extend(items.iter().map(|it| it[j]));
                let field = format!("{name}[{}]", j / w);
                out.push(self.value(i, ev, &field, fit::Kind::Other, &vals)?);
            }
            return Ok(());
        }
        let len = self.value(i, ev, &format!("{name} length"), fit::Kind::Length, lens)?;
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        let period = (1..=MAX_LIST_PERIOD.min(longest)).find(|&q| {
            2 * q <= longest
                && items
                    .iter()
                    .all(|it| (q * w..it.len()).all(|k| it[k] == it[k - q * w]))
        });
        let Some(q) = period else {
            return Err(self.failure(
                i,
                ev,
                &format!("{name} items"),
                lens,
                "the list's length changes with the size and its items do not repeat with a \
                 period of at most 24 entries, so they cannot be continued"
                    .into(),
            ));
        };
        let mut base = Vec::with_capacity(q * w);
        for k in 0..q * w {
            let (mut pts, mut grids) = (Vec::new(), Vec::new());
            for (it, g) in items.iter().zip(self.grids) {
                if let Some(&v) = it.get(k) {
                    pts.push(v);
                    grids.push(*g);
                }
            }
            let field = format!("{name}[j mod {q} = {}]", k / w);
            base.push(self.value_on(i, ev, &field, fit::Kind::Other, &pts, &grids)?);
        }
        out.push(len);
        out.extend((0..len.max(0) as usize * w).map(|k| base[k % (q * w)]));
        Ok(())
    }

    /// One field's value at the target, fitted over every input.
    pub(super) fn value(
        &mut self,
        i: usize,
        ev: &Ev,
        field: &str,
        kind: fit::Kind,
        vals: &[i64],
    ) -> Result<i64, Error> {
        let grids = self.grids;
        self.value_on(i, ev, field, kind, vals, grids)
    }

    /// One field's value at the target, fitted over the inputs whose grids
    /// are given.
    pub(super) fn value_on(
        &mut self,
        i: usize,
        ev: &Ev,
        field: &str,
        kind: fit::Kind,
        vals: &[i64],
        grids: &[&[u64]],
    ) -> Result<i64, Error> {
        if let Some(&v) = vals.first()
            && vals.iter().all(|&x| x == v)
            && kind != fit::Kind::Length
        {
            let points: Vec<(&[u64], i64)> =
                grids.iter().copied().zip(vals.iter().copied()).collect();
            if vals.len() < 2 {
                return Ok(self.one_input(ev, field, v, &points));
            }
            // Inputs that never change a dimension cannot tell a constant
            // from a law in it: NPB MG's wrap-around in y, -(y-1)*x, is -12
            // at 4x4x4 and 8x4x4 alike. A law its call site verified in a
            // class that more inputs have decides then.
            let fixed = (0..self.dims.len()).any(|j| grids.iter().all(|g| g[j] == grids[0][j]));
            if fixed
                && let Some((b, model)) = self.borrowed(ev, field, &points)
                && b != v
            {
                self.record(ev, field, vals, model, b, true);
                return Ok(b);
            }
            // A constant over inputs that change every dimension is a law
            // of its call site, which a class one input alone has may take.
            if !fixed && self.constants {
                self.verified_law(ev, field, fit::Model::Const(v));
            }
            return Ok(v);
        }
        // A plugin's symbols of one pattern: the step is what changes.
        if let Some(&v0) = vals.first()
            && v0 >= SYMBOL
        {
            let base = v0 & !STEP_MASK;
            if vals.iter().all(|&v| v & !STEP_MASK == base) {
                let steps: Vec<i64> = vals.iter().map(|v| v - base).collect();
                // A pattern's step is a stage or a side, not a size: one
                // that no law continues is one an input could not decide.
                return self
                    .value_on(i, ev, field, fit::Kind::Other, &steps, grids)
                    .map(|k| base + k)
                    .map_err(|e| {
                        let Error::Field(f) = e else {
                            return e;
                        };
                        let site = self
                            .labels
                            .get(&ev.shape.site())
                            .map_or_else(String::new, |l| format!(" at {l}"));
                        let step = format!(
                            "the plugin's pattern for the call{site} matches at a step that \
                             changes from input to input"
                        );
                        let why = if f.why.starts_with("no model") {
                            format!(
                                "{step}, which no law of the size reproduces: an input where \
                                 several of the pattern's steps give every rank the same value \
                                 cannot decide the step (NPB BT's and SP's face buffers where p \
                                 divides the grid's n points, so that every cell is equal); use \
                                 inputs where the steps differ (for BT and SP, p*p ranks with \
                                 n % p != 0), as the spec's notes say"
                            )
                        } else {
                            format!("{step}; as a law of the size it is {}", f.why)
                        };
                        self.failure_on(
                            i,
                            ev,
                            &format!("{field} (its pattern's step)"),
                            &steps,
                            grids,
                            why,
                        )
                    });
            }
        }
        let key = (kind, vals.to_vec());
        if let Some((v, law)) = self.cache.get(&key).cloned() {
            if let Some(law) = law {
                self.verified_law(ev, field, law);
            }
            return Ok(v);
        }
        let points: Vec<(&[u64], i64)> = grids.iter().copied().zip(vals.iter().copied()).collect();
        let fitted = fit::fit_within(&points, self.dims, kind, self.reach);
        // Loop counts need three inputs of their own, borrowed law or not.
        if !matches!(&fitted, Ok(f) if f.verified)
            && (field != LOOP_STEPS || vals.len() >= 3)
            && let Some((v, model)) = self.borrowed(ev, field, &points)
        {
            self.record(ev, field, vals, model, v, true);
            self.cache.insert(key, (v, None));
            return Ok(v);
        }
        // A field that follows one dimension's size alone, at too few sizes
        // to verify its law (refused, or fitted unverified): the pool may
        // verify it with another dimension's sizes.
        // Counts only: a peer's displacement is no function that two
        // dimensions share.
        let short = match &fitted {
            _ if kind != fit::Kind::Count => None,
            Err(FitFailure::TooFewSizes { dim, seen, .. }) => Some((*dim, seen.clone())),
            Ok(f) if !f.verified => fit::one_size_short(&points, self.dims),
            _ => None,
        };
        if let Some((dim, seen)) = short
            && let Some(pool) = self.pool.as_deref_mut()
        {
            let pkey = format!("{} {field}", event_text(ev));
            if pool.collecting {
                let entries = pool.entries.entry(pkey).or_default();
                let entry = PoolEntry {
                    class: self.class.to_string(),
                    dim,
                    seen,
                };
                if !entries.contains(&entry) {
                    entries.push(entry);
                }
                // A stand-in value: this pass only collects.
                return Ok(vals.last().copied().unwrap_or(0));
            }
            pool.short = true;
            if let Some((v, model, law)) = self.pooled(&pkey, dim, &seen) {
                self.verified_law(ev, field, law.clone());
                self.record(ev, field, vals, model, v, true);
                self.cache.insert(key, (v, Some(law)));
                return Ok(v);
            }
        }
        let f = fitted.map_err(|why| {
            let why = match why {
                FitFailure::NoModel => format!(
                    "no model in the grid sizes reproduces them (laws tried: {})",
                    fit::LAWS
                ),
                FitFailure::Ambiguous(a, va, b, vb) => format!(
                    "ambiguous: {a} gives {va} and {b} gives {vb} at the target (the inputs \
                     cannot tell them apart; add an input of another shape or give --dims)"
                ),
                FitFailure::NotInteger(m, v) => format!("{m} predicts {v}, not an integer"),
                FitFailure::TooFewSizes { dim, seen, target } => {
                    too_few_sizes_text(dim, &seen, target, self.dims.len())
                }
            };
            self.failure_on(i, ev, field, vals, grids, why)
        })?;
        // A loop whose step count changes with the size needs a third
        // input: two sizes fit any one-term law.
        let verified = f.verified && (field != LOOP_STEPS || vals.len() >= 3);
        let law = (verified && !matches!(f.model, fit::Model::Const(_))).then(|| f.model.clone());
        if let Some(law) = &law {
            self.verified_law(ev, field, law.clone());
        }
        if !matches!(f.model, fit::Model::Const(_)) || !verified {
            let model = f.model.describe(self.dims.len());
            self.record(ev, field, vals, model, f.value, verified);
        }
        self.cache.insert(key, (f.value, law));
        Ok(f.value)
    }

    /// The value at the target of a field that one input alone shows (a
    /// class that only the largest input has). One value says nothing
    /// about how it changes, so it takes the law its call site verified in
    /// the classes that more inputs have, where that reproduces it
    /// ([`Fitter::borrowed`]). An identifier that counts the rank's own
    /// creations (a request or communicator id, and the lists of request
    /// ids) follows from the class's sequence itself, which the target's
    /// ranks of the class repeat, so it is kept. Anything else is reported
    /// unverified.
    fn one_input(&mut self, ev: &Ev, field: &str, v: i64, points: &[(&[u64], i64)]) -> i64 {
        if let Some((b, model)) = self.borrowed(ev, field, points) {
            if b != v {
                self.record(ev, field, &[v], model, b, true);
            }
            return b;
        }
        let counted = matches!(field, "comm" | "req" | "new_comm")
            || field.starts_with("reqs[")
            || field.starts_with("done[");
        if !counted {
            self.record(ev, field, &[v], "constant (one input)".into(), v, false);
        }
        v
    }

    /// Shares a law this class verified for a field with the classes that
    /// borrow.
    fn verified_law(&mut self, ev: &Ev, field: &str, law: fit::Model) {
        if let Some(laws) = self.laws.as_deref_mut() {
            let known = laws.entry(law_key(ev, field)).or_default();
            if !known.iter().any(|(m, _)| *m == law) {
                known.push((law, self.class.to_string()));
            }
        }
    }

    /// Reports a fitted field once per class and field.
    fn record(
        &mut self,
        ev: &Ev,
        field: &str,
        vals: &[i64],
        model: String,
        target: i64,
        verified: bool,
    ) {
        let op = event_text(ev);
        if self
            .seen
            .insert((self.class.to_string(), format!("{op} {field}")))
        {
            let grids: Vec<Vec<u64>> = self.grids.iter().map(|g| g.to_vec()).collect();
            self.fields.push(FieldFit {
                class: self.class.to_string(),
                field: format!("{op} {field}"),
                site: self
                    .labels
                    .get(&ev.shape.site())
                    .cloned()
                    .unwrap_or_else(|| format!("{:#x}", ev.shape.site())),
                values: vals.to_vec(),
                grids: grids.into_iter().take(vals.len()).collect(),
                model,
                target,
                verified,
            });
        }
    }

    fn failure(&self, i: usize, ev: &Ev, field: &str, vals: &[i64], why: String) -> Error {
        self.failure_on(i, ev, field, vals, self.grids, why)
    }

    fn failure_on(
        &self,
        i: usize,
        ev: &Ev,
        field: &str,
        vals: &[i64],
        grids: &[&[u64]],
        why: String,
    ) -> Error {
        let values = grids
            .iter()
            .zip(vals)
            .map(|(g, v)| {
                let g: Vec<String> = g.iter().map(u64::to_string).collect();
                format!("{v} at {}", g.join("x"))
            })
            .collect::<Vec<_>>()
            .join(", ");
        Error::Field(Box::new(crate::FieldError {
            class: self.class.to_string(),
            index: i,
            op: event_text(ev),
            field: field.to_string(),
            values,
            why,
        }))
    }
}

/// The reason for [`FitFailure::TooFewSizes`], in the grid's axis names.
fn too_few_sizes_text(dim: usize, seen: &[(u64, i64)], target: u64, d: usize) -> String {
    let a = super::axis(dim, d);
    let values: Vec<String> = seen
        .iter()
        .map(|(s, v)| format!("{v} at {a}={s}"))
        .collect();
    let at_target = if seen.iter().any(|&(s, _)| s == target) {
        format!("the target's {a}={target} is one input's alone, and one value verifies nothing")
    } else {
        format!("none has the target's {a}={target}")
    };
    format!(
        "the values follow the grid's {a} size alone ({}), and the inputs show {} sizes of it: \
         too few to verify a law that reaches {a}={target} (a count of blocks of the problem, \
         c*floor(K/{a}) + a, has three unknowns), and {at_target}; add inputs with more {a} \
         sizes, or one with {a}={target} beside another",
        values.join(", "),
        seen.len()
    )
}

/// Index of the first event where two streams differ in call (the lists'
/// lengths may differ: they are fitted).
pub(super) fn first_difference(a: &Stream, b: &Stream) -> Option<usize> {
    let n = a.events.len().min(b.events.len());
    (0..n)
        .find(|&i| {
            let (x, y) = (&a.events[i], &b.events[i]);
            x.shape != y.shape
        })
        .or((a.events.len() != b.events.len()).then_some(n))
}

/// Compresses the events `targets` give rank `rank` (`fix` may rewrite each
/// event's parameters first, as the plugin path turns symbols into peers):
/// the rank's trace, and for each event the fitted timing of its item.
pub(super) fn synthesize(
    rank: u64,
    targets: &[Target],
    mut fix: impl FnMut(&Target, &mut Vec<i64>) -> Result<(), Error>,
) -> Result<(trace::Trace, Vec<Option<PathTiming>>), Error> {
    let internal = |what: String| Error::Internal(format!("rank {rank}: {what}"));
    let mut comp = Compressor::new(
        rank as i32,
        Config {
            slow_instances: 0,
            queue_limit: usize::MAX / 4,
            ..Config::default()
        },
    );
    let mut timings = Vec::new();
    let mut i = 0;
    while i < targets.len() {
        let block = &targets[i..(i + targets[i].block.max(1)).min(targets.len())];
        for step in 0..targets[i].count {
            for t in block {
                let mut params = t.params(step);
                fix(t, &mut params)?;
                let mut event = codec::decode(&t.shape, &params, rank as i32)
                    .ok_or_else(|| internal("a synthetic event does not decode".into()))?;
                event.time = t.time();
                comp.push(&event).map_err(|e| internal(e.to_string()))?;
                timings.push(t.timing.clone());
            }
        }
        i += block.len();
    }
    let trace = comp.into_trace().map_err(|e| internal(e.to_string()))?;
    Ok((trace, timings))
}
