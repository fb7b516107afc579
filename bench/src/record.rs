//! The benchmark's results, one CSV record per line: what `mempool_bench`,
//! `bench/run.sh` and `bench/vhost.sh` write and `bench_report` reads.
//!
//! Format 2: no header line; the first field names the kind of record, one
//! struct per kind below, its fields in the order of the struct (a key
//! struct stands for its own fields):
//!
//! ```text
//! # format=2
//! mempool2,<group>,<pattern>,<lcores>,<bulk>,<kept>,<cache>,<handler>,<dpdk_cache>,<handler_cache>,<round>,<position>,<objects/s>,<on_cpu>,<handler_share>
//! mempool2skip,<group>,<pattern>,<lcores>,<bulk>,<kept>,<cache>,<handler>,<reason>
//! e2e2,<app>,<variant>,<handler>,<dpdk_cache>,<handler_cache>,<round>,<Mpps>[,<handler_share>[,<line ns before>,<line ns after>]]
//! autotest2,<handler>,<cores>,<max_bulk>,<get_bulk>,<put_bulk>,<keep>,<constant_n>,<objects/s>
//! line2,<group>,<pattern>,<lcores>,<bulk>,<kept>,<cache>,<ns before>,<ns after>
//! ```
//!
//! * [`MempoolRound`] (`mempool2`): one handler's run in one round of a
//!   `mempool_bench` row, [`Skipped`] (`mempool2skip`): a handler asked for
//!   that did not run in that row, [`E2eRound`] (`e2e2`): one run of an
//!   end-to-end application, [`AutotestCase`] (`autotest2`): one case of
//!   DPDK's `mempool_perf_autotest`, as `bench/run.sh` reads it from the
//!   test's output, [`LineTrip`] (`line2`): the cache-line round trip
//!   between the two lcores around a two-lcore `mempool_bench` row.
//! * Lines starting with `#` are comments; fields are trimmed, and quoted
//!   where they hold a comma, a quote or a line break (a skip reason may).
//! * A line of another kind, or with fields missing, left over or not
//!   readable as their type, is an error naming the line ([`Error`]).
//!
//! [`read`] reads records, [`Writer`] writes them.

mod io;

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

pub use io::{read, read_file, Error, Writer};

/// The CSV format version written by this crate (the `# format=` line and
/// the digit in every record kind).
pub const FORMAT: u32 = 2;

/// How objects travel in a `mempool_bench` configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Every lane gets objects and puts back its own (the oldest `bulk` once
    /// it holds more than `kept`).
    Recycle,
    /// One lcore gets, hands the objects over through an SP/SC `rte_ring`,
    /// the other lcore puts them back.
    Handoff,
    /// Every lane gets `bulk` at a time until it holds `kept`, then puts
    /// them all back `bulk` at a time (oldest first), and again: a burst of
    /// traffic that takes `kept` buffers and then releases them. Unlike
    /// `Recycle`, gets and puts are not balanced over a short time, so a
    /// DPDK cache smaller than `kept` refills and flushes through the handler.
    Burst,
    /// As `Recycle`, but the oldest `bulk` goes back one object per
    /// `rte_mempool_put_bulk` call: a PMD that receives in bursts and frees
    /// mbuf by mbuf on transmit, as `net_null` (and testpmd io over it) does.
    FreeOne,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 4] = [
        Pattern::Recycle,
        Pattern::Handoff,
        Pattern::Burst,
        Pattern::FreeOne,
    ];

    /// The name used on the command line and in CSV.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Recycle => "recycle",
            Pattern::Handoff => "handoff",
            Pattern::Burst => "burst",
            Pattern::FreeOne => "freeone",
        }
    }

    /// Parses [`Pattern::name`].
    pub fn parse(s: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// Which comparison a row belongs to (decides each side's caches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// No cache anywhere: DPDK cache 0 on both, `ptr_ring`'s own cache off.
    NoCache,
    /// DPDK cache C on both, `ptr_ring`'s own cache off; the working set is
    /// larger than the cache, so refills and flushes reach the handler.
    DpdkCache,
    /// `ptr_ring` with its own cache C and DPDK cache 0, against the other
    /// handlers with DPDK cache C.
    OwnCache,
    /// Bulks of the size DPDK's cache sends on refill and flush, no cache.
    BigBulk,
    /// An unregistered non-EAL thread (`rte_lcore_id() == LCORE_ID_ANY`):
    /// DPDK cache C configured but bypassed, `ptr_ring`'s own cache off.
    NonEal,
    /// DPDK cache C on both and a working set that fits it: the handler is
    /// (almost) never called. The noise floor, never a target.
    Control,
}

