//! Crash points inside the ring's critical sections, for tests of the
//! takeover: compiled only under loom and with the `crash-points` feature,
//! which no default build enables.
//!
//! A point, once armed, fires at the next operation that reaches it: under
//! loom the thread "dies" there (the operation returns at once and its lock
//! guard does not unlock: the thread holds the lock for ever), with the
//! feature the process parks there for ever, holding the lock, until the
//! test kills it.

/// Where to die.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashSite {
    /// A producer, after publishing `seq` past its bulk and filling the
    /// first `k` slots of it.
    ProducerFills(usize),
    /// A consumer, after copying its objects out, before publishing `head`.
    ConsumerBeforeHead,
    /// A consumer, after publishing `head` and clearing the first `k` of
    /// the slots due.
    ConsumerClears(usize),
    /// A newest-first dequeue, holding both sides, after copying its
    /// objects out and clearing the last `k` of their slots (all of them
    /// and not yet moving `seq` back, for `k` at least the bulk).
    TakeBackClears(usize),
}

impl CrashSite {
    /// The site `spec` names: `fill:K`, `head`, `clear:K` or `takeback:K`
    /// (a missing `:K` is 0); the error says why not, `spec` first.
    pub fn parse(spec: &str) -> Result<CrashSite, String> {
        let (what, k) = spec.split_once(':').unwrap_or((spec, "0"));
        let k: usize = k.parse().map_err(|e| format!("{spec}: {e}"))?;
        Ok(match what {
            "fill" => CrashSite::ProducerFills(k),
            "head" => CrashSite::ConsumerBeforeHead,
            "clear" => CrashSite::ConsumerClears(k),
            "takeback" => CrashSite::TakeBackClears(k),
            _ => return Err(format!("{spec}: fill:K, head, clear:K or takeback:K")),
        })
    }
}

#[cfg(loom)]
loom::thread_local! {
    static ARMED: core::cell::Cell<Option<CrashSite>> = core::cell::Cell::new(None);
    static DYING: core::cell::Cell<bool> = core::cell::Cell::new(false);
}

#[cfg(not(loom))]
static ARMED: std::sync::Mutex<Option<CrashSite>> = std::sync::Mutex::new(None);

/// Arms `site` (under loom: for the calling thread; else for the process).
pub fn arm(site: CrashSite) {
    #[cfg(loom)]
    ARMED.with(|a| a.set(Some(site)));
    #[cfg(not(loom))]
    {
        *ARMED.lock().unwrap_or_else(|e| e.into_inner()) = Some(site);
    }
}

/// Arms the site named by `PTR_RING_CRASH_AT` (`fill:K`, `head`, `clear:K`,
/// `takeback:K`), if set; returns it.
#[cfg(not(loom))]
pub fn arm_from_env() -> Option<CrashSite> {
    let v = std::env::var("PTR_RING_CRASH_AT").ok()?;
    let site = CrashSite::parse(&v).ok()?;
    arm(site);
    Some(site)
}

/// Takes the armed site if `pick` accepts it.
fn take<T>(pick: impl Fn(CrashSite) -> Option<T>) -> Option<T> {
    #[cfg(loom)]
    {
        let found = ARMED.with(|a| a.get()).and_then(&pick);
        if found.is_some() {
            ARMED.with(|a| a.set(None));
        }
        found
    }
    #[cfg(not(loom))]
    {
        let mut a = ARMED.lock().unwrap_or_else(|e| e.into_inner());
        let found = a.and_then(&pick);
        if found.is_some() {
            *a = None;
        }
        found
    }
}

pub(crate) fn fills_before_death() -> Option<usize> {
    take(|s| match s {
        CrashSite::ProducerFills(k) => Some(k),
        _ => None,
    })
}

pub(crate) fn before_head() -> bool {
    take(|s| (s == CrashSite::ConsumerBeforeHead).then_some(())).is_some()
}

pub(crate) fn clears_before_death() -> Option<usize> {
    take(|s| match s {
        CrashSite::ConsumerClears(k) => Some(k),
        _ => None,
    })
}

pub(crate) fn take_back_clears_before_death() -> Option<usize> {
    take(|s| match s {
        CrashSite::TakeBackClears(k) => Some(k),
        _ => None,
    })
}

/// Dies at the point: under loom marks the thread dying and returns true
/// (the caller returns at once); with the feature parks for ever.
pub(crate) fn die() -> bool {
    #[cfg(loom)]
    {
        DYING.with(|d| d.set(true));
        true
    }
    #[cfg(not(loom))]
    {
        eprintln!("PTR_RING: crash point reached: parked until killed");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
    }
}

/// Whether this thread died at a crash point (its guards keep their locks).
#[cfg(loom)]
pub fn dying() -> bool {
    DYING.with(|d| d.get())
}
