//! This process's `rte_mempool_ops_table`, locked ([`Table`]), and the two
//! ways the handler renumbers it: ptr_ring moved after every other handler
//! ([`move_ours_last`]), and the whole table put in the primary's order
//! ([`reorder_like`], planned by [`plan`]).

use dpdk_sys as sys;

use super::MAX_OPS;
use crate::log::Level;
use crate::{cname, log, ops_name};

/// The process's ops table, locked; entries below `num_ops` are set.
pub(super) struct Table {
    t: *mut sys::rte_mempool_ops_table,
}

impl Table {
    pub(super) fn lock() -> Table {
        // DPDK's process-local table; its spinlock guards changes.
        let t = core::ptr::addr_of_mut!(sys::rte_mempool_ops_table);
        // SAFETY: `t` is valid; the lock is released in drop.
        unsafe { sys::rte_spinlock_lock(core::ptr::addr_of_mut!((*t).sl)) };
        Table { t }
    }

    pub(super) fn ops(&mut self) -> &mut [sys::rte_mempool_ops] {
        // SAFETY: we hold the table's lock; entries below num_ops are set and
        // num_ops never exceeds the array.
        unsafe {
            let n = ((*self.t).num_ops as usize).min(MAX_OPS);
            &mut (&mut (*self.t).ops)[..n]
        }
    }

    pub(super) fn names(&mut self) -> Vec<String> {
        self.ops()
            .iter()
            .map(|o| cname::cstr_field(&o.name))
            .collect()
    }

    /// Replaces the whole table by `new` (at most [`MAX_OPS`] entries).
    fn set(&mut self, new: &[sys::rte_mempool_ops]) {
        // SAFETY: we hold the lock; `new` fits the array.
        unsafe {
            let all = &mut (*self.t).ops;
            all[..new.len()].copy_from_slice(new);
            for o in &mut all[new.len()..] {
                *o = core::mem::zeroed();
            }
            (*self.t).num_ops = new.len() as u32;
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: locked in `lock`.
        unsafe { sys::rte_spinlock_unlock(core::ptr::addr_of_mut!((*self.t).sl)) };
    }
}

/// ptr_ring goes after every other handler, as if it had not been loaded
/// (at bus scan: no pool exists or is attached yet).
pub(super) fn move_ours_last() {
    let mut t = Table::lock();
    let names = t.names();
    let Some(i) = names.iter().position(|n| n == ops_name::OPS_NAME) else {
        return;
    };
    let last = names.len() - 1;
    if i != last {
        t.ops()[i..].rotate_left(1);
        drop(t);
        log!(
            Level::Info,
            "mempool ops \"{}\" moved from index {i} to {last}, after every other handler: \
             their indices are those of processes without it",
            ops_name::OPS_NAME
        );
    }
}

/// Where entry `i` of the renumbered table comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// This process's entry at that index.
    Mine(usize),
    /// A stub under the primary's name.
    Stub(String),
}

/// The renumbering of a table named `mine` like `primary`: the primary's
/// order first (a stub for each name missing here), then the entries only
/// this process has, in their order, as far as [`MAX_OPS`] allows; and the
/// names of those that no longer fit.
fn plan(primary: &[String], mine: &[String]) -> (Vec<Slot>, Vec<String>) {
    let mut used = vec![false; mine.len()];
    let mut slots: Vec<Slot> = primary
        .iter()
        .take(MAX_OPS)
        .map(|name| match mine.iter().position(|n| n == name) {
            Some(j) => {
                used[j] = true;
                Slot::Mine(j)
            }
            None => Slot::Stub(name.clone()),
        })
        .collect();
    let mut dropped = Vec::new();
    for j in (0..mine.len()).filter(|&j| !used[j]) {
        if slots.len() < MAX_OPS {
            slots.push(Slot::Mine(j));
        } else {
            dropped.push(mine[j].clone());
        }
    }
    (slots, dropped)
}

/// Renumbers this process's table like `primary`; returns the names given a
/// stub entry, the names only this process has (kept after the primary's),
/// and those that no longer fit.
pub(super) fn reorder_like(primary: &[String]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut t = Table::lock();
    let cur: Vec<sys::rte_mempool_ops> = t.ops().to_vec();
    let names: Vec<String> = cur.iter().map(|o| cname::cstr_field(&o.name)).collect();
    let (slots, dropped) = plan(primary, &names);
    let (mut stubs, mut extra) = (Vec::new(), Vec::new());
    let new: Vec<sys::rte_mempool_ops> = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| match slot {
            Slot::Mine(j) => {
                if i >= primary.len() {
                    extra.push(names[*j].clone());
                }
                cur[*j]
            }
            Slot::Stub(name) => {
                stubs.push(name.clone());
                super::stubs::stub_ops(name)
            }
        })
        .collect();
    t.set(&new);
    (stubs, extra, dropped)
}

