//! Aligning the inputs' sequences of one class (runs of a call folded into
//! loops whose step count may change with the size) and fitting their fields.

use super::*;

/// A rank's events with runs folded: consecutive executions of one call
/// whose parameters step by a constant, zero included (a loop over
/// partners at 2^k, or over as many calls as there are ranks).
pub(super) enum Item {
    One(usize),
    Run {
        start: usize,
        count: usize,
        delta: Vec<i64>,
    },
}

pub(super) fn fold_runs(events: &[Ev]) -> Vec<Item> {
    let step = |a: &Ev, b: &Ev| -> Option<Vec<i64>> {
        (a.shape == b.shape && a.params.len() == b.params.len())
            .then(|| b.params.iter().zip(&a.params).map(|(y, x)| y - x).collect())
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let delta = events.get(i + 1).and_then(|b| step(&events[i], b));
        match delta {
            Some(d) => {
                let mut j = i + 1;
                while j + 1 < events.len() && step(&events[j], &events[j + 1]).as_ref() == Some(&d)
                {
                    j += 1;
                }
                out.push(Item::Run {
                    start: i,
                    count: j - i + 1,
                    delta: d,
                });
                i = j + 1;
            }
            _ => {
                out.push(Item::One(i));
                i += 1;
            }
        }
    }
    out
}

/// Where the folded sequences of the inputs first differ in call or kind
/// (the input and the item), if they do.
pub(super) fn items_differ(
    folded: &[Vec<Item>],
    kept: &[(usize, Stream)],
) -> Option<(usize, usize)> {
    let last = folded.len().checked_sub(1)?;
    let kind = |it: &Item, s: &Stream| match it {
        Item::One(i) => (s.events[*i].shape, false),
        Item::Run { start, .. } => (s.events[*start].shape, true),
    };
    let reference = &folded[last];
    folded.iter().enumerate().find_map(|(k, f)| {
        (0..f.len().min(reference.len()))
            .find(|&i| kind(&f[i], &kept[k].1) != kind(&reference[i], &kept[last].1))
            .or((f.len() != reference.len()).then_some(f.len().min(reference.len())))
            .map(|i| (k, i))
    })
}

/// One item of the target's sequence: a call `count` times, its
/// parameters stepping by `delta` (empty for a single call), with the
/// timing fitted for it.
pub(super) struct Target {
    pub(super) shape: Shape,
    pub(super) first: Vec<i64>,
    pub(super) count: usize,
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
        let at = |f: &Vec<Item>| match &f[i] {
            Item::One(j) => (*j, 1usize, Vec::new()),
            Item::Run {
                start,
                count,
                delta,
            } => (*start, *count, delta.clone()),
        };
        let per: Vec<(usize, usize, Vec<i64>)> = folded.iter().map(at).collect();
        let ev = &kept[last].1.events[per[last].0];
        let params: Vec<&[i64]> = kept
            .iter()
            .zip(&per)
            .map(|((_, s), (j, _, _))| s.events[*j].params.as_slice())
            .collect();
        let first = fitter.event(i, ev, &params)?;
        let (count, delta) = match it {
            Item::One(_) => (1, Vec::new()),
            Item::Run { .. } => {
                let counts: Vec<i64> = per.iter().map(|(_, c, _)| *c as i64).collect();
                let count = fitter.value(i, ev, LOOP_STEPS, fit::Kind::Other, &counts)?;
                let mut delta = Vec::with_capacity(first.len());
                for j in 0..first.len() {
                    let d: Vec<i64> = per
                        .iter()
                        .map(|(_, _, d)| d.get(j).copied().unwrap_or(0))
                        .collect();
                    delta.push(fitter.value(i, ev, "step of a field", fit::Kind::Other, &d)?);
                }
                (count.max(0) as usize, delta)
            }
        };
        let key: Vec<TSrc> = kept
            .iter()
            .zip(&per)
            .map(|((_, s), (j, _, _))| s.events[*j].timing)
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
            delta,
            timing: matches!(ev.timing, TSrc::Stats(..)).then_some(pt),
            means,
        });
    }
    Ok(out)
}

/// Fits the fields of one class's events across the inputs.
pub(super) struct Fitter<'a> {
    class: &'a str,
    grids: &'a [&'a [u64]],
    dims: &'a [u64],
    /// Fitted values by (kind, the inputs' values).
    cache: HashMap<(fit::Kind, Vec<i64>), i64>,
    fields: &'a mut Vec<FieldFit>,
    seen: &'a mut BTreeSet<(String, String)>,
    /// Call-site labels, for reports.
    labels: &'a HashMap<u64, String>,
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
        }
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
            let kind = if field.ends_with(".peer") || field.ends_with(".local") {
                fit::Kind::Peer
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
    fn value_on(
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
            if vals.len() < 2 {
                // One input says nothing about how the value changes.
                self.record(ev, field, vals, "constant (one input)".into(), v, false);
            }
            return Ok(v);
        }
        let key = (kind, vals.to_vec());
        if let Some(&v) = self.cache.get(&key) {
            return Ok(v);
        }
        let points: Vec<(&[u64], i64)> = grids.iter().copied().zip(vals.iter().copied()).collect();
        let f = fit::fit(&points, self.dims, kind).map_err(|why| {
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
            };
            self.failure_on(i, ev, field, vals, grids, why)
        })?;
        // A loop whose step count changes with the size needs a third
        // input: two sizes fit any one-term law.
        let verified = f.verified && (field != LOOP_STEPS || vals.len() >= 3);
        if !matches!(f.model, fit::Model::Const(_)) || !verified {
            let model = f.model.describe(self.dims.len());
            self.record(ev, field, vals, model, f.value, verified);
        }
        self.cache.insert(key, f.value);
        Ok(f.value)
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
) -> Result<(compress::Trace, Vec<Option<PathTiming>>), Error> {
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
    for t in targets {
        for step in 0..t.count {
            let mut params = t.params(step);
            fix(t, &mut params)?;
            let mut event = codec::decode(&t.shape, &params, rank as i32)
                .ok_or_else(|| internal("a synthetic event does not decode".into()))?;
            event.time = t.time();
            comp.push(&event).map_err(|e| internal(e.to_string()))?;
            timings.push(t.timing.clone());
        }
    }
    let trace = comp.into_trace().map_err(|e| internal(e.to_string()))?;
    Ok((trace, timings))
}
