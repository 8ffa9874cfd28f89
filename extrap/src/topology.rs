//! Communication topology detection (Wu and Mueller 2012 §3.1).
//!
//! The paper scans the ranks in row-major order for repeating adjacency
//! patterns between *critical nodes* (corners and boundaries) and derives
//! the dimension sizes from their distances. We search the same space
//! directly: every way of writing the rank count as a row-major grid of one
//! to three dimensions is a candidate, each rank's peers become coordinate
//! displacements in it (a displacement across the grid is a wrap-around),
//! and a candidate explains the trace when every rank's *position class*
//! (at the low boundary, in the interior, or at the high boundary of each
//! dimension, as far as the stencil reaches) determines its endpoint
//! pattern. Among the candidates that explain it, the one with the most
//! local communication (smallest total reach) wins, then the one with
//! fewer dimensions, then the one that `MPI_Cart_create` recorded. The
//! result is the same as the paper's for its stencils, and it also decides
//! ties the scan cannot (a ring is a 1D grid, not a 2D one).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};

use trace::{MergedTrace, Op, Peer, RankList, codec};

use crate::Error;

/// Where a coordinate lies along one dimension, as far as communication can
/// tell: `Lo(k)` is `k` cells from the low boundary, `Hi(k)` `k` cells from
/// the high one, and `Mid(c)` further in than the boundaries reach, with
/// the coordinate's residue `c` modulo the layout's period (0 when the
/// period is 1, as for every stencil).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pos {
    /// `k` cells from the low boundary.
    Lo(u32),
    /// In the interior, with this residue.
    Mid(u32),
    /// `k` cells from the high boundary.
    Hi(u32),
}

/// How the ranks of a grid split into position classes: per dimension, how
/// many cells at the low and at the high boundary are classes of their own,
/// and the period of the interior (ranks whose behaviour repeats every
/// `period` cells, such as counts of `rank % 3 + 1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Boundary cells at the low end, per dimension.
    pub lo: Vec<u32>,
    /// Boundary cells at the high end, per dimension.
    pub hi: Vec<u32>,
    /// Period of the interior, per dimension (at least 1).
    pub period: Vec<u32>,
}

impl Layout {
    /// The stencil's layout: boundaries as wide as it reaches, period 1.
    pub fn from_reach(reach: &[u32]) -> Layout {
        Layout {
            lo: reach.to_vec(),
            hi: reach.to_vec(),
            period: vec![1; reach.len()],
        }
    }

    /// The class of coordinate `x` of dimension `i` (size `n`).
    pub fn pos(&self, i: usize, x: u64, n: u64) -> Pos {
        let (lo, hi, m) = (
            u64::from(self.lo[i]),
            u64::from(self.hi[i]),
            u64::from(self.period[i].max(1)),
        );
        if x < lo {
            Pos::Lo(x as u32)
        } else if x + hi >= n {
            Pos::Hi((n - 1 - x) as u32)
        } else {
            Pos::Mid((x % m) as u32)
        }
    }

    /// The coordinates of class `p` of dimension `i` in a dimension of
    /// size `n`: first, count and step (`None` if it does not occur).
    pub fn span(&self, i: usize, p: Pos, n: u64) -> Option<(u64, u64, u64)> {
        let (lo, hi, m) = (
            u64::from(self.lo[i]),
            u64::from(self.hi[i]),
            u64::from(self.period[i].max(1)),
        );
        let (first, count) = match p {
            Pos::Lo(k) => (u64::from(k), 1),
            Pos::Hi(k) => (n.checked_sub(1 + u64::from(k))?, 1),
            Pos::Mid(c) => {
                let c = u64::from(c);
                let first = lo + (c + m - lo % m) % m;
                let last = n.checked_sub(1 + hi)?;
                if first > last {
                    return None;
                }
                (first, (last - first) / m + 1)
            }
        };
        (first < n && self.pos(i, first, n) == p).then_some((first, count, m))
    }

