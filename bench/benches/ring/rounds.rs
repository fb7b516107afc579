//! The rounds pass (every configuration again, the contenders alternated
//! round by round, with paired ratios) and `RING_PROFILE`'s single
//! configuration in a loop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::contenders::{Contenders, Runner};
use crate::loops::{involuntary_switches, pin};
use crate::{CONSUMER_CPU, MAX_BULK, PRODUCER_CPU, ROUND_OBJS_1T, ROUND_OBJS_2T};

/// One measurement of the rounds pass.
struct Sample {
    /// Nanoseconds per object.
    ns: f64,
    /// Failed enqueue tries per bulk enqueue (two threads only).
    put_polls: f64,
    /// Failed dequeue tries per bulk dequeue (two threads only).
    get_polls: f64,
    /// Involuntary context switches during the measurement.
    preempted: u64,
}

fn measure(r: &dyn Runner, threads: usize, bulk: usize) -> Sample {
    if threads == 1 {
        let iters = ROUND_OBJS_1T / bulk as u64;
        let before = involuntary_switches();
        let d = r.one_thread(bulk, iters);
        Sample {
            ns: d.as_nanos() as f64 / ROUND_OBJS_1T as f64,
            put_polls: 0.0,
            get_polls: 0.0,
            preempted: involuntary_switches() - before,
        }
    } else {
        let p = r.two_threads(bulk, ROUND_OBJS_2T);
        let ops = (ROUND_OBJS_2T / bulk as u64) as f64;
        Sample {
            ns: p.elapsed.as_nanos() as f64 / ROUND_OBJS_2T as f64,
            put_polls: p.put_fails as f64 / ops,
            get_polls: p.get_fails as f64 / ops,
            preempted: p.preempted,
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Round trip of one cache line between [`PRODUCER_CPU`] and
/// [`CONSUMER_CPU`] in ns (median of 5 runs of 10^4 round trips): the
/// machine's cost of moving a line between the two cores at that moment,
/// the unit every two-thread result is built of.
fn cross_core_round_trip() -> f64 {
    const N: u64 = 10_000;
    #[repr(align(128))]
    struct Line(AtomicU64);
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let line = Line(AtomicU64::new(0));
            std::thread::scope(|s| {
                s.spawn(|| {
                    pin(CONSUMER_CPU);
                    for i in 0..N {
                        // Acquire/Release: a plain ping-pong; the orderings
                        // only keep the loop honest.
                        while line.0.load(Ordering::Acquire) != 2 * i + 1 {}
                        line.0.store(2 * i + 2, Ordering::Release);
                    }
                });
                pin(PRODUCER_CPU);
                let t0 = Instant::now();
                for i in 0..N {
                    line.0.store(2 * i + 1, Ordering::Release);
                    while line.0.load(Ordering::Acquire) != 2 * i + 2 {}
                }
                t0.elapsed().as_nanos() as f64 / N as f64
            })
        })
        .collect();
    median(&mut runs)
}

/// The rounds pass: each configuration, `rounds` rounds, every contender once
/// per round in an order that rotates by one each round.
pub(crate) fn rounds(set: &Contenders, rounds: usize) {
    let mut names: Vec<&'static str> = Vec::new();
    let mut runners: Vec<&dyn Runner> = Vec::new();
    set.each(&mut |n, r| {
        names.push(n);
        runners.push(r);
    });
    let m = names.len();
    println!("\n## rounds: {rounds} rounds per configuration, contender order rotating\n");
    for (threads, bulk) in [(1, 1), (1, 32), (2, 1), (2, 32)] {
        let mut samples: Vec<Vec<Sample>> = (0..m).map(|_| Vec::new()).collect();
        let mut rtt = Vec::new();
        for round in 0..rounds {
            if threads == 2 {
                rtt.push(cross_core_round_trip());
            }
            for k in 0..m {
                let i = (round + k) % m;
                samples[i].push(measure(runners[i], threads, bulk));
            }
        }
        println!("### {threads} thread(s), bulk {bulk}\n");
        if !rtt.is_empty() {
            let med = median(&mut rtt);
            println!(
                "cross-core cache-line round trip before each round: median {med:.0} ns \
                 (min {:.0}, max {:.0})\n",
                rtt[0],
                rtt[rtt.len() - 1]
            );
        }
        println!(
            "| contender | median ns/obj | min | max | median Mobj/s | ptr_ring speed-up: \
             median of per-round ratios (min–max) | ptr_ring_spsc speed-up (min–max) | \
             full polls/put | empty polls/get | runs with an involuntary context switch |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        // Speed-up of contender `base` over contender `i`: median (min–max)
        // of the per-round ratios time(i) / time(base).
        let speedup = |i: usize, base: usize| -> String {
            let mut ratio: Vec<f64> = (0..rounds)
                .map(|j| samples[i][j].ns / samples[base][j].ns)
                .collect();
            let rmed = median(&mut ratio);
            format!("{rmed:.2}x ({:.2}–{:.2})", ratio[0], ratio[ratio.len() - 1])
        };
        let base = |name: &str| names.iter().position(|&n| n == name);
        let (plain, spsc) = (base("ptr_ring"), base("ptr_ring_spsc"));
        for i in 0..m {
            let col =
                |f: &dyn Fn(&Sample) -> f64| -> Vec<f64> { samples[i].iter().map(f).collect() };
            let mut ns = col(&|s| s.ns);
            let med = median(&mut ns);
            println!(
                "| {} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {:.2} | {:.2} | {}/{} |",
                names[i],
                med,
                ns[0],
                ns[ns.len() - 1],
                1e3 / med,
                plain.map_or("–".into(), |b| speedup(i, b)),
                spsc.map_or("–".into(), |b| speedup(i, b)),
                median(&mut col(&|s| s.put_polls)),
                median(&mut col(&|s| s.get_polls)),
                samples[i].iter().filter(|s| s.preempted > 0).count(),
                rounds,
            );
        }
        println!();
    }
}

/// `RING_PROFILE=<1t|2t>/<bulk>/<contender>[/<seconds>]`.
pub(crate) fn profile(set: &Contenders, spec: &str) {
    let parts: Vec<&str> = spec.split('/').collect();
    let (threads, bulk, name) = match parts[..] {
        [t, b, n] | [t, b, n, _] => (t, b.parse::<usize>().expect("bulk"), n),
        _ => panic!("RING_PROFILE=<1t|2t>/<bulk>/<contender>[/<seconds>], got {spec}"),
    };
    assert!((1..=MAX_BULK).contains(&bulk), "bulk 1..={MAX_BULK}");
    let secs: f64 = parts.get(3).map_or(5.0, |s| s.parse().expect("seconds"));
    let threads = match threads {
        "1t" => 1,
        "2t" => 2,
        t => panic!("threads {t}: 1t or 2t"),
    };
    let mut found = false;
    set.each(&mut |n, r| {
        if n != name {
            return;
        }
        found = true;
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let mut all = Vec::new();
        while Instant::now() < deadline {
            all.push(measure(r, threads, bulk).ns);
        }
        let runs = all.len();
        let med = median(&mut all);
        println!(
            "profile {threads}t/{bulk}/{name}: {runs} runs, ns/obj min {:.2} median {med:.2} max {:.2}",
            all[0],
            all[runs - 1]
        );
        if std::env::var_os("RING_PROFILE_ALL").is_some() {
            println!("{all:.2?}");
        }
    });
    assert!(
        found,
        "no contender {name} (ptr_ring, ptr_ring_spsc, rte_sp_sc, rte_mp_mc, array_queue)"
    );
}
