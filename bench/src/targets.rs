//! The targets of issue 7: the ratio of `ptr_ring` to `ring_mp_mc` measured in
//! the same run, per configuration.

use crate::record::{E2eKey, MempoolKey, Pattern};
use crate::stats::Summary;

/// One target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// The ratio `ptr_ring / ring_mp_mc` (medians) to reach.
    pub min_ratio: f64,
    /// "Within noise" targets (`>= 1.0x`): a lower median still counts as met
    /// when the two handlers' min-max ranges overlap.
    pub within_noise: bool,
    /// What issue 7 quotes as the reference for this configuration.
    pub reference: &'static str,
}

impl Target {
    /// `>= x` or `>= x (within noise)`.
    pub fn describe(&self) -> String {
        if self.within_noise {
            format!(">= {:.2}x (within noise)", self.min_ratio)
        } else {
            format!(">= {:.2}x", self.min_ratio)
        }
    }

    /// Judges a measurement: `ratio` of the medians, and the summaries of the
    /// two handlers (for the "within noise" rule).
    pub fn verdict(&self, ratio: f64, ours: &Summary, base: &Summary) -> Verdict {
        if ratio >= self.min_ratio {
            Verdict::Met
        } else if self.within_noise && ours.overlaps(base) {
            Verdict::WithinNoise
        } else {
            Verdict::Missed
        }
    }
}

/// The outcome of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The median ratio reaches the target.
    Met,
    /// Below the target, but the ranges of the two handlers overlap
    /// (only for "within noise" targets).
    WithinNoise,
    /// Missed.
    Missed,
}

impl Verdict {
    /// For the results table.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinNoise => "met (within noise: ranges overlap)",
            Verdict::Missed => "**missed**",
        }
    }
}

/// The target of a `mempool_bench` configuration, if issue 7 sets one.
pub fn mempool(key: &MempoolKey) -> Option<Target> {
    if key.cache > 0 {
        return Some(Target {
            min_ratio: 1.0,
            within_noise: true,
            reference: "all handlers equal",
        });
    }
    let (min_ratio, reference) = match (key.lcores, key.pattern, key.bulk) {
        (1, _, 1) => (2.8, "floor 3.1x, ring_sp_sc 2.5x"),
        (1, _, 32) => (1.25, "floor 1.32x"),
        (2, Pattern::Recycle, 1) => (20.0, "stack 0.5x-1.6x"),
        (2, Pattern::Recycle, 32) => (5.0, "stack 0.5x-2.7x"),
        (2, Pattern::Handoff, 1) => (2.0, "ring_sp_sc 2.1x"),
        (2, Pattern::Handoff, 32) => (1.3, "ring_sp_sc 1.3x"),
        _ => return None,
    };
    Some(Target {
        min_ratio,
        within_noise: false,
        reference,
    })
}

/// The target of an end-to-end configuration, if issue 7 sets one.
pub fn e2e(key: &E2eKey) -> Option<Target> {
    match (key.app.as_str(), key.variant.as_str()) {
        ("testpmd", "mbcache=0") => Some(Target {
            min_ratio: 1.25,
            within_noise: false,
            reference: "floor 1.33x",
        }),
        ("testpmd", _) | ("l2fwd", _) => Some(Target {
            min_ratio: 1.0,
            within_noise: true,
            reference: "",
        }),
        _ => None,
    }
}
