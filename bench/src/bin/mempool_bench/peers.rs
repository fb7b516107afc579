//! Which of DPDK's other handlers (the peers, `bench::matrix::PEERS`) run
//! in a round, and the round's order.

use bench::matrix;

/// Whether `h` is one of DPDK's other handlers (measured a few per round).
pub fn is_peer(h: &str) -> bool {
    matrix::PEERS.contains(&h)
}

/// The handlers of `round` (from 1), in their order: every handler that is
/// not a peer, and `per_round` of the peers taken in turn (round 1 the
/// first ones, round 2 the next, wrapping), the whole order rotated every
/// round (A B C, B C A, C A B, ...).
pub fn round_order<'a>(hs: &[&'a str], round: u32, per_round: usize) -> Vec<&'a str> {
    let peers: Vec<&str> = hs.iter().copied().filter(|h| is_peer(h)).collect();
    let take = per_round.min(peers.len());
    let first = (round as usize - 1) * take;
    let chosen: Vec<&str> = (0..take)
        .map(|j| peers[(first + j) % peers.len()])
        .collect();
    let these: Vec<&str> = hs
        .iter()
        .copied()
        .filter(|h| !is_peer(h) || chosen.contains(h))
        .collect();
    let shift = (round as usize - 1) % these.len().max(1);
    these
        .iter()
        .cycle()
        .skip(shift)
        .take(these.len())
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::round_order;

    #[test]
    fn pair_every_round_peers_in_turn() {
        let hs = ["ptr_ring", "ring_mp_mc", "stack", "lf_stack", "bucket"];
        let mut seen = std::collections::HashMap::new();
        for round in 1..=6 {
            let o = round_order(&hs, round, 2);
            assert_eq!(o.len(), 4, "{o:?}");
            assert!(o.contains(&"ptr_ring") && o.contains(&"ring_mp_mc"));
            for h in o {
                *seen.entry(h).or_insert(0) += 1;
            }
        }
        // 6 rounds x 2 peers over 3 peers: 4 rounds each.
        for p in ["stack", "lf_stack", "bucket"] {
            assert_eq!(seen[p], 4, "{p}");
        }
        // The order rotates: round 2 does not start where round 1 did.
        assert_ne!(round_order(&hs, 1, 9)[0], round_order(&hs, 2, 9)[0]);
        assert_eq!(round_order(&hs[..2], 3, 3), ["ptr_ring", "ring_mp_mc"]);
    }
}
