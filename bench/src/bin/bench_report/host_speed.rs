//! How fast the host ran a benchmark run against the committed run of its
//! release, and the speed below which the run does not replace that run's
//! section of the summary by itself (`bench_report --index`).

use std::collections::BTreeMap;

use bench::record::Group;
use bench::stats::Summary;

use crate::tables::TargetCells;

/// The lowest host speed ([`host_speed`]) at which a run replaces the
/// section of its release without being asked to (`--replace`): the 12
/// sections committed in place of another read 0.90x-1.06x against it; a
/// run at 0.53x read ratios with intervals two to five times as wide, and
/// rows met for months as missed.
pub const MIN_HOST_SPEED: f64 = 0.8;

/// The baseline's rate in a row's "in words" cell (`... A vs B M/s ...`:
/// `B`, the `ring_mp_mc` side, which no build of `ptr_ring` changes).
fn baseline_rate(words: &str) -> Option<f64> {
    let (_, after) = words.split_once(" vs ")?;
    let (rate, _) = after.split_once(" M/s")?;
    rate.trim().parse().ok().filter(|r: &f64| *r > 0.0)
}

/// The two kinds of rows whose `ring_mp_mc` rate probes the host: no
/// build of `ptr_ring` changes it, so against the committed run of the
/// same release it says how fast the host ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The control rows: DPDK's cache serves every object and the handler
    /// is never called (plain loads and stores).
    Control,
    /// The no-cache rows on one lcore: `ring_mp_mc`'s compare-and-swap on
    /// every call. A host where locked instructions cost more (the 25.11
    /// run of 4 December 2026: 41 M/s here against 77, the control rows at
    /// 1.07x) shows here and not in the control rows.
    Atomic,
}

impl Probe {
    const ALL: [Probe; 2] = [Probe::Control, Probe::Atomic];

    /// Whether `c` is one of this probe's rows.
    fn takes(self, c: &TargetCells) -> bool {
        match self {
            Probe::Control => c.0[3].starts_with("control"),
            Probe::Atomic => c
                .row()
                .starts_with(&format!("{}: 1 lcore, ", Group::NoCache.name())),
        }
    }

    /// The rows, in words.
    pub fn words(self) -> &'static str {
        match self {
            Probe::Control => "the control rows (handler never called)",
            Probe::Atomic => {
                "the no-cache rows on one lcore (`ring_mp_mc`'s atomics on every call)"
            }
        }
    }
}

/// The baseline rates of `probe`'s rows among `rows`, by row.
fn probe_rates(rows: &[TargetCells], probe: Probe) -> BTreeMap<String, f64> {
    rows.iter()
        .filter(|c| probe.takes(c))
        .filter_map(|c| Some((c.row().to_string(), baseline_rate(&c.0[4])?)))
        .collect()
}

/// One probe's verdict on the host: the median, over the probe's rows both
/// runs have, of the ratio of their baseline rates, and the number of rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostSpeed {
    pub probe: Probe,
    pub speed: f64,
    pub rows: usize,
}

/// How fast the host ran the run of the targets rows `new` against the run
/// of `old` (a section's markdown), by each [`Probe`] that has a row in
/// both; empty without one.
pub fn host_speed(old: &str, new: &[TargetCells]) -> Vec<HostSpeed> {
    let old_rows: Vec<TargetCells> = old.lines().filter_map(TargetCells::parse).collect();
    Probe::ALL
        .into_iter()
        .filter_map(|probe| {
            let before = probe_rates(&old_rows, probe);
            let ratios: Vec<f64> = probe_rates(new, probe)
                .iter()
                .filter_map(|(row, r)| Some(r / before.get(row)?))
                .collect();
            Summary::of(&ratios).map(|s| HostSpeed {
                probe,
                speed: s.median,
                rows: s.n,
            })
        })
        .collect()
}

/// The slowest of the probes, the one the guard ([`MIN_HOST_SPEED`]) reads.
pub fn slowest(speeds: &[HostSpeed]) -> Option<HostSpeed> {
    speeds
        .iter()
        .copied()
        .min_by(|a, b| a.speed.total_cmp(&b.speed))
}

