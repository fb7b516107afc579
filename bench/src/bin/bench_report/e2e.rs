//! The full report's end-to-end section: the testpmd, testpmd-xlcore and
//! l2fwd rows (the vhost-user rows have `vhost.rs`), with each row's
//! handler share, and the cross-lcore pipeline's runs with the cache line
//! read around each.

use std::fmt::Write as _;

use bench::matrix::{BASELINE, OURS};
use bench::targets::Verdict;

use crate::data::{self, Data};
use crate::tables::fmt_ci;

/// The section: the commands, how to read it, the rows' table and the
/// pipeline's runs.
pub fn section(w: &mut String, d: &Data) {
    if d.e2e.is_empty() {
        return;
    }
    let _ = writeln!(w, "## End to end\n");
    let _ = writeln!(
        w,
        "```\n{}\n{}\n{}\n```\n",
        d.meta("testpmd_cmd"),
        d.meta("xlcore_cmd"),
        d.meta("l2fwd_cmd")
    );
    let _ = writeln!(
        w,
        "`net_null` RX allocates one mbuf per packet and TX frees it. `testpmd` rows forward on one \
         lcore (alloc and free on the same lcore); `testpmd-xlcore` rows pair a `net_null` port \
         with a `net_ring` port on two forwarding lcores: one lcore receives from `net_null` \
         (allocates) and transmits into the ring, the other receives from the ring and transmits \
         to `net_null` (frees), so every mbuf is freed on another lcore than the one that \
         allocated it and, with a DPDK cache, reaches the handler through refills and flushes; its \
         rate is the ring port's receive rate. `--burst=512` is above 1.5x the cache, so those \
         gets and puts reach the handler (with the cache's own refills and flushes: a handler \
         share above 1). {} rounds per handler, \
         alternated; cells: median Mpps of the 1-s samples. Every `ptr_ring` run is checked to \
         have served the pool (its ops name, read through telemetry).\n",
        d.meta("e2e_rounds")
    );
    let _ = writeln!(
        w,
        "Handler share: objects `ptr_ring` handed out (its `hold` counter) per packet the \
         `net_null` ports received (each an mbuf allocated), between the first and the last \
         sampled second, both read through telemetry; median of the `ptr_ring` runs. Under 1%: \
         DPDK's cache served every get, the handler was not on the path, and the row is a \
         control (no target; when its rates moved by more than {:.1}x between runs, so did the \
         host, and the other rows of the same application are not steady either). The \
         `testpmd-xlcore` control runs the pipeline's lcores on two `net_null` ports, each lcore \
         freeing what it allocated.\n",
        bench::targets::MAX_SWING
    );
    let _ = writeln!(w, "| row | caches: ptr_ring | caches: ring_mp_mc | ptr_ring Mpps | ring_mp_mc Mpps | ratio [95% CI] | handler share | target | verdict | in words |");
    let _ = writeln!(w, "|---|---|---|---|---|---|---|---|---|---|");
    for k in data::e2e_keys(d)
        .into_iter()
        .filter(|k| !crate::vhost::is_vhost(&k.app))
    {
        let m = &d.e2e[k];
        let side = |h: &str| {
            m.get(h).map_or("-".into(), |r| {
                format!("DPDK {} / own {}", r.dpdk_cache, r.handler_cache)
            })
        };
        let Some(c) = data::e2e_row(d, k) else {
            continue;
        };
        let f = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.2}"));
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.label,
            side(OURS),
            side(BASELINE),
            f(c.ours),
            f(c.base),
            fmt_ci(&c),
            c.share.map_or("-".into(), |s| format!("{s:.3}")),
            c.target.map_or_else(
                || if k.variant == "ownvsnone" {
                    "none: not like for like".into()
                } else {
                    "-".into()
                },
                |t| t.describe()
            ),
            if c.control {
                "control: the handler was not called, not counted"
            } else {
                c.verdict.map_or("-", Verdict::label)
            },
            c.statement("Mpps", 1.0)
        );
    }
    let _ = writeln!(w);
    e2e_lines(w, d);
}

/// The runs of the end-to-end rows that measured the cache line between
/// their forwarding CPUs (`line_trip`, testpmd's cross-lcore pipeline),
/// each with its rate and the line just before and just after it.
fn e2e_lines(w: &mut String, d: &Data) {
    let mut runs: Vec<(String, u32, &str, f64, f64, f64)> = Vec::new();
    for k in data::e2e_keys(d) {
        for (h, r) in &d.e2e[k] {
            for &(round, before, after) in &r.lines {
                if let Some(&(_, rate)) = r.rounds.iter().find(|(n, _)| *n == round) {
                    let row = format!("{} {}", k.app, k.variant);
                    runs.push((row, round, h.as_str(), rate, before, after));
                }
            }
        }
    }
    if runs.is_empty() {
        return;
    }
    runs.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    let _ = writeln!(
        w,
        "The pipeline's runs, each with the round trip of a cache line between its two \
         forwarding CPUs (`line_trip`, just before and just after the run): mbufs and ring \
         entries cross between those CPUs on every packet, so the pipeline's rate follows that \
         figure as well as the handler, and its control (which hands nothing across) does not \
         see it.\n"
    );
    let _ = writeln!(
        w,
        "| row | round | handler | Mpps | line before / after (ns) |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|");
    for (row, round, h, rate, before, after) in runs {
        let _ = writeln!(
            w,
            "| {row} | {round} | {h} | {rate:.2} | {before:.0} / {after:.0} |"
        );
    }
    let _ = writeln!(w);
}

