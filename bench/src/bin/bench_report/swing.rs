//! The rows that swing between runs (two lcores each recycling through the
//! handler, `bench::matrix::swinging_row`): `bench/run.sh` runs them more
//! than once, as separate `mempool_bench` processes spaced through the
//! benchmark, and the report gives the spread of their ratio over those
//! runs, never one run's figure alone.

use std::fmt::Write as _;

use bench::matrix;
use bench::record::MempoolKey;
use bench::stats::{Paired, Summary};
use bench::targets::{self, Target};

use crate::data::{self, Data};
use crate::machine::phase_state;

/// One swinging row over its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// (run, `ptr_ring / ring_mp_mc` of that run), run 1 first.
    pub runs: Vec<(u32, Paired)>,
    /// Min / median / max of the per-run median ratios.
    pub summary: Summary,
}

impl Spread {
    /// The runs disagree when their 95% intervals share no common value.
    pub fn disagree(&self) -> bool {
        let lo = self.runs.iter().map(|(_, p)| p.lo).fold(f64::MIN, f64::max);
        let hi = self.runs.iter().map(|(_, p)| p.hi).fold(f64::MAX, f64::min);
        lo > hi
    }

    /// Whether `target` can be judged from run 1: the runs agree (their
    /// intervals overlap), or they disagree only in how far they pass or
    /// miss it, every run earning the same verdict. Runs on both sides of
    /// the target whose intervals share no value give no verdict: which
    /// side a run lands on is then the host's doing (bench/NOTES.md).
    pub fn settles(&self, target: &Target) -> bool {
        let mut verdicts = self.runs.iter().map(|(_, p)| target.verdict(p));
        let first = verdicts.next();
        !self.disagree() || verdicts.all(|v| Some(v) == first)
    }

    /// Whether the row's verdict is withheld ("not targets-grade"): it has
    /// a target, and the runs do not settle it (see [`settles`](Spread::settles)).
    pub fn withholds(&self, target: Option<Target>) -> bool {
        target.is_some_and(|t| !self.settles(&t))
    }

    /// "over 3 runs: min 0.62x, median 0.78x, max 0.86x".
    pub fn words(&self) -> String {
        format!(
            "over {} runs: min {:.2}x, median {:.2}x, max {:.2}x",
            self.runs.len(),
            self.summary.min,
            self.summary.median,
            self.summary.max
        )
    }
}

/// The verdict cell of a swinging row whose runs disagree.
pub const DISAGREE: &str = "runs disagree: not targets-grade (not counted)";

/// The phase of `monitor.log` that run `n` ran in.
fn phase(n: u32) -> String {
    if n == 1 {
        "mempool_bench".into()
    } else {
        format!("mempool_run{n}")
    }
}

/// The spread of `key` over the runs, when it is a swinging row that ran
/// in more than one run.
pub fn spread(d: &Data, key: &MempoolKey) -> Option<Spread> {
    if !matrix::swinging_row(key) {
        return None;
    }
    let mut runs: Vec<(u32, Paired)> = d
        .mempool
        .get(key)
        .and_then(|m| data::paired_to_base(m, matrix::OURS))
        .map(|p| (1, p))
        .into_iter()
        .collect();
    for (n, rows) in &d.reruns {
        if let Some(p) = rows
            .get(key)
            .and_then(|m| data::paired_to_base(m, matrix::OURS))
        {
            runs.push((*n, p));
        }
    }
    if runs.len() < 2 {
        return None;
    }
    let medians: Vec<f64> = runs.iter().map(|(_, p)| p.median).collect();
    Some(Spread {
        summary: Summary::of(&medians)?,
        runs,
    })
}

