//! Kafka's cache-friendly binary search over a sorted index ("warm section").
//!
//! Lookups from in-sync followers and tailing consumers nearly always target
//! the end of an index. A plain binary search over a large memory-mapped
//! index touches pages spread across the whole file, and which pages it
//! touches shifts whenever the index grows by a page, so a lookup can stall
//! on a page that fell out of the page cache long ago. Kafka therefore first
//! checks whether the target lies in the last `8192 / entry_size` entries
//! (at most three 4 KiB pages, all touched by every such search and so kept
//! warm) and searches only there; otherwise it searches the cold part.
//!
//! The answers are those of a plain binary search (but see the one quirk on
//! [`search`]). Entries are read through a closure so the search works
//! directly on the mapping without copying or allocating.

/// Bytes of the warm tail of an index (Kafka `AbstractIndex.warmEntries`).
pub(crate) const WARM_SECTION_BYTES: usize = 8192;

/// Number of warm entries for entries of `entry_size` bytes: 1024 for the
/// offset index, 682 for the time index.
pub(crate) const fn warm_entries(entry_size: usize) -> usize {
    WARM_SECTION_BYTES / entry_size
}

/// Which neighbour of the target the search returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The last slot whose value is `<= target`.
    LargestLower,
    /// The first slot whose value is `>= target`.
    SmallestUpper,
}

/// How many of `entries` slots, sorted by the offset `offset_at(slot)`, a
/// truncation to `offset` keeps (Kafka `truncateTo` of the offset and time
/// indexes alike): every slot below `offset`, none at or above it.
pub(crate) fn entries_below(
    entries: usize,
    warm: usize,
    offset: i64,
    offset_at: impl Fn(usize) -> i64,
) -> usize {
    match search(entries, warm, offset, Bound::LargestLower, &offset_at) {
        None => 0,
        Some(n) if offset_at(n) == offset => n,
        Some(n) => n + 1,
    }
}

/// Search `entries` slots, sorted by `value(slot)`, for `target`.
///
/// Returns `None` when no slot satisfies the bound (an empty index, a target
/// below every value for [`Bound::LargestLower`], above every value for
/// [`Bound::SmallestUpper`]).
///
/// Kafka quirk, kept for identical answers: the upper-mid search never
/// probes the first slot of its range, so for [`Bound::SmallestUpper`] a
/// target equal to slot 0's value yields slot 1 (or `None` for a one-entry
/// index) instead of slot 0. Every other answer equals a plain search.
#[inline]
pub(crate) fn search(
    entries: usize,
    warm: usize,
    target: i64,
    bound: Bound,
    value: impl Fn(usize) -> i64,
) -> Option<usize> {
    if entries == 0 {
        return None;
    }
    let first_hot = entries.saturating_sub(1 + warm);
    if value(first_hot) < target {
        return binary_search(entries, target, bound, first_hot, entries - 1, &value);
    }
    if value(0) > target {
        return match bound {
            Bound::LargestLower => None,
            Bound::SmallestUpper => Some(0),
        };
    }
    binary_search(entries, target, bound, 0, first_hot, &value)
}

/// Kafka's upper-mid binary search over `[lo, hi]`.
#[inline]
fn binary_search(
    entries: usize,
    target: i64,
    bound: Bound,
    mut lo: usize,
    mut hi: usize,
    value: &impl Fn(usize) -> i64,
) -> Option<usize> {
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let found = value(mid);
        if found > target {
            hi = mid - 1;
        } else if found < target {
            lo = mid;
        } else {
            return Some(mid);
        }
    }
    match bound {
        Bound::LargestLower => Some(lo),
        Bound::SmallestUpper if lo == entries - 1 => None,
        Bound::SmallestUpper => Some(lo + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn linear(values: &[i64], target: i64, bound: Bound) -> Option<usize> {
        match bound {
            Bound::LargestLower => values.iter().rposition(|&v| v <= target),
            // Kafka's quirk: slot 0 is never probed as an exact hit.
            Bound::SmallestUpper if values.first() == Some(&target) => {
                (values.len() > 1).then_some(1)
            }
            Bound::SmallestUpper => values.iter().position(|&v| v >= target),
        }
    }

    fn check(values: &[i64], warm: usize, target: i64) {
        for bound in [Bound::LargestLower, Bound::SmallestUpper] {
            let got = search(values.len(), warm, target, bound, |n| values[n]);
            assert_eq!(
                got,
                linear(values, target, bound),
                "target {target} {bound:?} warm {warm} len {}",
                values.len()
            );
        }
    }

    #[test]
    fn warm_entry_counts_are_kafkas() {
        assert_eq!(warm_entries(8), 1024);
        assert_eq!(warm_entries(12), 682);
    }

    #[test]
    fn empty_and_single() {
        check(&[], 4, 7);
        for t in [4, 5, 6] {
            check(&[5], 4, t);
        }
    }

    #[test]
    fn every_target_around_every_entry_small_warm() {
        // warm = 3 so both sections are exercised with few entries.
        for len in 0..20 {
            let values: Vec<i64> = (0..len).map(|i| 10 + 3 * i as i64).collect();
            for t in 0..(15 + 3 * len as i64) {
                check(&values, 3, t);
            }
        }
    }

    proptest! {
        #[test]
        fn matches_linear_scan(
            mut raw in proptest::collection::vec(-1000i64..1_000_000, 0..3000),
            targets in proptest::collection::vec(-2000i64..1_100_000, 1..40),
            warm in prop_oneof![Just(1024usize), Just(682usize), 0usize..16],
        ) {
            raw.sort_unstable();
            raw.dedup();
            for &t in &targets {
                check(&raw, warm, t);
            }
            // Exact hits at both ends and around the warm boundary.
            for &i in &[0usize, raw.len() / 2, raw.len().saturating_sub(warm + 1), raw.len().saturating_sub(1)] {
                if let Some(&v) = raw.get(i) {
                    check(&raw, warm, v);
                    check(&raw, warm, v - 1);
                    check(&raw, warm, v + 1);
                }
            }
        }
    }
}
