//! `line_trip [CPU_A CPU_B]`: prints the round trip of one cache line
//! between a thread on CPU A and a thread on CPU B, in nanoseconds (the
//! median of 11 batches' means of 2000 round trips; `bench::line`). No
//! DPDK: `bench/run.sh` runs it just before and just after each run of
//! testpmd's cross-lcore pipeline, on the CPUs of its two forwarding
//! lcores (default: 1 and 0), and records both beside the run.

use std::process::ExitCode;
use std::time::Instant;

use bench::line::Ball;

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it
    // for any cpu below CPU_SETSIZE, checked first.
    let r = unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("CPU {cpu}: above CPU_SETSIZE"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        return Err(format!(
            "CPU {cpu}: sched_setaffinity: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn run(args: &[String]) -> Result<f64, String> {
    let cpus: Vec<usize> = match args {
        [] => vec![1, 0],
        [a, b] => [a, b]
            .iter()
            .map(|s| s.parse().map_err(|_| format!("not a CPU number: {s}")))
            .collect::<Result<_, _>>()?,
        _ => return Err("usage: line_trip [CPU_A CPU_B]".into()),
    };
    if cpus[0] == cpus[1] {
        return Err(format!("two CPUs needed, got {} twice", cpus[0]));
    }
    let ball = Ball::default();
    let t0 = Instant::now();
    pin(cpus[0])?;
    std::thread::scope(|s| {
        // The answering thread says whether it got its CPU before it
        // answers: the asking side starts only then, so a failure there
        // leaves no side spinning.
        let (tx, rx) = std::sync::mpsc::channel();
        let (ball, answering_cpu) = (&ball, cpus[1]);
        s.spawn(move || {
            let pinned = pin(answering_cpu);
            let ok = pinned.is_ok();
            let _ = tx.send(pinned);
            if ok {
                ball.answer();
            }
        });
        rx.recv()
            .map_err(|_| "the answering thread stopped".to_string())??;
        Ok(ball.ask(|| t0.elapsed().as_nanos() as u64))
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(ns) => {
            println!("{ns:.1}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("line_trip: {e}");
            ExitCode::from(2)
        }
    }
}