    /// Every class of dimension `i` at size `n`, in coordinate order of
    /// their first cell.
    pub fn positions(&self, i: usize, n: u64) -> Vec<Pos> {
        let mut v: Vec<Pos> = (0..self.lo[i]).map(Pos::Lo).collect();
        v.extend((0..self.period[i].max(1)).map(Pos::Mid));
        v.extend((0..self.hi[i]).rev().map(Pos::Hi));
        v.retain(|&p| self.span(i, p, n).is_some());
        v.sort_by_key(|&p| self.span(i, p, n).map_or(0, |s| s.0));
        v
    }

    /// The class of every dimension of `rank` in a grid.
    pub fn class_of(&self, rank: u64, dims: &[u64]) -> Vec<Pos> {
        coords(rank, dims)
            .iter()
            .enumerate()
            .map(|(i, &x)| self.pos(i, x, dims[i]))
            .collect()
    }

    /// Whether a grid is too small to hold every class (some input may
    /// then differ from the larger ones).
    pub fn degenerate(&self, dims: &[u64]) -> bool {
        dims.iter().enumerate().any(|(i, &n)| {
            n < u64::from(self.lo[i]) + u64::from(self.hi[i]) + u64::from(self.period[i].max(1))
        })
    }
}

/// What one rank's calls say about it.
#[derive(Clone, Debug, Default)]
pub(crate) struct RankInfo {
    /// World-rank offsets of its point-to-point peers.
    pub peers: BTreeSet<i64>,
    /// The same offsets with the call site that names each: which calls
    /// exchange along which dimension, so that a smaller grid of fewer
    /// dimensions can be placed among a larger one's ([`lift`]).
    pub site_peers: BTreeSet<(u64, i64)>,
    /// Hash of its whole event sequence in location-independent form.
    pub stream: u64,
}

/// Reads every rank's peers and event-sequence hash.
pub(crate) fn rank_infos(trace: &MergedTrace) -> Result<(Vec<RankInfo>, Option<Vec<u64>>), Error> {
    let p = trace.ranks().max().map_or(0, |m| m + 1);
    let mut cart = None;
    let mut infos = Vec::with_capacity(p as usize);
    let mut buf = Vec::new();
    for r in 0..p {
        let mut info = RankInfo::default();
        if !trace.ranks().contains(r) {
            return Err(Error::MissingRank(r));
        }
        let t = trace
            .rank_trace(r)
            .map_err(|e| Error::Trace(e.to_string()))?;
        let mut h = DefaultHasher::new();
        // This rank's Cartesian communicators over the whole job, by id:
        // a neighbourhood collective on one exchanges with the grid
        // neighbours, the peers a point-to-point stencil names.
        let mut grids: BTreeMap<u32, (Vec<u64>, Vec<bool>)> = BTreeMap::new();
        for ev in t.expand() {
            codec::encode(&ev, r as i32, &mut buf).hash(&mut h);
            buf.hash(&mut h);
            for peer in [ev.send.map(|t| t.peer), ev.recv.map(|t| t.peer)]
                .into_iter()
                .flatten()
            {
                if let Peer::Rank { world, .. } = peer {
                    let offset = i64::from(world) - i64::from(r);
                    info.peers.insert(offset);
                    info.site_peers.insert((ev.site, offset));
                }
            }
            if ev.op == Op::CartCreate
                && let Some(c) = &ev.create
                && c.dims.iter().product::<i32>() as u64 == u64::from(p)
            {
                let dims: Vec<u64> = c.dims.iter().map(|&d| d.max(0) as u64).collect();
                if cart.is_none() {
                    cart = Some(dims.clone());
                }
                if let Some(id) = c.new {
                    let periodic = (0..dims.len())
                        .map(|i| c.periods.get(i).is_some_and(|&x| x != 0))
                        .collect();
                    grids.insert(id.0, (dims, periodic));
                }
            }
            if ev.op.is_neighborhood()
                && let Some((dims, periodic)) = grids.get(&ev.comm.0)
            {
                info.peers
                    .extend(grid_neighbours(u64::from(r), dims, periodic));
            }
        }
        info.stream = h.finish();
        infos.push(info);
    }
    Ok((infos, cart))
}

