//! The raw results under `--dir`, and the comparisons built from them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bench::matrix::{BASELINE, OURS};
use bench::record::{self, E2eKey, LineTrip, MempoolKey, MempoolRound, Record, Side};
use bench::stats::{by_mode, median, round_ratios, Paired};
use bench::targets::{self, Target, Verdict};

/// Below this share of objects handed out by `ptr_ring`, DPDK's cache served
/// the row and the handler was not on the path: a control.
pub const OFF_PATH: f64 = 0.01;

/// One handler in one `mempool_bench` row.
#[derive(Default)]
pub struct MempoolRuns {
    /// The caches it ran with (the last line's; every line of a row agrees).
    pub side: Option<Side>,
    /// (round, objects/s).
    pub rounds: Vec<(u32, f64)>,
    /// On-CPU share of every run.
    pub on_cpu: Vec<f64>,
    /// Handler share of every run (only where known).
    pub share: Vec<f64>,
}

/// One handler in one end-to-end row.
#[derive(Default)]
pub struct E2eRuns {
    /// DPDK cache as the run set it.
    pub dpdk_cache: String,
    /// The handler's own cache as the run set it.
    pub handler_cache: String,
    /// (round, Mpps).
    pub rounds: Vec<(u32, f64)>,
    /// Handler share of every run (only where recorded).
    pub share: Vec<f64>,
    /// (round, ns before, ns after): the cache line's round trip between
    /// the forwarding CPUs around each run (only where recorded).
    pub lines: Vec<(u32, f64, f64)>,
}

/// One `mempool_perf_autotest` case: (handler, cores, max bulk, get bulk,
/// put bulk, keep, constant_n) -> objects/s. Max bulk 0: fixed bulks; above
/// 0 (DPDK 25.07 on): random bulks from 1 to it, get and put bulk 0.
pub type AutotestKey = (String, u32, u32, u32, u32, u32, u32);

/// The handlers of each `mempool_bench` row.
pub type MempoolRows = BTreeMap<MempoolKey, BTreeMap<String, MempoolRuns>>;

#[derive(Default)]
pub struct Data {
    pub mempool: MempoolRows,
    /// Handlers left out of a `mempool_bench` row, and why.
    pub skipped: BTreeMap<MempoolKey, BTreeMap<String, String>>,
    /// Further runs of the swinging rows (`mempool-run<N>.csv`, N from 2;
    /// run 1 is `mempool`), by run number.
    pub reruns: BTreeMap<u32, MempoolRows>,
    /// The cache-line round trip between the two lcores around each
    /// two-lcore row, by run number (1: `mempool.csv`) and row.
    pub trips: BTreeMap<u32, BTreeMap<MempoolKey, LineTrip>>,
    pub e2e: BTreeMap<E2eKey, BTreeMap<String, E2eRuns>>,
    pub autotest: BTreeMap<AutotestKey, f64>,
    pub meta: BTreeMap<String, String>,
    pub monitor: Vec<String>,
    pub profiles: Vec<(String, String)>,
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(String::from).collect())
        .unwrap_or_default()
}

