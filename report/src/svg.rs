//! Hand-written SVG plots for the desynchronization analytics of Afzal et al.
//! ([`analysis::desync`]) and for any line or bar chart.
//!
//! Every function returns one self-contained `<svg>` element as a string,
//! meant to be inlined in an HTML page (or saved as a `.svg` file): no
//! script, no stylesheet, no external font (the generic `sans-serif`
//! family), no link to anything. A report then stays one file that opens
//! offline, on a cluster's login node as on a laptop, and no plotting
//! dependency enters the build.
//!
//! Promises of every plot:
//!
//! * it is well-formed XML, and every piece of caller text (titles, axis
//!   labels, category and series names) is escaped, so a name such as
//!   `MPI_Send<T>&` cannot break the page;
//! * it has a `<title>` (the accessible name, shown as a tooltip) equal to
//!   [`Labels::title`], a visible title, and labelled axes;
//! * coordinates are rounded to 0.1 px, and large inputs are reduced before
//!   drawing (heatmap cells are averaged into at most [`MAX_HEAT_COLUMNS`] ×
//!   [`MAX_HEAT_ROWS`] blocks and runs of equal colour merged; scatter
//!   points are merged per pixel; long line series are thinned per pixel
//!   column), so the output stays small whatever the input: a heatmap has
//!   at most 300 × 400 runs (about 2.5 MB if every block differs from its
//!   neighbour; a noisy 1024-rank × 1000-step matrix gives 0.5–1 MB, a
//!   smooth one far less);
//! * the marks (bars, cells, points, lines) sit in one `<g class="marks">`
//!   per plot, so tests and readers can find them;
//! * non-finite values are skipped (a heatmap cell without a finite value
//!   is grey) and empty input gives a plot saying "no data": no input
//!   panics.

use std::fmt::Write;

use analysis::desync::Histogram;

/// The most columns (steps) a heatmap draws; more are averaged in blocks.
/// About one block per pixel of the plot area.
pub const MAX_HEAT_COLUMNS: usize = 400;
/// The most rows (ranks) a heatmap draws; more are averaged in blocks.
pub const MAX_HEAT_ROWS: usize = 300;

/// Colour levels on each side of the diverging scale: values are quantized
/// to `2·LEVELS + 1` colours, so that neighbouring cells of nearly equal
/// value merge into one run (a smaller file) while 16 steps per side are
/// still finer than the eye separates.
const LEVELS: i32 = 16;

/// Categorical colours (Tableau 10): distinct for clusters and series, and
/// distinguishable with the common colour-vision deficiencies.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// Early-to-late colours (viridis, 8 samples): Afzal et al. colour the phase
/// space from blue (early) to yellow (late), §4.2.
const TIME: [&str; 8] = [
    "#440154", "#46327e", "#365c8d", "#277f8e", "#1fa187", "#4ac16d", "#a0da39", "#fde725",
];

/// The colour of a cell without a finite value.
const MISSING: &str = "#d9d9d9";

/// A plot's words: its title (also the SVG `<title>`) and the labels of its
/// x and y axes, units included (e.g. `"MPI time [ns]"`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Labels<'a> {
    /// The title.
    pub title: &'a str,
    /// The x axis label.
    pub x: &'a str,
    /// The y axis label.
    pub y: &'a str,
}

/// One named series of a [`line_chart`].
#[derive(Clone, Copy, Debug)]
pub struct Series<'a> {
    /// Its name in the legend (none drawn if every name is empty).
    pub name: &'a str,
    /// Its points `(x, y)`, joined in order; a non-finite point breaks the
    /// line.
    pub points: &'a [(f64, f64)],
}

/// Escapes text for XML and HTML content and attribute values: `& < > " '`
/// become entities, and characters XML 1.0 forbids (controls other than
/// tab, newline and carriage return; U+FFFE, U+FFFF) become U+FFFD, so any
/// string yields well-formed XML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The colour a heatmap gives `value` on the diverging scale centred on
/// `center` with half-width `range`: white (`#ffffff`) at the centre,
/// shading to red (`#b2182b`) at `center + range` and beyond, to blue
/// (`#2166ac`) at `center − range` and below (Afzal et al. §3.2: mean white,
/// red above, blue below). Quantized to 16 levels per side, as drawn. A
/// range that is 0 or not finite makes everything white; a non-finite
/// value is grey.
pub fn diverging_colour(value: f64, center: f64, range: f64) -> String {
    match level(value, center, range) {
        Some(l) => level_colour(l),
        None => MISSING.to_string(),
    }
}

/// The quantized level of `value` in `−LEVELS..=LEVELS`; `None` for a
/// non-finite value.
fn level(value: f64, center: f64, range: f64) -> Option<i32> {
    if !value.is_finite() {
        return None;
    }
    if !(range > 0.0 && range.is_finite() && center.is_finite()) {
        return Some(0);
    }
    let t = ((value - center) / range).clamp(-1.0, 1.0);
    Some((t * LEVELS as f64).round() as i32)
}

/// The colour of a level: RdBu's five stops, white in the middle,
/// interpolated linearly in sRGB.
fn level_colour(level: i32) -> String {
    const STOPS: [(f64, [f64; 3]); 5] = [
        (-1.0, [33.0, 102.0, 172.0]),
        (-0.5, [146.0, 197.0, 222.0]),
        (0.0, [255.0, 255.0, 255.0]),
        (0.5, [244.0, 165.0, 130.0]),
        (1.0, [178.0, 24.0, 43.0]),
    ];
    let t = f64::from(level.clamp(-LEVELS, LEVELS)) / f64::from(LEVELS);
    let i = STOPS
        .windows(2)
        .position(|w| t <= w[1].0)
        .unwrap_or(STOPS.len() - 2);
    let ((t0, c0), (t1, c1)) = (STOPS[i], STOPS[i + 1]);
    let f = (t - t0) / (t1 - t0);
    let ch = |k: usize| (c0[k] + f * (c1[k] - c0[k])).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", ch(0), ch(1), ch(2))
}

