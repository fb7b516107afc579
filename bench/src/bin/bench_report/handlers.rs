//! Every software handler DPDK ships, side by side per row: the table of
//! the full report (each handler's median rate and paired ratio to
//! `ring_mp_mc`, the best handler, `ptr_ring`'s rank) and its compact form
//! in a release's section of the summary (the best handler and `ptr_ring`'s
//! ratio to it); and what the run did with the `floor_lifo` reference.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bench::matrix::{self, BASELINE, OURS, PEERS};
use bench::record::MempoolKey;
use bench::stats::{median, round_ratios, Paired};
use bench::targets;

use crate::data::{Data, MempoolRuns};
use crate::swing;

/// One handler in one row.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerStat {
    pub handler: String,
    /// Median objects/s over its rounds.
    pub rate: f64,
    /// Paired ratio to `ring_mp_mc` over the rounds both ran (`None` for
    /// `ring_mp_mc` itself: 1.0 by definition).
    pub to_base: Option<Paired>,
    /// Rounds it ran.
    pub rounds: usize,
}

impl HandlerStat {
    /// The ratio it is ranked by (1.0 for `ring_mp_mc`).
    pub fn ratio(&self) -> f64 {
        self.to_base.map_or(1.0, |p| p.median)
    }
}

/// Every handler of one row, ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Measured handlers, best first (by median paired ratio to
    /// `ring_mp_mc`); the `floor_lifo` reference is not one of them.
    pub ranked: Vec<HandlerStat>,
    /// `ptr_ring`'s place in `ranked` (1 = best), when it ran.
    pub ours_rank: Option<usize>,
    /// `ptr_ring / best`, paired over the rounds both ran (`None` when
    /// `ptr_ring` is the best or did not run).
    pub ours_to_best: Option<Paired>,
    /// Handlers asked for that did not run in this row, and why.
    pub missing: Vec<(String, String)>,
}

impl Ranking {
    /// The best handler.
    pub fn best(&self) -> Option<&HandlerStat> {
        self.ranked.first()
    }
}

/// The handlers of the table, in column order.
pub fn columns() -> Vec<&'static str> {
    [OURS, BASELINE].into_iter().chain(PEERS).collect()
}

/// The ranking of one row; `None` without `ring_mp_mc` rounds.
pub fn rank(
    key: &MempoolKey,
    m: &BTreeMap<String, MempoolRuns>,
    skipped: Option<&BTreeMap<String, String>>,
) -> Option<Ranking> {
    let base = &m.get(BASELINE)?.rounds;
    // A handler with a reason to be left out (a failed run) is not ranked,
    // whatever rounds it ran before.
    let left_out = |h: &str| skipped.is_some_and(|s| s.contains_key(h));
    let mut ranked: Vec<HandlerStat> = columns()
        .into_iter()
        .filter(|h| !left_out(h))
        .filter_map(|h| {
            let r = m.get(h)?;
            let rates: Vec<f64> = r.rounds.iter().map(|&(_, x)| x).collect();
            Some(HandlerStat {
                handler: h.to_string(),
                rate: median(&rates)?,
                to_base: (h != BASELINE)
                    .then(|| Paired::of(&round_ratios(&r.rounds, base)))
                    .flatten(),
                rounds: rates.len(),
            })
        })
        .filter(|s| s.handler == BASELINE || s.to_base.is_some())
        .collect();
    ranked.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
    let ours_rank = ranked.iter().position(|s| s.handler == OURS).map(|i| i + 1);
    let ours_to_best = match (ours_rank, ranked.first()) {
        (Some(r), Some(best)) if r > 1 => m
            .get(OURS)
            .zip(m.get(&best.handler))
            .and_then(|(o, b)| Paired::of(&round_ratios(&o.rounds, &b.rounds))),
        _ => None,
    };
    let mut missing: Vec<(String, String)> = skipped
        .into_iter()
        .flatten()
        .map(|(h, why)| (h.clone(), why.clone()))
        .collect();
    // A handler that fits the row but left no rounds and no reason.
    for h in columns() {
        let known = m.contains_key(h) || missing.iter().any(|(x, _)| x == h);
        if !known && matrix::handler_fits(h, key) && !m.is_empty() {
            missing.push((h.to_string(), "no rounds recorded (not asked for?)".into()));
        }
    }
    Some(Ranking {
        ranked,
        ours_rank,
        ours_to_best,
        missing,
    })
}

