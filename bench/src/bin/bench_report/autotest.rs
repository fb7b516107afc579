//! The section on DPDK's own `mempool_perf_autotest` in `RESULTS.md`, and
//! its one-line summary for `bench/RESULTS.md`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use bench::matrix::{BASELINE, OURS};
use bench::stats::Summary;

use crate::data::Data;

/// `mempool_perf_autotest` cases with both handlers: (cores, max bulk, get,
/// put, keep, constant n, ring_mp_mc rate, ptr_ring rate).
fn pairs(d: &Data) -> Vec<([u32; 6], f64, f64)> {
    d.autotest
        .iter()
        .filter(|(k, _)| k.0 == BASELINE)
        .filter_map(|((_, c, m, g, p, k, n), r)| {
            let ours = d
                .autotest
                .get(&(OURS.to_string(), *c, *m, *g, *p, *k, *n))?;
            Some(([*c, *m, *g, *p, *k, *n], *r, *ours))
        })
        .collect()
}

/// One line on the autotest's ratios (overall and per core count), or why it
/// did not run; `None` when neither is known.
pub fn summary(d: &Data) -> Option<String> {
    let pairs = pairs(d);
    let ratios: Vec<f64> = pairs.iter().map(|(_, r, o)| o / r).collect();
    let Some(all) = Summary::of(&ratios) else {
        return d
            .meta
            .get("autotest_skip")
            .map(|why| format!("`mempool_perf_autotest` {why}."));
    };
    let cores: BTreeSet<u32> = pairs.iter().map(|(k, _, _)| k[0]).collect();
    let per: Vec<String> = cores
        .iter()
        .filter_map(|c| {
            let v: Vec<f64> = pairs
                .iter()
                .filter(|(k, _, _)| k[0] == *c)
                .map(|(_, r, o)| o / r)
                .collect();
            Summary::of(&v).map(|s| {
                format!(
                    "{c} core{}: median {:.2}x over {} cases ({:.2}x-{:.2}x)",
                    if *c == 1 { "" } else { "s" },
                    s.median,
                    s.n,
                    s.min,
                    s.max
                )
            })
        })
        .collect();
    Some(format!(
        "`mempool_perf_autotest`, no cache on either side: ptr_ring / ring_mp_mc median {:.2}x over {} cases, range {:.2}x-{:.2}x; {}.",
        all.median,
        all.n,
        all.min,
        all.max,
        per.join("; ")
    ))
}

/// Rows above this go into a folded block.
const AUTOTEST_OPEN_ROWS: usize = 150;

pub fn section(w: &mut String, d: &Data) {
    let pairs = pairs(d);
    if pairs.is_empty() {
        if let Some(why) = d.meta.get("autotest_skip") {
            let _ = writeln!(
                w,
                "## DPDK's own `mempool_perf_autotest`\n\n{}\n",
                why.replace('|', "\\|")
            );
        }
        return;
    }
    let _ = writeln!(w, "## DPDK's own `mempool_perf_autotest`\n");
    let _ = writeln!(w, "```\n{}\n```\n", d.meta("autotest_cmd"));
    let scale = d.meta("autotest_scale");
    let pools = d.meta("autotest_pools");
    let ours_pool = pools.split_whitespace().nth(1).unwrap_or("default_pool");
    let how = match d.meta("autotest_format") {
        "24.11" | "25.07" => format!(
            "DPDK's unit test `dpdk-test` runs, for each core count in a process of its own \
             (`mempool_perf_autotest_1core`, `_2cores`: the `TEST`s above), its pool `perf_test_nocache` (`ring_mp_mc`, \
             no cache) and then its `{ours_pool}` (the `--mbuf-pool-ops-name` handler: `ptr_ring`, \
             with `PTR_RING_CACHE_SIZE=0`, DPDK cache 0: like for like). It times every case for 1 s \
             and computes its rate from the cycles it measured and its timer frequency; to fit the \
             run, `bench/autotest-clock.c` (`LD_PRELOAD`) makes that frequency {scale}x lower, so \
             every case runs 1 s / {scale} (at least one inner loop of 4M objects per lcore) and the \
             printed rates are exactly {scale}x too low: the table multiplies them back. Each process \
             is stopped once both pools' no-cache sections printed. Rates in M objects/s."
        ),
        _ => format!(
            "DPDK's unit test `dpdk-test` runs its `mp_nocache` pool (`ring_mp_mc`, no cache) and then \
             its `{ours_pool}` (the `--mbuf-pool-ops-name` handler: `ptr_ring`, with \
             `PTR_RING_CACHE_SIZE=0`, DPDK cache 0: like for like) in the same process. It times every \
             case for 5 s; to fit the run, `bench/autotest-clock.c` (`LD_PRELOAD`) makes the test's \
             clock {scale}x slower, so every case runs 5 s / {scale} and the printed rates are {scale}x \
             too low: the table multiplies them back. The test is stopped once both pools' no-cache \
             sections printed. Rates in M objects/s."
        ),
    };
    let _ = writeln!(w, "{how}");
    if pairs.iter().any(|(k, _, _)| k[1] > 0) {
        let _ = writeln!(
            w,
            "\nRows `random 1-N` (DPDK 25.07 on): every get and put takes a pseudo-random bulk from 1 \
             to N, the same sequence on both pools."
        );
    }
    if let Some(s) = summary(d) {
        let _ = writeln!(w, "\n{s}\n");
    }
    let fold = pairs.len() > AUTOTEST_OPEN_ROWS;
    if fold {
        let _ = writeln!(
            w,
            "<details><summary>every case ({} rows)</summary>\n",
            pairs.len()
        );
    }
    let _ = writeln!(w, "| cores | get bulk | put bulk | keep | constant n | ring_mp_mc | ptr_ring | ratio |\n|---|---|---|---|---|---|---|---|");
    for ([c, m, g, p, k, n], r, o) in &pairs {
        let (g, p, n) = if *m > 0 {
            (format!("random 1-{m}"), format!("random 1-{m}"), "-".into())
        } else {
            (g.to_string(), p.to_string(), n.to_string())
        };
        let _ = writeln!(
            w,
            "| {c} | {g} | {p} | {k} | {n} | {:.1} | {:.1} | {:.2}x |",
            r / 1e6,
            o / 1e6,
            o / r
        );
    }
    let _ = writeln!(w);
    if fold {
        let _ = writeln!(w, "</details>\n");
    }
}
