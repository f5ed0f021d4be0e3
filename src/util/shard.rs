//! Which of `n` shards a name falls in: the counters and books that every
//! member of a round updates at once are split by agent name, so that
//! thousands of threads do not queue on one lock.

/// The shard of `name` among `n` (FNV-1a of its bytes: stable, cheap, and
/// spread well enough over agent names such as `m0` … `m2047`).
pub(crate) fn shard_of(name: &str, n: usize) -> usize {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % n.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_spread_over_every_shard_and_stay_in_range() {
        let mut seen = vec![0usize; 64];
        for i in 0..2048 {
            seen[shard_of(&format!("m{i}"), 64)] += 1;
        }
        assert!(seen.iter().all(|&k| k > 0), "{seen:?}");
        assert_eq!(shard_of("anything", 1), 0);
        assert_eq!(shard_of("anything", 0), 0);
    }
}
