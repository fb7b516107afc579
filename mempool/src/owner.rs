//! Who holds a lock in shared memory, and whether that process still lives.
//!
//! Every lock of a pool (`sync::SpinLock`) holds, while taken, the
//! owner id of the process that took it: a process-wide value set once
//! ([`set_process_owner`]), 1 ([`OwnerId::ANONYMOUS`]) until then. A waiter
//! that has spun long asks the process-wide [`liveness`] check about the
//! holder; only [`Liveness::Dead`] lets it take the lock over, repair and
//! `report`. The default check answers [`Liveness::Alive`] for every id,
//! so a program that sets nothing waits as a plain spinlock does.
//!
//! [`Lease`] is the check the handler uses: ids drawn from a file shared by
//! every process of one DPDK runtime directory, each held alive by an open
//! file description lock that the kernel drops when the process dies (the
//! way DPDK itself tells whether a primary lives). See its documentation.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
#[cfg(not(loom))]
use std::sync::atomic::AtomicU32;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

pub use crate::sync::{SharedGuard, SharedLock};

/// A process's owner id: never 0 (a free lock) nor `u32::MAX` (a poisoned
/// one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerId(u32);

impl OwnerId {
    /// The id of a process that set none: valid, and alive for every check.
    pub const ANONYMOUS: OwnerId = OwnerId(1);

    /// `id` as an owner id, if it is one.
    pub const fn new(id: u32) -> Option<OwnerId> {
        if id == 0 || id == u32::MAX {
            None
        } else {
            Some(OwnerId(id))
        }
    }

    /// The lock-word value.
    pub const fn get(self) -> u32 {
        self.0
    }
}

/// What a liveness check says about an owner id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// The process lives (or may: the lock is not taken over).
    Alive,
    /// The process is gone and will never touch the lock again.
    Dead,
    /// The check failed; treated as alive, asked again later.
    Unknown,
}

/// Which lock a takeover was of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// A ring's producer side.
    RingProducer,
    /// A ring's consumer side.
    RingConsumer,
    /// The chunk (IOVA) table's lock.
    ChunkTable,
    /// The shutdown's driver token (drain, poll).
    ShutdownDriver,
    /// A lock outside the pool, taken through [`SharedLock`]: the name its
    /// user gave it.
    Named(&'static str),
    /// A lock the report names only by address.
    Other,
}

impl core::fmt::Display for LockKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LockKind::RingProducer => "ring producer lock",
            LockKind::RingConsumer => "ring consumer lock",
            LockKind::ChunkTable => "chunk table lock",
            LockKind::ShutdownDriver => "shutdown driver token",
            LockKind::Named(name) => name,
            LockKind::Other => "lock",
        })
    }
}

/// What a taker found and did under a dead holder's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// Nothing to repair.
    Nothing,
    /// A producer died inside an enqueue: the slots of its bulk it filled
    /// stay in the ring; the `unfilled` ones it had claimed were given back
    /// by moving the producer index back over them (those objects are lost
    /// with the process).
    Producer {
        /// Claimed slots it never filled.
        unfilled: usize,
    },
    /// A consumer died inside a dequeue: the objects it had moved the head
    /// over are gone with it (the objects the dead process held); the
    /// consumed slots it had left full were cleared.
    Consumer {
        /// Consumed slots the taker cleared.
        cleared: usize,
    },
    /// A registration died inside the chunk table's publish: the order
    /// array was rebuilt from the published records and the sequence
    /// counter made even again, so lookups stop spinning.
    ChunkTable {
        /// Published records the order array now holds.
        records: usize,
    },
    /// The structure is not in any state a dead holder can leave: the lock
    /// is poisoned and the structure refuses every operation.
    Impossible(&'static str),
}

/// One takeover, as `report` hands it to the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Takeover {
    /// The lock.
    pub lock: LockKind,
    /// Its address in this process (inside the pool's memory).
    pub at: usize,
    /// The dead holder's owner id.
    pub dead: u32,
    /// What the taker did.
    pub repair: Repair,
}

impl core::fmt::Display for Repair {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Repair::Nothing => write!(f, "nothing to repair"),
            Repair::Producer { unfilled } => write!(
                f,
                "{unfilled} slots it claimed but never filled given back (objects it was \
                 putting, lost with it)"
            ),
            Repair::Consumer { cleared } => {
                write!(f, "{cleared} consumed slots it left full were cleared")
            }
            Repair::ChunkTable { records } => write!(
                f,
                "the chunk table's lookup order was rebuilt from its {records} published records"
            ),
            Repair::Impossible(why) => write!(f, "cannot repair ({why}): poisoned"),
        }
    }
}