/// The rank offsets of `rank`'s neighbours in a row-major grid: one step
/// down and up each dimension, wrapping where it is periodic and left out
/// past an edge where it is not (`MPI_PROC_NULL` in `MPI_Cart_shift`).
fn grid_neighbours(rank: u64, dims: &[u64], periodic: &[bool]) -> Vec<i64> {
    let at = coords(rank, dims);
    let mut out = Vec::new();
    for (i, &n) in dims.iter().enumerate() {
        for step in [-1i64, 1] {
            let x = at[i] as i64 + step;
            let x = if (0..n as i64).contains(&x) {
                x
            } else if periodic.get(i).copied().unwrap_or(false) {
                x.rem_euclid(n as i64)
            } else {
                continue;
            };
            let mut c = at.clone();
            c[i] = x as u64;
            out.push(rank_at(&c, dims) as i64 - rank as i64);
        }
    }
    out
}

/// A group of ranks with the same endpoint pattern (Wu and Mueller 2012 Fig. 3).
#[derive(Clone, Debug)]
pub struct Group {
    /// The ranks.
    pub ranks: RankList,
    /// Their peers as coordinate displacements, one per peer, each marked
    /// when it wraps around.
    pub peers: Vec<(Vec<i64>, bool)>,
}

/// A detected communication topology.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Sizes of the dimensions, slowest first (row-major: the last one is
    /// contiguous in rank order).
    pub dims: Vec<u64>,
    /// Whether communication wraps around in each dimension (a torus).
    pub wraps: Vec<bool>,
    /// How far the stencil reaches in each dimension: the widest
    /// displacement, which is also the width of the boundary classes.
    pub reach: Vec<u32>,
    /// Ranks grouped by endpoint pattern.
    pub groups: Vec<Group>,
    /// The corners: ranks at a boundary of every dimension the stencil
    /// reaches into.
    pub critical: Vec<u64>,
    /// The grid `MPI_Cart_create` recorded, if any.
    pub cart: Option<Vec<u64>>,
}

impl Topology {
    /// Number of ranks.
    pub fn size(&self) -> u64 {
        self.dims.iter().product()
    }

    /// The position class of every dimension of `rank`.
    pub fn class_of(&self, rank: u64) -> Vec<Pos> {
        Layout::from_reach(&self.reach).class_of(rank, &self.dims)
    }

    /// Whether the grid is the same in every dimension (a square or cube),
    /// in which case growth keeps it so.
    pub fn is_hypercube(&self) -> bool {
        self.dims.windows(2).all(|w| w[0] == w[1])
    }
}

/// The coordinates of `rank` in a row-major grid.
pub fn coords(rank: u64, dims: &[u64]) -> Vec<u64> {
    let mut c = vec![0; dims.len()];
    let mut r = rank;
    for (i, &n) in dims.iter().enumerate().rev() {
        c[i] = r % n;
        r /= n;
    }
    c
}

