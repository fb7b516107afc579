//! `bench_report`: turns the raw results of `bench/run.sh` into the full
//! report of the run and the chart of its ratios, and (`--index`) into its
//! DPDK release's section of `bench/RESULTS.md` (`index`), the full report
//! and chart going to `bench/results/dpdk-<release>/`. Run
//! `bench_report --help`.
//!
//! Reads, under `--dir`: `mempool.csv`, `mempool-run<N>.csv`, `e2e.csv`
//! and `autotest.csv` (records of `bench::record`, format 2; the last
//! holds DPDK's `mempool_perf_autotest`, parsed by `bench/run.sh` into
//! `autotest2` lines), `meta.env`
//! (`KEY=VALUE` lines about the machine and the run), `monitor.log` (other
//! processes' CPU use sampled during the run) and `profile/*.txt`.

mod autotest;
mod chart;
mod data;
mod e2e;
mod handlers;
mod host_speed;
mod index;
mod machine;
mod swing;
mod tables;
mod vhost;

use std::path::PathBuf;
use std::process::ExitCode;

use bench::targets::Verdict;

use data::Data;

const HELP: &str = "\
bench_report: RESULTS.md and the ratio chart from the raw results of bench/run.sh

usage: bench_report [--dir DIR] --index bench/RESULTS.md [--replace] [--notes NOTES.md]
       bench_report [--dir DIR] [--out RESULTS.md] [--svg CHART.svg] [--notes NOTES.md]
       bench_report [--dir DIR] --missed

  --dir DIR      raw results (default build/bench)
  --index PATH   the summary with one section per DPDK release: write this run's
                 full report and chart to results/dpdk-<release>/{RESULTS.md,ratios.svg}
                 next to PATH, and its release's section into PATH (the other
                 releases' sections are kept). Where the host ran ring_mp_mc in the
                 control rows (the handler never called) or in the no-cache rows on
                 one lcore (its atomics) below 0.8x the rates of the run whose
                 section this would replace, it writes the report and chart into
                 DIR instead, changes nothing next to PATH and fails
  --replace      with --index: replace the section whatever the host's speed
  --out PATH     write the report there (default: stdout)
  --svg PATH     write the chart there
  --notes PATH   append this hand-written analysis as the closing note
  --missed       print the mempool_bench --only filter of every missed target, one per line
  -h, --help     this text
";

struct Args {
    dir: PathBuf,
    out: Option<PathBuf>,
    svg: Option<PathBuf>,
    notes: Option<PathBuf>,
    index: Option<PathBuf>,
    replace: bool,
    missed: bool,
}

fn parse_args() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut a = Args {
        dir: PathBuf::from("build/bench"),
        out: None,
        svg: None,
        notes: None,
        index: None,
        replace: false,
        missed: false,
    };
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("dir") => a.dir = p.value()?.into(),
            Long("out") => a.out = Some(p.value()?.into()),
            Long("svg") => a.svg = Some(p.value()?.into()),
            Long("notes") => a.notes = Some(p.value()?.into()),
            Long("index") => a.index = Some(p.value()?.into()),
            Long("missed") => a.missed = true,
            Long("replace") => a.replace = true,
            Short('h') | Long("help") => {
                print!("{HELP}");
                std::process::exit(0);
            }
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench_report: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let d = match Data::load(&a.dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bench_report: {e}");
            return ExitCode::FAILURE;
        }
    };
    if a.missed {
        for (k, m) in &d.mempool {
            if data::mempool_cmp(k, m).is_some_and(|c| c.verdict == Some(Verdict::Missed)) {
                println!("{}", k.filter());
            }
        }
        return ExitCode::SUCCESS;
    }
    if d.mempool.is_empty() && d.e2e.is_empty() {
        eprintln!("bench_report: no results under {}", a.dir.display());
        return ExitCode::FAILURE;
    }
    let result = match &a.index {
        Some(index) if a.out.is_some() || a.svg.is_some() => Err(format!(
            "--index {} writes the report and chart itself: drop --out and --svg",
            index.display()
        )),
        Some(index) => run_index(&a, &d, index),
        None => run(&a, &d),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_report: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args, d: &Data) -> Result<(), String> {
    // The chart is referenced relative to the report when both share a folder.
    let svg_name =
        a.svg.as_ref().map(
            |p| match (a.out.as_ref().and_then(|o| o.parent()), p.parent()) {
                (Some(od), Some(sd)) if od == sd => {
                    p.file_name().map_or(p.display().to_string(), |f| {
                        f.to_string_lossy().into_owned()
                    })
                }
                _ => p.display().to_string(),
            },
        );
    if let Some(p) = &a.svg {
        chart::write(d, p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let notes = a
        .notes
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let text = tables::report(d, notes.as_deref(), svg_name.as_deref(), None, None);
    match &a.out {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))?;
            eprintln!("bench_report: wrote {}", p.display());
        }
        None => print!("{text}"),
    }
    verdicts(d);
    Ok(())
}

