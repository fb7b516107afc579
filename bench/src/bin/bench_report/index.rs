//! `bench/RESULTS.md` as a summary per DPDK release: one section for every
//! release measured, each from one run on that release, linking to that
//! run's full report (`results/dpdk-<release>/RESULTS.md` next to the
//! summary). Writing one release's section keeps the others as they are.
//!
//! A section lies between `<!-- dpdk-release R -->` and
//! `<!-- /dpdk-release R -->`. A summary file without such markers is a full
//! report of one run from before the per-release layout: it is kept as its
//! release's section (its targets rows, read back from its table) and moves,
//! with its chart, to its release's folder; a run on that same release
//! replaces it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bench::record::Group;

use crate::data::{self, Data};
use crate::machine::monitor_summary;
use crate::tables::{self, TargetCells, TARGETS_HEAD};
use crate::{autotest, handlers};

/// The folder of the full reports, next to the summary.
const RESULTS_DIR: &str = "results";
/// The full report and the chart in a release's folder.
pub const REPORT: &str = "RESULTS.md";
pub const CHART: &str = "ratios.svg";

/// The folder of `release`'s full report, for the summary at `index`.
pub fn release_dir(index: &Path, release: &str) -> PathBuf {
    index_dir(index)
        .join(RESULTS_DIR)
        .join(format!("dpdk-{release}"))
}

/// Where a release's full report links back to the summary.
pub fn back_link(index: &Path) -> String {
    format!(
        "../../{}",
        index
            .file_name()
            .map_or("RESULTS.md".into(), |f| f.to_string_lossy().into_owned())
    )
}

fn index_dir(index: &Path) -> &Path {
    match index.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Whether a row of the targets table belongs in a release's section: every
/// row but the controls' own group (no cache; DPDK's cache with working sets
/// larger than it; hand-over between lcores; `ptr_ring`'s own cache against
/// DPDK's; the end-to-end rows with a target).
pub fn headline(c: &TargetCells) -> bool {
    !c.row().starts_with(&format!("{}: ", Group::Control.name()))
}

/// The section of `release` in the summary at `index`, if it has one.
pub fn section_text(index: &Path, release: &str) -> Option<String> {
    let text = std::fs::read_to_string(index).ok()?;
    sections_of(&text).remove(&release_key(release))
}

/// The `Source` cell of a section's markdown (the commit it measured).
pub fn source_of(section: &str) -> Option<&str> {
    cell(section, "Source")
}

/// The value of the two-column row `label` in `text`'s tables.
fn cell<'t>(text: &'t str, label: &str) -> Option<&'t str> {
    let p = format!("| {label} | ");
    text.lines()
        .find_map(|l| l.strip_prefix(p.as_str())?.strip_suffix(" |"))
}

/// One release's section; the texts are markdown table cells (`|` escaped).
pub struct Section {
    /// `22.11`, `24.11`, ...
    pub release: String,
    /// The full version and where it came from.
    dpdk: String,
    command: String,
    date: String,
    source: String,
    machine: String,
    quick: bool,
    /// Links to the full report and its chart, relative to the summary.
    report: String,
    chart: Option<String>,
    rows: Vec<TargetCells>,
    /// The compact table of every software handler (its lines; empty when
    /// the run measured no other handler).
    handlers: Vec<String>,
    notes: Vec<String>,
}

impl Section {
    /// The section of this run.
    pub fn of_run(d: &Data, release: &str) -> Section {
        let rel = format!("{RESULTS_DIR}/dpdk-{release}");
        let mut notes: Vec<String> = handlers::floor_skipped(d).into_iter().collect();
        notes.extend(autotest::summary(d));
        let esc = |s: &str| s.replace('|', "\\|");
        Section {
            release: release.to_string(),
            dpdk: esc(d.meta("dpdk")),
            command: d.meta("command").to_string(),
            date: esc(&format!(
                "{} (run time {})",
                d.meta("date"),
                d.meta("duration")
            )),
            source: esc(d.meta("git")),
            machine: esc(&monitor_summary(d)),
            quick: d.meta("quick") == "1",
            report: format!("{rel}/{REPORT}"),
            chart: Some(format!("{rel}/{CHART}")),
            rows: tables::target_cells(d)
                .into_iter()
                .filter(headline)
                .collect(),
            handlers: handlers::compact(d),
            notes,
        }
    }