/// The rank at `coords` of a row-major grid.
pub fn rank_at(coords: &[u64], dims: &[u64]) -> u64 {
    coords.iter().zip(dims).fold(0, |acc, (&c, &n)| acc * n + c)
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        let kind: Vec<&str> = self
            .wraps
            .iter()
            .map(|&w| if w { "torus" } else { "mesh" })
            .collect();
        writeln!(
            f,
            "{}D grid {} ({} ranks, row-major, last dimension contiguous)",
            self.dims.len(),
            dims.join("x"),
            self.size()
        )?;
        writeln!(f, "  dimensions:   {}", kind.join(" x "))?;
        let reach: Vec<String> = self.reach.iter().map(u32::to_string).collect();
        writeln!(
            f,
            "  reach:        {} (boundary width per dimension)",
            reach.join(" x ")
        )?;
        if let Some(c) = &self.cart {
            let c: Vec<String> = c.iter().map(u64::to_string).collect();
            let agree = if *c == dims { "agrees" } else { "differs" };
            writeln!(f, "  Cart_create:  {} ({agree})", c.join("x"))?;
        }
        let crit: Vec<String> = self.critical.iter().map(u64::to_string).collect();
        writeln!(f, "  critical:     {}", crit.join(" "))?;
        writeln!(f, "  groups:       {}", self.groups.len())?;
        let letter = |i: usize| char::from_u32(u32::from(b'A') + (i % 26) as u32).unwrap_or('?');
        for (i, g) in self.groups.iter().enumerate() {
            write!(f, "    {} ", letter(i))?;
            let peers: Vec<String> = g
                .peers
                .iter()
                .map(|(d, w)| {
                    let d: Vec<String> = d.iter().map(|x| format!("{x:+}")).collect();
                    format!("({}){}", d.join(","), if *w { "w" } else { "" })
                })
                .collect();
            let peers = if peers.is_empty() {
                "no point-to-point peers".to_string()
            } else {
                peers.join(" ")
            };
            writeln!(
                f,
                "{:<28} {} rank(s): {peers}",
                g.ranks.to_string(),
                g.ranks.len()
            )?;
        }
        // The groups in row-major order (Wu and Mueller 2012 Fig. 3: each row repeats
        // the pattern between its critical nodes), for grids small enough
        // to read.
        let size = self.size();
        let width = self.dims.last().copied().unwrap_or(1);
        if size <= 1024 && width <= 64 && self.groups.len() <= 26 {
            writeln!(
                f,
                "  row-major map (one line per row of the last dimension):"
            )?;
            for row in 0..size / width {
                let line: String = (row * width..(row + 1) * width)
                    .map(|r| {
                        let g = self.groups.iter().position(|g| g.ranks.contains(r as u32));
                        g.map_or('.', letter)
                    })
                    .collect();
                writeln!(f, "    {line}")?;
            }
        }
        Ok(())
    }
}

/// Every ordered way of writing `p` as a product of `d` factors >= 2.
fn factorizations(p: u64, d: usize) -> Vec<Vec<u64>> {
    if d == 1 {
        return vec![vec![p]];
    }
    (2..=p / 2)
        .filter(|f| p.is_multiple_of(*f))
        .flat_map(|f| {
            factorizations(p / f, d - 1)
                .into_iter()
                .filter(|r| r[0] >= 2)
                .map(move |mut r| {
                    r.insert(0, f);
                    r
                })
        })
        .collect()
}

/// A peer offset as a displacement in the grid: per dimension the shorter
/// way, and whether that way wraps around.
fn displacement(rank: u64, offset: i64, dims: &[u64]) -> Option<(Vec<i64>, Vec<bool>)> {
    let p: u64 = dims.iter().product();
    let q = u64::try_from(rank as i64 + offset)
        .ok()
        .filter(|&q| q < p)?;
    let (a, b) = (coords(rank, dims), coords(q, dims));
    let mut disp = Vec::with_capacity(dims.len());
    let mut wrap = Vec::with_capacity(dims.len());
    for i in 0..dims.len() {
        let n = dims[i] as i64;
        let d = b[i] as i64 - a[i] as i64;
        let alt = if d > 0 { d - n } else { d + n };
        if alt.abs() < d.abs() {
            disp.push(alt);
            wrap.push(true);
        } else {
            disp.push(d);
            wrap.push(false);
        }
    }
    Some((disp, wrap))
}

/// Which dimensions of `dims` each call site's exchanges move along, over
/// every rank of `infos`.
fn site_dims(infos: &[RankInfo], dims: &[u64]) -> BTreeMap<u64, BTreeSet<usize>> {
    let mut out: BTreeMap<u64, BTreeSet<usize>> = BTreeMap::new();
    for (r, info) in infos.iter().enumerate() {
        for &(site, offset) in &info.site_peers {
            if let Some((disp, _)) = displacement(r as u64, offset, dims) {
                let along = out.entry(site).or_default();
                along.extend(
                    disp.iter()
                        .enumerate()
                        .filter(|(_, d)| **d != 0)
                        .map(|(i, _)| i),
                );
            }
        }
    }
    out
}

