//! The measurement lines, one per handler per round, as CSV.
//!
//! Format 2 (what `mempool_bench` and `bench/run.sh` write now):
//!
//! ```text
//! # format=2
//! mempool2,<group>,<pattern>,<lcores>,<bulk>,<kept>,<cache>,<handler>,<dpdk_cache>,<handler_cache>,<round>,<position>,<objects/s>,<on_cpu>,<handler_share>
//! e2e2,<app>,<variant>,<handler>,<dpdk_cache>,<handler_cache>,<round>,<Mpps>[,<handler_share>]
//! mempool2skip,<group>,<pattern>,<lcores>,<bulk>,<kept>,<cache>,<handler>,<reason>
//! ```
//!
//! * `group`, `pattern`, `lcores`, `bulk`, `kept`, `cache` name the row (see
//!   [`MempoolKey`]); `cache` is the row's cache size C (0 where none).
//! * `dpdk_cache` / `handler_cache`: the caches this handler really ran with:
//!   DPDK's per-lcore mempool cache (`cache_size` of the pool) and the
//!   handler's own per-lcore cache (`ptr_ring` only; 0 for handlers without
//!   one; `-1` unknown). In `e2e2` lines they are free text (`250`, `0`,
//!   `default`).
//! * `position`: the handler's place in that round's order (1 = first).
//! * `on_cpu`: the smallest share (0..1) of the run's wall time a lane's
//!   thread spent on its CPU.
//! * `handler_share`: objects the handler handed out / objects the
//!   application got (from `ptr_ring`'s own counters; `-1` where unknown).
//!   Near 0 means DPDK's cache served (almost) everything. In `e2e2` lines
//!   (optional; `testpmd-vhost` writes it): objects `ptr_ring` handed out
//!   per packet sent.
//! * `mempool2skip`: a handler asked for that did not run in that row
//!   (not registered in the process, or it refused the pool or failed a
//!   run), and why (free text, commas written as `;`).
//!
//! Lines starting with `#` are comments; lines of any other format are
//! not read.

use std::fmt;

/// The CSV format version written by this crate.
pub const FORMAT: u32 = 2;

/// How objects travel in a `mempool_bench` configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
}

impl Pattern {
    /// The name used on the command line and in CSV.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Recycle => "recycle",
            Pattern::Handoff => "handoff",
            Pattern::Burst => "burst",
        }
    }

    /// Parses [`Pattern::name`].
    pub fn parse(s: &str) -> Option<Pattern> {
        match s {
            "recycle" => Some(Pattern::Recycle),
            "handoff" => Some(Pattern::Handoff),
            "burst" => Some(Pattern::Burst),
            _ => None,
        }
    }
}