/// A coordinate rounded to 0.1 px, without a trailing `.0`.
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if !r.is_finite() {
        "0".to_string()
    } else if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A rough text width (px) for layout: sans-serif averages about 0.6 em.
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// Shortens `s` to at most `max` characters with an ellipsis.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A "nice" tick step (1, 2 or 5 times a power of 10) giving about
/// `target` ticks over `span`.
fn nice_step(span: f64, target: usize) -> f64 {
    if !(span > 0.0 && span.is_finite()) {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Tick values: the multiples of a nice step within `[lo, hi]`.
fn ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let step = nice_step(hi - lo, target);
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 && out.len() < 100 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    (out, step)
}

/// How tick values are printed: one SI prefix for the whole axis (so "2k"
/// and "500" do not mix), and as many decimals as the step needs.
struct TickFormat {
    div: f64,
    suffix: &'static str,
    decimals: usize,
    sci: bool,
}

impl TickFormat {
    fn new(max_abs: f64, step: f64) -> TickFormat {
        let (div, suffix) = if max_abs >= 1e12 {
            (1e12, "T")
        } else if max_abs >= 1e9 {
            (1e9, "G")
        } else if max_abs >= 1e6 {
            (1e6, "M")
        } else if max_abs >= 1e4 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        let rel = step / div;
        let sci = rel.is_nan() || rel <= 1e-6 || max_abs >= 1e15;
        let decimals = if rel >= 1.0 || sci {
            0
        } else {
            (-rel.log10() - 1e-9).ceil().max(0.0) as usize
        };
        TickFormat {
            div,
            suffix,
            decimals,
            sci,
        }
    }

    fn of(&self, v: f64) -> String {
        if self.sci {
            return format!("{v:.1e}");
        }
        let s = format!("{:.*}", self.decimals, v / self.div);
        let s = if s
            .trim_start_matches('-')
            .chars()
            .all(|c| c == '0' || c == '.')
        {
            "0".to_string()
        } else {
            s
        };
        if s == "0" {
            s
        } else {
            format!("{s}{}", self.suffix)
        }
    }
}

/// Ticks of a numeric axis with their labels.
fn labelled_ticks(lo: f64, hi: f64, target: usize) -> Vec<(f64, String)> {
    let (vals, step) = ticks(lo, hi, target);
    let max_abs = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let f = TickFormat::new(max_abs, step);
    vals.into_iter().map(|v| (v, f.of(v))).collect()
}

/// Integer ticks `0, s, 2s, … ≤ n − 1` for an index axis (ranks, steps).
fn index_ticks(n: usize, target: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let step = (nice_step((n - 1) as f64, target).round() as usize).max(1);
    (0..n).step_by(step).collect()
}

/// A linear map from a data interval to a pixel interval.
#[derive(Clone, Copy, Debug)]
struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    /// `[lo, hi]` onto `[r0, r1]`; a degenerate or non-finite interval is
    /// widened so the map is always defined.
    fn new(lo: f64, hi: f64, r0: f64, r1: f64) -> Scale {
        let (lo, hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
            (lo, hi)
        } else {
            (0.0, 1.0)
        };
        let (d0, d1) = if hi > lo {
            (lo, hi)
        } else {
            let d = (lo.abs() * 0.1).max(1.0);
            (lo - d, hi + d)
        };
        Scale { d0, d1, r0, r1 }
    }

    fn at(&self, v: f64) -> f64 {
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// `[lo, hi]` of the finite values, padded by `pad` of the span.
fn extent(vals: impl Iterator<Item = f64>, pad: f64) -> Option<(f64, f64)> {
    let (lo, hi) = vals
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return None;
    }
    let d = (hi - lo) * pad;
    Some((lo - d, hi + d))
}

/// The plot area inside the SVG.
#[derive(Clone, Copy, Debug)]
struct Area {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// An SVG document being written.
struct Doc {
    s: String,
}

impl Doc {
    /// Opens an SVG of `w × h` px with its `<title>`, a white background
    /// and the visible title centred on top.
    fn new(w: f64, h: f64, title: &str) -> Doc {
        let mut s = String::with_capacity(4096);
        let t = escape(title);
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" role=\"img\" font-family=\"sans-serif\" \
             font-size=\"12\"><title>{t}</title>\
             <rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\
             <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" \
             font-weight=\"bold\">{t}</text>",
            num(w / 2.0),
            w = num(w),
            h = num(h),
        );
        Doc { s }
    }

    /// Text at `(x, y)`; `attrs` adds raw attributes (anchor, rotation).
    fn text(&mut self, x: f64, y: f64, attrs: &str, text: &str) {
        let _ = write!(
            self.s,
            "<text x=\"{}\" y=\"{}\"{attrs}>{}</text>",
            num(x),
            num(y),
            escape(text)
        );
    }

    fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, attrs: &str) {
        let _ = write!(
            self.s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{attrs}/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = write!(
            self.s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"/>",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
    }

    /// The x axis: a baseline, ticks at pixel positions with their labels,
    /// and the axis label centred below.
    fn x_axis(&mut self, a: Area, ticks: &[(f64, String)], label: &str) {
        let y = a.y + a.h;
        self.line(a.x, y, a.x + a.w, y, " stroke=\"#333\"");
        for (px, t) in ticks {
            self.line(*px, y, *px, y + 4.0, " stroke=\"#333\"");
            self.text(*px, y + 16.0, " text-anchor=\"middle\" font-size=\"11\"", t);
        }
        self.text(
            a.x + a.w / 2.0,
            y + 36.0,
            " text-anchor=\"middle\" font-size=\"12\"",
            label,
        );
    }

    /// The y axis: a baseline, ticks at pixel positions with their labels
    /// (right-aligned), optional grid lines, and the rotated axis label.
    fn y_axis(&mut self, a: Area, ticks: &[(f64, String)], label: &str, grid: bool) {
        self.line(a.x, a.y, a.x, a.y + a.h, " stroke=\"#333\"");
        for (py, t) in ticks {
            if grid {
                self.line(a.x, *py, a.x + a.w, *py, " stroke=\"#e6e6e6\"");
            }
            self.line(a.x - 4.0, *py, a.x, *py, " stroke=\"#333\"");
            self.text(
                a.x - 7.0,
                *py + 4.0,
                " text-anchor=\"end\" font-size=\"11\"",
                t,
            );
        }
        let (cx, cy) = (a.x - 54.0, a.y + a.h / 2.0);
        let rot = format!(
            " text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 {} {})\"",
            num(cx),
            num(cy)
        );
        self.text(cx, cy, &rot, label);
    }

    /// "no data" in the middle of the area.
    fn no_data(&mut self, a: Area) {
        self.text(
            a.x + a.w / 2.0,
            a.y + a.h / 2.0,
            " text-anchor=\"middle\" fill=\"#777\"",
            "no data",
        );
    }

    /// A legend: one row per entry, a swatch (square, or a line for
    /// `line = true`) and its name.
    fn legend(&mut self, x: f64, y: f64, entries: &[(String, String, bool)]) {
        for (i, (colour, name, line)) in entries.iter().enumerate() {
            let yy = y + i as f64 * 18.0;
            if *line {
                let attrs = format!(" stroke=\"{colour}\" stroke-width=\"2\"");
                self.line(x, yy + 5.0, x + 14.0, yy + 5.0, &attrs);
            } else {
                self.rect(x + 2.0, yy, 10.0, 10.0, colour);
            }
            self.text(x + 19.0, yy + 9.5, " font-size=\"11\"", &truncate(name, 20));
        }
    }

    fn finish(mut self) -> String {
        self.s.push_str("</svg>");
        self.s
    }
}

/// A matrix averaged into at most `max_r × max_c` blocks: `(blocks, rows
/// per block, columns per block)`. A block's value is the mean of its
/// finite cells (NaN if none). Rows may be ragged: missing cells count as
/// not finite.
fn blocks<R: AsRef<[f64]>>(
    rows: &[R],
    cols: usize,
    max_r: usize,
    max_c: usize,
) -> (Vec<Vec<f64>>, usize, usize) {
    let br = rows.len().div_ceil(max_r).max(1);
    let bc = cols.div_ceil(max_c).max(1);
    let (nr, nc) = (rows.len().div_ceil(br), cols.div_ceil(bc));
    let mut sum = vec![vec![0.0; nc]; nr];
    let mut cnt = vec![vec![0u32; nc]; nr];
    for (r, row) in rows.iter().enumerate() {
        for (c, v) in row.as_ref().iter().enumerate() {
            if v.is_finite() {
                sum[r / br][c / bc] += v;
                cnt[r / br][c / bc] += 1;
            }
        }
    }
    let out = sum
        .into_iter()
        .zip(cnt)
        .map(|(s, c)| {
            s.into_iter()
                .zip(c)
                .map(|(s, c)| if c > 0 { s / f64::from(c) } else { f64::NAN })
                .collect()
        })
        .collect();
    (out, br, bc)
}

/// Draws the matrix `rows` (row 0 on top) into `a`, coloured by
/// [`diverging_colour`]: averaged into blocks, each row's runs of equal
/// colour merged, one `<path>` per colour with one rectangle per run, in
/// block units scaled onto the area (the last block row or column may be
/// partial, and is drawn narrower).
fn matrix_cells<R: AsRef<[f64]>>(
    doc: &mut Doc,
    a: Area,
    rows: &[R],
    cols: usize,
    center: f64,
    range: f64,
) {
    let (b, br, bc) = blocks(rows, cols, MAX_HEAT_ROWS, MAX_HEAT_COLUMNS);
    let (nr, nc) = (b.len(), b.first().map_or(0, Vec::len));
    let (wr, wc) = (rows.len() as f64 / br as f64, cols as f64 / bc as f64);
    // Per colour (level + LEVELS, or the missing slot), its path data.
    let mut paths: Vec<String> = vec![String::new(); (2 * LEVELS + 2) as usize];
    let slot = |l: Option<i32>| l.map_or((2 * LEVELS + 1) as usize, |l| (l + LEVELS) as usize);
    for (r, row) in b.iter().enumerate() {
        let h = if r + 1 == nr { wr - r as f64 } else { 1.0 };
        let mut c = 0;
        while c < nc {
            let l = level(row[c], center, range);
            let mut e = c + 1;
            while e < nc && level(row[e], center, range) == l {
                e += 1;
            }
            let x1 = if e == nc { wc } else { e as f64 };
            let w = x1 - c as f64;
            let _ = write!(
                paths[slot(l)],
                "M{c} {r}h{}v{}h-{}z",
                num(w),
                num(h),
                num(w)
            );
            c = e;
        }
    }
    let _ = write!(
        doc.s,
        "<g class=\"marks\" transform=\"translate({} {}) scale({:.5} {:.5})\" \
         shape-rendering=\"crispEdges\">",
        num(a.x),
        num(a.y),
        a.w / wc.max(1e-9),
        a.h / wr.max(1e-9)
    );
    for (i, d) in paths.iter().enumerate() {
        if d.is_empty() {
            continue;
        }
        let fill = if i == (2 * LEVELS + 1) as usize {
            MISSING.to_string()
        } else {
            level_colour(i as i32 - LEVELS)
        };
        let _ = write!(doc.s, "<path fill=\"{fill}\" d=\"{d}\"/>");
    }
    doc.s.push_str("</g>");
}

/// A vertical colour bar right of `a`: the quantized scale from
/// `center + range` (top) to `center − range` (bottom), five labelled
/// values and a rotated caption.
/// The colour bar beside a matrix plot; `upper` shows only the half from
/// the centre up (for quantities that cannot go below it, like bytes).
fn colour_bar(doc: &mut Doc, a: Area, center: f64, range: f64, caption: &str, upper: bool) {
    let x = a.x + a.w + 16.0;
    let n = if upper { LEVELS + 1 } else { 2 * LEVELS + 1 };
    let hh = a.h / f64::from(n);
    for i in 0..n {
        let l = LEVELS - i;
        doc.rect(x, a.y + f64::from(i) * hh, 14.0, hh + 0.5, &level_colour(l));
    }
    let _ = write!(
        doc.s,
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>",
        num(x),
        num(a.y),
        num(a.h)
    );
    let range = if range > 0.0 && range.is_finite() {
        range
    } else {
        0.0
    };
    let marks: Vec<f64> = match (range > 0.0, upper) {
        (true, false) => vec![1.0, 0.5, 0.0, -0.5, -1.0],
        (true, true) => vec![1.0, 0.5, 0.0],
        (false, _) => vec![0.0],
    };
    let vals: Vec<f64> = marks.iter().map(|m| center + m * range).collect();
    let max_abs = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let f = TickFormat::new(max_abs, if range > 0.0 { range / 2.0 } else { 1.0 });
    for (m, v) in marks.iter().zip(&vals) {
        let y = if upper {
            a.y + a.h * (1.0 - m)
        } else {
            a.y + a.h * (1.0 - m) / 2.0
        };
        doc.line(x + 14.0, y, x + 18.0, y, " stroke=\"#333\"");
        doc.text(x + 21.0, y + 4.0, " font-size=\"11\"", &f.of(*v));
    }
    let (cx, cy) = (x + 72.0, a.y + a.h / 2.0);
    let rot = format!(
        " text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 {} {})\"",
        num(cx),
        num(cy)
    );
    doc.text(cx, cy, &rot, caption);
}

/// Index-axis ticks (ranks, steps) placed at the centres of `n` cells
/// spread over `[p0, p0 + len]`.
fn index_axis(n: usize, p0: f64, len: f64, target: usize) -> Vec<(f64, String)> {
    index_ticks(n, target)
        .into_iter()
        .map(|i| (p0 + (i as f64 + 0.5) * len / n.max(1) as f64, i.to_string()))
        .collect()
}

/// The compact timeline of Afzal et al. (§3.2, Fig. 5): the rank × step matrix
/// `rows[rank][step]` with ranks on y (rank 0 on top) and steps on x, each
/// cell coloured by [`diverging_colour`] around `center` (white) with the
/// symmetric half-width `range` (red above, blue below, values beyond
/// saturate), and a colour bar captioned `colour_label`.
///
/// Pass `t` with `center` = the overall mean so the colour bar reads in
/// absolute MPI time, or [`analysis::desync::Desync::deviation`] with
/// `center = 0`. A `range` that is not positive and finite is taken as the
/// largest `|value − center|`. Large matrices are averaged into at most
/// [`MAX_HEAT_ROWS`] × [`MAX_HEAT_COLUMNS`] blocks.
pub fn heatmap<R: AsRef<[f64]>>(
    rows: &[R],
    center: f64,
    range: f64,
    labels: &Labels,
    colour_label: &str,
) -> String {
    matrix_plot(rows, center, range, labels, colour_label, false)
}

/// A matrix of quantities that start at zero (bytes between ranks): white
/// for zero up to red for the largest value, with a colour bar from 0.
pub fn intensity<R: AsRef<[f64]>>(rows: &[R], labels: &Labels, colour_label: &str) -> String {
    matrix_plot(rows, 0.0, 0.0, labels, colour_label, true)
}

fn matrix_plot<R: AsRef<[f64]>>(
    rows: &[R],
    center: f64,
    range: f64,
    labels: &Labels,
    colour_label: &str,
    upper: bool,
) -> String {
    let (w, h) = (720.0, 440.0);
    let a = Area {
        x: 72.0,
        y: 34.0,
        w: w - 72.0 - 104.0,
        h: h - 34.0 - 52.0,
    };
    let mut doc = Doc::new(w, h, labels.title);
    let cols = rows.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
    let center = if center.is_finite() { center } else { 0.0 };
    let range = if range > 0.0 && range.is_finite() {
        range
    } else {
        rows.iter()
            .flat_map(|r| r.as_ref().iter())
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max((v - center).abs()))
    };
    if rows.is_empty() || cols == 0 {
        doc.no_data(a);
    } else {
        matrix_cells(&mut doc, a, rows, cols, center, range);
    }
    doc.x_axis(a, &index_axis(cols, a.x, a.w, 10), labels.x);
    doc.y_axis(a, &index_axis(rows.len(), a.y, a.h, 8), labels.y, false);
    colour_bar(&mut doc, a, center, range, colour_label, upper);
    doc.finish()
}

/// The rank × rank correlation matrix of Afzal et al. (§4.1, Fig. 6): square,
/// rank 0 top left, coloured on the diverging scale from −1 (blue) through
/// 0 (white) to 1 (red), with a colour bar. Large matrices are averaged
/// into blocks like [`heatmap`]'s.
pub fn correlation<R: AsRef<[f64]>>(matrix: &[R], labels: &Labels) -> String {
    let side = 360.0;
    let a = Area {
        x: 72.0,
        y: 34.0,
        w: side,
        h: side,
    };
    let (w, h) = (a.x + side + 104.0, a.y + side + 52.0);
    let mut doc = Doc::new(w, h, labels.title);
    let cols = matrix.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
    if matrix.is_empty() || cols == 0 {
        doc.no_data(a);
    } else {
        matrix_cells(&mut doc, a, matrix, cols, 0.0, 1.0);
    }
    doc.x_axis(a, &index_axis(cols, a.x, a.w, 8), labels.x);
    doc.y_axis(a, &index_axis(matrix.len(), a.y, a.h, 8), labels.y, false);
    colour_bar(&mut doc, a, 0.0, 1.0, "Pearson correlation", false);
    doc.finish()
}

/// The standard area of charts with axes, leaving `right` px for a legend.
fn chart_area(w: f64, h: f64, right: f64) -> Area {
    Area {
        x: 72.0,
        y: 34.0,
        w: w - 72.0 - right,
        h: h - 34.0 - 52.0,
    }
}

/// Pixel ticks of a numeric axis.
fn axis_ticks(s: &Scale, target: usize) -> Vec<(f64, String)> {
    labelled_ticks(s.d0.min(s.d1), s.d0.max(s.d1), target)
        .into_iter()
        .map(|(v, t)| (s.at(v), t))
        .collect()
}

/// A histogram (Afzal et al. §3.1, Figs. 3–4): one bar per non-empty bin over
/// its value range, counts on y.
pub fn histogram(hist: &Histogram, labels: &Labels) -> String {
    let (w, h) = (640.0, 400.0);
    let a = chart_area(w, h, 24.0);
    let mut doc = Doc::new(w, h, labels.title);
    let edges = hist.edges();
    let ok = !hist.counts.is_empty() && edges.iter().all(|e| e.is_finite());
    let (lo, hi) = if !ok {
        (0.0, 1.0)
    } else if hist.bin_width > 0.0 {
        (hist.min, hist.max)
    } else {
        let d = (hist.min.abs() * 0.1).max(1.0);
        (hist.min - d, hist.min + d)
    };
    let xs = Scale::new(lo, hi, a.x, a.x + a.w);
    let top = hist.counts.iter().copied().max().unwrap_or(0) as f64;
    let ys = Scale::new(0.0, (top * 1.05).max(1.0), a.y + a.h, a.y);
    let yt: Vec<(f64, String)> = labelled_ticks(0.0, ys.d1, 6)
        .into_iter()
        .filter(|(v, _)| v.fract() == 0.0)
        .map(|(v, t)| (ys.at(v), t))
        .collect();
    doc.y_axis(a, &yt, labels.y, true);
    doc.s.push_str("<g class=\"marks\" fill=\"#4e79a7\">");
    if ok {
        for (i, &c) in hist.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let (x0, x1) = if hist.bin_width > 0.0 {
                (xs.at(edges[i]), xs.at(edges[i + 1]))
            } else {
                let d = a.w / 40.0;
                (xs.at(hist.min) - d, xs.at(hist.min) + d)
            };
            let gap = if x1 - x0 > 4.0 { 0.5 } else { 0.0 };
            let y = ys.at(c as f64);
            let _ = write!(
                doc.s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                num(x0 + gap),
                num(y),
                num((x1 - x0 - 2.0 * gap).max(0.1)),
                num(a.y + a.h - y)
            );
        }
    }
    doc.s.push_str("</g>");
    if !ok {
        doc.no_data(a);
    }
    doc.x_axis(a, &axis_ticks(&xs, 6), labels.x);
    doc.finish()
}

