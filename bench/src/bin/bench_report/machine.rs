//! The machine's state during the run (`monitor.log` of `bench/run.sh`).

use std::collections::{BTreeMap, BTreeSet};

use bench::stats::Summary;

use crate::data::Data;

/// One line of `monitor.log`.
struct Sample {
    phase: String,
    others: f64,
    steal: f64,
    procs: String,
}

/// Monitor lines: `<epoch> <phase> <others' CPU %> <steal %> <comm:pct,...>`.
fn samples(d: &Data) -> Vec<Sample> {
    d.monitor
        .iter()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _epoch = f.next()?;
            Some(Sample {
                phase: f.next()?.to_string(),
                others: f.next()?.parse().ok()?,
                steal: f.next()?.parse().ok()?,
                procs: f.next().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// The machine's state in one phase of the run: the median and largest
/// other processes' CPU use and steal time of its samples.
pub fn phase_state(d: &Data, phase: &str) -> String {
    let s: Vec<Sample> = samples(d)
        .into_iter()
        .filter(|s| s.phase == phase)
        .collect();
    let others = Summary::of(&s.iter().map(|s| s.others).collect::<Vec<_>>());
    let steal = Summary::of(&s.iter().map(|s| s.steal).collect::<Vec<_>>());
    match (others, steal) {
        (Some(o), Some(st)) => format!(
            "{} sample{}: other processes {:.0}% of a CPU (max {:.0}%), steal {:.0}% (max {:.0}%)",
            s.len(),
            if s.len() == 1 { "" } else { "s" },
            o.median,
            o.max,
            st.median,
            st.max
        ),
        _ => "not sampled".into(),
    }
}

/// The machine's state over the whole run, in one line.
pub fn monitor_summary(d: &Data) -> String {
    let samples = samples(d);
    if samples.is_empty() {
        return "not sampled".into();
    }
    let steal: Vec<f64> = samples.iter().map(|s| s.steal).collect();
    let steal = Summary::of(&steal).expect("non-empty");
    let steal_note = format!(
        "host steal time (vCPUs not running) median {:.0}%, max {:.0}% of CPU time",
        steal.median, steal.max
    );
    let busy: Vec<&Sample> = samples.iter().filter(|s| s.others >= 10.0).collect();
    if busy.is_empty() {
        return format!(
            "quiet: {} samples (every 15 s), other processes below 10% of a CPU in each; {steal_note}",
            samples.len()
        );
    }
    let mut who: BTreeMap<String, usize> = BTreeMap::new();
    let mut phases: BTreeSet<&str> = BTreeSet::new();
    for s in &busy {
        phases.insert(&s.phase);
        let names: BTreeSet<&str> = s
            .procs
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| p.split(':').next().unwrap_or(p))
            .collect();
        for name in names {
            *who.entry(name.to_string()).or_default() += 1;
        }
    }
    let max = busy.iter().map(|s| s.others).fold(0.0, f64::max);
    format!(
        "NOT quiet: other processes used >= 10% of a CPU in {} of {} samples (every 15 s; peak {:.0}%; phases: {}; seen: {}); {steal_note}",
        busy.len(),
        samples.len(),
        max,
        phases.into_iter().collect::<Vec<_>>().join(", "),
        who.iter().map(|(k, n)| format!("{k} in {n}")).collect::<Vec<_>>().join(", ")
    )
}
