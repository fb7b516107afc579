//! `bench_report`: turns the raw results of `bench/run.sh` into
//! `bench/RESULTS.md` and the SVG chart of the ratios.
//!
//! ```text
//! bench_report --dir build/bench --out bench/RESULTS.md --svg bench/ratios.svg [--notes bench/NOTES.md]
//! bench_report --dir build/bench --missed      # filters of missed mempool_bench targets, one per line
//! ```
//!
//! Reads, under `--dir`: `mempool.csv` and `e2e.csv` (see `bench::record`),
//! `meta.env` (`KEY=VALUE` lines about the machine and the run),
//! `monitor.log` (other processes' CPU use sampled during the run) and
//! `profile/*.txt` (perf output of missed targets).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bench::record::{E2eKey, MempoolKey, Pattern, Record};
use bench::stats::Summary;
use bench::targets::{self, Target, Verdict};

const BASELINE: &str = "ring_mp_mc";
/// A run whose lanes were on their CPUs less than this share of the time
/// was disturbed.
const DISTURBED: f64 = 0.9;
const OURS: &str = "ptr_ring";
/// Handler columns, in table order (those present).
const HANDLER_ORDER: &[&str] = &[
    "ring_mp_mc",
    "ptr_ring",
    "stack",
    "ring_sp_sc",
    "floor_lifo",
];

struct Args {
    dir: PathBuf,
    out: Option<PathBuf>,
    svg: Option<PathBuf>,
    notes: Option<PathBuf>,
    missed: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("build/bench"),
        out: None,
        svg: None,
        notes: None,
        missed: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut next = || {
            it.next()
                .map(PathBuf::from)
                .ok_or(format!("{arg} needs a value"))
        };
        match arg.as_str() {
            "--dir" => a.dir = next()?,
            "--out" => a.out = Some(next()?),
            "--svg" => a.svg = Some(next()?),
            "--notes" => a.notes = Some(next()?),
            "--missed" => a.missed = true,
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    Ok(a)
}

/// Samples per configuration per handler, in round order.
type Samples<K> = BTreeMap<K, BTreeMap<String, Vec<(u32, f64)>>>;

#[derive(Default)]
struct Data {
    mempool: Samples<MempoolKey>,
    /// On-CPU share of every timed mempool_bench run, per configuration.
    on_cpu: BTreeMap<MempoolKey, Vec<f64>>,
    /// (rate, on-CPU share) of every timed run, per configuration and handler.
    cpu_cycles: BTreeMap<(MempoolKey, String), Vec<(f64, f64)>>,
    e2e: Samples<E2eKey>,
    meta: BTreeMap<String, String>,
    monitor: Vec<String>,
    profiles: Vec<(String, String)>,
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(String::from).collect())
        .unwrap_or_default()
}

fn load(dir: &Path) -> Data {
    let mut d = Data::default();
    for file in ["mempool.csv", "e2e.csv"] {
        for line in read_lines(&dir.join(file)) {
            match Record::parse(&line) {
                Some(Record::Mempool {
                    key,
                    handler,
                    round,
                    rate,
                    on_cpu,
                }) => {
                    d.on_cpu.entry(key).or_default().push(on_cpu);
                    d.cpu_cycles
                        .entry((key, handler.clone()))
                        .or_default()
                        .push((rate, on_cpu));
                    d.mempool
                        .entry(key)
                        .or_default()
                        .entry(handler)
                        .or_default()
                        .push((round, rate))
                }
                Some(Record::E2e {
                    key,
                    handler,
                    round,
                    rate,
                }) => d
                    .e2e
                    .entry(key)
                    .or_default()
                    .entry(handler)
                    .or_default()
                    .push((round, rate)),
                None => {}
            }
        }
    }
    for line in read_lines(&dir.join("meta.env")) {
        if let Some((k, v)) = line.split_once('=') {
            d.meta.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    d.monitor = read_lines(&dir.join("monitor.log"));
    if let Ok(entries) = std::fs::read_dir(dir.join("profile")) {
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "txt"))
        {
            let name = f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            d.profiles
                .push((name, std::fs::read_to_string(&f).unwrap_or_default()));
        }
    }
    d
}