impl Group {
    /// Every group, in report order.
    pub const ALL: [Group; 6] = [
        Group::NoCache,
        Group::DpdkCache,
        Group::OwnCache,
        Group::BigBulk,
        Group::NonEal,
        Group::Control,
    ];

    /// The name used on the command line and in CSV.
    pub fn name(self) -> &'static str {
        match self {
            Group::NoCache => "nocache",
            Group::DpdkCache => "dpdkcache",
            Group::OwnCache => "owncache",
            Group::BigBulk => "bigbulk",
            Group::NonEal => "noneal",
            Group::Control => "control",
        }
    }

    /// Parses [`Group::name`].
    pub fn parse(s: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.name() == s)
    }

    /// A section title for the report.
    pub fn title(self) -> &'static str {
        match self {
            Group::NoCache => "No cache anywhere (like for like)",
            Group::DpdkCache => {
                "DPDK cache on both, working set larger than the cache (like for like)"
            }
            Group::OwnCache => "ptr_ring's own cache against DPDK's cache of the same size",
            Group::BigBulk => "Refill/flush-sized bulks, no cache (like for like)",
            Group::NonEal => "Unregistered non-EAL thread (DPDK's cache bypassed; like for like)",
            Group::Control => "Controls: DPDK's cache serves every get and put",
        }
    }
}

/// One `mempool_bench` configuration (one row of the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MempoolKey {
    /// The comparison.
    pub group: Group,
    /// How objects travel.
    pub pattern: Pattern,
    /// Threads running the loop (1 or 2).
    pub lcores: u32,
    /// Objects per `rte_mempool_get_bulk`/`put_bulk` call.
    pub bulk: u32,
    /// Objects each getting lane keeps out (a FIFO) before it puts back the
    /// oldest `bulk`; 0: put back at once.
    pub kept: u32,
    /// The row's cache size C (DPDK's, or `ptr_ring`'s own in
    /// [`Group::OwnCache`]); 0 where no cache is on.
    pub cache: u32,
}

impl MempoolKey {
    /// A short human description.
    pub fn describe(&self) -> String {
        let who = match (self.group, self.lcores, self.pattern) {
            (Group::NonEal, _, _) => "1 non-EAL thread".to_string(),
            (_, 1, _) => "1 lcore".to_string(),
            (_, n, Pattern::Recycle) => format!("{n} lcores each recycling"),
            (_, n, Pattern::Burst) => format!("{n} lcores each in bursts"),
            (_, n, Pattern::Handoff) => format!("{n} lcores, alloc on one, free on the other"),
            (_, n, Pattern::FreeOne) => format!("{n} lcores each freeing one by one"),
        };
        match self.pattern {
            Pattern::FreeOne => format!(
                "{who}, bulk {} got, put back one by one, {} kept",
                self.bulk, self.kept
            ),
            Pattern::Burst => format!(
                "{who}, bulk {}, fill to {} then drain",
                self.bulk, self.kept
            ),
            _ => format!("{who}, bulk {}, {} kept", self.bulk, self.kept),
        }
    }

    /// The row's fields, in CSV order (the names of `--only`).
    const FIELDS: [&'static str; 6] = ["group", "pattern", "lcores", "bulk", "kept", "cache"];

    /// The values of [`MempoolKey::FIELDS`].
    fn values(&self) -> [String; 6] {
        [
            self.group.name().to_string(),
            self.pattern.name().to_string(),
            self.lcores.to_string(),
            self.bulk.to_string(),
            self.kept.to_string(),
            self.cache.to_string(),
        ]
    }

    /// The `--only` filter of `mempool_bench` that selects this row.
    pub fn filter(&self) -> String {
        let kv: Vec<String> = Self::FIELDS
            .iter()
            .zip(self.values())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        kv.join(",")
    }

    /// Whether `field=value` matches this row (`--only` filters).
    pub fn matches(&self, field: &str, value: &str) -> bool {
        match field {
            "group" => self.group.name() == value,
            "pattern" => self.pattern.name() == value,
            "lcores" => self.lcores.to_string() == value,
            "bulk" => self.bulk.to_string() == value,
            "kept" => self.kept.to_string() == value,
            "cache" => self.cache.to_string() == value,
            _ => false,
        }
    }
}

impl fmt::Display for MempoolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} l={} b={} k={} c={}",
            self.group.name(),
            self.pattern.name(),
            self.lcores,
            self.bulk,
            self.kept,
            self.cache
        )
    }
}