impl Data {
    /// The raw results under `dir`; a file that is not there is no data,
    /// a malformed record an error naming its file and line.
    pub fn load(dir: &Path) -> Result<Data, record::Error> {
        let mut d = Data::default();
        for file in ["mempool.csv", "e2e.csv", "autotest.csv"] {
            for r in records(&dir.join(file))? {
                d.add(r);
            }
        }
        for line in read_lines(&dir.join("meta.env")) {
            if let Some((k, v)) = line.split_once('=') {
                d.meta.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
        for (n, path) in rerun_files(dir) {
            let mut runs = MempoolRows::new();
            for r in records(&path)? {
                match r {
                    Record::Mempool(m) => add_mempool(&mut runs, m),
                    Record::Line(t) => {
                        d.trips.entry(n).or_default().insert(t.key, t);
                    }
                    _ => {}
                }
            }
            d.reruns.insert(n, runs);
        }
        d.monitor = read_lines(&dir.join("monitor.log"));
        d.profiles = profiles(&dir.join("profile"));
        Ok(d)
    }

    pub fn add(&mut self, r: Record) {
        match r {
            Record::Mempool(m) => add_mempool(&mut self.mempool, m),
            Record::Skipped(s) => {
                self.skipped
                    .entry(s.key)
                    .or_default()
                    .insert(s.handler, s.reason);
            }
            Record::E2e(e) => {
                let h = self
                    .e2e
                    .entry(e.key)
                    .or_default()
                    .entry(e.handler)
                    .or_default();
                h.dpdk_cache = e.dpdk_cache;
                h.handler_cache = e.handler_cache;
                h.rounds.push((e.round, e.rate));
                if e.handler_share >= 0.0 {
                    h.share.push(e.handler_share);
                }
                if e.line_before_ns >= 0.0 && e.line_after_ns >= 0.0 {
                    h.lines.push((e.round, e.line_before_ns, e.line_after_ns));
                }
            }
            Record::Line(t) => {
                self.trips.entry(1).or_default().insert(t.key, t);
            }
            Record::Autotest(a) => {
                let key = (
                    a.handler,
                    a.cores,
                    a.max_bulk,
                    a.get_bulk,
                    a.put_bulk,
                    a.keep,
                    a.constant_n,
                );
                self.autotest.insert(key, a.rate);
            }
        }
    }

    /// "a cache line between the lcores: 182 / 391 ns round trip (before /
    /// after the row)", for a two-lcore row of run `run` that measured it.
    pub fn trip_words(&self, run: u32, key: &MempoolKey) -> Option<String> {
        let t = self.trips.get(&run)?.get(key)?;
        Some(format!(
            "a cache line between the lcores: {:.0} / {:.0} ns round trip (before / after the row)",
            t.before_ns, t.after_ns
        ))
    }

    pub fn meta(&self, k: &str) -> &str {
        self.meta.get(k).map_or("?", String::as_str)
    }
}

/// A `mempool_bench` round of `handler` in `key`, no caches, for tests.
#[cfg(test)]
pub fn test_round(key: MempoolKey, handler: &str, round: u32, rate: f64) -> Record {
    Record::Mempool(MempoolRound {
        key,
        handler: handler.into(),
        side: Side {
            dpdk_cache: 0,
            handler_cache: 0,
        },
        round,
        position: 1,
        rate,
        on_cpu: 1.0,
        handler_share: -1.0,
    })
}

/// One `mempool_bench` round into `rows`.
fn add_mempool(rows: &mut MempoolRows, m: MempoolRound) {
    let h = rows.entry(m.key).or_default().entry(m.handler).or_default();
    h.side = Some(m.side);
    h.rounds.push((m.round, m.rate));
    h.on_cpu.push(m.on_cpu);
    if m.handler_share >= 0.0 {
        h.share.push(m.handler_share);
    }
}

/// The records of the file at `path`; none when there is no such file.
fn records(path: &Path) -> Result<Vec<Record>, record::Error> {
    if path.exists() {
        record::read_file(path)
    } else {
        Ok(Vec::new())
    }
}

/// `mempool-run<N>.csv` under `dir`, by N.
fn rerun_files(dir: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| {
            let p = e.ok()?.path();
            let n = p
                .file_name()?
                .to_str()?
                .strip_prefix("mempool-run")?
                .strip_suffix(".csv")?
                .parse()
                .ok()?;
            Some((n, p))
        })
        .collect();
    v.sort();
    v
}

fn profiles(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    files.sort();
    files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "txt"))
        .map(|f| {
            let name = f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, std::fs::read_to_string(&f).unwrap_or_default())
        })
        .collect()
}

/// `ptr_ring` against the baseline in one row.
pub struct Comparison {
    pub label: String,
    /// The `mempool_bench` row (`None` for end-to-end rows).
    pub key: Option<MempoolKey>,
    /// Median rates (ours, baseline).
    pub ours: Option<f64>,
    pub base: Option<f64>,
    /// Paired per-round ratio.
    pub paired: Option<Paired>,
    /// Median ratio in the baseline's fast rounds and in its slow rounds.
    pub fast: Option<f64>,
    pub slow: Option<f64>,
    pub target: Option<Target>,
    pub verdict: Option<Verdict>,
    /// DPDK's cache served every get and put (`ptr_ring` was not called).
    pub control: bool,
    /// Median handler share of `ptr_ring`.
    pub share: Option<f64>,
    /// An end-to-end row's (lowest, highest) rate of each side over its
    /// runs, where one side moved by more than [`targets::MAX_SWING`]
    /// (verdict [`Verdict::NotSteady`]).
    pub unsteady: Option<[(f64, f64); 2]>,
    /// The same spans of the control row of the same application and runs
    /// (the handler not called), where that row was not steady: the host
    /// changed level under the runs, so this row's ratio is no result
    /// either (verdict [`Verdict::NotSteady`]); set by [`e2e_row`].
    pub control_unsteady: Option<[(f64, f64); 2]>,
}

