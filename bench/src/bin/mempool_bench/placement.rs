//! Where a run's memory lies: a spacer memzone before the pool, and an
//! offset of the lanes' object tables, both chosen per round.
//!
//! With one pool at a time (see `pools.rs`) every run's pool would lie at
//! the same address, and so would the lanes' tables: a row's ratio would
//! then be measured at one placement only, which can favour either side.
//! It does: with `ptr_ring`'s own cache at bulk 32, a cache whose hot slots
//! straddle a 4 KiB boundary runs 15-25% slower (`bench/NOTES.md`,
//! "Placement"). Each round therefore moves both the pool and the tables:
//! the same placement for every handler of the round, so that the paired
//! ratio compares handlers and the median over rounds averages over
//! placements. `--spacer BYTES` pins one placement instead, to measure how
//! much a row depends on it.

use std::ffi::CString;
use std::ptr::NonNull;

use dpdk_sys as sys;

/// Placements are cache-line steps within one 4 KiB page (address bits
/// 6-11: where a line falls against page boundaries and L1 sets).
const STEP: u32 = 64;
const STEPS: u32 = 4096 / STEP;

/// How a run's memory is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A different placement each round (the default).
    PerRound,
    /// This many bytes of spacer before every pool, tables not moved.
    Fixed(u32),
}

impl Placement {
    /// `auto` or a byte count (a multiple of 64 below 4096).
    pub fn parse(s: &str) -> Result<Placement, String> {
        if s == "auto" {
            return Ok(Placement::PerRound);
        }
        let b: u32 = s
            .parse()
            .map_err(|_| format!("--spacer: {s:?} is not auto or a byte count"))?;
        if !b.is_multiple_of(STEP) || b >= 4096 {
            return Err(format!(
                "--spacer: {b} is not a multiple of {STEP} below 4096"
            ));
        }
        Ok(Placement::Fixed(b))
    }

    /// What the CSV header says.
    pub fn describe(self) -> String {
        match self {
            Placement::PerRound => "per-round".into(),
            Placement::Fixed(b) => format!("spacer-{b}"),
        }
    }

    /// The placement of round `round` of row `row` (both from 1; 0: the
    /// warm-up, which uses none).
    pub fn of(self, row: usize, round: u32) -> Spot {
        match self {
            Placement::Fixed(b) => Spot { spacer: b, skew: 0 },
            Placement::PerRound if round == 0 => Spot { spacer: 0, skew: 0 },
            Placement::PerRound => {
                let r = mix((row as u64) << 32 | u64::from(round));
                Spot {
                    spacer: (r as u32 % STEPS) * STEP,
                    skew: ((r >> 32) as u32 % STEPS) as usize * STEP as usize / size_of::<usize>(),
                }
            }
        }
    }
}

/// One run's placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spot {
    /// Bytes reserved just before the run's pool is created.
    pub spacer: u32,
    /// Pointers the lanes' tables start past their allocation's start.
    pub skew: usize,
}

/// SplitMix64's finaliser: a fixed, well-spread sequence, so that a rerun
/// measures the same placements.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The spacer memzone, freed on drop (after the run's pool: declare it
/// first).
pub struct Spacer(Option<NonNull<sys::rte_memzone>>);

impl Spacer {
    /// Reserves `bytes` (none for 0: a memzone of length 0 would take the
    /// biggest free block). DPDK's heap carves each allocation from the end
    /// of a free block, so the pool created next lies `bytes` lower.
    pub fn reserve(bytes: u32) -> Result<Spacer, String> {
        if bytes == 0 {
            return Ok(Spacer(None));
        }
        let name = CString::new("bench_spacer").map_err(|e| e.to_string())?;
        // SAFETY: a valid name; DPDK returns null with rte_errno on failure.
        let mz = unsafe {
            sys::rte_memzone_reserve(name.as_ptr(), bytes as usize, sys::SOCKET_ID_ANY, 0)
        };
        NonNull::new(mz.cast_mut())
            .map(|mz| Spacer(Some(mz)))
            .ok_or_else(|| {
                format!(
                    "rte_memzone_reserve({bytes} B spacer): rte_errno {}",
                    sys::errno()
                )
            })
    }
}

impl Drop for Spacer {
    fn drop(&mut self) {
        if let Some(mz) = self.0 {
            // SAFETY: our memzone, reserved above; nothing points into it.
            unsafe { sys::rte_memzone_free(mz.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_round_placements_cover_the_page_and_stay_on_cache_lines() {
        let p = Placement::PerRound;
        assert_eq!(p.of(3, 0), Spot { spacer: 0, skew: 0 });
        let spots: Vec<Spot> = (1..=11).map(|r| p.of(1, r)).collect();
        for s in &spots {
            assert!(s.spacer.is_multiple_of(STEP) && s.spacer < 4096);
            assert!(s.skew * size_of::<usize>() < 4096 && s.skew.is_multiple_of(8));
        }
        let mut distinct: Vec<u32> = spots.iter().map(|s| s.spacer).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() >= 8, "11 rounds, {} spacers", distinct.len());
        assert_eq!(p.of(1, 5), spots[4], "the same round places the same way");
        assert_ne!(p.of(2, 5), spots[4]);
    }

    #[test]
    fn a_fixed_spacer_is_checked_and_kept() {
        assert_eq!(Placement::parse("auto"), Ok(Placement::PerRound));
        assert_eq!(Placement::parse("1024"), Ok(Placement::Fixed(1024)));
        assert!(Placement::parse("100").is_err());
        assert!(Placement::parse("4096").is_err());
        assert!(Placement::parse("x").is_err());
        assert_eq!(
            Placement::Fixed(128).of(1, 4),
            Spot {
                spacer: 128,
                skew: 0
            }
        );
    }
}