/// A grid of fewer dimensions than `like`'s, read as `like`'s number of
/// dimensions with the missing ones of size 1: NPB LU's 2 ranks are a 1x2
/// grid among 2x2 and 2x4, whose peers alone show a ring of 2. Where the
/// size-1 dimensions go is read from the call sites: each of `low`'s sites
/// must exchange along the same dimensions as in `like` (the x exchange
/// stays the x exchange). Rank numbers are unchanged (size-1 dimensions
/// do not move a row-major order). `None` unless exactly one placement
/// agrees with `like` on at least one shared site.
pub(crate) fn lift(
    low: &Topology,
    low_infos: &[RankInfo],
    like: &Topology,
    like_infos: &[RankInfo],
) -> Option<Topology> {
    let d = like.dims.len();
    let k = low.dims.len();
    if k >= d || low.cart.is_some() {
        return None;
    }
    let want = site_dims(like_infos, &like.dims);
    let mut found: Option<Vec<usize>> = None;
    // Every order-keeping placement of low's k dimensions among d.
    for mask in 0u32..(1 << d) {
        if mask.count_ones() as usize != k {
            continue;
        }
        let at: Vec<usize> = (0..d).filter(|i| mask & (1 << i) != 0).collect();
        let mut dims = vec![1u64; d];
        for (j, &i) in at.iter().enumerate() {
            dims[i] = low.dims[j];
        }
        let have = site_dims(low_infos, &dims);
        let shared: Vec<_> = have.keys().filter(|s| want.contains_key(s)).collect();
        if !shared.is_empty() && shared.iter().all(|s| have[*s] == want[*s]) {
            if found.is_some() {
                return None;
            }
            found = Some(at);
        }
    }
    let at = found?;
    let mut t = Topology {
        dims: vec![1; d],
        wraps: vec![false; d],
        reach: vec![0; d],
        groups: low.groups.clone(),
        critical: low.critical.clone(),
        cart: None,
    };
    for (j, &i) in at.iter().enumerate() {
        t.dims[i] = low.dims[j];
        t.wraps[i] = low.wraps[j];
        t.reach[i] = low.reach[j];
    }
    Some(t)
}

/// Detects the topology of a trace from its ranks' peers.
pub fn detect(trace: &MergedTrace) -> Result<Topology, Error> {
    let (infos, cart) = rank_infos(trace)?;
    detect_from(&infos, cart)
}

pub(crate) fn detect_from(infos: &[RankInfo], cart: Option<Vec<u64>>) -> Result<Topology, Error> {
    detect_with(infos, cart, 0.0)
}

/// [`detect_from`] for lossy extrapolation: a peer displacement that fewer
/// than `min_share` of the ranks have is a minor pattern and is left out
/// (MG's distance-2 exchanges on a few ranks).
pub(crate) fn detect_with(
    infos: &[RankInfo],
    cart: Option<Vec<u64>>,
    min_share: f64,
) -> Result<Topology, Error> {
    let p = infos.len() as u64;
    if p == 0 {
        return Err(Error::MissingRank(0));
    }
    let mut best: Option<((u64, usize, usize, bool), Topology)> = None;
    // Why the grid a reader would expect fails: the Cartesian
    // communicator's, else the most balanced of the most dimensions.
    let mut why: Option<(Vec<u64>, String)> = None;
    let mut why_key = (true, usize::MAX, u64::MAX);
    for d in 1..=3usize {
        for dims in factorizations(p, d) {
            let (t, directions) = match explain(infos, &dims, min_share) {
                Ok(x) => x,
                Err(reason) => {
                    let spread = dims.iter().max().unwrap_or(&1) / dims.iter().min().unwrap_or(&1);
                    let key = (cart.as_ref() != Some(&dims), 3 - d, spread);
                    if why.is_none() || key < why_key {
                        why_key = key;
                        why = Some((dims, reason));
                    }
                    continue;
                }
            };
            let score = t.reach.iter().map(|&b| u64::from(b)).sum::<u64>();
            let not_cart = cart.as_ref() != Some(&dims);
            let key = (score, d, directions, not_cart);
            if best.as_ref().is_none_or(|(k, _)| key < *k) {
                best = Some((key, t));
            }
        }
    }
    let (_, mut t) = best.ok_or_else(|| {
        let (grid, reason) = why.map_or_else(
            || ("-".to_string(), "no factorisation".to_string()),
            |(dims, r)| {
                let g: Vec<String> = dims.iter().map(u64::to_string).collect();
                (g.join("x"), r)
            },
        );
        Error::NoTopology { grid, reason }
    })?;
    t.cart = cart;
    Ok(t)
}