/// Name of the stubs that fill the indices up to the primary's ptr_ring
/// in [`replace_ours`], whose handlers this process cannot know.
const UNKNOWN: &str = "unknown";

/// Replaces ptr_ring's entry by `entry`, moved to index `at` when given
/// (the primary's index of ptr_ring; see [`moved_to`]). Returns where
/// `entry` went; `None` without a ptr_ring entry.
pub(super) fn replace_ours(entry: sys::rte_mempool_ops, at: Option<usize>) -> Option<usize> {
    let mut t = Table::lock();
    let ours = t.names().iter().position(|n| n == ops_name::OPS_NAME)?;
    let cur: Vec<sys::rte_mempool_ops> = t.ops().to_vec();
    let at = at.filter(|&a| a < MAX_OPS).unwrap_or(ours);
    let new: Vec<sys::rte_mempool_ops> = moved_to(cur.len(), ours, at)
        .into_iter()
        .map(|from| match from {
            Some(j) if j == ours => entry,
            Some(j) => cur[j],
            None => super::stubs::stub_ops(UNKNOWN),
        })
        .collect();
    t.set(&new);
    Some(at)
}

/// The table of `len` entries with entry `ours` moved to index `at`, as
/// the old index of each new entry: the entry at `at` takes `ours`'s old
/// index; indices the table lacks up to `at` (and `ours`'s old one, then)
/// are `None`, for [`UNKNOWN`] stubs.
fn moved_to(len: usize, ours: usize, at: usize) -> Vec<Option<usize>> {
    let mut new: Vec<Option<usize>> = (0..len).map(Some).collect();
    if at < len {
        new.swap(at, ours);
    } else {
        new[ours] = None;
        new.resize(at + 1, None);
        new[at] = Some(ours);
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn plan_takes_the_primary_order_then_own_extras() {
        // testpmd links dpaa; mp_peer registers an extra handler first.
        let primary = names("dpaa octeontx ring_mp_mc stack ptr_ring");
        let mine = names("extra octeontx ring_mp_mc dpaa stack ptr_ring");
        let (slots, dropped) = plan(&primary, &mine);
        use Slot::Mine;
        assert_eq!(
            slots,
            [Mine(3), Mine(1), Mine(2), Mine(4), Mine(5), Mine(0)]
        );
        assert!(dropped.is_empty());
    }

    #[test]
    fn plan_stubs_what_this_process_lacks() {
        let primary = names("dpaa ring_mp_mc bucket ptr_ring");
        let mine = names("ring_mp_mc ptr_ring");
        let (slots, _) = plan(&primary, &mine);
        assert_eq!(
            slots,
            [
                Slot::Stub("dpaa".into()),
                Slot::Mine(0),
                Slot::Stub("bucket".into()),
                Slot::Mine(1)
            ]
        );
    }

    #[test]
    fn plan_drops_own_extras_that_do_not_fit() {
        let primary: Vec<String> = (0..MAX_OPS).map(|i| format!("p{i}")).collect();
        let mine = names("p0 mine_only");
        let (slots, dropped) = plan(&primary, &mine);
        assert_eq!(slots.len(), MAX_OPS);
        assert_eq!(slots[0], Slot::Mine(0));
        assert_eq!(dropped, ["mine_only"]);
    }

    #[test]
    fn ours_moves_to_the_primarys_index() {
        // Where the primary put it: nothing moves.
        assert_eq!(moved_to(3, 2, 2), [Some(0), Some(1), Some(2)]);
        // This process has more handlers: the one at the primary's index
        // takes ours's old slot.
        assert_eq!(moved_to(4, 3, 1), [Some(0), Some(3), Some(2), Some(1)]);
        // Fewer: unknown stubs up to the primary's index.
        assert_eq!(moved_to(2, 1, 3), [Some(0), None, None, Some(1)]);
    }

    #[test]
    fn plan_of_an_aligned_table_is_the_identity() {
        let t = names("a b c ptr_ring");
        let (slots, dropped) = plan(&t, &t);
        assert_eq!(slots, (0..4).map(Slot::Mine).collect::<Vec<_>>());
        assert!(dropped.is_empty());
    }
}
