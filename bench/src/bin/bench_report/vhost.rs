//! The end-to-end rows over vhost-user (`bench/vhost.sh`): `ptr_ring`
//! against every handler measured, with `ptr_ring`'s handler share and the
//! mbufs held out of the handler.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bench::matrix::{BASELINE, OURS};
use bench::stats::{median, round_ratios, Paired};
use bench::targets::Verdict;

use crate::data::{self, Data, E2eRuns};

/// The app name of these rows in `e2e.csv`.
pub const APP: &str = "testpmd-vhost";

/// The app name of `vhost_pair`'s rows: the handlers in one process,
/// one round per block of one second.
pub const PAIR_APP: &str = "vhost-pair";

/// Whether rows of `app` belong to this section.
pub fn is_vhost(app: &str) -> bool {
    app == APP || app == PAIR_APP
}

const TITLE: &str = "## End to end over vhost-user (a sender and a vhost peer, two processes)";

/// Handler columns after `ptr_ring`, in table order (those present):
/// `ptr_ring-newest` is `ptr_ring` with newest-first gets on its pool
/// (the pair rows).
const OTHERS: &[&str] = &[BASELINE, "stack", bench::pool_config::PTR_RING_NEWEST];

/// `ptr_ring` / `other`: the paired per-round ratio.
fn paired(m: &BTreeMap<String, E2eRuns>, other: &str) -> Option<Paired> {
    Paired::of(&round_ratios(&m.get(OURS)?.rounds, &m.get(other)?.rounds))
}

fn fmt_paired(p: Option<Paired>) -> String {
    p.map_or("-".into(), |p| {
        format!("{:.2}x [{:.2}-{:.2}]", p.median, p.lo, p.hi)
    })
}