impl core::fmt::Display for Takeover {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "process of owner id {} died holding the {}; {}",
            self.dead, self.lock, self.repair
        )
    }
}

#[cfg(not(loom))]
static OWNER: AtomicU32 = AtomicU32::new(OwnerId::ANONYMOUS.0);

#[cfg(loom)]
loom::thread_local! {
    // Under loom every model thread is a process of its own.
    static OWNER: core::cell::Cell<u32> = core::cell::Cell::new(1);
}

/// This process's owner id, the value its locks hold.
#[inline(always)]
pub fn process_owner() -> u32 {
    #[cfg(not(loom))]
    {
        // Relaxed: set once at initialisation, before any lock is taken
        // on a shared structure; a stale ANONYMOUS would only make the
        // holder look alive to every check.
        OWNER.load(Ordering::Relaxed)
    }
    #[cfg(loom)]
    OWNER.with(|o| o.get())
}

/// Sets this process's owner id (under loom: the calling thread's). Set it
/// once, before the process takes any lock of a shared pool: a lock taken
/// under one id and released under another is fine, but a dead process is
/// recognised only by the id its locks hold.
pub fn set_process_owner(id: OwnerId) {
    #[cfg(not(loom))]
    OWNER.store(id.0, Ordering::Relaxed);
    #[cfg(loom)]
    OWNER.with(|o| o.set(id.0));
}

fn always_alive(_: u32) -> Liveness {
    Liveness::Alive
}

fn no_report(_: &Takeover) {}

/// The liveness check and the report hook, as function addresses (0: the
/// defaults). Plain std atomics under loom too: set before a model runs.
static LIVENESS: AtomicUsize = AtomicUsize::new(0);
static REPORT: AtomicUsize = AtomicUsize::new(0);
static TAKEOVERS: AtomicU64 = AtomicU64::new(0);

/// The owner id the crate's takeover tests emulate as dead: one liveness
/// check serves the whole test binary, whose tests run in parallel.
#[cfg(all(test, not(loom)))]
pub(crate) const TEST_DEAD: u32 = 0xdead_0001;

/// Installs the tests' liveness check: [`TEST_DEAD`] is dead, every other
/// id lives.
#[cfg(all(test, not(loom)))]
pub(crate) fn set_test_liveness() {
    set_liveness(|id| {
        if id == TEST_DEAD {
            Liveness::Dead
        } else {
            Liveness::Alive
        }
    });
}

/// Sets the process-wide liveness check waiters ask about a holder.
pub fn set_liveness(check: fn(u32) -> Liveness) {
    // Release pairs with the Acquire load in `liveness`.
    LIVENESS.store(check as usize, Ordering::Release);
}

/// Sets the hook every takeover is reported to (the handler logs and
/// counts there). It runs under the taken-over lock: it must not take a
/// lock of the same pool.
pub fn set_report(hook: fn(&Takeover)) {
    // Release pairs with the Acquire load in `report`.
    REPORT.store(hook as usize, Ordering::Release);
}

/// What the process-wide check says about `id`.
pub fn liveness(id: u32) -> Liveness {
    // Acquire pairs with the Release store in `set_liveness`.
    let f = LIVENESS.load(Ordering::Acquire);
    let check: fn(u32) -> Liveness = if f == 0 {
        always_alive
    } else {
        // SAFETY: only `set_liveness` stores a non-zero value, the address
        // of a `fn(u32) -> Liveness`.
        unsafe { core::mem::transmute::<usize, fn(u32) -> Liveness>(f) }
    };
    check(id)
}

/// Counts a takeover and hands it to the hook.
pub(crate) fn report(t: &Takeover) {
    // Relaxed: a statistic.
    TAKEOVERS.fetch_add(1, Ordering::Relaxed);
    // Acquire pairs with the Release store in `set_report`.
    let f = REPORT.load(Ordering::Acquire);
    let hook: fn(&Takeover) = if f == 0 {
        no_report
    } else {
        // SAFETY: only `set_report` stores a non-zero value, the address of
        // a `fn(&Takeover)`.
        unsafe { core::mem::transmute::<usize, fn(&Takeover)>(f) }
    };
    hook(t);
}

/// The PID the process of owner id `id` recorded in the installed lease's
/// file (see [`Lease::pid_of`]); `None` without one.
pub fn pid_of(id: u32) -> Option<u32> {
    LEASE.get()?.pid_of(id)
}

/// Locks this process took over from dead holders.
pub fn takeovers() -> u64 {
    // Relaxed: a statistic.
    TAKEOVERS.load(Ordering::Relaxed)
}