/// The rows of the table: the core rows with `ring_mp_mc` rounds.
fn rows(d: &Data) -> Vec<(&MempoolKey, Ranking)> {
    d.mempool
        .iter()
        .filter(|(k, _)| matrix::core_row(k))
        .filter_map(|(k, m)| Some((k, rank(k, m, d.skipped.get(k))?)))
        .collect()
}

/// For a row that swings between runs: these figures are one run's, and
/// the spread of `ptr_ring / ring_mp_mc` over the runs.
fn swings(d: &Data, k: &MempoolKey) -> String {
    swing::spread(d, k).map_or(String::new(), |s| {
        let grade = if s.withholds(targets::mempool(k)) {
            "; runs disagree: not targets-grade"
        } else {
            ""
        };
        format!(
            "; run 1 of {} (ptr_ring / ring_mp_mc {}{grade})",
            s.runs.len(),
            s.words()
        )
    })
}

fn fmt_paired(p: &Paired) -> String {
    format!("{:.2}x [{:.2}-{:.2}]", p.median, p.lo, p.hi)
}

/// `ptr_ring`'s standing in words: "best", or "2 of 7, 0.95x [..] of ring_sp_sc".
pub fn standing(r: &Ranking) -> String {
    let n = r.ranked.len();
    match (r.ours_rank, r.best(), r.ours_to_best) {
        (Some(1), _, _) => format!("1 of {n} (best)"),
        (Some(i), Some(b), Some(p)) => {
            let within = if p.contains_one() {
                ", within noise of it"
            } else {
                ""
            };
            format!("{i} of {n}: {} of {}{within}", fmt_paired(&p), b.handler)
        }
        (Some(i), _, _) => format!("{i} of {n}"),
        (None, _, _) => "did not run".into(),
    }
}

/// The table of the full report.
pub fn full(w: &mut String, d: &Data) {
    let rows = rows(d);
    if !rows.iter().any(|(_, r)| r.ranked.len() > 2) {
        return;
    }
    let cols = columns();
    let _ = writeln!(w, "## Every software handler DPDK ships\n");
    let _ = writeln!(
        w,
        "On the core rows (no cache anywhere; DPDK's cache 256 on every handler with working sets \
         larger than it; hand-over between lcores) `mempool_bench` also runs DPDK's other software \
         handlers: `ring_sp_sc` (one lcore only: its single-producer / single-consumer contract), \
         `ring_mt_rts`, `ring_mt_hts` (the ring driver), `stack`, `lf_stack` (the stack driver), \
         `bucket` (the bucket driver), no handler cache of their own. `ptr_ring` and `ring_mp_mc` \
         run in every round; the others {} per round, in turn, in the same rotated order, so each \
         runs in fewer rounds (the `n` of its cell). Cells: median M objects/s, then the ratio to \
         `ring_mp_mc` (median of the per-round ratios over the rounds both ran, bootstrap 95% CI). \
         Ranked by that ratio; `floor_lifo` (the benchmark's own single-thread reference) is not \
         ranked. \"ptr_ring / best\": paired over the rounds both ran. A handler that was not \
         registered, refused the pool or failed a run is listed with the reason below the table; \
         `n/a`: the handler does not fit the row.\n",
        d.meta("peers_per_round")
    );
    let _ = write!(w, "| row |");
    for h in &cols {
        let _ = write!(w, " {h} |");
    }
    let _ = writeln!(w, " best | ptr_ring's rank |");
    let _ = writeln!(w, "|---|{}---|---|", "---|".repeat(cols.len()));
    let mut reasons = Vec::new();
    for (k, r) in &rows {
        let _ = write!(w, "| {}: {} |", k.group.name(), k.describe());
        for h in &cols {
            let cell = match r.ranked.iter().find(|s| s.handler == *h) {
                Some(s) => format!(
                    "{:.1} · {} (n {})",
                    s.rate / 1e6,
                    s.to_base.map_or("1x".into(), |p| fmt_paired(&p)),
                    s.rounds
                ),
                None if r.missing.iter().any(|(x, _)| x == h) => "left out (below)".into(),
                None if !matrix::handler_fits(h, k) => "n/a".into(),
                None => "-".into(),
            };
            let _ = write!(w, " {cell} |");
        }
        let best = r.best().map_or("-".into(), |b| format!("`{}`", b.handler));
        let _ = writeln!(w, " {best} | {}{} |", standing(r), swings(d, k));
        for (h, why) in &r.missing {
            reasons.push(format!(
                "* {}: {}: `{h}` left out: {}",
                k.group.name(),
                k.describe(),
                why.replace('|', "\\|")
            ));
        }
    }
    let _ = writeln!(w);
    if !reasons.is_empty() {
        let _ = writeln!(w, "Left out:\n\n{}\n", reasons.join("\n"));
    }
}