/// Merges points per pixel: the distinct rounded pixel positions, in first
/// appearance order.
fn pixel_points(points: impl Iterator<Item = (f64, f64)>) -> Vec<(i64, i64)> {
    let mut seen = std::collections::HashSet::new();
    points
        .map(|(x, y)| (x.round() as i64, y.round() as i64))
        .filter(|p| seen.insert(*p))
        .collect()
}

/// Dots as one path of zero-length round-capped strokes: about 10 bytes a
/// point instead of 40 for a `<circle>`.
fn dots(doc: &mut Doc, colour: &str, pts: &[(i64, i64)], size: f64) {
    if pts.is_empty() {
        return;
    }
    let _ = write!(
        doc.s,
        "<path stroke=\"{colour}\" stroke-width=\"{}\" stroke-linecap=\"round\" \
         stroke-opacity=\"0.8\" fill=\"none\" d=\"",
        num(size)
    );
    for (x, y) in pts {
        let _ = write!(doc.s, "M{x} {y}h0");
    }
    doc.s.push_str("\"/>");
}

/// The cluster of item `i`, if `clusters` is given and has one label per
/// item.
fn cluster_of(clusters: Option<&[usize]>, n: usize, i: usize) -> Option<usize> {
    clusters.filter(|c| c.len() == n).map(|c| c[i])
}

