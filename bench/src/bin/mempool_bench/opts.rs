//! `mempool_bench`'s command line: `--help`'s text and the options.

use bench::matrix::{self, BASELINE, OURS};

use crate::placement::Placement;

/// `--help`.
pub const HELP: &str = "\
mempool_bench: rte_mempool_get_bulk/put_bulk rates of mempool handlers, same process

usage: mempool_bench [OPTIONS] -- EAL_ARGS...

options:
  --rounds N        rounds per row (default 11); the handlers' order rotates every round
  --secs S          seconds per handler per round (default 0.3)
  --warmup S        untimed seconds per handler before round 1 (default 0.05)
  --pool-size N     mbufs per pool (default: enough for every selected row, at least 16383)
  --handlers A,B    handlers to compare (default ptr_ring,ring_mp_mc,floor_lifo and the
                    peers ring_sp_sc,ring_mt_rts,ring_mt_hts,stack,lf_stack,bucket);
                    the peers only on the core rows (groups nocache, dpdkcache), ring_sp_sc
                    there only on one lcore; floor_lifo, an unsynchronised single-thread
                    reference registered by this binary, only on one lcore without DPDK's
                    cache (the nocache, bigbulk and owncache rows: on the last, the
                    fastest cache a handler could keep), and only where DPDK's ops table
                    (16 handlers) has a slot left
  --peers-per-round K  peers measured per round (default 3), taken in turn; ptr_ring,
                    ring_mp_mc and floor_lifo run in every round
  --only FILTER     rows matching every field=value, e.g. group=nocache,lcores=2
                    (fields: group pattern lcores bulk kept cache set;
                    groups: nocache dpdkcache owncache bigbulk noneal control;
                    set=core: the rows the peers run on; set=swing: two lcores each
                    recycling through the handler)
  --spacer auto|B   where each run's memory lies: auto (default) moves the pool and the
                    lanes' tables to another 64-byte step of a 4 KiB page every round
                    (the same for every handler of a round); B pins a spacer of B bytes
                    before every pool, to see how much a row depends on placement
  --list            print the selected rows and exit
  --csv PATH        append the CSV lines there instead of stdout (mempool2 per run,
                    mempool2skip per handler left out, line2 per two-lcore row: the
                    cache-line round trip between the lcores before and after its rounds)
  -h, --help        this text

EAL_ARGS need two lcores for the two-lcore rows (e.g. -l 0-1 --main-lcore 1: one-lcore
rows run on the main lcore) and -d <abs path>/librte_mempool_ptr_ring.so for ptr_ring.
";

/// Command-line settings.
pub struct Opts {
    pub rounds: u32,
    pub secs: f64,
    pub warmup: f64,
    pub pool_size: Option<u32>,
    pub handlers: Vec<String>,
    pub peers_per_round: usize,
    pub only: Vec<(String, String)>,
    pub placement: Placement,
    pub list: bool,
    pub csv: Option<String>,
    pub eal: Vec<String>,
}

/// The command line: the options, then DPDK's EAL arguments.
pub fn parse_opts() -> Result<Opts, lexopt::Error> {
    use lexopt::prelude::*;
    let mut o = Opts {
        rounds: 11,
        secs: 0.3,
        warmup: 0.05,
        pool_size: None,
        handlers: [OURS, BASELINE, bench::floor::NAME]
            .into_iter()
            .chain(matrix::PEERS)
            .map(String::from)
            .collect(),
        peers_per_round: 3,
        only: Vec::new(),
        placement: Placement::PerRound,
        list: false,
        csv: None,
        eal: Vec::new(),
    };
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("rounds") => o.rounds = p.value()?.parse()?,
            Long("secs") => o.secs = p.value()?.parse()?,
            Long("warmup") => o.warmup = p.value()?.parse()?,
            Long("pool-size") => o.pool_size = Some(p.value()?.parse()?),
            Long("handlers") => {
                o.handlers = p.value()?.string()?.split(',').map(String::from).collect()
            }
            Long("peers-per-round") => o.peers_per_round = p.value()?.parse()?,
            Long("only") => {
                for kv in p.value()?.string()?.split(',').filter(|s| !s.is_empty()) {
                    let (k, v) = kv
                        .split_once('=')
                        .ok_or_else(|| format!("--only: {kv:?} is not field=value"))?;
                    if !["group", "pattern", "lcores", "bulk", "kept", "cache", "set"].contains(&k)
                        || (k == "set" && !["core", "swing"].contains(&v))
                    {
                        return Err(format!("--only: unknown field {k:?}").into());
                    }
                    o.only.push((k.to_string(), v.to_string()));
                }
            }
            Long("spacer") => o.placement = Placement::parse(&p.value()?.string()?)?,
            Long("list") => o.list = true,
            Long("csv") => o.csv = Some(p.value()?.string()?),
            Short('h') | Long("help") => {
                print!("{HELP}");
                std::process::exit(0);
            }
            Value(v) => {
                o.eal.push(v.string()?);
                o.eal
                    .extend(p.raw_args()?.map(|a| a.to_string_lossy().into_owned()));
            }
            _ => return Err(arg.unexpected()),
        }
    }
    if o.rounds == 0 || o.secs <= 0.0 || o.handlers.is_empty() || o.peers_per_round == 0 {
        return Err(
            "--rounds, --secs, --peers-per-round and --handlers must be positive / non-empty"
                .into(),
        );
    }
    Ok(o)
}
