//! Extrapolation through a plugin: peers, and the tags and counts its field
//! patterns name, as symbols (pattern, step).

use super::*;

/// Symbolic peers are stored at and above this value (real peer offsets
/// are below 2^31): pattern `p` at step `k` is `SYMBOL + (p << 20) + k`.
pub(super) const SYMBOL: i64 = 1 << 40;
/// The step's bits of a symbol.
pub(super) const STEP_MASK: i64 = (1 << 20) - 1;

/// The positions of the peers a plugin may name in an event's encoded
/// parameters: the `*.peer` fields (and the `*.local` ones on
/// `MPI_COMM_WORLD`, or wherever they are the same offsets: NPB BT's
/// duplicates of the world), and the relative source of every
/// matched-message entry.
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
                || (n.ends_with(".local")
                    && j > 0
                    && real(j - 1)
                    && (world || params.get(j) == params.get(j - 1)))
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

/// The positions of the tags and counts a plugin's field patterns may name
/// in an event's encoded parameters (not `MPI_ANY_TAG`).
fn field_positions(shape: &Shape, params: &[i64]) -> Vec<(usize, Field)> {
    let (nfixed, _) = shape.layout();
    shape
        .param_names()
        .iter()
        .take(nfixed)
        .enumerate()
        .filter_map(|(j, n)| Some((j, Field::of(n)?)))
        .filter(|&(j, _)| params.get(j).is_some_and(|&v| v != codec::TAG_ANY))
        .collect()
}

/// The function of each call site (the first word of its label), for
/// field patterns scoped to functions.
pub(super) fn site_functions(meta: &Meta) -> HashMap<u64, String> {
    meta.sites
        .iter()
        .map(|(h, label)| (*h, label.split(' ').next().unwrap_or("").to_string()))
        .collect()
}

/// The symbol of pattern `p` at step `k`, if the step fits its bits.
fn symbol(p: u32, k: i64) -> Option<i64> {
    (0..=STEP_MASK)
        .contains(&k)
        .then(|| SYMBOL + (i64::from(p) << 20) + k)
}

/// The pattern and step of a symbol.
fn unsymbol(v: i64) -> (u32, i64) {
    (((v - SYMBOL) >> 20) as u32, (v - SYMBOL) & STEP_MASK)
}

/// Gives every tag and count that the plugin's field patterns name its
/// symbol, jointly over all ranks of one input (`streams`, rank by rank, of
/// `size` ranks): an occurrence takes the pattern and step that explain the
/// value of every rank at once, because one rank's value may fit several
/// steps (NPB SP's count is the same at every interior stage of a rank)
/// while all ranks' values fit only the stage they all are at. Among steps
/// that all fit, the one after (or before) the same call's previous step
/// is taken, so that a sweep's steps stay a run. `functions` gives each
/// call site's function.
fn symbolize_fields(
    streams: &mut [Stream],
    size: u64,
    plugin: &dyn Plugin,
    functions: &HashMap<u64, String>,
) {
    let Some(first) = streams.first() else {
        return;
    };
    let n = first.events.len();
    // Each pattern's value per (rank, step), computed once.
    let mut table: HashMap<(u32, i64), Vec<Option<i64>>> = HashMap::new();
    let mut last: HashMap<(u64, usize), i64> = HashMap::new();
    // The patterns that may name each call site's field, asked once.
    let mut candidates: HashMap<(u64, Field), Vec<(u32, i64)>> = HashMap::new();
    for i in 0..n {
        let shape = streams[0].events[i].shape;
        if streams
            .iter()
            .any(|st| st.events.get(i).is_none_or(|e| e.shape != shape))
        {
            // The ranks differ here; the comparison that follows says so.
            continue;
        }
        for (j, field) in field_positions(&shape, &streams[0].events[i].params) {
            let found = candidates
                .entry((shape.site(), field))
                .or_insert_with(|| {
                    let function = functions.get(&shape.site()).map_or("", String::as_str);
                    plugin.field_patterns(field, function, size)
                })
                .iter()
                .find_map(|&(p, steps)| {
                    let fits: Vec<i64> = (0..steps)
                        .filter(|&k| {
                            let vals = table.entry((p, k)).or_insert_with(|| {
                                (0..size)
                                    .map(|r| plugin.concrete_field(r, size, p, k))
                                    .collect()
                            });
                            streams
                                .iter()
                                .zip(vals.iter())
                                .all(|(st, v)| st.events[i].params.get(j).copied() == *v)
                        })
                        .collect();
                    let prev = last.get(&(shape.site(), j)).copied();
                    let k = prev
                        .map(|k| k + 1)
                        .filter(|k| fits.contains(k))
                        .or(prev.map(|k| k - 1).filter(|k| fits.contains(k)))
                        .or(fits.first().copied())?;
                    Some((p, k))
                });
            let Some(sym) = found.and_then(|(p, k)| {
                last.insert((shape.site(), j), k);
                symbol(p, k)
            }) else {
                continue;
            };
            for st in streams.iter_mut() {
                st.events[i].params[j] = sym;
            }
        }
    }
}