/// The colour of cluster `g`: by its number, so a cluster has the same
/// colour in every plot.
fn cluster_colour(g: usize) -> &'static str {
    PALETTE[g % PALETTE.len()]
}

/// Ranks per cluster label, by label (any labels, not only `0..k`).
fn cluster_sizes(clusters: Option<&[usize]>) -> std::collections::BTreeMap<usize, usize> {
    let mut m = std::collections::BTreeMap::new();
    for &l in clusters.unwrap_or(&[]) {
        *m.entry(l).or_insert(0) += 1;
    }
    m
}

/// Legend entries "cluster g (size)", at most 12, then how many more.
fn cluster_legend(clusters: Option<&[usize]>) -> Vec<(String, String, bool)> {
    let sizes = cluster_sizes(clusters);
    let mut out: Vec<(String, String, bool)> = sizes
        .iter()
        .take(12)
        .map(|(&g, &n)| {
            (
                cluster_colour(g).to_string(),
                format!("cluster {g} ({n})"),
                false,
            )
        })
        .collect();
    if sizes.len() > 12 {
        out.push((
            "#ffffff".into(),
            format!("… {} more", sizes.len() - 12),
            false,
        ));
    }
    out
}

/// The MPI phase space of Afzal et al. (§4.2, Figs. 7–8): for every rank `r`
/// the points `points[r] = [(t[r][n], t[r][n+1]), …]`, on equal axes with
/// the slope-1 diagonal on which a steady waiting time sits.
///
/// With `clusters` (one label per rank, e.g.
/// [`analysis::desync::Clustering::labels`]) each rank takes its cluster's
/// colour; without (or with a length that does not match) points are
/// coloured from early (blue) to late (yellow), as in the paper. Points
/// falling on the same pixel with the same colour are drawn once.
pub fn phase_space<R: AsRef<[(f64, f64)]>>(
    points: &[R],
    clusters: Option<&[usize]>,
    labels: &Labels,
) -> String {
    let side = 340.0;
    let a = Area {
        x: 72.0,
        y: 34.0,
        w: side,
        h: side,
    };
    let (w, h) = (a.x + side + 140.0, a.y + side + 52.0);
    let mut doc = Doc::new(w, h, labels.title);
    let all = || {
        points
            .iter()
            .flat_map(|p| p.as_ref().iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    };
    let ext = extent(all().flat_map(|&(x, y)| [x, y]), 0.04);
    let (lo, hi) = ext.unwrap_or((0.0, 1.0));
    let xs = Scale::new(lo, hi, a.x, a.x + a.w);
    let ys = Scale::new(lo, hi, a.y + a.h, a.y);
    doc.y_axis(a, &axis_ticks(&ys, 6), labels.y, true);
    doc.x_axis(a, &axis_ticks(&xs, 6), labels.x);
    doc.line(
        xs.at(xs.d0),
        ys.at(ys.d0),
        xs.at(xs.d1),
        ys.at(ys.d1),
        " stroke=\"#999\" stroke-dasharray=\"4 3\"",
    );
    let n = points.len();
    let by_cluster = clusters.is_some_and(|c| c.len() == n);
    doc.s.push_str("<g class=\"marks\">");
    if by_cluster {
        for &g in cluster_sizes(clusters).keys() {
            let pts = pixel_points(
                (0..n)
                    .filter(|&i| cluster_of(clusters, n, i) == Some(g))
                    .flat_map(|i| points[i].as_ref().iter())
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .map(|&(x, y)| (xs.at(x), ys.at(y))),
            );
            dots(&mut doc, cluster_colour(g), &pts, 4.0);
        }
    } else {
        let len = points.iter().map(|p| p.as_ref().len()).max().unwrap_or(0);
        for (b, colour) in TIME.iter().enumerate() {
            let pts = pixel_points(
                points
                    .iter()
                    .flat_map(|p| p.as_ref().iter().enumerate())
                    .filter(|(s, _)| s * TIME.len() / len.max(1) == b)
                    .map(|(_, p)| p)
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .map(|&(x, y)| (xs.at(x), ys.at(y))),
            );
            dots(&mut doc, colour, &pts, 4.0);
        }
    }
    doc.s.push_str("</g>");
    if ext.is_none() {
        doc.no_data(a);
    }
    let lx = a.x + a.w + 20.0;
    if by_cluster {
        let entries = cluster_legend(clusters);
        doc.legend(lx, a.y + 4.0, &entries);
    } else {
        doc.text(lx, a.y + 10.0, " font-size=\"11\"", "step n");
        let hh = 14.0;
        for (i, c) in TIME.iter().enumerate() {
            doc.rect(lx, a.y + 18.0 + i as f64 * hh, 14.0, hh, c);
        }
        doc.text(lx + 20.0, a.y + 29.0, " font-size=\"11\"", "early");
        doc.text(
            lx + 20.0,
            a.y + 18.0 + 8.0 * hh - 3.0,
            " font-size=\"11\"",
            "late",
        );
    }
    doc.finish()
}

/// A scatter plot of `points` (e.g. the first two principal-component
/// scores of every rank, Afzal et al. Fig. 9a, b), coloured by `clusters` if
/// it has one label per point. With at most 32 points each is numbered by
/// its index (the rank), which is what one reads such a plot for; points
/// within 10 px of each other share one label (`"8–15"`) rather than
/// printing over each other. More points would be clutter.
pub fn scatter(points: &[(f64, f64)], clusters: Option<&[usize]>, labels: &Labels) -> String {
    let (w, h) = (640.0, 420.0);
    let n = points.len();
    let by_cluster = clusters.is_some_and(|c| c.len() == n);
    let a = chart_area(w, h, if by_cluster { 130.0 } else { 24.0 });
    let mut doc = Doc::new(w, h, labels.title);
    let fin = || {
        points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    };
    let ex = extent(fin().map(|p| p.0), 0.08);
    let ey = extent(fin().map(|p| p.1), 0.08);
    let (x0, x1) = ex.unwrap_or((0.0, 1.0));
    let (y0, y1) = ey.unwrap_or((0.0, 1.0));
    let xs = Scale::new(x0, x1, a.x, a.x + a.w);
    let ys = Scale::new(y0, y1, a.y + a.h, a.y);
    doc.y_axis(a, &axis_ticks(&ys, 6), labels.y, true);
    doc.x_axis(a, &axis_ticks(&xs, 7), labels.x);
    doc.s
        .push_str("<g class=\"marks\" stroke=\"#ffffff\" stroke-width=\"0.8\">");
    for (i, &(x, y)) in points.iter().enumerate() {
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        let c = cluster_of(clusters, n, i).map_or(PALETTE[0], cluster_colour);
        let _ = write!(
            doc.s,
            "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{c}\"/>",
            num(xs.at(x)),
            num(ys.at(y))
        );
    }
    doc.s.push_str("</g>");
    if n <= 32 {
        doc.s.push_str("<g font-size=\"9\" fill=\"#444\">");
        let px: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (xs.at(x), ys.at(y))).collect();
        for (i, members) in label_groups(&px, 10.0) {
            let (x, y) = px[i];
            doc.text(x + 6.0, y - 5.0, "", &truncate(&index_ranges(&members), 24));
        }
        doc.s.push_str("</g>");
    }
    if ex.is_none() {
        doc.no_data(a);
    }
    if by_cluster {
        let entries = cluster_legend(clusters);
        doc.legend(a.x + a.w + 16.0, a.y + 4.0, &entries);
    }
    doc.finish()
}

