//! Extrapolation through a plugin: peers as symbols (pattern, step).

use super::*;

/// Symbolic peers are stored at and above this value (real peer offsets
/// are below 2^31): pattern `p` at step `k` is `SYMBOL + (p << 20) + k`.
pub(super) const SYMBOL: i64 = 1 << 40;
/// The step's bits of a symbol.
pub(super) const STEP_MASK: i64 = (1 << 20) - 1;

/// The positions of the peers a plugin may name in an event's encoded
/// parameters: the `*.peer` fields (and the `*.local` ones on
/// `MPI_COMM_WORLD`, where they are the same offsets), and the relative
/// source of every matched-message entry.
fn peer_positions(shape: &Shape, params: &[i64]) -> Vec<usize> {
    let (nfixed, widths) = shape.layout();
    let world = params.first() == Some(&0);
    let real = |j: usize| {
        params
            .get(j)
            .is_some_and(|&v| v != codec::PEER_ANY && v != codec::PEER_NULL)
    };
    let names = shape.param_names();
    // A collective's transfers have no peer (`*.peer` is the null sentinel
    // and `*.local` a plain 0); a `*.local` follows its `*.peer`.
    let mut out: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|&(j, n)| {
            (n.ends_with(".peer") && real(j))
                || (world && n.ends_with(".local") && j > 0 && real(j - 1))
        })
        .map(|(j, _)| j)
        .collect();
    let mut cur = nfixed;
    for (name, &w) in shape.list_names().iter().zip(widths) {
        let len = params.get(cur).copied().unwrap_or(0).max(0) as usize;
        let w = usize::from(w.max(1));
        if *name == "matched" && w == 4 {
            out.extend((0..len).map(|e| cur + 1 + e * 4 + 2));
        }
        cur += 1 + len * w;
    }
    out
}

/// Replaces every peer the plugin can name by its symbol.
fn symbolize(st: &mut Stream, rank: u64, size: u64, plugin: &dyn Plugin) {
    for e in &mut st.events {
        for j in peer_positions(&e.shape, &e.params) {
            let Some(v) = e.params.get_mut(j) else {
                continue;
            };
            if *v == codec::PEER_ANY || *v == codec::PEER_NULL {
                continue;
            }
            let peer = rank as i64 + *v;
            if let Some((p, k)) = u64::try_from(peer)
                .ok()
                .and_then(|q| plugin.symbolic(rank, size, q))
                && (0..1 << 20).contains(&k)
            {
                *v = SYMBOL + (i64::from(p) << 20) + k;
            }
        }
    }
}

/// Turns symbols back into peer offsets for `rank` of `size` ranks.
fn concretize(
    params: &mut [i64],
    shape: &Shape,
    rank: u64,
    size: u64,
    plugin: &dyn Plugin,
) -> Result<(), Error> {
    for j in peer_positions(shape, params) {
        let Some(v) = params.get_mut(j) else { continue };
        if *v < SYMBOL {
            continue;
        }
        let (p, k) = (((*v - SYMBOL) >> 20) as u32, (*v - SYMBOL) & STEP_MASK);
        let peer = plugin.concrete(rank, size, p, k).ok_or_else(|| {
            Error::Unrealisable(format!(
                "plugin {:?}: pattern {} at step {k} gives rank {rank} of {size} no peer (is \
                 {size} a size the pattern allows?)",
                plugin.name(),
                p + 1
            ))
        })?;
        *v = peer as i64 - rank as i64;
    }
    Ok(())
}