/// Owner ids that survive PID reuse and PID namespaces: one file, shared by
/// every process that shares the directory (the handler uses DPDK's runtime
/// directory, which DPDK's multi-process support needs shared anyway).
///
/// * **The id**: each process appends one record (its PID, as it sees
///   itself, and a newline: for reports only) to the file with `O_APPEND`,
///   which the kernel serialises, and takes the file's length after its own
///   record, plus one, as its id (so never
///   [`OwnerId::ANONYMOUS`]). Ids are therefore unique for the file's
///   life and never reused (a PID is, after the process dies; a PID also
///   differs between namespaces).
/// * **Alive**: the process holds an open-file-description write lock
///   (`F_OFD_SETLK`) on the byte at offset `id`, released by the kernel
///   when the process's last descriptor of it closes, i.e. when it dies,
///   whatever killed it. `F_OFD_GETLK` from any process (any PID namespace)
///   tells whether someone still holds it. This is how DPDK tells whether a
///   primary lives (`rte_eal_primary_proc_alive`: an fcntl lock on the
///   runtime directory's config file), so it works exactly as far as
///   DPDK's multi-process does. OFD locks, unlike classic POSIX ones, are
///   not dropped when some other code of the process closes another
///   descriptor of the same file.
///
/// `pid + start time` from `/proc` was rejected: a PID names another
/// process, or none, in another PID namespace, and `/proc` may not show it.
/// A heartbeat word in shared memory would need a thread per process and a
/// timeout that a stopped (not dead) process would outlive.
pub struct Lease {
    id: OwnerId,
    path: PathBuf,
    /// Holds the id's lock for the process's life.
    _held: File,
    /// A second description, for `F_OFD_GETLK` (OFD locks never conflict
    /// with their own description).
    probe: File,
}

static LEASE: OnceLock<Lease> = OnceLock::new();

impl Lease {
    /// File name of the owner file inside the directory.
    pub const FILE_NAME: &'static str = "ptr_ring_owners";

    /// Draws an id from `dir`'s owner file and holds it alive.
    pub fn acquire(dir: &Path) -> io::Result<Lease> {
        let path = dir.join(Self::FILE_NAME);
        let mut held = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .mode(0o666)
            .open(&path)?;
        // One record, appended atomically (one write of a few bytes): the
        // file's length after it, seen through our own descriptor's offset,
        // is ours alone. The record is our PID as we see it, for reports.
        held.write_all(format!("{}\n", std::process::id()).as_bytes())?;
        // SAFETY: a valid descriptor; SEEK_CUR with 0 only reads the offset.
        let end = unsafe { libc::lseek(held.as_raw_fd(), 0, libc::SEEK_CUR) };
        // Plus one: lease ids start at 2, never ANONYMOUS.
        let id = u32::try_from(end)
            .ok()
            .and_then(|e| e.checked_add(1))
            .and_then(OwnerId::new)
            .ok_or_else(|| io::Error::other(format!("{} has run out of ids", path.display())))?;
        ofd_lock(&held, libc::F_OFD_SETLK, id.0, libc::F_WRLCK as i16)?;
        let probe = OpenOptions::new().read(true).open(&path)?;
        Ok(Lease {
            id,
            path,
            _held: held,
            probe,
        })
    }

    /// This lease's id.
    pub fn id(&self) -> OwnerId {
        self.id
    }

    /// The owner file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the process holding `id` lives.
    ///
    /// Our own id, and [`OwnerId::ANONYMOUS`] (a process that drew no
    /// lease: nothing can tell), are alive.
    pub fn liveness_of(&self, id: u32) -> Liveness {
        if id == self.id.0 || id == OwnerId::ANONYMOUS.0 {
            return Liveness::Alive;
        }
        match ofd_lock(&self.probe, libc::F_OFD_GETLK, id, libc::F_WRLCK as i16) {
            Ok(t) if t == libc::F_UNLCK as i16 => Liveness::Dead,
            Ok(_) => Liveness::Alive,
            Err(_) => Liveness::Unknown,
        }
    }

    /// The PID the process of owner id `id` recorded (as it saw itself:
    /// in its own PID namespace), if this file holds its record.
    pub fn pid_of(&self, id: u32) -> Option<u32> {
        use std::os::unix::fs::FileExt;
        // The record ends at `id - 1` with a newline; a PID has at most 10
        // digits, so the record starts after the previous newline (or the
        // file's start) within the 12 bytes before its end.
        let end = u64::from(id.checked_sub(1)?);
        let start = end.saturating_sub(12);
        let mut buf = [0u8; 12];
        let buf = &mut buf[..usize::try_from(end - start).ok()?];
        self.probe.read_exact_at(buf, start).ok()?;
        let (last, body) = buf.split_last()?;
        if *last != b'\n' {
            return None;
        }
        let from = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if from == 0 && start > 0 {
            return None;
        }
        std::str::from_utf8(&body[from..]).ok()?.parse().ok()
    }