/// The compact table of a release's section: per row the best handler and
/// `ptr_ring`'s ratio to it; empty when the run had no peers.
pub fn compact(d: &Data) -> Vec<String> {
    let rows = rows(d);
    if !rows.iter().any(|(_, r)| r.ranked.len() > 2) {
        return Vec::new();
    }
    let mut v = vec![
        "| row | best handler (ratio to ring_mp_mc) | ptr_ring / best [95% CI] | ptr_ring's rank |"
            .to_string(),
        "|---|---|---|---|".to_string(),
    ];
    for (k, r) in &rows {
        let Some(b) = r.best() else { continue };
        let ours = match (r.ours_rank, r.ours_to_best) {
            (Some(1), _) => "1x (ptr_ring is the best)".into(),
            (_, Some(p)) => fmt_paired(&p),
            _ => "-".into(),
        };
        let rank = r
            .ours_rank
            .map_or("-".into(), |i| format!("{i} of {}", r.ranked.len()));
        let missing = if r.missing.is_empty() {
            String::new()
        } else {
            let names: Vec<&str> = r.missing.iter().map(|(h, _)| h.as_str()).collect();
            format!(" ({} left out)", names.join(", "))
        };
        v.push(format!(
            "| {}: {} | `{}` ({:.2}x) | {ours} | {rank}{missing}{} |",
            k.group.name(),
            k.describe(),
            b.handler,
            b.ratio(),
            swings(d, k)
        ));
    }
    v
}

/// What the run did with the `floor_lifo` reference (the `floor_lifo=`
/// field of `mempool_bench`'s parameter line).
pub fn floor_note(d: &Data) -> String {
    let what = "`floor_lifo` is an unsynchronised single-thread stack registered by the benchmark: \
                a reference for the ops interface's own cost, not a floor where a handler beats it.";
    match (
        floor_skipped(d),
        d.meta.get("floor_lifo").map(String::as_str),
    ) {
        (Some(why), _) => format!("{what} {why}"),
        (None, Some("not-asked")) => {
            "`floor_lifo` (the single-thread reference) was not asked for.".into()
        }
        _ => what.into(),
    }
}

