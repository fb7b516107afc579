//! The forwarding lcore of `port_shutdown`: two ports forward to each other
//! through an application queue that keeps the last `--hold` mbufs.

use core::ffi::{c_int, c_void};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dpdk_sys as sys;

use super::{check, Args, BURST, FWD_LCORE, PORTS};

/// State shared with the forwarding lcore.
struct Forwarder {
    stop: AtomicBool,
    hold: usize,
    /// What is left in the application queue when forwarding stops.
    held: Mutex<Vec<usize>>,
    rx: AtomicU64,
    tx: AtomicU64,
    dropped: AtomicU64,
}

fn tx_flush(port: u16, batch: &mut Vec<*mut sys::rte_mbuf>, fwd: &Forwarder) {
    if batch.is_empty() {
        return;
    }
    // SAFETY: a started port with tx queue 0; `batch` holds mbufs we own.
    let sent =
        unsafe { sys::rte_eth_tx_burst(port, 0, batch.as_mut_ptr(), batch.len() as u16) } as usize;
    let rest = batch.len() - sent;
    if rest > 0 {
        // SAFETY: the mbufs the port did not take are still ours.
        unsafe { sys::rte_pktmbuf_free_bulk(batch.as_mut_ptr().add(sent), rest as u32) };
    }
    fwd.tx.fetch_add(sent as u64, Ordering::Relaxed);
    fwd.dropped.fetch_add(rest as u64, Ordering::Relaxed);
    batch.clear();
}

/// lcore 1: port 0 -> port 1 and port 1 -> port 0, every packet passing
/// through a queue that keeps the last `hold` of them.
unsafe extern "C" fn forward(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the Forwarder of `forward_for_a_while`, alive until rte_eal_wait_lcore
    // returns there.
    let fwd = unsafe { &*arg.cast::<Forwarder>() };
    let mut queue: VecDeque<(u16, *mut sys::rte_mbuf)> =
        VecDeque::with_capacity(fwd.hold + 2 * BURST);
    let mut rx = [core::ptr::null_mut::<sys::rte_mbuf>(); BURST];
    let mut tx: [Vec<*mut sys::rte_mbuf>; 2] =
        [Vec::with_capacity(BURST), Vec::with_capacity(BURST)];
    while !fwd.stop.load(Ordering::Relaxed) {
        for (from, to) in [(PORTS[0], PORTS[1]), (PORTS[1], PORTS[0])] {
            // SAFETY: a started port with rx queue 0; room for BURST mbufs.
            let n =
                unsafe { sys::rte_eth_rx_burst(from, 0, rx.as_mut_ptr(), BURST as u16) } as usize;
            fwd.rx.fetch_add(n as u64, Ordering::Relaxed);
            queue.extend(rx[..n].iter().map(|&m| (to, m)));
        }
        while queue.len() > fwd.hold {
            let (to, m) = queue.pop_front().expect("non-empty");
            let b = &mut tx[to as usize];
            b.push(m);
            if b.len() == BURST {
                tx_flush(to, b, fwd);
            }
        }
        for (p, b) in tx.iter_mut().enumerate() {
            tx_flush(p as u16, b, fwd);
        }
    }
    let mut held = fwd.held.lock().unwrap_or_else(|e| e.into_inner());
    held.extend(queue.into_iter().map(|(_, m)| m as usize));
    0
}

/// Forwards on lcore 1 for `--forward-ms`, then stops it. Returns the mbufs
/// left in the application queue (`--hold` of them).
pub(crate) fn forward_for_a_while(args: &Args) -> Result<Vec<usize>, String> {
    let fwd = Forwarder {
        stop: AtomicBool::new(false),
        hold: args.hold,
        held: Mutex::new(Vec::new()),
        rx: AtomicU64::new(0),
        tx: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
    };
    // SAFETY: `fwd` outlives the launched function: we wait for it below.
    let r = unsafe {
        sys::rte_eal_remote_launch(
            Some(forward),
            (&fwd as *const Forwarder).cast_mut().cast(),
            FWD_LCORE,
        )
    };
    check(r, "rte_eal_remote_launch")?;
    let t_fwd = Instant::now();
    std::thread::sleep(Duration::from_millis(args.forward_ms));
    fwd.stop.store(true, Ordering::Relaxed);
    // SAFETY: waits for lcore 1 to return; afterwards nothing runs there.
    let rc = unsafe { sys::rte_eal_wait_lcore(FWD_LCORE) };
    let secs = t_fwd.elapsed().as_secs_f64();
    if rc != 0 {
        return Err(format!("forwarding lcore returned {rc}"));
    }
    let held = std::mem::take(&mut *fwd.held.lock().unwrap_or_else(|e| e.into_inner()));
    let (rx, tx, dropped) = (
        fwd.rx.load(Ordering::Relaxed),
        fwd.tx.load(Ordering::Relaxed),
        fwd.dropped.load(Ordering::Relaxed),
    );
    println!(
        "port_shutdown: forwarded for {secs:.2} s on lcore {FWD_LCORE}: rx {rx} tx {tx} dropped {dropped} \
         ({:.1} Mpps); application queue holds {} mbufs",
        rx as f64 / secs / 1e6,
        held.len()
    );
    if rx == 0 || tx == 0 {
        return Err("no packet was forwarded".into());
    }
    if held.len() != args.hold {
        return Err(format!(
            "application queue holds {} mbufs, expected --hold {}",
            held.len(),
            args.hold
        ));
    }
    Ok(held)
}