/// One handler's summary in one configuration.
fn summary(by_handler: &BTreeMap<String, Vec<(u32, f64)>>, handler: &str) -> Option<Summary> {
    let v: Vec<f64> = by_handler.get(handler)?.iter().map(|&(_, r)| r).collect();
    Summary::of(&v)
}

/// Ratios of `handler` to the baseline, round by round (each pair ran back
/// to back): min and max.
fn round_ratio_range(
    by_handler: &BTreeMap<String, Vec<(u32, f64)>>,
    handler: &str,
) -> Option<(f64, f64)> {
    let ours = by_handler.get(handler)?;
    let base: BTreeMap<u32, f64> = by_handler.get(BASELINE)?.iter().copied().collect();
    let rs: Vec<f64> = ours
        .iter()
        .filter_map(|(round, r)| base.get(round).filter(|&&b| b > 0.0).map(|b| r / b))
        .collect();
    let s = Summary::of(&rs)?;
    Some((s.min, s.max))
}

/// Median of `handler` over the baseline's median (none without data or
/// with a zero baseline).
fn ratio_to_base(by_handler: &BTreeMap<String, Vec<(u32, f64)>>, handler: &str) -> Option<f64> {
    let s = summary(by_handler, handler)?;
    let b = summary(by_handler, BASELINE)?;
    (b.median > 0.0).then(|| s.median / b.median)
}

/// The handler columns of a results table: one rate column per handler
/// (`unit`), one ratio column per non-baseline handler, then `tail`.
fn write_handler_header(w: &mut String, hs: &[String], unit: &str, tail: &[&str]) {
    let _ = write!(w, "| configuration |");
    for h in hs {
        let _ = write!(w, " {h} {unit} |");
    }
    for h in hs.iter().filter(|h| *h != BASELINE) {
        let _ = write!(w, " {h} ratio |");
    }
    for t in tail {
        let _ = write!(w, " {t} |");
    }
    let _ = writeln!(w);
    let cols = hs.len() * 2 - 1 + tail.len();
    let _ = writeln!(w, "|---|{}", "---|".repeat(cols));
}

/// The cells of [`write_handler_header`]'s handler columns for one
/// configuration: rates scaled by `scale` with `digits` decimals, then each
/// ratio with its round-by-round range.
fn write_handler_cells(
    w: &mut String,
    m: &BTreeMap<String, Vec<(u32, f64)>>,
    hs: &[String],
    scale: f64,
    digits: usize,
) {
    for h in hs {
        let _ = write!(
            w,
            " {} |",
            summary(m, h).map_or("-".into(), |s| fmt_rate(&s, scale, digits))
        );
    }
    for h in hs.iter().filter(|h| *h != BASELINE) {
        let range =
            round_ratio_range(m, h).map_or(String::new(), |(lo, hi)| format!(" [{lo:.2}-{hi:.2}]"));
        let _ = write!(w, " {}{range} |", fmt_ratio(ratio_to_base(m, h)));
    }
}

/// A compared configuration: the ratio of ptr_ring to the baseline and its
/// target verdict.
struct Row {
    label: String,
    ratio: Option<f64>,
    stack: Option<f64>,
    target: Option<Target>,
    verdict: Option<Verdict>,
}

fn compare(
    by_handler: &BTreeMap<String, Vec<(u32, f64)>>,
    label: String,
    target: Option<Target>,
) -> Row {
    let base = summary(by_handler, BASELINE);
    let ours = summary(by_handler, OURS);
    let ratio = ratio_to_base(by_handler, OURS);
    let verdict = match (target, ratio, ours, base) {
        (Some(t), Some(r), Some(o), Some(b)) => Some(t.verdict(r, &o, &b)),
        _ => None,
    };
    Row {
        label,
        ratio,
        stack: ratio_to_base(by_handler, "stack"),
        target,
        verdict,
    }
}