/// Which comparison a row belongs to (decides each side's caches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
        };
        match self.pattern {
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

    /// The row's CSV fields: `<group>,<pattern>,<lcores>,<bulk>,<kept>,<cache>`.
    fn csv_fields(&self) -> String {
        self.values().join(",")
    }

    /// Parses the six fields of [`MempoolKey::csv_fields`].
    fn from_fields(f: &[&str]) -> Option<MempoolKey> {
        let [group, pattern, lcores, bulk, kept, cache] = f else {
            return None;
        };
        Some(MempoolKey {
            group: Group::parse(group)?,
            pattern: Pattern::parse(pattern)?,
            lcores: lcores.parse().ok()?,
            bulk: bulk.parse().ok()?,
            kept: kept.parse().ok()?,
            cache: cache.parse().ok()?,
        })
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct E2eKey {
    /// `testpmd`, `testpmd-xlcore` or `l2fwd`.
    pub app: String,
    /// `mbcache=0`, `mbcache=default`, `ownvsnone`, ...
    pub variant: String,
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A `mempool_bench` round.
    Mempool {
        /// The row.
        key: MempoolKey,
        /// The handler (mempool ops name).
        handler: String,
        /// The caches it ran with.
        side: Side,
        /// Round number, from 1.
        round: u32,
        /// Place in the round's order, from 1 (0: unknown).
        position: u32,
        /// Objects per second (one get plus one put per object).
        rate: f64,
        /// Smallest on-CPU share of the lanes (1.0 when not recorded).
        on_cpu: f64,
        /// Objects the handler handed out per object got (-1: unknown).
        handler_share: f64,
    },
    /// A handler left out of a `mempool_bench` row.
    Skipped {
        /// The row.
        key: MempoolKey,
        /// The handler (mempool ops name).
        handler: String,
        /// Why.
        reason: String,
    },
    /// An end-to-end round.
    E2e {
        /// The configuration.
        key: E2eKey,
        /// The handler (mempool ops name).
        handler: String,
        /// DPDK cache, as the run set it (free text).
        dpdk_cache: String,
        /// The handler's own cache, as the run set it (free text).
        handler_cache: String,
        /// Round number, from 1.
        round: u32,
        /// Forwarding rate in Mpps.
        rate: f64,
        /// Objects the handler handed out per packet (-1: unknown).
        handler_share: f64,
    },
}

impl Record {
    /// Parses one CSV line (format 2 or 1); `None` for comments, blank and
    /// malformed lines.
    pub fn parse(line: &str) -> Option<Record> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        match f.as_slice() {
            ["mempool2", k @ .., handler, dc, hc, round, pos, rate, on_cpu, share]
                if k.len() == 6 =>
            {
                Some(Record::Mempool {
                    key: MempoolKey::from_fields(k)?,
                    handler: handler.to_string(),
                    side: Side {
                        dpdk_cache: dc.parse().ok()?,
                        handler_cache: hc.parse().ok()?,
                    },
                    round: round.parse().ok()?,
                    position: pos.parse().ok()?,
                    rate: rate.parse().ok()?,
                    on_cpu: on_cpu.parse().ok()?,
                    handler_share: share.parse().ok()?,
                })
            }
            ["mempool2skip", rest @ ..] if rest.len() >= 8 => {
                let (k, rest) = rest.split_at(6);
                Some(Record::Skipped {
                    key: MempoolKey::from_fields(k)?,
                    handler: rest[0].to_string(),
                    reason: rest[1..].join(","),
                })
            }
            ["e2e2", app, variant, handler, dc, hc, round, rate, share @ ..]
                if share.len() <= 1 =>
            {
                Some(Record::E2e {
                    key: E2eKey {
                        app: app.to_string(),
                        variant: variant.to_string(),
                    },
                    handler: handler.to_string(),
                    dpdk_cache: dc.to_string(),
                    handler_cache: hc.to_string(),
                    round: round.parse().ok()?,
                    rate: rate.parse().ok()?,
                    handler_share: match share {
                        [s] => s.parse().ok()?,
                        _ => -1.0,
                    },
                })
            }
            _ => None,
        }
    }

    /// The CSV line of a `mempool_bench` round (format 2).
    #[allow(clippy::too_many_arguments)]
    pub fn mempool_line(
        key: &MempoolKey,
        handler: &str,
        side: Side,
        round: u32,
        position: u32,
        rate: f64,
        on_cpu: f64,
        handler_share: f64,
    ) -> String {
        format!(
            "mempool2,{},{handler},{},{},{round},{position},{rate:.0},{on_cpu:.3},{handler_share:.4}",
            key.csv_fields(),
            side.dpdk_cache,
            side.handler_cache
        )
    }
}

/// The CSV line of a handler left out of a row (commas in `reason`
/// become `;`).
pub fn skip_line(key: &MempoolKey, handler: &str, reason: &str) -> String {
    format!(
        "mempool2skip,{},{handler},{}",
        key.csv_fields(),
        reason.replace([',', '\n'], ";")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let key = MempoolKey {
            group: Group::OwnCache,
            pattern: Pattern::Handoff,
            lcores: 2,
            bulk: 32,
            kept: 1024,
            cache: 256,
        };
        let side = Side {
            dpdk_cache: 0,
            handler_cache: 256,
        };
        let line = Record::mempool_line(&key, "ptr_ring", side, 3, 2, 1.5e8, 0.5, 0.25);
        assert_eq!(
            Record::parse(&line),
            Some(Record::Mempool {
                key,
                handler: "ptr_ring".into(),
                side,
                round: 3,
                position: 2,
                rate: 1.5e8,
                on_cpu: 0.5,
                handler_share: 0.25,
            })
        );
        assert!(matches!(
            Record::parse("e2e2,testpmd,mbcache=0,ring_mp_mc,0,0,1,40.5"),
            Some(Record::E2e { round: 1, handler_share, .. }) if handler_share == -1.0
        ));
        assert!(matches!(
            Record::parse("e2e2,testpmd-vhost,burst512,ptr_ring,250,0,2,1.27,0.4500"),
            Some(Record::E2e { round: 2, handler_share, .. }) if handler_share == 0.45
        ));
        assert_eq!(
            Record::parse("e2e2,testpmd-vhost,burst512,ptr_ring,250,0,2,1.27,0.45,9"),
            None
        );
        let skip = skip_line(&key, "bucket", "refused the pool, rte_errno 22");
        assert_eq!(
            Record::parse(&skip),
            Some(Record::Skipped {
                key,
                handler: "bucket".into(),
                reason: "refused the pool; rte_errno 22".into(),
            })
        );
        assert_eq!(Record::parse("# comment"), None);
        assert_eq!(Record::parse("mempool,bogus"), None);
    }
}