/// Why `floor_lifo` did not run, when DPDK's ops table had no slot for it.
pub fn floor_skipped(d: &Data) -> Option<String> {
    let v = d.meta.get("floor_lifo")?;
    let rest = v.strip_prefix("no-room-")?;
    let (used, max) = rest.split_once("-of-").unwrap_or(("?", "?"));
    Some(format!(
        "`floor_lifo` did not run on this release: DPDK's mempool ops table was full ({used} of its \
         {max} slots: every mempool driver of Debian's plugin directory takes one, and `ptr_ring` \
         the last), so its rows are left out."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data;
    use bench::record::{Group, Pattern, Record, Skipped};

    fn key(lcores: u32) -> MempoolKey {
        MempoolKey {
            group: Group::NoCache,
            pattern: Pattern::Recycle,
            lcores,
            bulk: 32,
            kept: 128,
            cache: 0,
        }
    }

    /// Rounds 1..=n of `handler` at `rate` objects/s (times a per-round
    /// machine factor that every handler of the round shares).
    fn add(d: &mut Data, k: MempoolKey, handler: &str, rate: f64, rounds: &[u32]) {
        for &round in rounds {
            let mode = if round % 2 == 0 { 1.0 } else { 0.5 };
            d.add(data::test_round(k, handler, round, rate * mode));
        }
    }

    /// A row of `lcores` with `ptr_ring` and `ring_mp_mc` at these rates in
    /// rounds 1..=n.
    fn pair(lcores: u32, ours: f64, base: f64, n: u32) -> (Data, MempoolKey, Vec<u32>) {
        let mut d = Data::default();
        let k = key(lcores);
        let all: Vec<u32> = (1..=n).collect();
        add(&mut d, k, OURS, ours, &all);
        add(&mut d, k, BASELINE, base, &all);
        (d, k, all)
    }

    #[test]
    fn best_and_ranks_from_known_rates() {
        let (mut d, k, all) = pair(1, 90e6, 100e6, 6);
        add(&mut d, k, "ring_sp_sc", 150e6, &[1, 3, 5]);
        add(&mut d, k, "stack", 50e6, &[2, 4, 6]);
        add(&mut d, k, "floor_lifo", 400e6, &all);
        // Rounds before a failed run do not rank it.
        add(&mut d, k, "bucket", 900e6, &[1]);
        d.add(Record::Skipped(Skipped {
            key: k,
            handler: "bucket".into(),
            reason: "cannot set up a pool".into(),
        }));
        let r = rank(&k, &d.mempool[&k], d.skipped.get(&k)).unwrap();
        let order: Vec<&str> = r.ranked.iter().map(|s| s.handler.as_str()).collect();
        // floor_lifo is not ranked; the machine's modes cancel in the ratios.
        assert_eq!(order, ["ring_sp_sc", BASELINE, OURS, "stack"]);
        assert_eq!(r.ours_rank, Some(3));
        let p = r.ours_to_best.unwrap();
        assert!((p.median - 0.6).abs() < 1e-9, "{p:?}");
        assert_eq!(r.ranked[0].rounds, 3);
        assert!(r
            .missing
            .iter()
            .any(|(h, why)| h == "bucket" && why.contains("cannot set up")));
        // Fitting handlers with neither rounds nor a reason are named too.
        for h in ["ring_mt_rts", "ring_mt_hts", "lf_stack"] {
            assert!(r.missing.iter().any(|(x, _)| x == h), "{h}");
        }
        assert!(standing(&r).starts_with("3 of 4: 0.60x"));
    }

    #[test]
    fn ours_best_and_tables_render() {
        let (mut d, k, all) = pair(2, 120e6, 100e6, 5);
        for h in ["ring_mt_rts", "ring_mt_hts", "stack", "lf_stack", "bucket"] {
            add(&mut d, k, h, 80e6, &all);
        }
        let r = rank(&k, &d.mempool[&k], None).unwrap();
        assert_eq!(r.ours_rank, Some(1));
        assert!(r.ours_to_best.is_none());
        // ring_sp_sc does not fit two lcores: not missing.
        assert!(r.missing.is_empty(), "{:?}", r.missing);
        let mut w = String::new();
        full(&mut w, &d);
        assert!(w.contains("| n/a |"), "{w}");
        assert!(w.contains("| `ptr_ring` | 1 of 7 (best) |"), "{w}");
        let c = compact(&d);
        assert_eq!(c.len(), 3);
        assert!(c[2].contains("`ptr_ring` (1.20x) | 1x (ptr_ring is the best) | 1 of 7 |"));
    }

    #[test]
    fn no_peers_no_compact_table() {
        let (d, k, _) = pair(1, 90e6, 100e6, 2);
        assert!(compact(&d).is_empty());
        assert!(data::mempool_cmp(&k, &d.mempool[&k]).is_some());
    }
}