    /// The section of a full report written before the per-release layout,
    /// once moved to its release's folder; `None` when `text` is not such a
    /// report or names no DPDK release.
    pub fn of_legacy(text: &str, chart: bool) -> Option<Section> {
        let cell = |label: &str| cell(text, label).map(str::to_string);
        let dpdk = cell("DPDK")?;
        let release = data::release_of(&dpdk)?;
        let generated = text
            .lines()
            .find_map(|l| l.strip_prefix("Generated by `"))?;
        let (command, rest) = generated.split_once("` on ")?;
        let date = rest
            .split_once(". Do not edit")
            .map_or(rest, |(d, _)| d)
            .to_string();
        let targets = text
            .split("\n## ")
            .find(|s| s.starts_with("Targets\n"))
            .unwrap_or("");
        let rows: Vec<TargetCells> = targets
            .lines()
            .filter_map(TargetCells::parse)
            .filter(headline)
            .collect();
        let notes = text
            .lines()
            .find(|l| l.starts_with("ptr_ring / ring_mp_mc over "))
            .map(|l| format!("`mempool_perf_autotest`, no cache on either side: {l}"))
            .into_iter()
            .collect();
        let rel = format!("{RESULTS_DIR}/dpdk-{release}");
        Some(Section {
            dpdk,
            command: command.to_string(),
            date,
            source: cell("Source").unwrap_or_else(|| "?".into()),
            machine: cell("Machine during the run").unwrap_or_else(|| "?".into()),
            quick: text.contains("**SMOKE RUN"),
            report: format!("{rel}/{REPORT}"),
            chart: chart.then(|| format!("{rel}/{CHART}")),
            rows,
            handlers: Vec::new(),
            notes,
            release,
        })
    }

    /// The rows of its targets table.
    pub fn rows(&self) -> &[TargetCells] {
        &self.rows
    }

    /// Adds how fast the host ran this run against the one it replaces
    /// ([`host_speed_words`](crate::host_speed::host_speed_words)) to the machine's cell.
    pub fn note_host_speed(&mut self, words: &str) {
        self.machine = format!(
            "{}; host speed: {}",
            self.machine,
            words.replace('|', "\\|")
        );
    }

    /// The markdown, markers included.
    pub fn render(&self) -> String {
        let r = &self.release;
        let mut w = String::new();
        let _ = writeln!(w, "<!-- dpdk-release {r} -->\n## DPDK {r}\n");
        if self.quick {
            let _ = writeln!(
                w,
                "> **SMOKE RUN (`BENCH_QUICK=1`): these numbers only show that the benchmark works \
                 on this release. They are not results.**\n"
            );
        }
        let chart = self
            .chart
            .as_ref()
            .map_or(String::new(), |c| format!(", chart [{CHART}]({c})"));
        let _ = writeln!(w, "| | |\n|---|---|");
        for (k, v) in [
            ("DPDK", self.dpdk.clone()),
            ("Command", format!("`{}`", self.command)),
            ("Date", self.date.clone()),
            ("Source", self.source.clone()),
            ("Machine during the run", self.machine.clone()),
            (
                "Full report",
                format!("[{}]({}){chart}", self.report, self.report),
            ),
        ] {
            let _ = writeln!(w, "| {k} | {v} |");
        }
        let _ = writeln!(w, "\n{TARGETS_HEAD}");
        for c in &self.rows {
            let _ = writeln!(w, "{}", c.line());
        }
        if self.rows.is_empty() {
            let _ = writeln!(w, "| no rows | - | - | - | - |");
        }
        let _ = writeln!(w, "\n{}\n", tables::verdict_counts(&self.rows));
        if !self.handlers.is_empty() {
            let _ = writeln!(
                w,
                "Every software handler DPDK ships, on the core rows: the best (ranked by its paired \
                 ratio to `ring_mp_mc`) and `ptr_ring` against it (the full report has every \
                 handler's figures):\n\n{}\n",
                self.handlers.join("\n")
            );
        }
        for n in &self.notes {
            let _ = writeln!(w, "{n}\n");
        }
        let _ = writeln!(w, "<!-- /dpdk-release {r} -->");
        w
    }
}

const HEAD: &str = "\
# Benchmark results: `ptr_ring` against DPDK's `ring_mp_mc`, per DPDK release

Generated by `bench/run.sh` (`bench_report --index`): do not edit, run the benchmark on the \
release again. One section per DPDK release measured, each the summary of one run on that \
release: on this machine's DPDK `bash bench/run.sh` (`make bench`), on another release in a \
Debian root `bash scripts/dpdk-root.sh trixie bash bench/run.sh` (DPDK 24.11) or `... forky ...` \
(DPDK 25.11). Every ratio is `ptr_ring / ring_mp_mc` with both handlers measured side by side \
in that one run: the median of the per-round ratios, with a bootstrap 95% confidence interval, \
\"equal within noise\" when that interval contains 1.0. Compare ratios, not rates, across \
releases. A run on one release rewrites its section and its full report under \
`results/dpdk-<release>/` and keeps the other sections; a run whose control rows (the handler \
never called) or no-cache rows on one lcore (`ring_mp_mc`'s atomics) ran `ring_mp_mc` below 0.8x \
the rates of the section's run leaves it as it was unless told to \
replace it (`BENCH_REPLACE=1`; the section's \"Machine during the run\" then gives that speed; \
bench/README.md). Rows: the targets of the full report \
(no cache on either side; DPDK's cache on both with working sets larger than it; hand-over \
between lcores; `ptr_ring`'s own cache against DPDK's cache of the same size; the end-to-end \
testpmd rows that have a target), without the `control:` group (the noise floor).
";