/// The caches one handler ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Side {
    /// DPDK's per-lcore mempool cache (`cache_size` of the pool).
    pub dpdk_cache: u32,
    /// The handler's own per-lcore cache; 0 for handlers without one, -1
    /// unknown.
    pub handler_cache: i32,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = match self.handler_cache {
            -1 => "?".to_string(),
            n => n.to_string(),
        };
        write!(f, "DPDK {} / own {h}", self.dpdk_cache)
    }
}

/// One end-to-end configuration: an application and its variant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct E2eKey {
    /// `testpmd`, `testpmd-xlcore` or `l2fwd`.
    pub app: String,
    /// `mbcache=0`, `mbcache=default`, `ownvsnone`, ...
    pub variant: String,
}

/// `mempool2`: one handler's run in one round of a `mempool_bench` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MempoolRound {
    /// The row.
    pub key: MempoolKey,
    /// The handler (mempool ops name).
    pub handler: String,
    /// The caches it ran with: DPDK's per-lcore mempool cache and the
    /// handler's own (`ptr_ring` only; 0 for handlers without one, -1
    /// unknown).
    pub side: Side,
    /// Round number, from 1.
    pub round: u32,
    /// The handler's place in the round's order, from 1 (0: unknown).
    pub position: u32,
    /// Objects per second (one get plus one put per object).
    #[serde(serialize_with = "fixed::<0, _>")]
    pub rate: f64,
    /// The smallest share (0..1) of the run's wall time a lane's thread
    /// spent on its CPU.
    #[serde(serialize_with = "fixed::<3, _>")]
    pub on_cpu: f64,
    /// Objects the handler handed out per object the application got, from
    /// `ptr_ring`'s own counters (-1: unknown, the other handlers). Near 0:
    /// DPDK's cache served (almost) everything.
    #[serde(serialize_with = "fixed::<4, _>")]
    pub handler_share: f64,
}

/// `mempool2skip`: a handler asked for that did not run in a
/// `mempool_bench` row (not registered in the process, or it refused the
/// pool or failed a run), and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The row.
    pub key: MempoolKey,
    /// The handler (mempool ops name).
    pub handler: String,
    /// Why, free text.
    pub reason: String,
}

/// `e2e2`: one run of an end-to-end application (`bench/run.sh`,
/// `bench/vhost.sh`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct E2eRound {
    /// The configuration.
    pub key: E2eKey,
    /// The handler (mempool ops name).
    pub handler: String,
    /// DPDK's cache, as the run set it (free text: `250`, `0`, `default`).
    pub dpdk_cache: String,
    /// The handler's own cache, as the run set it (free text).
    pub handler_cache: String,
    /// Round number, from 1.
    pub round: u32,
    /// Forwarding rate in Mpps.
    pub rate: f64,
    /// Objects `ptr_ring` handed out per packet sent (-1: unknown, the
    /// other handlers). Optional on the line: `testpmd-vhost` and the
    /// `testpmd` rows write it (per packet the `net_null` ports received).
    #[serde(default = "unknown_share")]
    pub handler_share: f64,
    /// The round trip of a cache line between the CPUs of the run's two
    /// forwarding lcores just before and just after it, in ns (`line_trip`;
    /// -1: not measured). Optional on the line, both or neither: the
    /// `testpmd-xlcore` rows write them.
    #[serde(default = "unknown_share", serialize_with = "fixed::<0, _>")]
    pub line_before_ns: f64,
    #[serde(default = "unknown_share", serialize_with = "fixed::<0, _>")]
    pub line_after_ns: f64,
}

/// `autotest2`: one case of DPDK's `mempool_perf_autotest` without cache,
/// as `bench/run.sh` reads it from the test's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutotestCase {
    /// `ring_mp_mc` or `ptr_ring`.
    pub handler: String,
    /// Lcores running the case.
    pub cores: u32,
    /// Above 0 (DPDK 25.07 on): random bulks from 1 to this, `get_bulk`
    /// and `put_bulk` 0; 0: fixed bulks.
    pub max_bulk: u32,
    /// Objects per get.
    pub get_bulk: u32,
    /// Objects per put.
    pub put_bulk: u32,
    /// Objects kept out per lcore.
    pub keep: u32,
    /// Whether the bulk sizes are compile-time constants (0 or 1).
    pub constant_n: u32,
    /// Objects per second.
    #[serde(serialize_with = "fixed::<0, _>")]
    pub rate: f64,
}

/// `line2`: the round trip of one cache line between the two lcores of a
/// two-lcore `mempool_bench` row, measured just before and just after the
/// row's rounds: what a line that one lcore wrote and the other reads costs
/// on this machine at that time, which the two-lcore rows count per object.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LineTrip {
    /// The row.
    pub key: MempoolKey,
    /// Nanoseconds per round trip before the row's rounds.
    #[serde(serialize_with = "fixed::<0, _>")]
    pub before_ns: f64,
    /// Nanoseconds per round trip after them.
    #[serde(serialize_with = "fixed::<0, _>")]
    pub after_ns: f64,
}