impl Comparison {
    fn new(
        label: String,
        ours: &[(u32, f64)],
        base: &[(u32, f64)],
        target: Option<Target>,
        share: Option<f64>,
        check_steady: bool,
    ) -> Comparison {
        let rates = |v: &[(u32, f64)]| median(&v.iter().map(|&(_, r)| r).collect::<Vec<_>>());
        let paired = Paired::of(&round_ratios(ours, base));
        let (fast, slow) = by_mode(ours, base);
        let control = share.is_some_and(|s| s < OFF_PATH);
        let target = target.filter(|_| !control);
        let unsteady = if check_steady {
            unsteady_spans(ours, base)
        } else {
            None
        };
        let verdict = target.zip(paired).map(|(t, p)| {
            if unsteady.is_some() {
                Verdict::NotSteady
            } else {
                t.verdict(&p)
            }
        });
        Comparison {
            label,
            key: None,
            ours: rates(ours),
            base: rates(base),
            verdict,
            paired,
            fast: median(&fast),
            slow: median(&slow),
            target,
            control,
            share,
            unsteady,
            control_unsteady: None,
        }
    }

    /// Which side is faster, with the figures, in words; for a row that
    /// was not steady, each side's range over the runs.
    pub fn statement(&self, unit: &str, scale: f64) -> String {
        let (Some(p), Some(o), Some(b)) = (self.paired, self.ours, self.base) else {
            return "no data".into();
        };
        // Each side's range over the runs, as the two NOT STEADY texts give it.
        let spans = |[(olo, ohi), (blo, bhi)]: [(f64, f64); 2]| {
            format!(
                "ptr_ring {:.1}-{:.1}, ring_mp_mc {:.1}-{:.1} {unit}",
                olo / scale,
                ohi / scale,
                blo / scale,
                bhi / scale
            )
        };
        if let Some(own) = self.unsteady {
            return format!(
                "NOT STEADY: {} over the runs (more than {}x apart on one side), median of the \
                 paired ratios {:.2}x",
                spans(own),
                targets::MAX_SWING,
                p.median
            );
        }
        if let Some(control) = self.control_unsteady {
            return format!(
                "NOT STEADY: in the same runs the control row (the handler not called) moved: {} \
                 (more than {}x apart on one side), so the host changed level under them; here \
                 ptr_ring {:.1} vs {:.1} {unit}, median of the paired ratios {:.2}x",
                spans(control),
                targets::MAX_SWING,
                o / scale,
                b / scale,
                p.median
            );
        }
        let who = match p.word() {
            "faster" => "ptr_ring faster",
            "slower" => "ptr_ring slower",
            "undecided" => "too noisy to tell (interval contains 1.0)",
            _ => "equal within noise",
        };
        format!(
            "{who}: {:.1} vs {:.1} {unit} ({:.2}x, 95% CI {:.2}-{:.2})",
            o / scale,
            b / scale,
            p.median,
            p.lo,
            p.hi
        )
    }
}

/// Each side's (lowest, highest) rate over its runs, when one side's
/// highest is more than [`targets::MAX_SWING`] times its lowest.
fn unsteady_spans(ours: &[(u32, f64)], base: &[(u32, f64)]) -> Option<[(f64, f64); 2]> {
    let span = |v: &[(u32, f64)]| {
        v.iter().fold(None, |acc: Option<(f64, f64)>, &(_, r)| {
            Some(acc.map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))))
        })
    };
    let (o, b) = (span(ours)?, span(base)?);
    let swings = |(lo, hi): (f64, f64)| hi > targets::MAX_SWING * lo;
    (swings(o) || swings(b)).then_some([o, b])
}

pub fn mempool_cmp(key: &MempoolKey, m: &BTreeMap<String, MempoolRuns>) -> Option<Comparison> {
    let ours = m.get(OURS)?;
    let base = m.get(BASELINE)?;
    let mut c = Comparison::new(
        key.describe(),
        &ours.rounds,
        &base.rounds,
        targets::mempool(key),
        median(&ours.share),
        false,
    );
    c.key = Some(*key);
    Some(c)
}

/// Paired ratio of any handler to the baseline in one row.
pub fn paired_to_base(m: &BTreeMap<String, MempoolRuns>, h: &str) -> Option<Paired> {
    Paired::of(&round_ratios(&m.get(h)?.rounds, &m.get(BASELINE)?.rounds))
}

/// The comparison of one end-to-end row by its own runs alone; callers
/// take [`e2e_row`], which also applies the run's control row.
fn e2e_cmp(key: &E2eKey, m: &BTreeMap<String, E2eRuns>) -> Option<Comparison> {
    let ours = m.get(OURS)?;
    Some(Comparison::new(
        e2e_label(key),
        &ours.rounds,
        &m.get(BASELINE)?.rounds,
        targets::e2e(key),
        median(&ours.share),
        // Every run of an end-to-end row starts its processes afresh, but
        // the pair's rounds are blocks of one run, both handlers in each
        // second: a level of the host moves both sides of a round alike.
        key.app != crate::vhost::PAIR_APP,
    ))
}