/// Points closer than `radius` px share one label: greedily, in index
/// order, each finite point joins the first group whose first point is
/// that close, else starts a group. Returns (first point, members).
fn label_groups(px: &[(f64, f64)], radius: f64) -> Vec<(usize, Vec<usize>)> {
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, &(x, y)) in px.iter().enumerate() {
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        let near = groups.iter_mut().find(|(f, _)| {
            let (fx, fy) = px[*f];
            (fx - x).hypot(fy - y) < radius
        });
        match near {
            Some((_, m)) => m.push(i),
            None => groups.push((i, vec![i])),
        }
    }
    groups
}

/// Sorted indices as ranges: `[0, 1, 2, 5, 7, 8]` → `"0–2, 5, 7–8"`.
fn index_ranges(ix: &[usize]) -> String {
    trace::ranklist::ranges_text(ix.iter().copied(), ", ", "–")
}

/// Where the category labels of a bar chart go: how many px the bottom
/// margin needs, whether they are rotated, and which are shown (every
/// `every`-th) so that they never overlap.
struct CategoryLayout {
    bottom: f64,
    rotated: bool,
    every: usize,
    max_chars: usize,
}

fn category_layout<S: AsRef<str>>(cats: &[S], plot_w: f64) -> CategoryLayout {
    let n = cats.len().max(1);
    let slot = plot_w / n as f64;
    let max_chars = 24;
    let longest = cats
        .iter()
        .map(|c| c.as_ref().chars().count().min(max_chars))
        .max()
        .unwrap_or(0);
    let wide = text_width(&"x".repeat(longest), 11.0);
    if wide <= slot - 4.0 {
        return CategoryLayout {
            bottom: 52.0,
            rotated: false,
            every: 1,
            max_chars,
        };
    }
    // Rotated by 45°, a label takes about 12 px along the axis.
    let every = (14.0 / slot).ceil().max(1.0) as usize;
    CategoryLayout {
        bottom: 40.0 + wide * std::f64::consts::FRAC_1_SQRT_2,
        rotated: true,
        every,
        max_chars,
    }
}

/// Bars for `values` in slots across `a`, baseline at 0, with category
/// labels under them; returns the y scale for overlays.
fn bars<S: AsRef<str>>(
    doc: &mut Doc,
    a: Area,
    cats: &[S],
    values: &[f64],
    lay: &CategoryLayout,
    y_label: &str,
    fixed_top: Option<f64>,
) -> Scale {
    let n = cats.len().min(values.len());
    let (lo, hi) = extent(values[..n].iter().copied(), 0.0).unwrap_or((0.0, 1.0));
    let (lo, hi) = (lo.min(0.0), fixed_top.unwrap_or(hi.max(0.0)));
    let span = hi - lo;
    let ys = Scale::new(
        if lo < 0.0 { lo - 0.05 * span } else { 0.0 },
        if hi > 0.0 { hi + 0.05 * span } else { 0.0 },
        a.y + a.h,
        a.y,
    );
    doc.y_axis(a, &axis_ticks(&ys, 6), y_label, true);
    let slot = a.w / n.max(1) as f64;
    let bw = (slot * 0.8).max(0.5);
    let base = ys.at(0.0);
    doc.s.push_str("<g class=\"marks\" fill=\"#4e79a7\">");
    for (i, v) in values[..n].iter().enumerate() {
        if !v.is_finite() {
            continue;
        }
        let y = ys.at(*v);
        let _ = write!(
            doc.s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            num(a.x + i as f64 * slot + (slot - bw) / 2.0),
            num(y.min(base)),
            num(bw),
            num((y - base).abs())
        );
    }
    doc.s.push_str("</g>");
    let yb = a.y + a.h;
    doc.line(a.x, yb, a.x + a.w, yb, " stroke=\"#333\"");
    if lo < 0.0 {
        doc.line(a.x, base, a.x + a.w, base, " stroke=\"#333\"");
    }
    for (i, c) in cats[..n].iter().enumerate() {
        if i % lay.every != 0 {
            continue;
        }
        let x = a.x + (i as f64 + 0.5) * slot;
        let t = truncate(c.as_ref(), lay.max_chars);
        if lay.rotated {
            let attrs = format!(
                " text-anchor=\"end\" font-size=\"11\" transform=\"rotate(-45 {} {})\"",
                num(x),
                num(yb + 12.0)
            );
            doc.text(x, yb + 12.0, &attrs, &t);
        } else {
            doc.text(x, yb + 16.0, " text-anchor=\"middle\" font-size=\"11\"", &t);
        }
    }
    ys
}

/// A bar chart of `values` by category (e.g. the silhouette per `k`, the
/// ranks per cluster, or time per MPI call): bars from 0 (negative values
/// hang below), one label per category. Labels are rotated when they do
/// not fit under their bar and thinned out when even rotated they would
/// overlap; over 24 characters they are shortened. Extra categories or
/// values (the lists differ in length) are ignored.
pub fn bar_chart<S: AsRef<str>>(categories: &[S], values: &[f64], labels: &Labels) -> String {
    let w = 640.0;
    let lay = category_layout(categories, w - 72.0 - 24.0);
    let h = 34.0 + 300.0 + lay.bottom;
    let a = Area {
        x: 72.0,
        y: 34.0,
        w: w - 72.0 - 24.0,
        h: 300.0,
    };
    let mut doc = Doc::new(w, h, labels.title);
    if categories.is_empty() || values.is_empty() {
        doc.no_data(a);
    }
    bars(&mut doc, a, categories, values, &lay, labels.y, None);
    doc.text(
        a.x + a.w / 2.0,
        h - 12.0,
        " text-anchor=\"middle\" font-size=\"12\"",
        labels.x,
    );
    doc.finish()
}