fn unknown_share() -> f64 {
    -1.0
}

/// Writes a float with `N` decimals (the files stay as short as the
/// figures' precision; reading takes any float).
fn fixed<const N: usize, S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("{v:.N$}"))
}

/// One record, of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// `mempool2`.
    Mempool(MempoolRound),
    /// `mempool2skip`.
    Skipped(Skipped),
    /// `e2e2`.
    E2e(E2eRound),
    /// `autotest2`.
    Autotest(AutotestCase),
    /// `line2`.
    Line(LineTrip),
}

impl Record {
    /// The first field of each kind's lines, and how many fields may follow
    /// it (the last: all of its struct's fields).
    pub const KINDS: [(&'static str, &'static [usize]); 5] = [
        ("mempool2", &[14]),
        ("mempool2skip", &[8]),
        ("e2e2", &[7, 8, 10]),
        ("autotest2", &[8]),
        ("line2", &[8]),
    ];

    /// The first field of this record's line.
    pub fn kind(&self) -> &'static str {
        let i = match self {
            Record::Mempool(_) => 0,
            Record::Skipped(_) => 1,
            Record::E2e(_) => 2,
            Record::Autotest(_) => 3,
            Record::Line(_) => 4,
        };
        Record::KINDS[i].0
    }

    /// Parses one line holding one record.
    pub fn parse(line: &str) -> Result<Record, Error> {
        let mut v = read(line.as_bytes(), "input")?;
        match (v.pop(), v.is_empty()) {
            (Some(r), true) => Ok(r),
            (r, _) => Err(Error::NotOneRecord {
                records: v.len() + usize::from(r.is_some()),
            }),
        }
    }
}

/// A record is its kind, then the fields of its struct.
impl Serialize for Record {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Record::Mempool(r) => (self.kind(), r).serialize(s),
            Record::Skipped(r) => (self.kind(), r).serialize(s),
            Record::E2e(r) => (self.kind(), r).serialize(s),
            Record::Autotest(r) => (self.kind(), r).serialize(s),
            Record::Line(r) => (self.kind(), r).serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MempoolKey {
        MempoolKey {
            group: Group::OwnCache,
            pattern: Pattern::Handoff,
            lcores: 2,
            bulk: 32,
            kept: 1024,
            cache: 256,
        }
    }

    /// One record of each kind, and its line as the files hold it.
    fn examples() -> Vec<(Record, &'static str)> {
        let e2e = |handler_share| E2eRound {
            key: E2eKey {
                app: "testpmd-xlcore".into(),
                variant: "mbcache=0".into(),
            },
            handler: "ptr_ring".into(),
            dpdk_cache: "0".into(),
            handler_cache: "default (128)".into(),
            round: 2,
            rate: 1.27,
            handler_share,
            line_before_ns: 64.0,
            line_after_ns: 326.0,
        };
        vec![
            (
                Record::Mempool(MempoolRound {
                    key: key(),
                    handler: "ptr_ring".into(),
                    side: Side {
                        dpdk_cache: 0,
                        handler_cache: 256,
                    },
                    round: 3,
                    position: 2,
                    rate: 1.5e8,
                    on_cpu: 0.5,
                    handler_share: -1.0,
                }),
                "mempool2,owncache,handoff,2,32,1024,256,ptr_ring,0,256,3,2,150000000,0.500,-1.0000",
            ),
            (
                Record::Skipped(Skipped {
                    key: key(),
                    handler: "bucket".into(),
                    reason: "refused the pool, rte_errno 22".into(),
                }),
                "mempool2skip,owncache,handoff,2,32,1024,256,bucket,\"refused the pool, rte_errno 22\"",
            ),
            (
                Record::E2e(e2e(0.45)),
                "e2e2,testpmd-xlcore,mbcache=0,ptr_ring,0,default (128),2,1.27,0.45,64,326",
            ),
            (
                Record::Autotest(AutotestCase {
                    handler: "ring_mp_mc".into(),
                    cores: 1,
                    max_bulk: 0,
                    get_bulk: 1,
                    put_bulk: 1,
                    keep: 32,
                    constant_n: 1,
                    rate: 76783784.0,
                }),
                "autotest2,ring_mp_mc,1,0,1,1,32,1,76783784",
            ),
            (
                Record::Line(LineTrip {
                    key: key(),
                    before_ns: 182.0,
                    after_ns: 391.0,
                }),
                "line2,owncache,handoff,2,32,1024,256,182,391",
            ),
        ]
    }

