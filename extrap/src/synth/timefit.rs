//! Timing: every field of every histogram fitted as a function of P.

use super::*;

/// Fits every timing field of one distribution across the inputs.
pub(super) fn fit_dist(
    method: Method,
    ps: &[f64],
    dists: &[&Dist],
    base: &Dist,
    tally: &mut HashMap<String, usize>,
) -> (Dist, Option<(Law, String)>) {
    let mut n = Vec::new();
    let mut fields: [Vec<f64>; 3] = Default::default();
    for (&p, d) in ps.iter().zip(dists) {
        let s = d.stats();
        if s.count() == 0 {
            continue;
        }
        n.push(p);
        fields[0].push(s.mean());
        fields[1].push(s.min() as f64);
        fields[2].push(s.max() as f64);
    }
    if n.is_empty() || base.stats().count() == 0 {
        return (base.clone(), None);
    }
    let target = ps.last().copied().unwrap_or(1.0);
    let laws = fit_fields(method, &n, &fields, tally);
    let v: Vec<f64> = laws
        .iter()
        .zip(&fields)
        .map(|(l, f)| match l {
            Some((law, _)) => law.eval(target),
            None => f.last().copied().unwrap_or(0.0),
        })
        .collect();
    let (mean, min, max) = (v[0], v[1].min(v[0]), v[2].max(v[0]));
    (
        base.remapped(min, mean, max),
        laws.into_iter().next().flatten(),
    )
}

/// The laws of a histogram's fields (mean, min, max), each with the method
/// that chose it; `None` where nothing could be fitted.
pub(super) fn fit_fields(
    method: Method,
    n: &[f64],
    fields: &[Vec<f64>; 3],
    tally: &mut HashMap<String, usize>,
) -> Vec<Option<(Law, String)>> {
    let mut out = Vec::with_capacity(3);
    match method {
        Method::Paper => {
            let fits: Vec<_> = fields.iter().map(|f| models::fit_paper(n, f)).collect();
            if fits.iter().all(Result::is_ok) {
                let ok: Vec<_> = fits.into_iter().map(|f| f.expect("checked")).collect();
                for law in models::settle(&ok) {
                    out.push(Some((law, "paper".to_string())));
                }
            } else {
                out.extend(fits.into_iter().map(|f| {
                    f.ok().map(|f| {
                        (
                            models::settle(std::slice::from_ref(&f)).remove(0),
                            "paper".into(),
                        )
                    })
                }));
            }
        }
        Method::Pmnf => {
            for f in fields {
                out.push(models::fit_pmnf(n, f).ok().map(|l| (l, "pmnf".to_string())));
            }
        }
        Method::Auto => {
            for f in fields {
                out.push(
                    models::fit_auto(n, f)
                        .ok()
                        .map(|a| (a.law, a.method_name().to_string())),
                );
            }
        }
    }
    for (_, m) in out.iter().flatten() {
        *tally.entry(m.clone()).or_default() += 1;
    }
    out
}

/// The fitted timing of one event at the target: its path timing and the
/// means (compute, mpi) of its path class.
pub(super) fn fit_timing(
    method: Method,
    kept: &[(usize, Stream)],
    key: &[TSrc],
    kps: &[f64],
    tally: &mut HashMap<String, usize>,
    ev: &Ev,
    choices: &mut Vec<TimingChoice>,
) -> (PathTiming, [f64; 2]) {
    let ps = &kps[..kps.len() - 1];
    let target = kps[kps.len() - 1];
    let stats: Vec<Option<(&PathTiming, u8)>> = kept
        .iter()
        .zip(key)
        .map(|((_, s), t)| match t {
            TSrc::Stats(i, c) => s.timings.get(*i).map(|p| (p, *c)),
            TSrc::Exact(..) => None,
        })
        .collect();
    if stats.iter().all(Option::is_some) {
        let pts: Vec<&PathTiming> = stats.iter().flatten().map(|(p, _)| *p).collect();
        let class = stats.last().and_then(|s| s.map(|(_, c)| c)).unwrap_or(0);
        let base = pts[pts.len() - 1];
        // The report shows the law of the path class with most executions.
        let counts = [
            base.first().count(),
            base.steady().count(),
            base.last().count(),
        ];
        let main = (0..3).max_by_key(|&i| counts[i]).unwrap_or(0) as u8;
        let mut mean_law = None;
        let fitted = base.map_dists(|pc, q, dist| {
            let dists: Vec<&Dist> = pts.iter().map(|p| dist_of(p, pc, q)).collect();
            let mut extended = ps.to_vec();
            extended.push(target);
            let (out, law) = fit_dist(method, &extended, &dists, dist, tally);
            if q == Quantity::Compute && class_code(pc) == main {
                mean_law = law.map(|l| {
                    (
                        l,
                        dists.iter().map(|d| d.stats().mean()).collect::<Vec<_>>(),
                    )
                });
            }
            out
        });
        let pc = match class {
            0 => PathClass::First,
            1 => PathClass::Steady,
            _ => PathClass::Last,
        };
        let means = [
            dist_of(&fitted, pc, Quantity::Compute).stats().mean(),
            dist_of(&fitted, pc, Quantity::Mpi).stats().mean(),
        ];
        if let Some(((law, m), inputs)) = mean_law {
            let choice = TimingChoice {
                event: format!("{} @{:#x}", event_text(ev), ev.shape.site()),
                field: "compute mean".into(),
                inputs,
                law: law.describe(),
                method: m,
                target: law.eval(target),
            };
            let same = |t: &TimingChoice| t.event == choice.event && t.inputs == choice.inputs;
            if !choices.iter().any(same) {
                choices.push(choice);
            }
        }
        (fitted, means)
    } else {
        // Exact times (events outside any loop that were never merged):
        // fit the two values directly.
        let mut vals = [Vec::new(), Vec::new()];
        for t in key {
            let (c, m) = match t {
                TSrc::Exact(c, m) => (*c as f64, *m as f64),
                TSrc::Stats(..) => (0.0, 0.0),
            };
            vals[0].push(c);
            vals[1].push(m);
        }
        let mut means = [0.0; 2];
        for (q, v) in vals.iter().enumerate() {
            let f = [v.clone(), v.clone(), v.clone()];
            means[q] = fit_fields(method, ps, &f, tally)[0]
                .as_ref()
                .map_or(v.last().copied().unwrap_or(0.0), |(l, _)| l.eval(target));
        }
        (PathTiming::default(), means)
    }
}

pub(super) fn dist_of(p: &PathTiming, class: PathClass, q: Quantity) -> &Dist {
    let t: &TimeStats = match class {
        PathClass::First => p.first(),
        PathClass::Steady => p.steady(),
        PathClass::Last => p.last(),
    };
    match q {
        Quantity::Compute => t.compute(),
        Quantity::Mpi => t.mpi(),
    }
}