/// [`e2e_cmp`] of one row of the run `d`, not counted when the control
/// row of the same application (DPDK's cache served everything, the handler
/// not called) was not steady in the run: that row's rates can only have
/// moved with the host, whose level then switched under every row of the
/// run, including those whose runs happened to land on one level per side.
pub fn e2e_row(d: &Data, key: &E2eKey) -> Option<Comparison> {
    let mut c = e2e_cmp(key, &d.e2e[key])?;
    if c.control {
        return Some(c);
    }
    // `c` is no control row, so the search cannot find it.
    let control_swing = d
        .e2e
        .iter()
        .filter(|(k, _)| k.app == key.app)
        .filter_map(|(k, m)| e2e_cmp(k, m))
        .find_map(|cc| cc.unsteady.filter(|_| cc.control));
    if let Some(spans) = control_swing {
        c.control_unsteady = Some(spans);
        c.verdict = c.verdict.map(|_| Verdict::NotSteady);
    }
    Some(c)
}

/// A short human description of an end-to-end row.
pub fn e2e_label(k: &E2eKey) -> String {
    match (k.app.as_str(), k.variant.as_str()) {
        ("testpmd", "mbcache=0") => "testpmd io, no cache on either side".into(),
        ("testpmd", "mbcache=default") => "testpmd io, DPDK cache 250 on both".into(),
        ("testpmd", "burst512") => {
            "testpmd io --burst=512 (above the cache: reaches the handler), cache 250 on both".into()
        }
        ("testpmd", "ownvsnone") => {
            "testpmd io, ptr_ring's OWN cache vs ring_mp_mc with NO cache (not like for like)"
                .into()
        }
        ("testpmd-xlcore", "mbcache=0") => {
            "testpmd, alloc on one lcore, free on another, no cache".into()
        }
        ("testpmd-xlcore", "mbcache=default") => {
            "testpmd, alloc on one lcore, free on another, DPDK cache 250 on both".into()
        }
        ("testpmd-xlcore", "control") => {
            "testpmd on the same two lcores, each freeing what it allocated, DPDK cache 250 on both"
                .into()
        }
        ("l2fwd", "default") => "l2fwd, DPDK cache 256 on both".into(),
        ("testpmd-vhost", "default") => {
            "testpmd txonly over virtio-user (1024 descriptors) to a vhost peer, cache 250 on both"
                .into()
        }
        ("testpmd-vhost", "burst512") => {
            "testpmd txonly --burst=512 over virtio-user (1024 descriptors) to a vhost peer, cache 250 on both"
                .into()
        }
        ("vhost-pair", "burst512") => {
            "vhost_pair: the handlers in one process, alternated every 100 ms, txonly bursts of 512 over virtio-user (1024 descriptors) to a vhost peer, cache 250 on both"
                .into()
        }
        ("vhost-pair", "burst512-mbufs65536") => {
            "vhost_pair as above with pools of 65536 mbufs (16384 above)".into()
        }
        (app, variant) => format!("{app} {variant}"),
    }
}

/// Every compared row with a target or a control flag, mempool rows first.
pub fn all_rows(d: &Data) -> Vec<(String, Comparison)> {
    let m = d
        .mempool
        .iter()
        .filter_map(|(k, m)| mempool_cmp(k, m).map(|c| (format!("{}: ", k.group.name()), c)));
    let e = e2e_keys(d)
        .into_iter()
        .filter_map(|k| e2e_row(d, k).map(|c| ("e2e: ".to_string(), c)));
    m.chain(e).collect()
}

/// End-to-end rows in report order.
pub fn e2e_keys(d: &Data) -> Vec<&E2eKey> {
    let order = [
        "mbcache=0",
        "mbcache=default",
        "burst512",
        "ownvsnone",
        "default",
        "control",
    ];
    let mut keys: Vec<&E2eKey> = d.e2e.keys().collect();
    keys.sort_by_key(|k| {
        (
            k.app.clone(),
            order
                .iter()
                .position(|v| *v == k.variant)
                .unwrap_or(order.len()),
        )
    });
    keys
}

/// The DPDK release (`22.11`, `24.11`, ...) of a version text such as
/// `24.11.8 (Debian trixie packages, ...)`: its first two numbers.
pub fn release_of(version: &str) -> Option<String> {
    let v = version.split_whitespace().next()?;
    let mut it = v.split('.');
    let (major, minor) = (it.next()?, it.next()?);
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (num(major) && num(minor)).then(|| format!("{major}.{minor}"))
}

/// The DPDK release the run measured (`dpdk_release=` of `meta.env`, else
/// read from `dpdk=`).
pub fn release(d: &Data) -> Option<String> {
    d.meta
        .get("dpdk_release")
        .and_then(|r| release_of(r))
        .or_else(|| d.meta.get("dpdk").and_then(|v| release_of(v)))
}