    #[test]
    fn round_trip_every_kind() {
        let (records, lines): (Vec<Record>, Vec<&str>) = examples().into_iter().unzip();
        let mut w = Writer::new(Vec::new(), &["mempool_bench rounds=3"]).unwrap();
        for r in &records {
            w.write(r).unwrap();
        }
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let expected = format!(
            "# format=2\n# mempool_bench rounds=3\n{}\n",
            lines.join("\n")
        );
        assert_eq!(text, expected);
        assert_eq!(read(text.as_bytes(), "test").unwrap(), records);
        // Each kind's line has the number of fields Record::KINDS gives.
        for (r, line) in records.iter().zip(&lines) {
            let (kind, counts) = Record::KINDS.iter().find(|k| k.0 == r.kind()).unwrap();
            let max = counts.last().unwrap();
            assert!(line.starts_with(&format!("{kind},")));
            let fields = csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(line.as_bytes())
                .records()
                .next()
                .unwrap()
                .unwrap()
                .len();
            assert_eq!(fields, max + 1, "{line}");
        }
    }

    #[test]
    fn lines_as_the_scripts_write_them() {
        // e2e2 without its optional share: unknown.
        let r = Record::parse("e2e2,testpmd,mbcache=0,ring_mp_mc,0,0,1,40.5").unwrap();
        assert!(
            matches!(r, Record::E2e(E2eRound { round: 1, handler_share, line_before_ns, .. })
                if handler_share == -1.0 && line_before_ns == -1.0)
        );
        // With the share and without the line round trips (testpmd's rows
        // on one lcore, the vhost rows).
        let r = Record::parse("e2e2,testpmd,mbcache=0,ptr_ring,0,0,1,40.5,1.0000").unwrap();
        assert!(
            matches!(r, Record::E2e(E2eRound { handler_share, line_after_ns, .. })
                if handler_share == 1.0 && line_after_ns == -1.0)
        );
        // Spaces around fields, comments and blank lines.
        let text = "# format=2\n\n autotest2, ptr_ring ,2,0,32,32,128,0,1e8 \n";
        let v = read(text.as_bytes(), "test").unwrap();
        assert!(
            matches!(&v[..], [Record::Autotest(a)] if a.handler == "ptr_ring" && a.rate == 1e8)
        );
    }

    #[test]
    fn a_malformed_line_is_an_error_naming_it() {
        let good = examples()[0].1;
        let err = |text: &str| {
            read(text.as_bytes(), "mempool.csv")
                .unwrap_err()
                .to_string()
        };
        let bad_rate = good.replace(",150000000,", ",fast,");
        let e = err(&format!("# format=2\n{good}\n{bad_rate}\n"));
        assert!(
            e.starts_with("mempool.csv, line 3: field 13 (\"fast\"): "),
            "{e}"
        );
        assert!(e.ends_with(&bad_rate), "{e}");
        let e = err(&format!("{good}\nmempool2,control,recycle,1\n"));
        assert!(
            e.starts_with("mempool.csv, line 2: 3 fields after mempool2, not 14"),
            "{e}"
        );
        // A line round trip without the other.
        let e = err("e2e2,testpmd-vhost,burst512,ptr_ring,250,0,2,1.27,0.45,9");
        assert!(
            e.contains("line 1: 9 fields after e2e2, not 7, 8 or 10"),
            "{e}"
        );
        let e = err(&good.replace("owncache", "bigcache"));
        assert!(
            e.contains("line 1: unknown variant `bigcache`, expected one of `nocache`, "),
            "{e}"
        );
        let e = err("mempool,bogus");
        assert!(
            e.contains("line 1: unknown record kind \"mempool\" (format 2 has mempool2, "),
            "{e}"
        );
        assert!(matches!(
            Record::parse(&format!("{good}\n{good}")),
            Err(Error::NotOneRecord { records: 2 })
        ));
    }

    /// What CSV holds for `v`.
    fn csv_text<T: Serialize>(v: T) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize((v,)).unwrap();
        String::from_utf8(w.into_inner().unwrap())
            .unwrap()
            .trim()
            .to_string()
    }

    #[test]
    fn names_in_csv_are_the_command_line_names() {
        for g in Group::ALL {
            assert_eq!(csv_text(g), g.name());
            assert_eq!(Group::parse(g.name()), Some(g));
        }
        for p in Pattern::ALL {
            assert_eq!(csv_text(p), p.name());
            assert_eq!(Pattern::parse(p.name()), Some(p));
        }
    }
}