/// The full report and chart into the release's folder next to `index`,
/// and the release's section into `index`.
fn run_index(a: &Args, d: &Data, index: &std::path::Path) -> Result<(), String> {
    let release = data::release(d).ok_or_else(|| {
        format!(
            "{}: meta.env names no DPDK release (dpdk=)",
            a.dir.display()
        )
    })?;
    let mut section = index::Section::of_run(d, &release);
    let old = index::section_text(index, &release);
    let speeds = old
        .as_deref()
        .map_or_else(Vec::new, |o| host_speed::host_speed(o, section.rows()));
    let old_source = old
        .as_deref()
        .and_then(index::source_of)
        .unwrap_or("?")
        .to_string();
    let host = host_speed::slowest(&speeds).map(|slowest| {
        (
            slowest.speed,
            host_speed::host_speed_words(&speeds, &release, &old_source),
        )
    });
    if let Some((slowest, words)) = &host {
        if *slowest < host_speed::MIN_HOST_SPEED && !a.replace {
            return Err(keep_section(a, d, index, &release, words));
        }
        section.note_host_speed(words);
    }
    let host = host.map(|(_, words)| words);
    let dir = index::release_dir(index, &release);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let report = write_report(a, d, &dir, Some(&index::back_link(index)), host.as_deref())?;
    eprintln!(
        "bench_report: wrote {} and {}",
        report.display(),
        dir.join(index::CHART).display()
    );
    for line in index::update(index, &section)? {
        eprintln!("bench_report: {line}");
    }
    eprintln!(
        "bench_report: wrote DPDK {release}'s section of {}",
        index.display()
    );
    verdicts(d);
    Ok(())
}

/// The full report and its chart into `dir` (`index::REPORT`,
/// `index::CHART`), the report linking back to the summary at `back` and
/// giving the host's speed, `host`, where there is one; returns the
/// report's path.
fn write_report(
    a: &Args,
    d: &Data,
    dir: &std::path::Path,
    back: Option<&str>,
    host: Option<&str>,
) -> Result<PathBuf, String> {
    let svg = dir.join(index::CHART);
    chart::write(d, &svg).map_err(|e| format!("{}: {e}", svg.display()))?;
    let notes = a
        .notes
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let report = dir.join(index::REPORT);
    let text = tables::report(d, notes.as_deref(), Some(index::CHART), back, host);
    std::fs::write(&report, text).map_err(|e| format!("{}: {e}", report.display()))?;
    Ok(report)
}

/// A run on a host too slow to compare with the committed one: its report
/// and chart go into the run's own folder, nothing next to `index` changes,
/// and the error says so.
fn keep_section(a: &Args, d: &Data, index: &std::path::Path, release: &str, host: &str) -> String {
    let wrote = write_report(a, d, &a.dir, None, Some(host));
    verdicts(d);
    let kept = format!(
        "host speed, {host}; below {:.2}x, so not comparable: DPDK {release}'s section of {} and \
         its full report are left as they were",
        host_speed::MIN_HOST_SPEED,
        index.display()
    );
    match wrote {
        Ok(report) => format!(
            "{kept}; this run's report: {} (rerun on a quieter host, or pass --replace, \
             BENCH_REPLACE=1 for bench/run.sh, to replace the section anyway)",
            report.display()
        ),
        Err(e) => format!("{kept}; this run's report could not be written: {e}"),
    }
}

/// Verdicts on stderr, for the run's log.
fn verdicts(d: &Data) {
    for (prefix, c) in data::all_rows(d) {
        if let (Some(t), Some(v)) = (c.target, c.verdict) {
            let p = c.paired.map_or("-".into(), |p| {
                format!("{:.2}x [{:.2}-{:.2}]", p.median, p.lo, p.hi)
            });
            eprintln!(
                "  {:<70} {:>20} target {:<8} {}",
                format!("{prefix}{}", c.label),
                p,
                t.describe(),
                v.label()
            );
        }
    }
}