#[cfg(test)]
mod tests {
    use bench::record::{E2eKey, Record};

    use super::*;

    /// The `testpmd` and `testpmd-xlcore` rows as `bench/run.sh` records
    /// them, with the handler share (and the line round trips of the
    /// pipeline's no-cache row); `xlcore_control_base` gives
    /// `ring_mp_mc`'s rate in the three runs of the `testpmd-xlcore`
    /// control.
    fn testpmd_runs(xlcore_control_base: [&str; 3]) -> Data {
        let mut d = Data::default();
        for (r, cb) in (1..=3).zip(xlcore_control_base) {
            for line in [
                format!("e2e2,testpmd,mbcache=default,ptr_ring,250,0,{r},12{r}.0,0.0001"),
                format!("e2e2,testpmd,mbcache=default,ring_mp_mc,250,none,{r},125.0,-1"),
                format!("e2e2,testpmd,mbcache=0,ptr_ring,0,0,{r},48.{r},1.0000"),
                format!("e2e2,testpmd,mbcache=0,ring_mp_mc,0,none,{r},42.0,-1"),
                format!("e2e2,testpmd-xlcore,control,ptr_ring,250,0,{r},30.{r},0.0000"),
                format!("e2e2,testpmd-xlcore,control,ring_mp_mc,250,none,{r},{cb},-1"),
                format!("e2e2,testpmd-xlcore,mbcache=0,ptr_ring,0,0,{r},10.{r},1.0000,6{r},32{r}"),
                format!("e2e2,testpmd-xlcore,mbcache=0,ring_mp_mc,0,none,{r},11.8,-1,30{r},6{r}"),
            ] {
                d.add(Record::parse(&line).unwrap());
            }
        }
        d
    }

    fn verdict(d: &Data, app: &str, variant: &str) -> Option<Verdict> {
        let key = E2eKey {
            app: app.into(),
            variant: variant.into(),
        };
        data::e2e_row(d, &key).unwrap().verdict
    }

    /// A `testpmd` row the handler did not serve (share under 1%) is a
    /// control in the end-to-end table, and the `testpmd-xlcore` control
    /// decides whether the cross-lcore rows of the same runs are results.
    /// Fails if the share is not shown, if a control gets a verdict, or if
    /// a swinging control leaves the cross-lcore row counted (or reaches
    /// the one-lcore `testpmd` rows, another application).
    #[test]
    fn testpmd_rows_carry_the_share_and_their_application_control() {
        let d = testpmd_runs(["31.0", "30.5", "29.8"]);
        let mut w = String::new();
        section(&mut w, &d);
        let row = |label: &str| {
            w.lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap_or_else(|| panic!("no row {label} in\n{w}"))
                .to_string()
        };
        let cached = row("testpmd io, DPDK cache 250 on both");
        assert!(
            cached.contains("| 0.000 | - | control: the handler was not called, not counted |"),
            "{cached}"
        );
        assert!(row("testpmd io, no cache on either side").contains("| 1.000 | >= 1.00x | met |"));
        let control = data::e2e_label(&E2eKey {
            app: "testpmd-xlcore".into(),
            variant: "control".into(),
        });
        assert!(row(&control).contains("control: the handler was not called"));
        // Each pipeline run that measured the line, with it, in round order.
        let runs: Vec<&str> = w
            .lines()
            .filter(|l| l.starts_with("| testpmd-xlcore mbcache=0 | "))
            .collect();
        assert_eq!(runs.len(), 6, "{w}");
        assert_eq!(
            runs[0],
            "| testpmd-xlcore mbcache=0 | 1 | ptr_ring | 10.10 | 61 / 321 |"
        );
        assert_eq!(
            runs[5],
            "| testpmd-xlcore mbcache=0 | 3 | ring_mp_mc | 11.80 | 303 / 63 |"
        );
        assert!(!w.contains("| testpmd io, no cache on either side | 1 |"));
        assert_eq!(verdict(&d, "testpmd-xlcore", "control"), None);
        assert_eq!(
            verdict(&d, "testpmd-xlcore", "mbcache=0"),
            Some(Verdict::Missed)
        );
        // The host moved under the cross-lcore runs (1.6x on ring_mp_mc's
        // side of the control): that application's rows are no result.
        let d = testpmd_runs(["31.0", "19.0", "29.8"]);
        assert_eq!(
            verdict(&d, "testpmd-xlcore", "mbcache=0"),
            Some(Verdict::NotSteady)
        );
        assert_eq!(verdict(&d, "testpmd", "mbcache=0"), Some(Verdict::Met));
    }
}