/// The topology `dims` gives the ranks, if their position classes decide
/// their endpoint patterns (leaving out displacements that fewer than
/// `min_share` of the ranks have), and how many distinct displacements
/// its ranks' peers make. A grid whose every dimension is at most
/// `2 * reach + 1` wide has one rank per class and so explains any
/// pattern: the true grid is then the one where each peer is the same
/// step for every rank (6 displacements for a 7-point stencil), where a
/// grid read in the wrong order turns one step into several (12 ranks
/// numbered x fastest over 3x2x2, read as row-major 3x2x2 instead of
/// 2x2x3).
///
/// When `dims` does not explain them, why not, in words: the first pair of
/// ranks of one position class that talk to different peers, or a reach
/// as wide as the grid.
fn explain(infos: &[RankInfo], dims: &[u64], min_share: f64) -> Result<(Topology, usize), String> {
    let d = dims.len();
    let mut reach = vec![0u32; d];
    let mut wraps = vec![false; d];
    let mut all: Vec<Vec<(Vec<i64>, Vec<bool>)>> = Vec::with_capacity(infos.len());
    let mut share: BTreeMap<Vec<i64>, usize> = BTreeMap::new();
    for (r, info) in infos.iter().enumerate() {
        let mut v = Vec::with_capacity(info.peers.len());
        for &o in &info.peers {
            let dw = displacement(r as u64, o, dims)
                .ok_or_else(|| format!("rank {r}'s peer {} is no rank", r as i64 + o))?;
            *share.entry(dw.0.clone()).or_default() += 1;
            v.push(dw);
        }
        all.push(v);
    }
    let least = min_share * infos.len() as f64;
    let mut patterns: Vec<Vec<(Vec<i64>, bool)>> = Vec::with_capacity(infos.len());
    for v in all {
        let mut pat = Vec::with_capacity(v.len());
        for (disp, wrap) in v {
            if (share[&disp] as f64) < least {
                continue;
            }
            for i in 0..d {
                reach[i] = reach[i].max(disp[i].unsigned_abs() as u32);
                wraps[i] |= wrap[i];
            }
            pat.push((disp, wrap.iter().any(|&w| w)));
        }
        patterns.push(pat);
    }
    // A stencil that reaches as far as the grid is wide has no interior:
    // nothing to extrapolate from.
    if let Some(i) = (0..d).find(|&i| {
        let (n, b) = (dims[i], reach[i]);
        b > 0 && 2 * u64::from(b) >= n && n > 2
    }) {
        return Err(format!(
            "peers {} positions away along a dimension {} ranks wide (dimension {i}, slowest \
             first), so that no rank lies inside it",
            reach[i], dims[i]
        ));
    }
    let text = |pat: &[(Vec<i64>, bool)]| {
        let v: Vec<String> = pat
            .iter()
            .map(|(disp, _)| {
                let c: Vec<String> = disp.iter().map(|x| format!("{x:+}")).collect();
                format!("({})", c.join(","))
            })
            .collect();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(" ")
        }
    };
    let mut by_class: BTreeMap<Vec<Pos>, usize> = BTreeMap::new();
    for (r, pat) in patterns.iter().enumerate() {
        let class = Layout::from_reach(&reach).class_of(r as u64, dims);
        match by_class.get(&class) {
            Some(&first) if patterns[first] != *pat => {
                return Err(format!(
                    "ranks {first} and {r} hold one position but talk to different peers \
                     (displacements per dimension, slowest first: rank {first} {}, rank {r} {})",
                    text(&patterns[first]),
                    text(pat)
                ));
            }
            Some(_) => {}
            None => {
                by_class.insert(class, r);
            }
        }
    }
    let mut groups: BTreeMap<&Vec<(Vec<i64>, bool)>, Vec<u32>> = BTreeMap::new();
    for (r, pat) in patterns.iter().enumerate() {
        groups.entry(pat).or_default().push(r as u32);
    }
    let mut groups: Vec<Group> = groups
        .into_iter()
        .map(|(pat, ranks)| Group {
            ranks: RankList::from_ranks(ranks),
            peers: pat.clone(),
        })
        .collect();
    groups.sort_by_key(|g| g.ranks.min());
    let critical = (0..infos.len() as u64)
        .filter(|&r| {
            Layout::from_reach(&reach)
                .class_of(r, dims)
                .iter()
                .zip(&reach)
                .all(|(c, &b)| b == 0 || !matches!(c, Pos::Mid(_)))
        })
        .filter(|_| reach.iter().any(|&b| b > 0))
        .collect();
    let directions = share.values().filter(|&&n| n as f64 >= least).count();
    Ok((
        Topology {
            dims: dims.to_vec(),
            wraps,
            reach,
            groups,
            critical,
            cart: None,
        },
        directions,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank infos of a row-major stencil with nearest neighbours, the
    /// exchange along dimension `i` made at call site `100 + i`.
    fn stencil(dims: &[u64], torus: bool) -> Vec<RankInfo> {
        let sites: Vec<u64> = (0..dims.len() as u64).map(|i| 100 + i).collect();
        stencil_at(dims, torus, &sites)
    }

    /// [`stencil`] with the exchange along dimension `i` made at call
    /// site `sites[i]`.
    fn stencil_at(dims: &[u64], torus: bool, sites: &[u64]) -> Vec<RankInfo> {
        let p: u64 = dims.iter().product();
        (0..p)
            .map(|r| {
                let c = coords(r, dims);
                let mut peers = BTreeSet::new();
                let mut site_peers = BTreeSet::new();
                for i in 0..dims.len() {
                    for s in [-1i64, 1] {
                        let mut q = c.clone();
                        let x = c[i] as i64 + s;
                        let n = dims[i] as i64;
                        if !(0..n).contains(&x) && !torus {
                            continue;
                        }
                        q[i] = x.rem_euclid(n) as u64;
                        let o = rank_at(&q, dims) as i64 - r as i64;
                        if o != 0 {
                            peers.insert(o);
                            site_peers.insert((sites[i], o));
                        }
                    }
                }
                RankInfo {
                    peers,
                    site_peers,
                    stream: 0,
                }
            })
            .collect()
    }

    /// A 2-rank input of a 2D code is read as 1x2 or 2x1 by which call
    /// site it exchanges at: the x exchange (site 101 in the 2D grids,
    /// the fastest dimension) makes it 1x2, the y exchange 2x1. Without a
    /// site in common, or where a placement cannot be told, it is not
    /// lifted (and the inputs are refused as different grids).
    #[test]
    fn a_smaller_grid_of_fewer_dimensions_is_placed_by_its_call_sites() {
        let like_infos = stencil(&[2, 2], false);
        let like = detect_from(&like_infos, None).unwrap();
        let lifted = |site: u64| {
            let infos = stencil_at(&[2], false, &[site]);
            let low = detect_from(&infos, None).unwrap();
            assert_eq!(low.dims, [2]);
            lift(&low, &infos, &like, &like_infos).map(|t| t.dims)
        };
        assert_eq!(lifted(101), Some(vec![1, 2]));
        assert_eq!(lifted(100), Some(vec![2, 1]));
        assert_eq!(lifted(7), None, "no call site in common");
        // A 2x2x2 grid read by a 4-rank input exchanging along y and x.
        let cube = stencil(&[2, 2, 2], false);
        let like3 = detect_from(&cube, None).unwrap();
        let infos = stencil_at(&[2, 2], false, &[101, 102]);
        let low = detect_from(&infos, None).unwrap();
        let t = lift(&low, &infos, &like3, &cube).unwrap();
        assert_eq!((t.dims, t.reach), (vec![1, 2, 2], vec![0, 1, 1]));
    }

    #[test]
    fn finds_grids_and_tori() {
        for (dims, torus) in [
            (vec![16u64], false),
            (vec![12], true),
            (vec![4, 5], false),
            (vec![5, 4], true),
            (vec![3, 3], true),
            (vec![3, 4, 5], false),
            (vec![3, 3, 3], true),
        ] {
            let t = detect_from(&stencil(&dims, torus), None).unwrap();
            assert_eq!(t.dims, dims, "torus {torus}");
            assert!(t.wraps.iter().all(|&w| w == torus), "{dims:?}");
            assert!(t.reach.iter().all(|&b| b == 1));
        }
    }

    /// Ranks numbered x fastest over `MPI_Dims_create`'s `nx, ny, nz`
    /// form the row-major grid `nz x ny x nx`. At 12 and 18 ranks no
    /// dimension is wider than 3, so every rank is a class of its own and
    /// the row-major `nx x ny x nz` that `MPI_Cart_create` recorded
    /// explains the peers as well, with as short a reach; its peers are
    /// not one step each, which decides.
    #[test]
    fn x_fastest_grids_are_read_in_their_order() {
        for (dims, cart) in [
            (vec![2u64, 2, 3], vec![3u64, 2, 2]),
            (vec![2, 3, 3], vec![3, 3, 2]),
            (vec![2, 3, 4], vec![4, 3, 2]),
        ] {
            let t = detect_from(&stencil(&dims, false), Some(cart)).unwrap();
            assert_eq!(t.dims, dims);
            assert!(t.wraps.iter().all(|&w| !w), "{dims:?}");
        }
    }

    #[test]
    fn mesh_groups_and_corners() {
        let t = detect_from(&stencil(&[4, 4], false), None).unwrap();
        assert_eq!(t.groups.len(), 9);
        assert_eq!(t.critical, vec![0, 3, 12, 15]);
        let interior = t.groups.iter().find(|g| g.peers.len() == 4).unwrap();
        assert_eq!(interior.ranks.to_string(), "<2 5 2 4 2 1>");
    }

    #[test]
    fn classes_and_spans() {
        let l = Layout::from_reach(&[1]);
        assert_eq!(l.pos(0, 0, 5), Pos::Lo(0));
        assert_eq!(l.pos(0, 2, 5), Pos::Mid(0));
        assert_eq!(l.pos(0, 4, 5), Pos::Hi(0));
        assert_eq!(l.span(0, Pos::Mid(0), 5), Some((1, 3, 1)));
        assert_eq!(l.span(0, Pos::Mid(0), 2), None);
        assert_eq!(l.span(0, Pos::Hi(0), 2), Some((1, 1, 1)));
        // Two root ranks, then a period of 3: 2, 5, 8 | 3, 6, 9 | 4, 7.
        let p = Layout {
            lo: vec![2],
            hi: vec![0],
            period: vec![3],
        };
        assert_eq!(p.pos(0, 7, 10), Pos::Mid(1));
        assert_eq!(p.span(0, Pos::Mid(2), 10), Some((2, 3, 3)));
        assert_eq!(p.span(0, Pos::Mid(1), 10), Some((4, 2, 3)));
        assert_eq!(
            p.positions(0, 10),
            vec![
                Pos::Lo(0),
                Pos::Lo(1),
                Pos::Mid(2),
                Pos::Mid(0),
                Pos::Mid(1)
            ]
        );
        assert!(p.degenerate(&[4]) && !p.degenerate(&[5]));
    }

    #[test]
    fn no_peers_is_one_dimension() {
        let infos = vec![RankInfo::default(); 6];
        let t = detect_from(&infos, None).unwrap();
        assert_eq!(t.dims, vec![6]);
        assert_eq!(t.groups.len(), 1);
        assert!(t.critical.is_empty());
    }
}