/// Sorts `22.11` before `24.11` before `25.11`.
fn release_key(r: &str) -> (u32, u32, String) {
    let mut it = r.split('.').map(|x| x.parse().unwrap_or(u32::MAX));
    (
        it.next().unwrap_or(u32::MAX),
        it.next().unwrap_or(u32::MAX),
        r.to_string(),
    )
}

/// The sections of a summary, by release.
fn sections_of(text: &str) -> BTreeMap<(u32, u32, String), String> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(r) = line
            .strip_prefix("<!-- dpdk-release ")
            .and_then(|l| l.strip_suffix(" -->"))
        {
            cur = Some((r.to_string(), String::new()));
        }
        if let Some((r, body)) = cur.as_mut() {
            body.push_str(line);
            body.push('\n');
            if line == format!("<!-- /dpdk-release {r} -->") {
                out.insert(release_key(r), std::mem::take(body));
                cur = None;
            }
        }
    }
    out
}

/// Writes `section` into the summary at `index`, keeping the other
/// releases' sections; returns what it did besides, for the log.
pub fn update(index: &Path, section: &Section) -> Result<Vec<String>, String> {
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let old = std::fs::read_to_string(index).unwrap_or_default();
    let mut sections = sections_of(&old);
    let mut said = Vec::new();
    if sections.is_empty() && !old.trim().is_empty() {
        let old_chart = index_dir(index).join(CHART);
        let legacy = Section::of_legacy(&old, old_chart.exists());
        match legacy {
            Some(l) if l.release != section.release => {
                let dir = release_dir(index, &l.release);
                std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
                let report = dir.join(REPORT);
                if !report.exists() {
                    std::fs::write(&report, &old).map_err(|e| io(&report, e))?;
                    said.push(format!(
                        "moved the DPDK {} report of {} to {}",
                        l.release,
                        index.display(),
                        report.display()
                    ));
                }
                let chart = dir.join(CHART);
                if old_chart.exists() && !chart.exists() {
                    std::fs::rename(&old_chart, &chart).map_err(|e| io(&old_chart, e))?;
                    said.push(format!(
                        "moved {} to {}",
                        old_chart.display(),
                        chart.display()
                    ));
                }
                sections.insert(release_key(&l.release), l.render());
            }
            Some(l) => said.push(format!(
                "the DPDK {} report of {} is replaced by this run's",
                l.release,
                index.display()
            )),
            None => said.push(format!(
                "{} held no per-release sections and no report this generator can read: replaced",
                index.display()
            )),
        }
        if old_chart.exists() {
            std::fs::remove_file(&old_chart).map_err(|e| io(&old_chart, e))?;
            said.push(format!(
                "removed {} (each release's chart is in its folder)",
                old_chart.display()
            ));
        }
    }
    sections.insert(release_key(&section.release), section.render());
    let mut text = String::from(HEAD);
    for s in sections.values() {
        text.push('\n');
        text.push_str(s);
    }
    std::fs::write(index, text).map_err(|e| io(index, e))?;
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_speed::{host_speed_words, HostSpeed, Probe, MIN_HOST_SPEED};

    fn section(release: &str, row: &str) -> Section {
        Section {
            release: release.into(),
            dpdk: format!("{release}.1 (Debian packages)"),
            command: "bash bench/run.sh".into(),
            date: "2026-01-01 00:00 UTC (run time 1 min 0 s)".into(),
            source: "abc1234 (clean)".into(),
            machine: "quiet".into(),
            quick: false,
            report: format!("results/dpdk-{release}/RESULTS.md"),
            chart: None,
            rows: vec![TargetCells([
                row.into(),
                "1.00x [0.99-1.01]".into(),
                ">= 1.00x".into(),
                "met".into(),
                "equal within noise".into(),
            ])],
            handlers: vec![
                "| nocache: x | `ring_sp_sc` (1.30x) | 0.77x [0.70-0.80] | 3 of 7 |".into(),
            ],
            notes: vec![],
        }
    }

    /// An empty scratch directory of this test process, and the index path
    /// in it.
    fn scratch_index(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("{tag}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let index = dir.join("RESULTS.md");
        (dir, index)
    }

    /// The machine cell of a section that replaced another gives the
    /// host's speed in the words of `host_speed_words`.
    #[test]
    fn a_replacing_section_gives_the_host_speed() {
        let old = section("22.11", "nocache: a").render();
        assert_eq!(source_of(&old), Some("abc1234 (clean)"));
        let speeds = [HostSpeed {
            probe: Probe::Control,
            speed: 0.55,
            rows: 2,
        }];
        let mut new = section("22.11", "nocache: a");
        new.note_host_speed(&host_speed_words(&speeds, "22.11", "abc1234 (clean)"));
        assert!(new.render().contains(
            "; host speed: `ring_mp_mc`'s rates against the committed DPDK 22.11 run, \
             abc1234 (clean): the control rows (handler never called) at 0.55x (median of 2 rows) |"
        ));
    }

    #[test]
    fn one_release_replaced_the_others_kept_in_order() {
        let (dir, index) = scratch_index("bench_index");
        update(&index, &section("25.11", "nocache: a")).unwrap();
        update(&index, &section("22.11", "nocache: b")).unwrap();
        update(&index, &section("25.11", "nocache: c")).unwrap();
        let text = std::fs::read_to_string(&index).unwrap();
        let s = sections_of(&text);
        assert_eq!(s.len(), 2);
        assert!(text.find("## DPDK 22.11").unwrap() < text.find("## DPDK 25.11").unwrap());
        assert!(text.contains("| nocache: b |") && text.contains("| nocache: c |"));
        assert!(!text.contains("| nocache: a |"));
        assert!(text.contains("Every software handler DPDK ships, on the core rows"));
        assert!(text.contains("| nocache: x | `ring_sp_sc` (1.30x) | 0.77x [0.70-0.80] | 3 of 7 |"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The generated header and `--help` write the threshold out in words
    /// (they are const strings): they must say the value the code uses.
    #[test]
    fn the_texts_give_the_host_speed_threshold_the_code_uses() {
        let words = format!("below {MIN_HOST_SPEED}x the rates");
        assert!(HEAD.contains(&words), "RESULTS.md header: {words:?}");
        assert!(crate::HELP.contains(&words), "--help: {words:?}");
    }

    #[test]
    fn a_report_from_before_becomes_its_release_section() {
        let (dir, index) = scratch_index("bench_legacy");
        let legacy = "# Benchmark results: `ptr_ring` against DPDK's `ring_mp_mc`\n\n\
            Generated by `bash bench/run.sh` on 2026-12-01 03:44 UTC (run time 13 min 16 s). Do not edit: rerun.\n\n\
            ## Machine\n\n| | |\n|---|---|\n| DPDK | 22.11.11 (Debian packages, dynamic libraries) |\n\
            | Source | 016d1a3 (with uncommitted changes) |\n\n## Targets\n\n\
            | row | ratio [95% CI] | target | verdict | in words |\n|---|---|---|---|---|\n\
            | nocache: 1 lcore, bulk 1, 128 kept | 1.01x [0.91-1.02] | >= 1.00x | met | equal within noise: 81.3 vs 80.8 M/s |\n\
            | control: 1 lcore, bulk 32, 128 kept | 1.00x [0.98-1.01] | - | control: the handler was not called, not counted | x |\n\n\
            ## DPDK's own `mempool_perf_autotest`\n\nptr_ring / ring_mp_mc over 120 cases: median 0.97x, range 0.80x-1.10x.\n";
        std::fs::write(&index, legacy).unwrap();
        std::fs::write(dir.join(CHART), "<svg/>").unwrap();
        let said = update(&index, &section("24.11", "nocache: new")).unwrap();
        assert_eq!(said.len(), 2, "{said:?}");
        let moved = dir.join("results/dpdk-22.11");
        assert_eq!(std::fs::read_to_string(moved.join(REPORT)).unwrap(), legacy);
        assert!(moved.join(CHART).exists() && !dir.join(CHART).exists());
        let text = std::fs::read_to_string(&index).unwrap();
        let s = sections_of(&text);
        assert_eq!(s.len(), 2);
        let old = s.values().next().unwrap();
        assert!(old.starts_with("<!-- dpdk-release 22.11 -->"));
        assert!(old.contains("| nocache: 1 lcore, bulk 1, 128 kept | 1.01x [0.91-1.02] |"));
        assert!(!old.contains("control: 1 lcore"));
        assert!(
            old.contains("`bash bench/run.sh`")
                && old.contains("2026-12-01 03:44 UTC (run time 13 min 16 s)")
        );
        assert!(old.contains("| Source | 016d1a3 (with uncommitted changes) |"));
        assert!(old.contains("median 0.97x"));
        assert!(old.contains("1 targets met"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