/// The Pareto plot of a PCA (Afzal et al. §5.1, Fig. 9c, d bottom): the
/// percentage of variance explained by each of the first (at most 20)
/// components as bars, and the cumulative percentage as a line, which
/// shows how many components the timelines need.
pub fn explained_variance(ratios: &[f64], labels: &Labels) -> String {
    let n = ratios.len().min(20);
    let cats: Vec<String> = (1..=n).map(|i| format!("PC{i}")).collect();
    let pct: Vec<f64> = ratios[..n]
        .iter()
        .map(|r| if r.is_finite() { r * 100.0 } else { 0.0 })
        .collect();
    let w = 640.0;
    let a = Area {
        x: 72.0,
        y: 34.0,
        w: w - 72.0 - 130.0,
        h: 300.0,
    };
    let lay = category_layout(&cats, a.w);
    let h = 34.0 + 300.0 + lay.bottom;
    let mut doc = Doc::new(w, h, labels.title);
    if n == 0 {
        doc.no_data(a);
    }
    let ys = bars(&mut doc, a, &cats, &pct, &lay, labels.y, Some(100.0));
    let slot = a.w / n.max(1) as f64;
    let mut cum = 0.0;
    let mut d = String::new();
    for (i, p) in pct.iter().enumerate() {
        cum += p;
        let (x, y) = (a.x + (i as f64 + 0.5) * slot, ys.at(cum.min(100.0)));
        let _ = write!(d, "{}{} {}", if i == 0 { "M" } else { "L" }, num(x), num(y));
    }
    if !d.is_empty() {
        let _ = write!(
            doc.s,
            "<path d=\"{d}\" fill=\"none\" stroke=\"#e15759\" stroke-width=\"2\"/>"
        );
    }
    doc.text(
        a.x + a.w / 2.0,
        h - 12.0,
        " text-anchor=\"middle\" font-size=\"12\"",
        labels.x,
    );
    doc.legend(
        a.x + a.w + 16.0,
        a.y + 4.0,
        &[
            ("#4e79a7".into(), "per component".into(), false),
            ("#e15759".into(), "cumulative".into(), true),
        ],
    );
    doc.finish()
}

/// Thins a line of many points per pixel column to what can be seen: of
/// each run of consecutive points in one column, the first, the lowest,
/// the highest and the last, in their order. The drawn envelope is the
/// same; the path stays about four points per pixel of width however long
/// the series. Breaks (`None`) are kept.
fn decimate(px: &[Option<(f64, f64)>]) -> Vec<Option<(f64, f64)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < px.len() {
        let Some((x0, _)) = px[i] else {
            out.push(None);
            i += 1;
            continue;
        };
        let col = x0.floor();
        let mut j = i;
        while j + 1 < px.len() && px[j + 1].is_some_and(|(x, _)| x.floor() == col) {
            j += 1;
        }
        let run: Vec<(usize, f64)> = (i..=j).filter_map(|k| px[k].map(|p| (k, p.1))).collect();
        let lo = run
            .iter()
            .fold(run[0], |m, &p| if p.1 < m.1 { p } else { m })
            .0;
        let hi = run
            .iter()
            .fold(run[0], |m, &p| if p.1 > m.1 { p } else { m })
            .0;
        let mut keep = vec![i, lo, hi, j];
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|k| px[k]));
        i = j + 1;
    }
    out
}