/// One rank's answers from the plugin, each computed once: a spec
/// evaluates every `let` per question, and a rank asks the same questions
/// at every time step (NPB BT at 4,096 ranks spent most of its time there).
struct Memo<'a> {
    plugin: &'a dyn Plugin,
    rank: u64,
    size: u64,
    symbols: HashMap<u64, Option<(u32, i64)>>,
    peers: HashMap<(u32, i64), Option<u64>>,
    fields: HashMap<(u32, i64), Option<i64>>,
}

impl<'a> Memo<'a> {
    fn new(plugin: &'a dyn Plugin, rank: u64, size: u64) -> Memo<'a> {
        Memo {
            plugin,
            rank,
            size,
            symbols: HashMap::new(),
            peers: HashMap::new(),
            fields: HashMap::new(),
        }
    }

    fn symbolic(&mut self, peer: u64) -> Option<(u32, i64)> {
        let (pl, r, n) = (self.plugin, self.rank, self.size);
        *self
            .symbols
            .entry(peer)
            .or_insert_with(|| pl.symbolic(r, n, peer))
    }

    fn concrete(&mut self, p: u32, k: i64) -> Option<u64> {
        let (pl, r, n) = (self.plugin, self.rank, self.size);
        *self
            .peers
            .entry((p, k))
            .or_insert_with(|| pl.concrete(r, n, p, k))
    }

    fn concrete_field(&mut self, p: u32, k: i64) -> Option<i64> {
        let (pl, r, n) = (self.plugin, self.rank, self.size);
        *self
            .fields
            .entry((p, k))
            .or_insert_with(|| pl.concrete_field(r, n, p, k))
    }
}

/// Replaces every peer the plugin can name by its symbol.
fn symbolize_peers(st: &mut Stream, rank: u64, size: u64, plugin: &dyn Plugin) {
    let mut memo = Memo::new(plugin, rank, size);
    for e in &mut st.events {
        for j in peer_positions(&e.shape, &e.params) {
            let Some(v) = e.params.get_mut(j) else {
                continue;
            };
            if *v == codec::PEER_ANY || *v == codec::PEER_NULL {
                continue;
            }
            let peer = rank as i64 + *v;
            if let Some(s) = u64::try_from(peer)
                .ok()
                .and_then(|q| memo.symbolic(q))
                .and_then(|(p, k)| symbol(p, k))
            {
                *v = s;
            }
        }
    }
}

/// Rank 0's split colours and keys in the form rank 1 records them: a
/// colour of 0 on `MPI_COMM_WORLD` is both 0 and rank 0's own rank, which
/// the trace stores as [`codec::RANK_SELF`] ("the caller's rank"), while
/// every other rank records a plain 0 (NPB BT's `color = 0`). Returns
/// whether anything changed.
fn agree_with_rank_one(st0: &mut Stream, st1: &Stream) -> bool {
    let mut changed = false;
    for (a, b) in st0.events.iter_mut().zip(&st1.events) {
        if a.shape != b.shape || a.params.first() != Some(&0) {
            continue;
        }
        for (x, &y) in a.params.iter_mut().zip(&b.params) {
            if *x == codec::RANK_SELF && y == 0 {
                *x = 0;
                changed = true;
            }
        }
    }
    changed
}

/// Turns symbols back into peer offsets, tags and counts for `rank` of
/// `size` ranks.
fn concretize(params: &mut [i64], shape: &Shape, memo: &mut Memo) -> Result<(), Error> {
    let (rank, size, name) = (memo.rank, memo.size, memo.plugin.name());
    for (j, field) in field_positions(shape, params) {
        if params[j] < SYMBOL {
            continue;
        }
        let (p, k) = unsymbol(params[j]);
        params[j] = memo
            .concrete_field(p, k)
            .filter(|&v| v >= 0 && (field == Field::Count || v <= i64::from(i32::MAX)))
            .ok_or_else(|| {
                Error::Unrealisable(format!(
                    "plugin {:?}: field pattern {} at step {k} gives rank {rank} of {size} no \
                     valid {} (is {size} a size the pattern allows?)",
                    name,
                    p + 1,
                    match field {
                        Field::Tag => "tag",
                        Field::Count => "count",
                    }
                ))
            })?;
    }
    for j in peer_positions(shape, params) {
        let Some(v) = params.get_mut(j) else { continue };
        if *v < SYMBOL {
            continue;
        }
        let (p, k) = unsymbol(*v);
        let peer = memo.concrete(p, k).ok_or_else(|| {
            Error::Unrealisable(format!(
                "plugin {:?}: pattern {} at step {k} gives rank {rank} of {size} no peer (is \
                 {size} a size the pattern allows?)",
                name,
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
    if opts.lossy || opts.snippet.is_some() || opts.dims.is_some() {
        return Err(Error::BadDims(
            "a plugin names every peer itself: it does not combine with --lossy, --snippet or \
             --dims"
                .into(),
        ));
    }
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
            why: "a plugin's loops change their length with the size, and two sizes fit any \
                  one-term law"
                .into(),
        });
    }
    let mut streams: Vec<Stream> = Vec::with_capacity(inputs.len());
    let mut tops = Vec::with_capacity(inputs.len());
    for (inp, &p) in inputs.iter().zip(sizes) {
        let (stream, top) = symbolic_stream(inp, p, opts, plugin)?;
        tops.push(top);
        streams.push(stream);
    }
    let kept: Vec<(usize, Stream)> = streams.into_iter().enumerate().collect();
    let folded = fold_symbolic(inputs, &kept, plugin)?;
    let (mut report, tally, items) =
        fit_symbolic(inputs, opts, plugin, sizes, tops, &kept, &folded)?;
    let (mut trace, events) = generate_ranks(&items, n, plugin)?;
    report.events += events;
    trace.normalize();
    let unverified = unverified_fields(&report, opts)?;
    Ok(finish(
        inputs, sizes, n, opts, report, tally, unverified, trace,
    ))
}

/// The name of the one class of the plugin path, for the report and
/// messages: every rank, since the plugin's symbols make them alike.
fn plugin_class(plugin: &dyn Plugin) -> String {
    format!("all ranks, with plugin {:?}", plugin.name())
}

/// One input of `p` ranks in symbols: rank 0's events, once every rank is
/// shown to record the same after the plugin named its peers (and the
/// tags and counts its field patterns name), and the topology of the
/// symbolic ranks. Rank 0 stands for every rank on this path, so a rank
/// that differs in symbols is the error.
fn symbolic_stream(
    inp: &Input,
    p: u64,
    opts: &Options,
    plugin: &dyn Plugin,
) -> Result<(Stream, Topology), Error> {
    let mut first: Option<(u64, Stream)> = None;
    let mut infos = Vec::with_capacity(p as usize);
    // Field patterns need every rank's events at once; peers alone
    // are named one rank at a time, so memory stays one rank's.
    let mut all = Vec::new();
    if plugin.names_fields() {
        all = (0..p)
            .map(|r| stream(&inp.file, r, opts.ignore_sites))
            .collect::<Result<Vec<_>, _>>()?;
        symbolize_fields(&mut all, p, plugin, &site_functions(&inp.file.meta));
    }
    let mut all = all.into_iter();
    for r in 0..p {
        let mut st = match all.next() {
            Some(st) => st,
            None => stream(&inp.file, r, opts.ignore_sites)?,
        };
        symbolize_peers(&mut st, r, p, plugin);
        if r == 1
            && let Some((h, s0)) = &mut first
            && agree_with_rank_one(s0, &st)
        {
            infos[0] = stream_info(s0);
            *h = infos[0].stream;
        }
        let info = stream_info(&st);
        if let Some((h, s0)) = &first
            && *h != info.stream
        {
            return Err(inhomogeneous_symbols(inp, plugin, s0, &st, r));
        }
        if first.is_none() {
            first = Some((info.stream, st));
        }
        infos.push(info);
    }
    let top = topology::detect_from(&infos, None)?;
    let stream = first.map(|(_, s)| s).ok_or(Error::MissingRank(0))?;
    Ok((stream, top))
}

/// The error for rank `r` of an input that, in symbols, still records
/// other calls than rank 0 (`s0`): the plugin does not explain this
/// program, and the first event where the two part says where.
fn inhomogeneous_symbols(
    inp: &Input,
    plugin: &dyn Plugin,
    s0: &Stream,
    st: &Stream,
    r: u64,
) -> Error {
    let n = s0.events.len().min(st.events.len());
    let at = (0..n).find(|&i| {
        let (a, b) = (&s0.events[i], &st.events[i]);
        a.shape != b.shape || a.params != b.params
    });
    Error::Inhomogeneous {
        file: inp.name.clone(),
        class: plugin_class(plugin),
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
    }
}

/// The inputs' symbolic sequences folded into items, which must agree
/// item by item (a loop over a pattern's steps may change its count with
/// the size, nothing else may differ); otherwise the first difference is
/// the error, naming each side's item against the largest input's.
fn fold_symbolic(
    inputs: &[Input],
    kept: &[(usize, Stream)],
    plugin: &dyn Plugin,
) -> Result<Vec<Vec<Item>>, Error> {
    let folded = fold_all(kept);
    let last = inputs.len() - 1;
    if let Some((k, i)) = items_differ(&folded, kept) {
        return Err(Error::Mismatch(Box::new(crate::Mismatch {
            class: plugin_class(plugin),
            index: i,
            a: inputs[k].name.clone(),
            ea: item_text(folded[k].get(i), &kept[k].1),
            b: inputs[last].name.clone(),
            eb: item_text(folded[last].get(i), &kept[last].1),
        })));
    }
    Ok(folded)
}

/// An item of a folded sequence in a message: its call, or the loop with
/// its step count and block, or the end of the sequence.
fn item_text(it: Option<&Item>, s: &Stream) -> String {
    match it {
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
    }
}

/// Fits the one class of the plugin path: its report (with the class
/// listed), the timing methods' tally, and the target's items, whose
/// fields still hold symbols. Counts and loop lengths are fitted in the
/// plugin's process grid (NPB CG's nprows x npcols), or in P.
fn fit_symbolic(
    inputs: &[Input],
    opts: &Options,
    plugin: &dyn Plugin,
    sizes: &[u64],
    tops: Vec<Topology>,
    kept: &[(usize, Stream)],
    folded: &[Vec<Item>],
) -> Result<(Report, Tally, Vec<Target>), Error> {
    let n = opts.ranks;
    let grid = |p: u64| plugin.grid(p).unwrap_or_else(|| vec![p]);
    let grids: Vec<Vec<u64>> = sizes.iter().map(|&p| grid(p)).collect();
    let grid_refs: Vec<&[u64]> = grids.iter().map(Vec::as_slice).collect();
    let dims = grid(n);
    let wraps = vec![false; dims.len()];
    let mut report = Report::new(tops, dims.clone(), wraps);
    report.grids = grids.clone();
    report
        .classes
        .push((plugin_class(plugin), RankList::range(0, n as u32)));
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
        kept,
        folded,
        &ps,
        opts.timing,
        &mut tally,
        &mut report.timing,
    )?;
    Ok((report, tally, items))
}

/// Every rank of the target, one by one, merged as a traced run would be:
/// a plugin's peers follow no position class, so no rank can stand for
/// others, and each rank's symbols become its own peers, tags and counts.
/// Returns the merged trace and the events of all ranks.
fn generate_ranks(
    items: &[Target],
    n: u64,
    plugin: &dyn Plugin,
) -> Result<(MergedTrace, u64), Error> {
    let mut traces: Vec<MergedTrace> = Vec::with_capacity(n as usize);
    let mut total = 0;
    for r in 0..n {
        let mut memo = Memo::new(plugin, r, n);
        let (t, events) = synthesize(r, items, |t, params| {
            concretize(params, &t.shape, &mut memo)
        })?;
        total += events.len() as u64;
        traces.push(compress::merge::from_rank(&t));
    }
    let trace = compress::merge::merge_binomial(traces, compress::merge::traces)
        .ok_or_else(|| Error::Internal("no ranks".into()))?;
    Ok((trace, total))
}