fn fmt_rate(s: &Summary, scale: f64, digits: usize) -> String {
    format!(
        "{:.d$} ({:.d$}-{:.d$})",
        s.median / scale,
        s.min / scale,
        s.max / scale,
        d = digits
    )
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

fn handlers_present<K: Ord>(samples: &Samples<K>) -> Vec<String> {
    let all: BTreeSet<&String> = samples.values().flat_map(|m| m.keys()).collect();
    let mut v: Vec<String> = HANDLER_ORDER
        .iter()
        .filter(|h| all.iter().any(|a| a == *h))
        .map(|h| h.to_string())
        .collect();
    v.extend(
        all.into_iter()
            .filter(|a| !HANDLER_ORDER.contains(&a.as_str()))
            .cloned(),
    );
    v
}

fn mempool_rows(d: &Data) -> Vec<(MempoolKey, Row)> {
    d.mempool
        .iter()
        .map(|(k, m)| (*k, compare(m, k.describe(), targets::mempool(k))))
        .collect()
}

fn e2e_rows(d: &Data) -> Vec<(E2eKey, Row)> {
    let mut keys: Vec<&E2eKey> = d.e2e.keys().collect();
    // testpmd mbcache=0, testpmd default, l2fwd.
    keys.sort_by_key(|k| (k.app != "testpmd", k.variant != "mbcache=0", (*k).clone()));
    keys.into_iter()
        .map(|k| (k.clone(), compare(&d.e2e[k], k.describe(), targets::e2e(k))))
        .collect()
}

fn meta<'a>(d: &'a Data, k: &str) -> &'a str {
    d.meta.get(k).map_or("?", String::as_str)
}