/// A line chart of one or more series on shared numeric axes (e.g. a
/// Jensen–Shannon divergence curve, the mean MPI time per step, or PCA
/// loadings over the steps), with a legend of the series names. Each series
/// takes a colour in order; a non-finite point breaks its line; with few
/// points (at most 40 in all) each is also marked by a dot. A series of
/// more points than four per pixel of width is thinned to the lowest and
/// highest point of each pixel column (and the first and last), which
/// draws the same picture in a bounded size.
pub fn line_chart(series: &[Series], labels: &Labels) -> String {
    let (w, h) = (640.0, 400.0);
    let named = series.iter().any(|s| !s.name.is_empty());
    let a = chart_area(w, h, if named { 150.0 } else { 24.0 });
    let mut doc = Doc::new(w, h, labels.title);
    let fin = || {
        series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    };
    let ex = extent(fin().map(|p| p.0), 0.0);
    let ey = extent(fin().map(|p| p.1), 0.05);
    let (x0, x1) = ex.unwrap_or((0.0, 1.0));
    let (y0, y1) = ey.unwrap_or((0.0, 1.0));
    let xs = Scale::new(x0, x1, a.x, a.x + a.w);
    let ys = Scale::new(y0, y1, a.y + a.h, a.y);
    doc.y_axis(a, &axis_ticks(&ys, 6), labels.y, true);
    doc.x_axis(a, &axis_ticks(&xs, 7), labels.x);
    let total = fin().count();
    doc.s
        .push_str("<g class=\"marks\" fill=\"none\" stroke-width=\"1.6\">");
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let mut d = String::new();
        // Pixel positions, None where the line breaks.
        let px: Vec<Option<(f64, f64)>> = s
            .points
            .iter()
            .map(|&(x, y)| (x.is_finite() && y.is_finite()).then(|| (xs.at(x), ys.at(y))))
            .collect();
        let px = if px.len() > 4 * a.w as usize {
            decimate(&px)
        } else {
            px
        };
        let mut pen = false;
        for p in px {
            let Some((x, y)) = p else {
                pen = false;
                continue;
            };
            let _ = write!(d, "{}{} {}", if pen { "L" } else { "M" }, num(x), num(y));
            pen = true;
        }
        let _ = write!(doc.s, "<path stroke=\"{colour}\" d=\"{d}\"/>");
        if total <= 40 {
            for &(x, y) in s
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
            {
                let _ = write!(
                    doc.s,
                    "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{colour}\" stroke=\"none\"/>",
                    num(xs.at(x)),
                    num(ys.at(y))
                );
            }
        }
    }
    doc.s.push_str("</g>");
    if ex.is_none() {
        doc.no_data(a);
    }
    if named {
        let entries: Vec<(String, String, bool)> = series
            .iter()
            .enumerate()
            .take(16)
            .map(|(i, s)| {
                (
                    PALETTE[i % PALETTE.len()].to_string(),
                    s.name.to_string(),
                    true,
                )
            })
            .collect();
        doc.legend(a.x + a.w + 16.0, a.y + 4.0, &entries);
    }
    doc.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::desync::{Options, analyze};

    /// Parses an SVG, failing the test with the parse error.
    fn parse(svg: &str) -> roxmltree::Document<'_> {
        roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"))
    }

    /// The checks every plot must pass: well-formed, an `<svg>` root whose
    /// first child is a `<title>` with `title`, and text for the axis
    /// labels.
    fn check(svg: &str, title: &str, axis: &[&str]) {
        let doc = parse(svg);
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let first = root.children().find(|n| n.is_element()).unwrap();
        assert_eq!(first.tag_name().name(), "title");
        assert_eq!(first.text(), Some(title));
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        for a in axis {
            assert!(texts.contains(a), "{a:?} not in {texts:?}");
        }
        for bad in ["<script", "href", "@import", "url("] {
            assert!(!svg.contains(bad), "{bad}");
        }
    }

    /// The element `<g class="marks">`.
    fn marks<'a>(doc: &'a roxmltree::Document<'a>) -> roxmltree::Node<'a, 'a> {
        doc.descendants()
            .find(|n| n.attribute("class") == Some("marks"))
            .expect("a marks group")
    }

    fn count(doc: &roxmltree::Document, tag: &str) -> usize {
        marks(doc)
            .descendants()
            .filter(|n| n.has_tag_name(tag))
            .count()
    }

    /// The fill of heatmap cell `(row, col)` (block units), from the run
    /// rectangles `M{c} {r}h{w}v{h}h-{w}z` of the marks' paths.
    fn cell_fill(svg: &str, row: usize, col: usize) -> String {
        let doc = parse(svg);
        for p in marks(&doc).children().filter(|n| n.has_tag_name("path")) {
            let d = p.attribute("d").unwrap();
            for run in d.split('M').filter(|s| !s.is_empty()) {
                let (head, rest) = run.split_once('h').unwrap();
                let (c, r) = head.split_once(' ').unwrap();
                let w: f64 = rest.split_once('v').unwrap().0.parse().unwrap();
                let (c, r): (f64, usize) = (c.parse().unwrap(), r.parse().unwrap());
                if r == row && c <= col as f64 && (col as f64) < c + w {
                    return p.attribute("fill").unwrap().to_string();
                }
            }
        }
        panic!("cell ({row}, {col}) not drawn");
    }

    fn rgb(hex: &str) -> (u8, u8, u8) {
        let v = |i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
        (v(1), v(3), v(5))
    }

    const L: Labels = Labels {
        title: "T",
        x: "x axis",
        y: "y axis",
    };

    #[test]
    fn escape_makes_any_text_well_formed() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{0}y\u{1b}"), "x\u{fffd}y\u{fffd}");
        let nasty = "MPI_Send<T>&\u{7} \"q\" ]]> </svg>";
        let labels = Labels {
            title: nasty,
            x: nasty,
            y: nasty,
        };
        let svgs = [
            heatmap(&[[1.0, 2.0]], 1.5, 1.0, &labels, nasty),
            line_chart(
                &[Series {
                    name: nasty,
                    points: &[(0.0, 1.0), (1.0, 2.0)],
                }],
                &labels,
            ),
            bar_chart(&[nasty, "b"], &[1.0, 2.0], &labels),
            scatter(&[(0.0, 1.0)], None, &labels),
        ];
        let clean = "MPI_Send<T>&\u{fffd} \"q\" ]]> </svg>";
        for svg in &svgs {
            check(svg, clean, &[]);
            assert!(svg.contains("MPI_Send&lt;T&gt;&amp;"));
        }
    }

    #[test]
    fn the_diverging_scale_is_white_at_the_centre_red_above_blue_below() {
        assert_eq!(diverging_colour(5.0, 5.0, 2.0), "#ffffff");
        assert_eq!(diverging_colour(7.0, 5.0, 2.0), "#b2182b");
        assert_eq!(diverging_colour(99.0, 5.0, 2.0), "#b2182b");
        assert_eq!(diverging_colour(3.0, 5.0, 2.0), "#2166ac");
        assert_eq!(diverging_colour(6.0, 5.0, 2.0), "#f4a582");
        assert_eq!(diverging_colour(f64::NAN, 5.0, 2.0), MISSING);
        assert_eq!(diverging_colour(9.0, 5.0, 0.0), "#ffffff");
        // Monotone: redder (less blue) as the value rises above the centre.
        let mut last = 255;
        for i in 0..=16 {
            let (_, _, b) = rgb(&diverging_colour(f64::from(i) / 16.0, 0.0, 1.0));
            assert!(b <= last);
            last = b;
        }
    }

    #[test]
    fn heatmap_cells_are_white_at_the_mean_red_above_blue_below() {
        // 3 ranks × 4 steps around a mean of 10.
        let t = [
            [10.0, 10.0, 14.0, 10.0],
            [6.0, 10.0, 10.0, 10.0],
            [10.0, 12.0, 10.0, 8.0],
        ];
        let svg = heatmap(&t, 10.0, 4.0, &L, "MPI time [ns]");
        check(&svg, "T", &["x axis", "y axis", "MPI time [ns]"]);
        assert_eq!(cell_fill(&svg, 0, 0), "#ffffff");
        assert_eq!(cell_fill(&svg, 0, 2), "#b2182b");
        assert_eq!(cell_fill(&svg, 1, 0), "#2166ac");
        let (r, g, b) = rgb(&cell_fill(&svg, 2, 1));
        assert!(r > b && g < 200, "reddish: {r} {g} {b}");
        let (r, g, b) = rgb(&cell_fill(&svg, 2, 3));
        assert!(b > r && g < 230, "bluish: {r} {g} {b}");
        // Runs of equal colour are merged: row 0 is white, red, white (3
        // runs), row 1 blue, white (2), row 2 white, red, white, blue (4).
        let doc = parse(&svg);
        let runs: usize = marks(&doc)
            .children()
            .filter_map(|n| n.attribute("d"))
            .map(|d| d.matches('M').count())
            .sum();
        assert_eq!(runs, 9);
        // The colour bar has its 33 levels and the mean among its labels.
        assert!(svg.contains(">10</text>") && svg.contains(">14</text>"));
    }

    #[test]
    fn a_large_heatmap_is_averaged_into_blocks_and_stays_small() {
        // 1024 ranks × 1000 steps of a smooth pattern with a noise-like
        // ripple: worst-ish case for run merging.
        let t: Vec<Vec<f64>> = (0..1024)
            .map(|r| {
                (0..1000)
                    .map(|s| ((r * 7 + s * 13) % 29) as f64 + (r / 128) as f64)
                    .collect()
            })
            .collect();
        let svg = heatmap(&t, 14.0, 14.0, &L, "ns");
        check(&svg, "T", &["x axis", "y axis"]);
        let doc = parse(&svg);
        let runs: usize = marks(&doc)
            .children()
            .filter_map(|n| n.attribute("d"))
            .map(|d| d.matches('M').count())
            .sum();
        assert!(runs <= MAX_HEAT_ROWS * MAX_HEAT_COLUMNS, "{runs}");
        assert!(svg.len() < 3_000_000, "{} bytes", svg.len());
        // Rank ticks reach the last hundreds.
        assert!(svg.contains(">1000</text>"));
    }

    #[test]
    fn histogram_draws_one_bar_per_non_empty_bin() {
        let h = Histogram {
            min: 0.0,
            max: 4.0,
            bin_width: 1.0,
            counts: vec![3, 0, 5, 1],
        };
        let svg = histogram(&h, &L);
        check(&svg, "T", &["x axis", "y axis"]);
        assert_eq!(count(&parse(&svg), "rect"), 3);
        // A single-valued histogram, and an empty one.
        let one = Histogram::of(&[7.0; 5], 10);
        assert_eq!(count(&parse(&histogram(&one, &L)), "rect"), 1);
        let svg = histogram(&Histogram::of(&[], 10), &L);
        check(&svg, "T", &["no data"]);
    }

    #[test]
    fn correlation_matrix_spans_minus_one_to_one() {
        let c = [[1.0, -1.0], [-1.0, 1.0]];
        let svg = correlation(&c, &L);
        check(&svg, "T", &["x axis", "y axis", "Pearson correlation"]);
        assert_eq!(cell_fill(&svg, 0, 0), "#b2182b");
        assert_eq!(cell_fill(&svg, 0, 1), "#2166ac");
        assert!(svg.contains(">-1.0</text>") && svg.contains(">1.0</text>"));
    }

    #[test]
    fn phase_space_has_a_dot_per_distinct_point_and_cluster_colours() {
        let pts = vec![
            vec![(1.0, 1.0), (1.0, 2.0), (2.0, 1.0)],
            vec![(3.0, 3.0), (3.0, 3.0)], // the same point twice: one dot
        ];
        let svg = phase_space(&pts, Some(&[0, 1]), &L);
        check(
            &svg,
            "T",
            &["x axis", "y axis", "cluster 0 (1)", "cluster 1 (1)"],
        );
        let doc = parse(&svg);
        let paths: Vec<_> = marks(&doc)
            .children()
            .filter(|n| n.has_tag_name("path"))
            .collect();
        assert_eq!(paths.len(), 2);
        assert_eq!(paths[0].attribute("stroke"), Some(PALETTE[0]));
        assert_eq!(paths[0].attribute("d").unwrap().matches('M').count(), 3);
        assert_eq!(paths[1].attribute("stroke"), Some(PALETTE[1]));
        assert_eq!(paths[1].attribute("d").unwrap().matches('M').count(), 1);
        // Without clusters: coloured by time, early and late in the legend;
        // the repeated point is at two times, so two colours and two dots.
        let svg = phase_space(&pts, None, &L);
        check(&svg, "T", &["early", "late"]);
        let doc = parse(&svg);
        let dots: usize = marks(&doc)
            .children()
            .filter_map(|n| n.attribute("d"))
            .map(|d| d.matches('M').count())
            .sum();
        assert_eq!(dots, 5);
    }

    #[test]
    fn scatter_numbers_few_points_and_colours_clusters() {
        let pts = [(0.0, 0.0), (1.0, 1.0), (5.0, 5.0), (f64::NAN, 1.0)];
        let svg = scatter(&pts, Some(&[0, 0, 1, 1]), &L);
        check(
            &svg,
            "T",
            &["x axis", "y axis", "0", "1", "2", "cluster 1 (2)"],
        );
        let doc = parse(&svg);
        assert_eq!(count(&doc, "circle"), 3);
        let fills: Vec<_> = marks(&doc)
            .children()
            .filter_map(|n| n.attribute("fill"))
            .collect();
        assert_eq!(fills, [PALETTE[0], PALETTE[0], PALETTE[1]]);
        // Any labels, even huge ones, colour by number and fit the legend.
        let svg = scatter(&[(0.0, 0.0), (1.0, 1.0)], Some(&[usize::MAX, 3]), &L);
        check(&svg, "T", &["cluster 3 (1)", "cluster 18446744073…"]);
        let pts = vec![vec![(1.0, 1.0)], vec![(2.0, 2.0)]];
        let svg = phase_space(&pts, Some(&[usize::MAX, 0]), &L);
        check(&svg, "T", &["cluster 0 (1)"]);
        // Coincident points share one label.
        let pts = [
            (0.0, 0.0),
            (10.0, 10.0),
            (10.0, 10.0),
            (0.0, 0.0),
            (10.0, 10.0),
        ];
        let svg = scatter(&pts, None, &L);
        check(&svg, "T", &["0, 3", "1–2, 4"]);
        assert_eq!(index_ranges(&[0, 1, 2, 5, 7, 8]), "0–2, 5, 7–8");
    }

    #[test]
    fn explained_variance_has_a_bar_per_component_and_a_cumulative_line() {
        let svg = explained_variance(&[0.6, 0.3, 0.1], &L);
        check(&svg, "T", &["PC1", "PC2", "PC3", "cumulative", "y axis"]);
        assert_eq!(count(&parse(&svg), "rect"), 3);
        assert!(svg.contains(">100</text>"));
        // Capped at 20 components.
        let many = vec![0.01; 100];
        assert_eq!(count(&parse(&explained_variance(&many, &L)), "rect"), 20);
    }

    #[test]
    fn line_chart_draws_a_path_per_series_and_breaks_at_gaps() {
        let a = [(0.0, 1.0), (1.0, 3.0), (2.0, f64::NAN), (3.0, 2.0)];
        let b = [(0.0, 0.5), (3.0, 0.5)];
        let svg = line_chart(
            &[
                Series {
                    name: "D_JS",
                    points: &a,
                },
                Series {
                    name: "b",
                    points: &b,
                },
            ],
            &L,
        );
        check(&svg, "T", &["x axis", "y axis", "D_JS", "b"]);
        let doc = parse(&svg);
        let paths: Vec<_> = marks(&doc)
            .children()
            .filter(|n| n.has_tag_name("path"))
            .collect();
        assert_eq!(paths.len(), 2);
        assert_eq!(paths[0].attribute("d").unwrap().matches('M').count(), 2);
        assert_eq!(count(&doc, "circle"), 5);
        check(&line_chart(&[], &L), "T", &["no data"]);
    }

    #[test]
    fn a_long_series_is_thinned_to_its_envelope() {
        // A million points of a sawtooth between 0 and 1.
        let pts: Vec<(f64, f64)> = (0..1_000_000)
            .map(|i| (f64::from(i), f64::from(i % 7) / 6.0))
            .collect();
        let svg = line_chart(
            &[Series {
                name: "",
                points: &pts,
            }],
            &L,
        );
        check(&svg, "T", &["x axis", "y axis"]);
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
        // The envelope stays: points at both extremes of the y range.
        let doc = parse(&svg);
        let d = marks(&doc)
            .children()
            .find_map(|n| n.attribute("d"))
            .unwrap();
        let ys: Vec<f64> = d
            .split(['M', 'L'])
            .filter(|p| !p.is_empty())
            .map(|p| p.split(' ').nth(1).unwrap().parse().unwrap())
            .collect();
        let (top, bottom) = (34.0_f64, 34.0 + 400.0 - 34.0 - 52.0);
        let (lo, hi) = ys
            .iter()
            .fold((f64::MAX, f64::MIN), |m, &y| (m.0.min(y), m.1.max(y)));
        assert!(lo < top + 20.0 && hi > bottom - 20.0, "{lo} {hi}");
        // Breaks survive thinning.
        let px = [Some((0.1, 1.0)), Some((0.2, 3.0)), None, Some((0.3, 2.0))];
        assert_eq!(decimate(&px), px);
    }

    #[test]
    fn bar_chart_labels_categories_and_rotates_long_ones() {
        let svg = bar_chart(&["a", "b", "c"], &[1.0, -2.0, 3.0], &L);
        check(&svg, "T", &["a", "b", "c", "x axis", "y axis"]);
        assert_eq!(count(&parse(&svg), "rect"), 3);
        assert!(!svg.contains("rotate(-45"));
        let cats: Vec<String> = (0..40).map(|i| format!("MPI_Allreduce #{i}")).collect();
        let vals: Vec<f64> = (0..40).map(f64::from).collect();
        let svg = bar_chart(&cats, &vals, &L);
        check(&svg, "T", &["MPI_Allreduce #0"]);
        assert!(svg.contains("rotate(-45"));
        assert_eq!(count(&parse(&svg), "rect"), 40);
    }

    #[test]
    fn tick_labels_use_one_prefix_per_axis() {
        let t: Vec<String> = labelled_ticks(0.0, 25_000.0, 5)
            .into_iter()
            .map(|p| p.1)
            .collect();
        assert_eq!(t, ["0", "5k", "10k", "15k", "20k", "25k"]);
        let t: Vec<String> = labelled_ticks(0.0, 1.0, 5)
            .into_iter()
            .map(|p| p.1)
            .collect();
        assert_eq!(t, ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        let t: Vec<String> = labelled_ticks(1000.0, 3000.0, 4)
            .into_iter()
            .map(|p| p.1)
            .collect();
        assert_eq!(t, ["1000", "1500", "2000", "2500", "3000"]);
        assert_eq!(index_ticks(16, 8), [0, 2, 4, 6, 8, 10, 12, 14]);
        assert_eq!(index_ticks(1, 8), [0]);
        assert_eq!(num(-0.04), "0");
        assert_eq!(num(12.34), "12.3");
    }

    /// Every plot of a real analysis parses and is labelled.
    #[test]
    fn every_plot_of_an_analysis_is_valid_xml() {
        let t: Vec<Vec<f64>> = (0..6)
            .map(|r| {
                (0..20)
                    .map(|s| 1000.0 + ((r * 3 + s) % 5) as f64 * 10.0 * r as f64)
                    .collect()
            })
            .collect();
        let d = analyze(&t, &Options::default()).unwrap();
        let labels = d.clustering.as_ref().map(|c| c.labels.as_slice());
        let scores: Vec<(f64, f64)> = d
            .pca
            .scores
            .iter()
            .map(|s| (s[0], s.get(1).copied().unwrap_or(0.0)))
            .collect();
        for svg in [
            heatmap(&d.deviation, 0.0, d.colour_range, &L, "ns"),
            histogram(&d.histogram, &L),
            correlation(&d.correlation, &L),
            phase_space(&d.phase_space, labels, &L),
            explained_variance(&d.pca.explained_variance_ratio, &L),
            scatter(&scores, labels, &L),
        ] {
            check(&svg, "T", &["x axis", "y axis"]);
        }
    }
}