/// The probes in words.
pub fn speeds_in_words(speeds: &[HostSpeed]) -> String {
    speeds
        .iter()
        .map(|h| {
            format!(
                "{} at {:.2}x (median of {} rows)",
                h.probe.words(),
                h.speed,
                h.rows
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How fast the host ran against the committed run of `release`, from
/// `old_source`: for the section's machine cell, the full report and the
/// guard's error.
pub fn host_speed_words(speeds: &[HostSpeed], release: &str, old_source: &str) -> String {
    format!(
        "`ring_mp_mc`'s rates against the committed DPDK {release} run, {old_source}: {}",
        speeds_in_words(speeds)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(row: &str, words: &str) -> TargetCells {
        TargetCells([
            row.into(),
            "1.00x [0.99-1.01]".into(),
            "-".into(),
            "control: the handler was not called, not counted".into(),
            words.into(),
        ])
    }

    /// The targets table of a section's markdown, as `Section::render`
    /// writes its rows.
    fn markdown(rows: &[TargetCells]) -> String {
        rows.iter()
            .map(TargetCells::line)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_baseline_rate_is_the_second_of_a_row() {
        assert_eq!(
            baseline_rate("ptr_ring faster: 2126.6 vs 1972.1 M/s (1.07x, 95% CI 1.07-1.08)"),
            Some(1972.1)
        );
        assert_eq!(
            baseline_rate("equal within noise: 15.7 vs 15.8 Mpps (1.00x)"),
            None
        );
        assert_eq!(baseline_rate("no data"), None);
    }

    /// A row with a target (its verdict is not a control's).
    fn with_target(row: &str, words: &str) -> TargetCells {
        TargetCells([
            row.into(),
            "1.05x [1.04-1.08]".into(),
            ">= 1.00x".into(),
            "met".into(),
            words.into(),
        ])
    }

    /// The host's speed comes from each probe's rows both runs have, the
    /// `ring_mp_mc` side, as a median; other rows with a target do not count.
    #[test]
    fn host_speed_compares_the_common_rows_of_each_probe() {
        let mut old = vec![with_target("nocache: a", "equal within noise")];
        old.push(control(
            "dpdkcache: one",
            "equal within noise: 2400.0 vs 2000.0 M/s",
        ));
        old.push(control(
            "dpdkcache: two",
            "equal within noise: 4900.0 vs 5000.0 M/s",
        ));
        old.push(control(
            "dpdkcache: gone",
            "equal within noise: 1.0 vs 1.0 M/s",
        ));
        old.push(with_target(
            "nocache: 1 lcore, bulk 1",
            "x: 86.1 vs 80.0 M/s",
        ));
        old.push(with_target(
            "nocache: 2 lcores, bulk 1",
            "x: 5.0 vs 5.0 M/s",
        ));
        let old = markdown(&old);
        let mut new = vec![with_target("nocache: a", "equal within noise")];
        // No probe row in common: no speed.
        assert_eq!(host_speed(&old, &new), vec![]);
        assert_eq!(slowest(&[]), None);
        new.push(control("dpdkcache: one", "x: 9999.0 vs 1000.0 M/s"));
        new.push(control("dpdkcache: two", "x: 1.0 vs 3000.0 M/s"));
        new.push(control("dpdkcache: new", "x: 1.0 vs 1.0 M/s"));
        // 1000 / 2000 and 3000 / 5000: median 0.55; no atomic row in common.
        let speeds = host_speed(&old, &new);
        assert_eq!(speeds.len(), 1, "{speeds:?}");
        assert_eq!((speeds[0].probe, speeds[0].rows), (Probe::Control, 2));
        assert!((speeds[0].speed - 0.55).abs() < 1e-9, "{speeds:?}");
        assert!(slowest(&speeds).unwrap().speed < MIN_HOST_SPEED);
    }

    /// A host that runs the control rows at full speed and `ring_mp_mc`'s
    /// atomics at half is caught by the atomic probe; two-lcore rows are
    /// not a probe (their rate depends on where the vCPUs run).
    #[test]
    fn a_host_slow_only_at_atomics_is_below_the_threshold() {
        // Row, and the baseline rate before and now.
        let rows = [
            ("dpdkcache: one", 1600.0, 1712.0),
            ("nocache: 1 lcore, bulk 1, 128 kept", 77.0, 41.1),
            ("nocache: 1 lcore, bulk 32, 128 kept", 850.0, 425.0),
            ("nocache: 2 lcores each recycling, bulk 1", 5.0, 50.0),
        ];
        let run = |now: bool| {
            let mut s = vec![with_target("nocache: a", "equal within noise")];
            for (row, before, after) in rows {
                let words = format!("x: 1.0 vs {:.1} M/s", if now { after } else { before });
                s.push(if row.starts_with("dpdkcache") {
                    control(row, &words)
                } else {
                    with_target(row, &words)
                });
            }
            s
        };
        let old = markdown(&run(false));
        let new = run(true);
        let speeds = host_speed(&old, &new);
        assert_eq!(speeds.len(), 2, "{speeds:?}");
        assert_eq!(speeds[0].probe, Probe::Control);
        assert!((speeds[0].speed - 1.07).abs() < 1e-9, "{speeds:?}");
        assert!(speeds[0].speed >= MIN_HOST_SPEED);
        // 41.1 / 77 and 425 / 850: median of two, 0.517; the two-lcore row
        // (10x) is left out.
        assert_eq!((speeds[1].probe, speeds[1].rows), (Probe::Atomic, 2));
        let want = (41.1 / 77.0 + 0.5) / 2.0;
        assert!((speeds[1].speed - want).abs() < 1e-9, "{speeds:?}");
        assert_eq!(slowest(&speeds), Some(speeds[1]));
        assert!(slowest(&speeds).unwrap().speed < MIN_HOST_SPEED);
        assert_eq!(
            speeds_in_words(&speeds),
            "the control rows (handler never called) at 1.07x (median of 1 rows), the no-cache \
             rows on one lcore (`ring_mp_mc`'s atomics on every call) at 0.52x (median of 2 rows)"
        );
    }
}