/// Extrapolation through a plugin: every rank's peers become symbols, which
/// must make all ranks of an input record the same; loops over symbolic
/// steps may change their length with the size (fitted like any field);
/// the target's ranks are then generated one by one and merged, so this
/// path costs time in proportion to the target size.
pub(super) fn extrapolate_with_plugin(
    inputs: &[Input],
    opts: &Options,
    plugin: &dyn Plugin,
    sizes: &[u64],
) -> Result<Extrapolated, Error> {
    let n = opts.ranks;
    if n > 1 << 16 {
        return Err(Error::BadDims(format!(
            "with a plugin the target's ranks are generated one by one; {n} ranks is more than \
             this path handles (65,536)"
        )));
    }
    // A plugin's loops change their length with P: two sizes fit any
    // one-term law, so a third must confirm it.
    if inputs.len() < 3 {
        return Err(Error::TooFewTraces {
            got: inputs.len(),
            need: 3,
            dims: 1,
        });
    }
    let mut streams: Vec<Stream> = Vec::with_capacity(inputs.len());
    let mut tops = Vec::with_capacity(inputs.len());
    for (inp, &p) in inputs.iter().zip(sizes) {
        let mut first: Option<(u64, Stream)> = None;
        let mut infos = Vec::with_capacity(p as usize);
        for r in 0..p {
            let mut st = stream(&inp.file, r, opts.ignore_sites)?;
            symbolize(&mut st, r, p, plugin);
            let info = stream_info(&st);
            if let Some((h, s0)) = &first
                && *h != info.stream
            {
                let n = s0.events.len().min(st.events.len());
                let at = (0..n).find(|&i| {
                    let (a, b) = (&s0.events[i], &st.events[i]);
                    a.shape != b.shape || a.params != b.params
                });
                return Err(Error::Inhomogeneous {
                    file: inp.name.clone(),
                    class: format!("all ranks, with plugin {:?}", plugin.name()),
                    r1: 0,
                    r2: r,
                    first: match at {
                        Some(i) => format!(
                            "after the plugin's symbols, event {i} ({}) differs",
                            st.events[i].shape.op().name()
                        ),
                        None => format!(
                            "after the plugin's symbols, rank 0 has {} events, rank {r} has {}",
                            s0.events.len(),
                            st.events.len()
                        ),
                    },
                });
            }
            if first.is_none() {
                first = Some((info.stream, st));
            }
            infos.push(info);
        }
        tops.push(topology::detect_from(&infos, None)?);
        streams.push(first.map(|(_, s)| s).ok_or(Error::MissingRank(0))?);
    }
    let kept: Vec<(usize, Stream)> = streams.into_iter().enumerate().collect();
    let folded = fold_all(&kept);
    let last = inputs.len() - 1;
    if let Some((k, i)) = items_differ(&folded, &kept) {
        let text = |it: Option<&Item>, s: &Stream| match it {
            Some(Item::One(i)) => event_text(&s.events[*i]),
            Some(Item::Run {
                start, count, len, ..
            }) => {
                let calls = if *len == 1 {
                    String::new()
                } else {
                    format!(" blocks of {len} calls from")
                };
                format!("a loop of {count}{calls} {}", event_text(&s.events[*start]))
            }
            None => "the end of the sequence".into(),
        };
        return Err(Error::Mismatch(Box::new(crate::Mismatch {
            class: format!("all ranks, with plugin {:?}", plugin.name()),
            index: i,
            a: inputs[k].name.clone(),
            ea: text(folded[k].get(i), &kept[k].1),
            b: inputs[last].name.clone(),
            eb: text(folded[last].get(i), &kept[last].1),
        })));
    }
    // Counts and loop lengths are fitted in the plugin's process grid (NPB
    // CG's nprows x npcols), or in P.
    let grid = |p: u64| plugin.grid(p).unwrap_or_else(|| vec![p]);
    let grids: Vec<Vec<u64>> = sizes.iter().map(|&p| grid(p)).collect();
    let grid_refs: Vec<&[u64]> = grids.iter().map(Vec::as_slice).collect();
    let dims = grid(n);
    let wraps = vec![false; dims.len()];
    let mut report = Report::new(tops, dims.clone(), wraps);
    report.classes.push((
        format!("all ranks, with plugin {:?}", plugin.name()),
        RankList::range(0, n as u32),
    ));
    let mut seen = BTreeSet::new();
    let cname = report.classes[0].0.clone();
    let labels = site_labels(inputs);
    let mut fitter = Fitter::new(
        &cname,
        &grid_refs,
        &dims,
        &mut report.fields,
        &mut seen,
        &labels,
    );
    let ps: Vec<f64> = sizes.iter().map(|&s| s as f64).chain([n as f64]).collect();
    let mut tally = HashMap::new();
    let items = fit_items(
        &mut fitter,
        &kept,
        &folded,
        &ps,
        opts.timing,
        &mut tally,
        &mut report.timing,
    )?;
    // Every rank of the target, one by one, merged as a traced run would be.
    let mut traces: Vec<MergedTrace> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let (t, events) = synthesize(r, &items, |t, params| {
            concretize(params, &t.shape, r, n, plugin)
        })?;
        report.events += events.len() as u64;
        traces.push(MergedTrace::from_rank(&t));
    }
    let mut trace = compress::merge::merge_binomial(traces, MergedTrace::merge)
        .ok_or_else(|| Error::Internal("no ranks".into()))?;
    trace.normalize();
    let unverified = unverified_fields(&report, opts)?;
    let mut methods: Vec<(String, usize)> = tally.into_iter().collect();
    methods.sort();
    report.methods = methods;
    let mut meta = target_meta(inputs, sizes, n, opts.timing);
    meta.unverified = unverified;
    if opts.ignore_sites {
        meta.sites.clear();
    }
    let file = TraceFile {
        meta,
        trace,
        timelines: Vec::new(),
        series: Vec::new(),
    };
    Ok(Extrapolated { file, report })
}