/// The section; nothing when the run has no such rows.
pub fn section(w: &mut String, d: &Data) {
    let keys: Vec<_> = data::e2e_keys(d)
        .into_iter()
        .filter(|k| is_vhost(&k.app))
        .collect();
    if keys.is_empty() {
        if let Some(why) = d.meta.get("vhost_skip") {
            let _ = writeln!(w, "{TITLE}\n\n{why}.\n");
        }
        return;
    }
    let _ = writeln!(w, "{TITLE}\n");
    let _ = writeln!(
        w,
        "```\n{}\n{}\n```\n",
        d.meta("vhost_peer_cmd"),
        d.meta("vhost_cmd")
    );
    let inflight: Vec<String> = keys
        .iter()
        .filter_map(|k| {
            d.meta
                .get(&format!("vhost_inflight_{}", k.variant))
                .map(|n| format!("{n} (`{}`)", k.variant))
        })
        .collect();
    let _ = writeln!(
        w,
        "Process A (the handler under test, forwarding on CPU 1) allocates every packet from its \
         pool (`txonly`) and sends it through `net_virtio_user0`, whose rings have {} descriptors \
         each; process B (the vhost-user backend, always `ring_mp_mc`, forwarding on CPU 0) copies \
         the packets out (`rxonly`). DPDK's default cache (250) on both sides, `ptr_ring`'s own \
         cache off. Rate: B's receive rate. Mbufs out of `ptr_ring` in A (in its rings, in DPDK's \
         caches of 2 lcores, at most 2 x 375), read through telemetry at the end of the last run: \
         {}. Handler share: objects `ptr_ring` handed out per packet A sent, from its counters read \
         through telemetry at the start and the end of the sampled seconds; under {:.0}%: DPDK's \
         cache served A, the row is a control. {} rounds per handler, the order rotated every \
         round.\n",
        d.meta("vhost_ring"),
        if inflight.is_empty() {
            "-".into()
        } else {
            inflight.join(", ")
        },
        data::OFF_PATH * 100.0,
        d.meta("vhost_rounds")
    );
    if keys.iter().any(|k| k.app == PAIR_APP) {
        let handlers =
            d.meta
                .get("vhost_pair_handlers")
                .map_or("`ptr_ring` and `ring_mp_mc`".into(), |hs| {
                    hs.split(' ')
                        .map(|h| format!("`{h}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                });
        let _ = writeln!(
            w,
            "The `vhost_pair` rows run the handlers in one process A, so that the host's level \
             (bench/NOTES.md, \"The vhost rows' two levels\") moves all alike: one pool per \
             handler ({}) of {} mbufs (65536 in the row that says so), each transmitting \
             txonly's bursts of 512 through a virtio-user port of its own to one of B's vhost \
             ports, the lcore switching between them every 100 ms (A B C C B A, or A B C D D C B \
             A with four; `ptr_ring-newest` is `ptr_ring` with newest-first gets on its pool, \
             `order` 2 of its `struct ptr_ring_pool_config`, its cache off too). A round is a \
             block of one second, the rate each handler's packets sent over the time of its own \
             windows; {} runs of {} blocks, the list of handlers rotated every run, so that each \
             port serves each handler as often. Their rounds are paired within the second, so \
             the rule for rates that jump between runs does not apply to them.\n\n```\n{}\n{}\n```\n",
            handlers,
            d.meta("vhost_mbufs"),
            d.meta("vhost_pair_runs"),
            d.meta("vhost_pair_blocks"),
            d.meta("vhost_pair_peer_cmd"),
            d.meta("vhost_pair_cmd")
        );
    }
    let hs: Vec<&str> = OTHERS
        .iter()
        .copied()
        .filter(|h| keys.iter().any(|k| d.e2e[*k].contains_key(*h)))
        .collect();
    let _ = write!(w, "| row | ptr_ring Mpps |");
    for h in &hs {
        let _ = write!(w, " {h} Mpps |");
    }
    for h in &hs {
        let _ = write!(w, " ptr_ring / {h} [95% CI] |");
    }
    let _ = writeln!(w, " handler share | verdict | in words |");
    let _ = writeln!(w, "|---|---|{}---|---|---|", "---|---|".repeat(hs.len()));
    for k in keys {
        let m = &d.e2e[k];
        let rate = |h: &str| {
            m.get(h)
                .and_then(|r| median(&r.rounds.iter().map(|&(_, x)| x).collect::<Vec<_>>()))
                .map_or("-".into(), |x| format!("{x:.2}"))
        };
        let _ = write!(w, "| {} | {} |", data::e2e_label(k), rate(OURS));
        for h in &hs {
            let _ = write!(w, " {} |", rate(h));
        }
        for h in &hs {
            let _ = write!(w, " {} |", fmt_paired(paired(m, h)));
        }
        let c = data::e2e_row(d, k);
        let (share, verdict, words) = match &c {
            Some(c) => (
                c.share.map_or("-".into(), |s| format!("{s:.3}")),
                if c.control {
                    "control: the handler was not called, not counted"
                } else {
                    c.verdict.map_or("-", Verdict::label)
                },
                c.statement("Mpps", 1.0),
            ),
            None => ("-".into(), "-", "no data".into()),
        };
        let _ = writeln!(w, " {share} | {verdict} | {words} |");
    }
    let _ = writeln!(w);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::record::Record;

    fn data(lines: &[&str]) -> Data {
        let mut d = Data::default();
        for l in lines {
            d.add(Record::parse(l).unwrap());
        }
        d
    }

    #[test]
    fn a_row_the_handler_barely_served_is_a_control() {
        let mut lines = Vec::new();
        for r in 1..=3 {
            for (v, share) in [("default", "0.0000"), ("burst512", "0.9000")] {
                lines.push(format!("e2e2,{APP},{v},ptr_ring,250,0,{r},1.{r}0,{share}"));
                lines.push(format!("e2e2,{APP},{v},ring_mp_mc,250,none,{r},1.00,-1"));
                lines.push(format!("e2e2,{APP},{v},stack,250,none,{r},2.00,-1"));
            }
        }
        let d = data(&lines.iter().map(String::as_str).collect::<Vec<_>>());
        let rows = data::all_rows(&d);
        let find = |v: &str| {
            rows.iter()
                .find(|(_, c)| {
                    c.label
                        == data::e2e_label(&bench::record::E2eKey {
                            app: APP.into(),
                            variant: v.into(),
                        })
                })
                .map(|(_, c)| c)
                .unwrap()
        };
        let (def, big) = (find("default"), find("burst512"));
        assert!(def.control && def.target.is_none() && def.verdict.is_none());
        assert!(!big.control);
        assert_eq!(big.verdict, Some(Verdict::Met));
        assert_eq!(big.share, Some(0.9));
        let mut w = String::new();
        section(&mut w, &d);
        assert!(w.contains("| ptr_ring / stack [95% CI] |"));
        // ptr_ring 1.1-1.3 against stack's 2.0: 0.60x in the middle round.
        assert!(w.contains("| 0.60x ["), "{w}");
        assert!(w.contains("control: the handler was not called"));
        // A release where the rows could not run says why.
        let mut d = Data::default();
        d.meta.insert(
            "vhost_skip".into(),
            "left out: the first run failed twice".into(),
        );
        let mut w = String::new();
        section(&mut w, &d);
        assert!(w.contains("left out: the first run failed twice."));
    }

    /// The runs of 5 December afternoon (22.11, burst512, 16384 mbufs): the
    /// host switched between its slow and fast level from one start to the
    /// next, so two of the three paired ratios compare ptr_ring's fast
    /// level with ring_mp_mc's slow one (3.5x, 3.05x), and the median of
    /// the paired ratios would call that a met target.
    #[test]
    fn a_row_whose_rates_jump_between_runs_is_not_steady() {
        let runs = |rates: [(&str, &str); 3]| {
            let mut lines = Vec::new();
            for (r, (ours, base)) in (1..=3).zip(rates) {
                lines.push(format!("e2e2,{APP},burst512,ptr_ring,250,0,{r},{ours},1.5"));
                lines.push(format!(
                    "e2e2,{APP},burst512,ring_mp_mc,250,none,{r},{base},-1"
                ));
            }
            let d = data(&lines.iter().map(String::as_str).collect::<Vec<_>>());
            let (_, c) = data::all_rows(&d).pop().unwrap();
            let mut w = String::new();
            section(&mut w, &d);
            (c.verdict, c.statement("Mpps", 1.0), w)
        };
        let (verdict, words, w) = runs([("20.83", "5.91"), ("18.62", "17.46"), ("18.40", "6.04")]);
        assert_eq!(verdict, Some(Verdict::NotSteady));
        assert_eq!(
            words,
            "NOT STEADY: ptr_ring 18.4-20.8, ring_mp_mc 5.9-17.5 Mpps over the runs \
             (more than 1.5x apart on one side), median of the paired ratios 3.05x"
        );
        assert!(w.contains(Verdict::NotSteady.label()), "{w}");
        // Within 1.5x on both sides (1.45x on ring_mp_mc's): a verdict.
        let (verdict, words, _) =
            runs([("18.83", "12.10"), ("18.62", "17.46"), ("18.40", "17.00")]);
        assert_eq!(verdict, Some(Verdict::Met));
        assert!(words.starts_with("ptr_ring faster"), "{words}");
    }

    /// The 22.11 run of 5 December evening: burst512 had ptr_ring at
    /// 5.6-5.9 Mpps in all three runs and ring_mp_mc at 20.3-20.5 in all
    /// three (each side steady: a 0.34x "missed"), while the control row of
    /// the same runs, where the handler is never called, had ring_mp_mc at
    /// 5.3-18.5: the host's level switched under the run. Fails if the
    /// burst512 row is counted anyway.
    #[test]
    fn a_row_is_not_counted_when_its_runs_control_row_was_not_steady() {
        let rows = |control_base: [&str; 3]| {
            let mut lines = Vec::new();
            for (r, cb) in (1..=3).zip(control_base) {
                lines.push(format!("e2e2,{APP},default,ptr_ring,250,0,{r},17.5,0.0000"));
                lines.push(format!(
                    "e2e2,{APP},default,ring_mp_mc,250,none,{r},{cb},-1"
                ));
                lines.push(format!(
                    "e2e2,{APP},burst512,ptr_ring,250,0,{r},5.{},1.6",
                    6 + r
                ));
                lines.push(format!(
                    "e2e2,{APP},burst512,ring_mp_mc,250,none,{r},20.{},-1",
                    2 + r
                ));
            }
            let d = data(&lines.iter().map(String::as_str).collect::<Vec<_>>());
            let key = bench::record::E2eKey {
                app: APP.into(),
                variant: "burst512".into(),
            };
            let c = data::e2e_row(&d, &key).unwrap();
            let counted = data::all_rows(&d)
                .into_iter()
                .find(|(_, c)| c.label == data::e2e_label(&key))
                .and_then(|(_, c)| c.verdict);
            (c.verdict, c.statement("Mpps", 1.0), counted)
        };
        let (verdict, words, counted) = rows(["5.3", "18.5", "6.0"]);
        assert_eq!(verdict, Some(Verdict::NotSteady));
        assert_eq!(
            counted,
            Some(Verdict::NotSteady),
            "the targets table counts it"
        );
        assert!(
            words.starts_with("NOT STEADY: in the same runs the control row"),
            "{words}"
        );
        assert!(words.contains("ring_mp_mc 5.3-18.5 Mpps"), "{words}");
        // The control row steady: the same burst512 rates are a result.
        let (verdict, words, counted) = rows(["17.9", "18.5", "17.2"]);
        assert_eq!(verdict, Some(Verdict::Missed));
        assert_eq!(counted, Some(Verdict::Missed));
        assert!(words.starts_with("ptr_ring slower"), "{words}");
    }

    /// Blocks of one `vhost_pair` run where the host's level fell from
    /// about 23 to about 9 Mpps and came back (7 December, 22.11): both
    /// sides of every round moved together. As a pair row that is a
    /// result; the same rates as runs of `testpmd-vhost` are NOT STEADY.
    /// Fails if the pair row is judged by the rule for separate runs, if
    /// the section leaves it out, or if it drops the third handler's
    /// column (`stack`, at 1.25x `ring_mp_mc` in every block here).
    #[test]
    fn pair_rows_are_paired_within_the_second() {
        let blocks = [
            ("23.10", "21.43"),
            ("9.77", "10.23"),
            ("15.45", "16.19"),
            ("23.78", "23.87"),
            ("23.56", "24.18"),
            ("8.93", "9.38"),
        ];
        let judge = |app: &str| {
            let mut lines = Vec::new();
            for (r, (ours, base)) in (1..).zip(blocks) {
                lines.push(format!(
                    "e2e2,{app},burst512,ptr_ring,250,0,{r},{ours},1.56"
                ));
                lines.push(format!(
                    "e2e2,{app},burst512,ring_mp_mc,250,none,{r},{base},-1"
                ));
                let stack = base.parse::<f64>().unwrap() * 1.25;
                lines.push(format!("e2e2,{app},burst512,stack,250,none,{r},{stack},-1"));
                let newest = ours.parse::<f64>().unwrap() * 1.5;
                lines.push(format!(
                    "e2e2,{app},burst512,ptr_ring-newest,250,0,{r},{newest},-1"
                ));
            }
            let d = data(&lines.iter().map(String::as_str).collect::<Vec<_>>());
            let key = bench::record::E2eKey {
                app: app.into(),
                variant: "burst512".into(),
            };
            let c = data::e2e_row(&d, &key).unwrap();
            let mut w = String::new();
            section(&mut w, &d);
            (c.verdict, c.statement("Mpps", 1.0), w)
        };
        let (verdict, words, w) = judge(PAIR_APP);
        // Per-block ratios 0.95-1.08, median 0.96: a verdict, not a swing.
        assert_ne!(verdict, Some(Verdict::NotSteady), "{words}");
        assert!(verdict.is_some(), "the row has a target");
        assert!(words.contains("0.96x"), "{words}");
        assert!(
            w.contains("| vhost_pair: the handlers in one process"),
            "{w}"
        );
        assert!(w.contains("The `vhost_pair` rows run the handlers"), "{w}");
        // ptr_ring / stack per block 0.76-0.86, median 0.77.
        let row = w.lines().find(|l| l.starts_with("| vhost_pair")).unwrap();
        assert!(
            row.contains("| 0.96x [") && row.contains("| 0.77x ["),
            "{row}"
        );
        // The newest-first pool in a column of its own: ptr_ring at 2/3 of
        // its rate in every block.
        assert!(w.contains("| ptr_ring / ptr_ring-newest [95% CI] |"), "{w}");
        assert!(row.contains("| 0.67x ["), "{row}");
        let (verdict, _, _) = judge(APP);
        assert_eq!(verdict, Some(Verdict::NotSteady));
    }
}