/// The table of the full report.
pub fn table(w: &mut String, d: &Data) {
    let rows: Vec<(&MempoolKey, Spread)> = d
        .mempool
        .keys()
        .filter_map(|k| Some((k, spread(d, k)?)))
        .collect();
    let Some(n) = rows.iter().map(|(_, s)| s.runs.len()).max() else {
        return;
    };
    let _ = writeln!(
        w,
        "### Two lcores each recycling: the spread over {n} runs\n"
    );
    let _ = writeln!(
        w,
        "These rows swing widely between runs on this VM (how the host places its two vCPUs decides \
         what a cache line moving between them costs). `bench/run.sh` runs them {n} times: run 1 in \
         the main `mempool_bench` run, the others as processes of their own (`ptr_ring` and \
         `ring_mp_mc` only, the same rounds and seconds), after the autotest and after l2fwd:\n\n\
         ```\n{}\n```\n\n\
         Each cell: that run's ratio `ptr_ring / ring_mp_mc` [95% CI], then the round trip of one \
         cache line between the two lcores, measured just before and just after the row's rounds \
         in that run (ns, before / after): what a line one lcore wrote costs the other, which these \
         rows pay per object. The runs disagree when their \
         intervals share no value; if they also fall on both sides of the row's target (one run \
         meets it, another misses it), the row is not targets-grade, and the targets table does not \
         count it. The DPDK-cache recycling rows are not here: DPDK's cache serves them (controls).\n",
        d.meta("swing_cmd")
    );
    let _ = write!(w, "| row |");
    for i in 1..=n {
        let _ = write!(w, " run {i} |");
    }
    let _ = writeln!(w, " min / median / max | runs |");
    let _ = writeln!(w, "|---|{}---|---|", "---|".repeat(n));
    for (k, s) in &rows {
        let _ = write!(w, "| {}: {} |", k.group.name(), k.describe());
        for i in 1..=n as u32 {
            let cell = s
                .runs
                .iter()
                .find(|(r, _)| *r == i)
                .map_or("-".into(), |(_, p)| {
                    let trip = d
                        .trips
                        .get(&i)
                        .and_then(|t| t.get(*k))
                        .map_or(String::new(), |t| {
                            format!("; {:.0} / {:.0} ns", t.before_ns, t.after_ns)
                        });
                    format!("{:.2}x [{:.2}-{:.2}]{trip}", p.median, p.lo, p.hi)
                });
            let _ = write!(w, " {cell} |");
        }
        let target = targets::mempool(k);
        let agree = if !s.disagree() {
            "agree (intervals overlap)"
        } else if s.withholds(target) {
            DISAGREE
        } else if target.is_some() {
            "disagree (intervals apart), every run with the same verdict: counted"
        } else {
            "disagree (intervals apart)"
        };
        let _ = writeln!(
            w,
            " {:.2}x / {:.2}x / {:.2}x | {agree} |",
            s.summary.min, s.summary.median, s.summary.max
        );
    }
    let _ = writeln!(
        w,
        "\nThe machine during each run (`monitor.log`; run 1: the samples of the whole main run, every 15 s; the \
         others: one sample spanning the run):\n"
    );
    for i in 1..=n as u32 {
        let _ = writeln!(w, "* run {i}: {}", phase_state(d, &phase(i)));
    }
    let _ = writeln!(w);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::matrix::{BASELINE, OURS};
    use bench::record::{Group, Pattern, Record};
    use bench::targets::Verdict;

    fn key() -> MempoolKey {
        MempoolKey {
            group: Group::NoCache,
            pattern: Pattern::Recycle,
            lcores: 2,
            bulk: 1,
            kept: 128,
            cache: 0,
        }
    }

    fn line(handler: &str, round: u32, rate: f64) -> Record {
        data::test_round(key(), handler, round, rate)
    }

    /// Run 1 into `d.mempool`, the others into `d.reruns`; each run's
    /// ratio is `ratio`, with a little per-round noise.
    fn with_runs(ratios: &[f64]) -> Data {
        let mut d = Data::default();
        for (i, &ratio) in ratios.iter().enumerate() {
            let mut one = Data::default();
            for round in 1..=7 {
                let noise = 1.0 + (round as f64 - 4.0) * 0.002;
                one.add(line(BASELINE, round, 10e6));
                one.add(line(OURS, round, 10e6 * ratio * noise));
            }
            if i == 0 {
                d.mempool = one.mempool;
            } else {
                d.reruns.insert(i as u32 + 1, one.mempool);
            }
        }
        d.monitor = vec![
            "1 mempool_bench 3 1 -".into(),
            "2 mempool_run2 40 12 cc1:40".into(),
        ];
        d
    }

    /// The verdict cell of `key()` in the targets table.
    fn verdict_cell(d: &Data) -> String {
        let cells = crate::tables::target_cells(d);
        let row = format!("nocache: {}", key().describe());
        let c = cells.iter().find(|c| c.row() == row).expect("the row");
        c.0[3].clone()
    }

    #[test]
    fn runs_apart_on_both_sides_of_the_target_are_not_targets_grade() {
        // Target 1.30x: run 1 misses it, runs 2 and 3 meet it.
        let d = with_runs(&[1.10, 1.40, 1.45]);
        let s = spread(&d, &key()).unwrap();
        assert!(s.disagree());
        assert!(!s.settles(&targets::mempool(&key()).unwrap()));
        assert_eq!(verdict_cell(&d), DISAGREE);
        let mut w = String::new();
        table(&mut w, &d);
        assert!(w.contains(DISAGREE), "{w}");
    }

    #[test]
    fn runs_apart_on_one_side_of_the_target_keep_their_verdict() {
        let d = with_runs(&[0.62, 0.80, 0.86]);
        let s = spread(&d, &key()).unwrap();
        assert_eq!(s.runs.len(), 3);
        assert!((s.summary.min - 0.62).abs() < 0.01 && (s.summary.max - 0.86).abs() < 0.01);
        assert!((s.summary.median - 0.80).abs() < 0.01);
        assert!(s.disagree());
        assert!(s.settles(&targets::mempool(&key()).unwrap()));
        assert_eq!(verdict_cell(&d), Verdict::Missed.label());
        let mut w = String::new();
        table(&mut w, &d);
        assert!(!w.contains(DISAGREE), "{w}");
        assert!(
            w.contains("every run with the same verdict: counted"),
            "{w}"
        );
        assert!(
            w.contains("run 2: 1 sample: other processes 40% of a CPU"),
            "{w}"
        );
        assert!(w.contains("run 3: not sampled"), "{w}");
    }

    #[test]
    fn each_run_gives_the_line_round_trip_it_measured() {
        let mut d = with_runs(&[0.80, 0.95]);
        let trip = |before_ns, after_ns| {
            Record::Line(bench::record::LineTrip {
                key: key(),
                before_ns,
                after_ns,
            })
        };
        // Run 1's line comes with mempool.csv, through `add`.
        d.add(trip(71.0, 64.0));
        let mut w = String::new();
        table(&mut w, &d);
        assert!(w.contains("| 0.80x [0.80-0.80]; 71 / 64 ns |"), "{w}");
        // Run 2 measured none: its cell is the ratio alone.
        assert!(w.contains("| 0.95x [0.95-0.95] |"), "{w}");
        d.trips.entry(2).or_default().insert(
            key(),
            bench::record::LineTrip {
                key: key(),
                before_ns: 388.0,
                after_ns: 402.0,
            },
        );
        let mut w = String::new();
        table(&mut w, &d);
        assert!(w.contains("| 0.95x [0.95-0.95]; 388 / 402 ns |"), "{w}");
        assert_eq!(
            d.trip_words(1, &key()).as_deref(),
            Some("a cache line between the lcores: 71 / 64 ns round trip (before / after the row)")
        );
        assert_eq!(d.trip_words(3, &key()), None);
    }

    #[test]
    fn runs_that_agree_and_a_single_run() {
        let d = with_runs(&[0.80, 0.801, 0.799]);
        assert!(!spread(&d, &key()).unwrap().disagree());
        assert!(spread(&with_runs(&[0.8]), &key()).is_none());
    }
}
