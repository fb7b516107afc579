//! The measurement lines, one per handler per round, as CSV:
//!
//! ```text
//! mempool,<pattern>,<lcores>,<cache>,<bulk>,<handler>,<round>,<objects per second>[,<on-CPU share>]
//! e2e,<app>,<variant>,<handler>,<round>,<Mpps>
//! ```
//!
//! `mempool_bench` prints the first kind, `bench/run.sh` the second; lines
//! starting with `#` are comments. The on-CPU share (0..1) is the smallest
//! fraction of the run's wall time that a lane's thread spent on its CPU.

use std::fmt;

/// How objects travel in a `mempool_bench` configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pattern {
    /// Every lcore gets `bulk` objects and puts the same objects back.
    Recycle,
    /// One lcore gets, hands the objects over through an SP/SC `rte_ring`,
    /// the other lcore puts them back.
    Handoff,
}

impl Pattern {
    /// The name used on the command line and in CSV.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Recycle => "recycle",
            Pattern::Handoff => "handoff",
        }
    }

    /// Parses [`Pattern::name`].
    pub fn parse(s: &str) -> Option<Pattern> {
        match s {
            "recycle" => Some(Pattern::Recycle),
            "handoff" => Some(Pattern::Handoff),
            _ => None,
        }
    }
}

/// One `mempool_bench` configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MempoolKey {
    /// Number of lcores running the loop (1 or 2).
    pub lcores: u32,
    /// How objects travel.
    pub pattern: Pattern,
    /// DPDK mempool cache size (`cache_size` of the pool).
    pub cache: u32,
    /// Objects per `rte_mempool_get_bulk`/`put_bulk` call.
    pub bulk: u32,
}

impl MempoolKey {
    /// A short human description ("2 lcores, alloc on one, free on the other, cache 0, bulk 32").
    pub fn describe(&self) -> String {
        let who = match (self.lcores, self.pattern) {
            (1, _) => "1 lcore".to_string(),
            (n, Pattern::Recycle) => format!("{n} lcores each recycling its own"),
            (n, Pattern::Handoff) => format!("{n} lcores, alloc on one, free on the other"),
        };
        format!("{who}, cache {}, bulk {}", self.cache, self.bulk)
    }

    /// The `--only` filter of `mempool_bench` that selects this configuration.
    pub fn filter(&self) -> String {
        format!(
            "pattern={},lcores={},cache={},bulk={}",
            self.pattern.name(),
            self.lcores,
            self.cache,
            self.bulk
        )
    }
}

impl fmt::Display for MempoolKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} l={} c={} b={}",
            self.pattern.name(),
            self.lcores,
            self.cache,
            self.bulk
        )
    }
}

/// One end-to-end configuration: an application and its variant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct E2eKey {
    /// `testpmd` or `l2fwd`.
    pub app: String,
    /// `mbcache=0`, `mbcache=default`, `default`, ...
    pub variant: String,
}

impl E2eKey {
    /// A short human description.
    pub fn describe(&self) -> String {
        match (self.app.as_str(), self.variant.as_str()) {
            ("testpmd", "mbcache=0") => "testpmd io fwd, --mbcache=0".into(),
            ("testpmd", "mbcache=default") => "testpmd io fwd, default cache (250)".into(),
            ("l2fwd", "default") => "l2fwd -p 0x3, cache 256".into(),
            (app, variant) => format!("{app} {variant}"),
        }
    }
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A `mempool_bench` round.
    Mempool {
        /// The configuration.
        key: MempoolKey,
        /// The handler (mempool ops name).
        handler: String,
        /// Round number, from 1.
        round: u32,
        /// Objects per second (one get plus one put per object).
        rate: f64,
        /// Smallest on-CPU share of the lanes (1.0 when not recorded).
        on_cpu: f64,
    },
    /// An end-to-end round.
    E2e {
        /// The configuration.
        key: E2eKey,
        /// The handler (mempool ops name).
        handler: String,
        /// Round number, from 1.
        round: u32,
        /// Forwarding rate in Mpps.
        rate: f64,
    },
}

impl Record {
    /// Parses one CSV line; `None` for comments, blank and malformed lines.
    pub fn parse(line: &str) -> Option<Record> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        match f.as_slice() {
            ["mempool", pattern, lcores, cache, bulk, handler, round, rate, rest @ ..]
                if rest.len() <= 1 =>
            {
                Some(Record::Mempool {
                    key: MempoolKey {
                        pattern: Pattern::parse(pattern)?,
                        lcores: lcores.parse().ok()?,
                        cache: cache.parse().ok()?,
                        bulk: bulk.parse().ok()?,
                    },
                    handler: handler.to_string(),
                    round: round.parse().ok()?,
                    rate: rate.parse().ok()?,
                    on_cpu: match rest {
                        [share] => share.parse().ok()?,
                        _ => 1.0,
                    },
                })
            }
            ["e2e", app, variant, handler, round, rate] => Some(Record::E2e {
                key: E2eKey {
                    app: app.to_string(),
                    variant: variant.to_string(),
                },
                handler: handler.to_string(),
                round: round.parse().ok()?,
                rate: rate.parse().ok()?,
            }),
            _ => None,
        }
    }

    /// The CSV line of a `mempool_bench` round.
    pub fn mempool_line(
        key: &MempoolKey,
        handler: &str,
        round: u32,
        rate: f64,
        on_cpu: f64,
    ) -> String {
        format!(
            "mempool,{},{},{},{},{handler},{round},{rate:.0},{on_cpu:.3}",
            key.pattern.name(),
            key.lcores,
            key.cache,
            key.bulk
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let key = MempoolKey {
            pattern: Pattern::Handoff,
            lcores: 2,
            cache: 256,
            bulk: 32,
        };
        let line = Record::mempool_line(&key, "ptr_ring", 3, 1.5e8, 0.5);
        assert_eq!(
            Record::parse(&line),
            Some(Record::Mempool {
                key,
                handler: "ptr_ring".into(),
                round: 3,
                rate: 1.5e8,
                on_cpu: 0.5
            })
        );
        assert!(matches!(
            Record::parse("e2e,testpmd,mbcache=0,ring_mp_mc,1,40.5"),
            Some(Record::E2e { round: 1, .. })
        ));
        assert_eq!(Record::parse("# comment"), None);
        assert_eq!(Record::parse("mempool,bogus"), None);
    }
}
