//! Median and spread (min-max) of a handful of samples, and the paired
//! ratio of two handlers with a bootstrap confidence interval.

/// How far from 1.0x a median may be and still be called equal within
/// noise: the spread of the control rows, where both handlers run the same
/// code, on this machine (0.99x to 1.02x in quiet runs).
pub const NOISE: f64 = 0.03;

/// The summary of the rounds of one handler in one configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median of the samples (mean of the two middle ones for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub n: usize,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Summary {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// Whether the min-max ranges of `self` and `other` overlap.
    pub fn overlaps(&self, other: &Summary) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// Spread relative to the median, `(max - min) / median`.
    pub fn rel_spread(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / self.median
        } else {
            0.0
        }
    }
}

/// The median of `samples` (mean of the two middle ones for an even count);
/// `None` when there are none.
pub fn median(samples: &[f64]) -> Option<f64> {
    Summary::of(samples).map(|s| s.median)
}

/// Resamples of the bootstrap.
const BOOTSTRAP: usize = 4000;

/// The ratio of two handlers measured round by round (each pair in the same
/// round, so both saw the same machine state).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// Median of the per-round ratios.
    pub median: f64,
    /// Bootstrap 95% confidence interval of that median (percentile method).
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
    /// Rounds (pairs).
    pub n: usize,
}

impl Paired {
    /// From per-round ratios; `None` when there are none.
    pub fn of(ratios: &[f64]) -> Option<Paired> {
        let median = median(ratios)?;
        let n = ratios.len();
        // A fixed xorshift generator: the same data give the same interval.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut meds = Vec::with_capacity(BOOTSTRAP);
        let mut sample = vec![0.0; n];
        for _ in 0..BOOTSTRAP {
            for s in sample.iter_mut() {
                *s = ratios[(next() % n as u64) as usize];
            }
            meds.push(self::median(&sample).expect("n > 0"));
        }
        meds.sort_by(f64::total_cmp);
        let at = |q: f64| meds[((q * (BOOTSTRAP - 1) as f64).round() as usize).min(BOOTSTRAP - 1)];
        Some(Paired {
            median,
            lo: at(0.025),
            hi: at(0.975),
            n,
        })
    }

    /// Whether the interval contains 1.0 (the two handlers are within noise
    /// of each other).
    pub fn contains_one(&self) -> bool {
        self.lo <= 1.0 && 1.0 <= self.hi
    }

    /// "faster", "slower", "equal (within noise)" (the interval contains 1.0
    /// and the median is within [`NOISE`] of it) or
    /// "undecided" (the interval contains 1.0 but is too wide to call it
    /// equal) for `ours` against the baseline.
    pub fn word(&self) -> &'static str {
        if self.contains_one() {
            if (self.median - 1.0).abs() <= NOISE {
                "equal (within noise)"
            } else {
                "undecided"
            }
        } else if self.median > 1.0 {
            "faster"
        } else {
            "slower"
        }
    }
}

/// Per-round ratios `ours / base` from `(round, rate)` lists, for rounds that
/// both have with a positive baseline.
pub fn round_ratios(ours: &[(u32, f64)], base: &[(u32, f64)]) -> Vec<f64> {
    ours.iter()
        .filter_map(|&(r, o)| {
            base.iter()
                .find(|&&(rb, b)| rb == r && b > 0.0)
                .map(|&(_, b)| o / b)
        })
        .collect()
}

/// The ratios of the rounds in which the baseline ran fast (at or above its
/// median rate) and slow (below it): this VM switches between two speed
/// modes that move every handler at once.
pub fn by_mode(ours: &[(u32, f64)], base: &[(u32, f64)]) -> (Vec<f64>, Vec<f64>) {
    let rates: Vec<f64> = base.iter().map(|&(_, b)| b).collect();
    let Some(m) = median(&rates) else {
        return (Vec::new(), Vec::new());
    };
    let fast: Vec<(u32, f64)> = base.iter().copied().filter(|&(_, b)| b >= m).collect();
    let slow: Vec<(u32, f64)> = base.iter().copied().filter(|&(_, b)| b < m).collect();
    (round_ratios(ours, &fast), round_ratios(ours, &slow))
}

#[cfg(test)]
mod tests {
    use super::{Paired, Summary};

    #[test]
    fn paired_interval() {
        let p = Paired::of(&[1.1, 1.2, 1.15, 1.3, 1.12, 1.18, 1.25]).unwrap();
        assert!(p.lo <= p.median && p.median <= p.hi);
        assert!(!p.contains_one());
        assert_eq!(p.word(), "faster");
        let q = Paired::of(&[0.9, 1.1, 1.0, 0.95, 1.05]).unwrap();
        assert!(q.contains_one());
        use crate::targets::{Target, Verdict};
        let t = Target { min_ratio: 1.05 };
        assert_eq!(
            t.verdict(&Paired::of(&[0.5, 1.1, 3.0]).unwrap()),
            Verdict::NotShown
        );
        assert_eq!(t.verdict(&p), Verdict::Met);
    }

    #[test]
    fn odd_and_even_medians() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Summary::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn overlap() {
        let a = Summary::of(&[1.0, 2.0]).unwrap();
        let b = Summary::of(&[2.0, 3.0]).unwrap();
        let c = Summary::of(&[2.5, 3.0]).unwrap();
        assert!(a.overlaps(&b));
        assert!(!a.overlaps(&c));
    }
}