    /// Draws a lease in `dir` and makes it the process's: its id becomes
    /// the owner id, its check the liveness check. Once per process; a
    /// second call returns the first lease.
    pub fn install(dir: &Path) -> io::Result<&'static Lease> {
        if let Some(l) = LEASE.get() {
            return Ok(l);
        }
        let lease = Lease::acquire(dir)?;
        let lease = LEASE.get_or_init(|| lease);
        set_process_owner(lease.id);
        set_liveness(|id| LEASE.get().map_or(Liveness::Unknown, |l| l.liveness_of(id)));
        Ok(lease)
    }
}

/// `fcntl(cmd)` with an OFD lock of type `ty` on byte `at`; returns the
/// lock type the call left in the struct (for `F_OFD_GETLK`: `F_UNLCK`
/// when nobody else holds it).
fn ofd_lock(f: &File, cmd: libc::c_int, at: u32, ty: i16) -> io::Result<i16> {
    // SAFETY: a plain C struct; all-zero is valid (l_pid must be 0 for OFD).
    let mut fl: libc::flock = unsafe { core::mem::zeroed() };
    fl.l_type = ty;
    fl.l_whence = libc::SEEK_SET as i16;
    fl.l_start = libc::off_t::from(at);
    fl.l_len = 1;
    // SAFETY: a valid descriptor and a valid `flock` the call may write.
    if unsafe { libc::fcntl(f.as_raw_fd(), cmd, &mut fl) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fl.l_type)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn lease_ids_are_unique_and_dead_once_dropped() {
        let dir = std::env::temp_dir().join(format!("ptr_ring_owner_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = Lease::acquire(&dir).unwrap();
        let b = Lease::acquire(&dir).unwrap();
        assert_ne!(a.id(), b.id());
        // Each sees the other alive (two descriptions: as two processes).
        assert_eq!(a.liveness_of(b.id().get()), Liveness::Alive);
        assert_eq!(b.liveness_of(a.id().get()), Liveness::Alive);
        let b_id = b.id().get();
        drop(b);
        assert_eq!(a.liveness_of(b_id), Liveness::Dead);
        // A new lease never gets the dead one's id back.
        let c = Lease::acquire(&dir).unwrap();
        assert!(c.id().get() > b_id);
        assert_eq!(a.liveness_of(b_id), Liveness::Dead);
        // Every record names the process that drew it.
        for id in [a.id(), c.id()] {
            assert_eq!(a.pid_of(id.get()), Some(std::process::id()));
        }
        assert_eq!(c.pid_of(b_id), Some(std::process::id()));
        assert_eq!(c.pid_of(b_id + 1), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An id the tests' liveness check calls alive.
    const ALIVE: u32 = 0xdead_0003;

    #[test]
    fn a_shared_lock_of_a_dead_holder_is_taken_over_and_a_live_ones_waited_for() {
        set_test_liveness();
        let lock = std::sync::Arc::new(SharedLock::new());
        // A holder that died inside: taken over, reported, held by us.
        lock.set_holder_for_tests(TEST_DEAD);
        let before = takeovers();
        let g = lock.lock("test table lock");
        assert_eq!(lock.holder(), process_owner());
        assert!(takeovers() > before, "the takeover was not counted");
        drop(g);
        assert_eq!(lock.holder(), 0);
        // A live holder is waited for, never taken over.
        lock.set_holder_for_tests(ALIVE);
        let (tx, rx) = std::sync::mpsc::channel();
        let taker = {
            let lock = std::sync::Arc::clone(&lock);
            std::thread::spawn(move || {
                let _g = lock.lock("test table lock");
                tx.send(()).unwrap();
            })
        };
        let waited = rx.recv_timeout(std::time::Duration::from_millis(200));
        assert!(waited.is_err(), "a live holder's lock was taken");
        assert_eq!(lock.holder(), ALIVE);
        lock.set_holder_for_tests(0);
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("the lock was not taken once free");
        taker.join().unwrap();
        assert_eq!(lock.holder(), 0);
    }

    #[test]
    fn a_zeroed_shared_lock_is_free() {
        let word = AtomicU32::new(0);
        // SAFETY: `SharedLock` is a transparent `u32` lock word, 0 = free.
        let lock = unsafe { &*(&word as *const AtomicU32).cast::<SharedLock>() };
        assert_eq!(lock.holder(), 0);
        drop(lock.lock("test table lock"));
        assert_eq!(word.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn owner_ids_exclude_free_and_poisoned_words() {
        assert!(OwnerId::new(0).is_none());
        assert!(OwnerId::new(u32::MAX).is_none());
        assert_eq!(OwnerId::new(7).map(OwnerId::get), Some(7));
    }
}