fn report(d: &Data, notes: Option<&str>, svg_name: Option<&str>) -> String {
    let mut o = String::new();
    let w = &mut o;
    let mrows = mempool_rows(d);
    let erows = e2e_rows(d);

    let _ = writeln!(
        w,
        "# Benchmark results: `ptr_ring` against DPDK's `ring_mp_mc`\n"
    );
    let _ = writeln!(
        w,
        "Generated by `{}` on {} (run time {}). Do not edit: rerun the command. \
         Absolute rates drift between runs and machines; the ratios compare handlers \
         measured in the same run, alternated round by round.\n",
        meta(d, "command"),
        meta(d, "date"),
        meta(d, "duration")
    );

    let _ = writeln!(w, "## Machine\n");
    let _ = writeln!(w, "| | |\n|---|---|");
    for (k, label) in [
        ("cpu", "CPU"),
        ("cpus", "CPUs (lscpu)"),
        ("hypervisor", "Hypervisor"),
        ("kernel", "Kernel"),
        ("dpdk", "DPDK"),
        ("eal_mem", "EAL memory"),
        ("rustc", "rustc"),
        ("handler", "Handler under test"),
        ("git", "Source"),
        ("quiet", "Machine before the run"),
    ] {
        let _ = writeln!(w, "| {label} | {} |", meta(d, k).replace('|', "\\|"));
    }
    let _ = writeln!(
        w,
        "| Machine during the run | {} |",
        monitor_summary(d).replace('|', "\\|")
    );
    let shares: Vec<f64> = d.on_cpu.values().flatten().copied().collect();
    if let Some(s) = Summary::of(&shares) {
        let _ = writeln!(
            w,
            "| mempool_bench threads on their CPU | median {:.1}%, lowest {:.1}% of a timed run's wall time; {} of {} runs below 95% |",
            s.median * 100.0,
            s.min * 100.0,
            shares.iter().filter(|&&x| x < 0.95).count(),
            shares.len()
        );
    }

    let _ = writeln!(w, "\n## Targets of issue 7\n");
    let _ = writeln!(
        w,
        "Ratio = median of `ptr_ring` / median of `ring_mp_mc` in the same run. \"Within noise\" \
         targets count as met below 1.00x when the min-max ranges of the two handlers overlap.\n"
    );
    let _ = writeln!(
        w,
        "| configuration | ptr_ring / ring_mp_mc [round by round] | target | verdict | same run: stack, ring_sp_sc, floor_lifo | issue's reference | lanes on CPU, lowest |"
    );
    let _ = writeln!(w, "|---|---|---|---|---|---|---|");
    let lowest_on_cpu =
        |k: &MempoolKey| d.on_cpu.get(k).and_then(|v| Summary::of(v)).map(|s| s.min);
    let mut disturbed = 0;
    for (row, by_handler, on_cpu) in mrows
        .iter()
        .map(|(k, r)| (r, &d.mempool[k], lowest_on_cpu(k)))
        .chain(erows.iter().map(|(k, r)| (r, &d.e2e[k], None)))
    {
        let Some(t) = row.target else { continue };
        let range = round_ratio_range(by_handler, OURS)
            .map_or(String::new(), |(lo, hi)| format!(" [{lo:.2}-{hi:.2}]"));
        let (sp_sc, floor) = (
            ratio_to_base(by_handler, "ring_sp_sc"),
            ratio_to_base(by_handler, "floor_lifo"),
        );
        let on_cpu = on_cpu.map_or("-".to_string(), |c| {
            if c < DISTURBED {
                disturbed += 1;
                format!("{:.0}% (disturbed)", c * 100.0)
            } else {
                format!("{:.0}%", c * 100.0)
            }
        });
        let _ = writeln!(
            w,
            "| {} | {}{range} | {} | {} | {}, {}, {} | {} | {on_cpu} |",
            row.label,
            fmt_ratio(row.ratio),
            t.describe(),
            row.verdict.map_or("no data", Verdict::label),
            fmt_ratio(row.stack),
            fmt_ratio(sp_sc),
            fmt_ratio(floor),
            t.reference
        );
    }
    let all: Vec<&Row> = mrows
        .iter()
        .map(|(_, r)| r)
        .chain(erows.iter().map(|(_, r)| r))
        .collect();
    let count = |v: Verdict| all.iter().filter(|r| r.verdict == Some(v)).count();
    let _ = writeln!(
        w,
        "\n{} targets met, {} met within noise, {} missed.\n",
        count(Verdict::Met),
        count(Verdict::WithinNoise),
        count(Verdict::Missed)
    );
    if disturbed > 0 {
        let _ = writeln!(
            w,
            "In {disturbed} of the `mempool_bench` rows above a lane's thread was on its CPU for less \
             than {:.0}% of some timed run: other processes or the hypervisor took the CPU, and those \
             ratios measure the scheduler as much as the handlers. Two-lcore rows suffer most: while \
             one lane is descheduled the other spins (`recycle` against a contended `ring_mp_mc`), or \
             can move at most one hand-over ring of objects (`handoff`). Rerun on a quiet machine \
             before reading them as handler properties.\n",
            DISTURBED * 100.0
        );
    }
    if let Some(svg) = svg_name {
        let _ = writeln!(
            w,
            "![ratio of ptr_ring to ring_mp_mc per configuration, with targets]({svg})\n"
        );
    }

    // rte_mempool API.
    let _ = writeln!(
        w,
        "## `rte_mempool_get_bulk` / `rte_mempool_put_bulk` (`mempool_bench`)\n"
    );
    let _ = writeln!(w, "```\n{}\n```\n", meta(d, "mempool_cmd"));
    let _ = writeln!(
        w,
        "One process, EAL on lcores 0-1, one mbuf pool of {} mbufs per handler and DPDK cache size, \
         created with `rte_pktmbuf_pool_create_by_ops` and checked to use the named ops. Per \
         configuration: a {} s untimed warm-up per handler, then {} rounds; in each round every \
         handler runs {} s, in the order of the columns. One object = one get plus one put; \
         `recycle`: each lcore gets `bulk` objects and puts them back; `handoff`: lcore 0 gets and \
         enqueues into an SP/SC `rte_ring` of {} slots, lcore 1 dequeues and puts (the rate is \
         lcore 1's). After every run the pool must hold all its objects again. \
         `ring_sp_sc` runs only where it is legal (one lcore, or handoff). Cells: median M objects/s \
         (min-max over the rounds); ratios are medians over `ring_mp_mc`'s median, with the range of \
         the round-by-round ratios (each pair ran back to back) in brackets. Rates are wall-clock; \
         the last column is the smallest share of a timed run that a lane's thread was on its CPU \
         (`CLOCK_THREAD_CPUTIME_ID` / wall time): below ~95% other processes or the hypervisor \
         took the CPU away during that configuration.\n",
        meta(d, "pool_size"),
        meta(d, "warmup"),
        meta(d, "rounds"),
        meta(d, "secs"),
        meta(d, "handoff_ring"),
    );
    let hs = handlers_present(&d.mempool);
    write_handler_header(
        w,
        &hs,
        "M/s",
        &["target", "verdict", "lanes on CPU, lowest"],
    );
    for (k, row) in &mrows {
        let _ = write!(w, "| {} |", row.label);
        write_handler_cells(w, &d.mempool[k], &hs, 1e6, 1);
        let lowest = d
            .on_cpu
            .get(k)
            .and_then(|v| Summary::of(v))
            .map_or("-".into(), |s| format!("{:.0}%", s.min * 100.0));
        let _ = writeln!(
            w,
            " {} | {} | {lowest} |",
            row.target.map_or("-".into(), |t| t.describe()),
            row.verdict.map_or("-", Verdict::label)
        );
    }
    let _ = writeln!(
        w,
        "\nCost per object, cache 0, in TSC cycles ({} GHz) per lcore doing the work: wall clock \
         (`lcores x TSC rate / objects per second`, median) / on the CPU (the same, times the share \
         of the run the thread was on its CPU, median over the rounds). The second number removes \
         time slices lost to other processes; it still contains time spent spinning, so for \
         `handoff` only the wall-clock figure is given.\n",
        meta(d, "tsc_ghz")
    );
    let tsc_ghz: f64 = meta(d, "tsc_ghz").parse().unwrap_or(0.0);
    if tsc_ghz > 0.0 {
        let _ = writeln!(
            w,
            "| configuration | {} |",
            hs.iter()
                .map(|h| format!("{h} cycles/object"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(w, "|---|{}", "---|".repeat(hs.len()));
        for (k, row) in mrows.iter().filter(|(k, _)| k.cache == 0) {
            let m = &d.mempool[k];
            // Both lcores do get+put in recycle; in handoff the work is split.
            let lanes = if k.pattern == Pattern::Recycle {
                f64::from(k.lcores)
            } else {
                1.0
            };
            let cells: Vec<String> = hs
                .iter()
                .map(|h| {
                    let Some(s) = summary(m, h) else {
                        return "-".into();
                    };
                    let wall = lanes * tsc_ghz * 1e9 / s.median;
                    let on_cpu: Vec<f64> = d
                        .cpu_cycles
                        .get(&(*k, h.clone()))
                        .map(|v| {
                            v.iter()
                                .filter(|(r, _)| *r > 0.0)
                                .map(|(r, c)| lanes * tsc_ghz * 1e9 * c / r)
                                .collect()
                        })
                        .unwrap_or_default();
                    match Summary::of(&on_cpu).filter(|_| k.pattern == Pattern::Recycle) {
                        Some(c) => format!("{wall:.1} / {:.1}", c.median),
                        None => format!("{wall:.1}"),
                    }
                })
                .collect();
            let _ = writeln!(w, "| {} | {} |", row.label, cells.join(" | "));
        }
        let _ = writeln!(w);
    }

    // End to end.
    let _ = writeln!(
        w,
        "## End to end: dpdk-testpmd and l2fwd on two `net_null` ports\n"
    );
    let _ = writeln!(
        w,
        "```\n{}\n{}\n```\n",
        meta(d, "testpmd_cmd"),
        meta(d, "l2fwd_cmd")
    );
    let _ = writeln!(
        w,
        "`net_null` RX allocates one mbuf per packet and TX frees it, so forwarding is bound by the \
         mempool. Every run loads the handler with `-d` (also for the other handlers) and selects \
         the pool's handler with `--mbuf-pool-ops-name`; each `ptr_ring` run is checked to have \
         served the pool (its log line). {} rounds, handlers alternated. testpmd: median of the \
         1-second `Rx-pps` sums of both ports over {} s after the first sample \
         (`scripts/testpmd-rate.sh`); l2fwd (DPDK's example, built from \
         `/usr/share/dpdk/examples/l2fwd`, cache 256): packets received by both ports between the \
         first and the last of {} one-second statistics blocks, over that time. Cells: median Mpps \
         (min-max).\n",
        meta(d, "e2e_rounds"),
        meta(d, "testpmd_secs"),
        meta(d, "l2fwd_secs"),
    );
    let hs = handlers_present(&d.e2e);
    write_handler_header(w, &hs, "Mpps", &["target", "verdict"]);
    for (k, row) in &erows {
        let _ = write!(w, "| {} |", row.label);
        write_handler_cells(w, &d.e2e[k], &hs, 1.0, 2);
        let _ = writeln!(
            w,
            " {} | {} |",
            row.target.map_or("-".into(), |t| t.describe()),
            row.verdict.map_or("-", Verdict::label)
        );
    }

    // Profiles.
    if !d.profiles.is_empty() {
        let _ = writeln!(w, "\n## Profiles of the missed `mempool_bench` targets\n");
        let _ = writeln!(
            w,
            "Each missed configuration ran again alone, once per handler, under `perf stat` and \
             `perf record -e cpu-clock` ({}). This VM exposes no hardware counters \
             (`cycles`, `instructions`, `cache-misses` read `<not supported>`), so the \
             profile is the software clock: where the time goes, by symbol, and the counts \
             perf can read. The `perf stat` numbers include EAL start-up and pool creation.\n",
            meta(d, "profile_cmd")
        );
        for (name, text) in &d.profiles {
            let _ = writeln!(w, "### {name}\n\n```\n{}\n```\n", text.trim_end());
        }
    }

    if let Some(n) = notes {
        let _ = writeln!(w, "\n## Closing note\n\n{}", n.trim_end());
    }

    // Raw samples.
    let _ = writeln!(
        w,
        "\n## Raw samples\n\n<details><summary>every round, in run order</summary>\n\n```"
    );
    for (k, m) in &d.mempool {
        for (h, v) in m {
            let s: Vec<String> = v.iter().map(|(_, r)| format!("{:.1}", r / 1e6)).collect();
            let _ = writeln!(w, "{:<26} {:<11} M/s  {}", k.to_string(), h, s.join(" "));
        }
    }
    for (k, m) in &d.e2e {
        for (h, v) in m {
            let s: Vec<String> = v.iter().map(|(_, r)| format!("{r:.2}")).collect();
            let _ = writeln!(
                w,
                "{:<26} {:<11} Mpps {}",
                format!("{} {}", k.app, k.variant),
                h,
                s.join(" ")
            );
        }
    }
    let _ = writeln!(w, "```\n\n</details>");
    o
}

/// Monitor lines: `<epoch> <phase> <others' CPU %> <steal %> <comm:pct,...>`.
fn monitor_summary(d: &Data) -> String {
    struct Sample {
        phase: String,
        others: f64,
        steal: f64,
        procs: String,
    }
    let samples: Vec<Sample> = d
        .monitor
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
        .collect();
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

/// A horizontal bar chart of the ratios, log scale, with the targets.
fn svg(d: &Data) -> String {
    let rows: Vec<Row> = mempool_rows(d)
        .into_iter()
        .map(|(_, r)| r)
        .chain(e2e_rows(d).into_iter().map(|(_, r)| r))
        .collect();
    let (left, right, top, row_h) = (420.0, 150.0, 60.0, 24.0);
    let plot_w = 520.0;
    let width = left + plot_w + right;
    let height = top + row_h * rows.len() as f64 + 60.0;
    let max_ratio = rows
        .iter()
        .flat_map(|r| [r.ratio, r.target.map(|t| t.min_ratio), r.stack])
        .flatten()
        .fold(1.0f64, f64::max);
    let lo = 0.1f64.log10();
    let hi = (max_ratio * 1.6).max(10.0).log10().ceil();
    let x = |v: f64| left + (v.max(0.1).log10() - lo) / (hi - lo) * plot_w;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" font-weight="bold">ptr_ring / ring_mp_mc (median ratio, log scale), same run</text>"#,
        10
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="40" fill="#555">bar: ptr_ring (green met, amber within noise, red missed, grey no target); black tick: target; grey dot: stack</text>"##
    );
    // Grid.
    let mut v = 0.1f64;
    while v.log10() <= hi + 1e-9 {
        for m in [1.0, 2.0, 5.0] {
            let g = v * m;
            if g.log10() > hi + 1e-9 {
                break;
            }
            let gx = x(g);
            let strong = m == 1.0;
            let _ = writeln!(
                s,
                r#"<line x1="{gx:.1}" y1="{top}" x2="{gx:.1}" y2="{:.1}" stroke="{}" stroke-width="{}"/>"#,
                top + row_h * rows.len() as f64,
                if (g - 1.0).abs() < 1e-9 {
                    "#333"
                } else if strong {
                    "#bbb"
                } else {
                    "#e4e4e4"
                },
                if (g - 1.0).abs() < 1e-9 { 1.5 } else { 1.0 }
            );
            let _ = writeln!(
                s,
                r##"<text x="{gx:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}x</text>"##,
                top + row_h * rows.len() as f64 + 16.0,
                if g < 1.0 {
                    format!("{g:.1}")
                } else {
                    format!("{g:.0}")
                }
            );
        }
        v *= 10.0;
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + row_h * 0.65,
            xml(&r.label)
        );
        if let Some(ratio) = r.ratio {
            let color = match r.verdict {
                Some(Verdict::Met) => "#3a9a4a",
                Some(Verdict::WithinNoise) => "#e0a526",
                Some(Verdict::Missed) => "#d0433a",
                None => "#9a9a9a",
            };
            let x0 = x(0.1);
            let _ = writeln!(
                s,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                y + 4.0,
                (x(ratio) - x0).max(1.0),
                row_h - 8.0
            );
            let label = match r.target {
                Some(t) => format!("{ratio:.2}x (target {:.2}x)", t.min_ratio),
                None => format!("{ratio:.2}x"),
            };
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                left + plot_w + 6.0,
                y + row_h * 0.65,
                xml(&label)
            );
        }
        if let Some(t) = r.target {
            let tx = x(t.min_ratio);
            let _ = writeln!(
                s,
                r#"<line x1="{tx:.1}" y1="{:.1}" x2="{tx:.1}" y2="{:.1}" stroke="black" stroke-width="2.5"/>"#,
                y + 1.0,
                y + row_h - 1.0
            );
        }
        if let Some(st) = r.stack {
            let _ = writeln!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#666"/>"##,
                x(st),
                y + row_h / 2.0
            );
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench_report: {e}");
            eprintln!("usage: bench_report --dir DIR [--out RESULTS.md] [--svg CHART.svg] [--notes NOTES.md] [--missed]");
            return ExitCode::from(2);
        }
    };
    let d = load(&a.dir);
    if a.missed {
        for (k, row) in mempool_rows(&d) {
            if row.verdict == Some(Verdict::Missed) {
                println!("{}", k.filter());
            }
        }
        return ExitCode::SUCCESS;
    }
    if d.mempool.is_empty() && d.e2e.is_empty() {
        eprintln!("bench_report: no results under {}", a.dir.display());
        return ExitCode::FAILURE;
    }
    let svg_name = a.svg.as_ref().map(|p| {
        // The chart is referenced relative to the report.
        match (a.out.as_ref().and_then(|o| o.parent()), p.parent()) {
            (Some(od), Some(sd)) if od == sd => {
                p.file_name().map_or(p.display().to_string(), |f| {
                    f.to_string_lossy().into_owned()
                })
            }
            _ => p.display().to_string(),
        }
    });
    if let Some(p) = &a.svg {
        if let Err(e) = std::fs::write(p, svg(&d)) {
            eprintln!("bench_report: {}: {e}", p.display());
            return ExitCode::FAILURE;
        }
    }
    let notes = a
        .notes
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let text = report(&d, notes.as_deref(), svg_name.as_deref());
    match &a.out {
        Some(p) => {
            if let Err(e) = std::fs::write(p, text) {
                eprintln!("bench_report: {}: {e}", p.display());
                return ExitCode::FAILURE;
            }
            eprintln!("bench_report: wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    // Verdicts on stderr, for the run's log.
    for r in mempool_rows(&d)
        .into_iter()
        .map(|(_, r)| r)
        .chain(e2e_rows(&d).into_iter().map(|(_, r)| r))
    {
        if let (Some(t), Some(v)) = (r.target, r.verdict) {
            eprintln!(
                "  {:<60} {:>8} target {:<26} {}",
                r.label,
                fmt_ratio(r.ratio),
                t.describe(),
                v.label()
            );
        }
    }
    ExitCode::SUCCESS
}
