//! `.index` and `.timeindex` slots (Kafka `OffsetIndex`, `TimeIndex`) and the
//! rules that tell a sound index file from a corrupt one.
//!
//! Both files are headerless arrays of fixed-size big-endian slots:
//!
//! ```text
//! .index      0..4   relative offset  i32   offset - segment base offset
//!             4..8   position         i32   byte position of a batch in the .log
//! .timeindex  0..8   timestamp        i64   max record timestamp so far (ms)
//!             8..12  relative offset  i32
//! ```
//!
//! The sanity rules, applied by the engine when it loads a segment and by
//! `strata log dump --index-sanity-check` / `verify`:
//!
//! - Kafka's: the length is a whole number of slots; a non-empty index's
//!   last offset is not below the base offset; a time index's last
//!   timestamp is not below its first.
//! - Strata's addition: the last two entries strictly increase (offsets for
//!   `.index`, timestamps for `.timeindex`; positions and time-index offsets
//!   never decrease). Kafka never writes an index breaking it, while a
//!   preallocated file left untrimmed by a crash ends in zero slots that all
//!   decode as `(base, 0)` and so fail it. Tools apply it to every pair.

use thiserror::Error;

use super::{be_i32, be_i64};
use crate::types::{Offset, Position, Timestamp};

/// How an index file was found to be corrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum IndexCorruption {
    /// Kafka's check: a non-empty index whose last offset is below the base.
    #[error("last offset {last_offset} is below the base offset {base_offset}")]
    LastOffsetBelowBase {
        last_offset: Offset,
        base_offset: Offset,
    },
    /// Kafka's check: the file length is not a whole number of entries.
    #[error("length {length} is not a multiple of the {entry_size}-byte entry size")]
    LengthNotMultiple { length: u64, entry_size: usize },
    /// Kafka's check (time index): the last timestamp is below the first.
    #[error("last timestamp {last:?} is below the first timestamp {first:?}")]
    LastTimestampBelowFirst { first: Timestamp, last: Timestamp },
    /// Strata's addition: entry `slot`'s offset does not increase past the
    /// previous entry's. Kafka never writes this, but a preallocated index
    /// left untrimmed by a crash ends in zero slots that decode this way.
    #[error("entry {slot} has offset {offset}, not above the previous entry's {previous}")]
    OffsetNotIncreasing {
        slot: usize,
        previous: Offset,
        offset: Offset,
    },
    /// Strata's addition (time index): timestamps must strictly increase.
    #[error("entry {slot} has timestamp {timestamp:?}, not above the previous {previous:?}")]
    TimestampNotIncreasing {
        slot: usize,
        previous: Timestamp,
        timestamp: Timestamp,
    },
    /// Strata's addition (offset index): positions never decrease.
    #[error("entry {slot} has position {position}, below the previous {previous}")]
    PositionDecreasing {
        slot: usize,
        previous: Position,
        position: Position,
    },
    /// Kafka's txn-index check: an aborted transaction ends below the
    /// segment's base offset.
    #[error("aborted transaction ending at {last_offset} is below the base offset {base_offset}")]
    AbortedTxnBelowBase {
        last_offset: Offset,
        base_offset: Offset,
    },
    /// An aborted-transaction record with a version newer than 0.
    #[error("aborted transaction at byte {position} has unsupported version {version}")]
    UnsupportedTxnVersion { version: i16, position: u64 },
}

/// One fixed-size slot of an offset or time index.
pub trait IndexSlot: Copy {
    /// Bytes per slot.
    const SIZE: usize;

    /// Decode the first [`Self::SIZE`] bytes of `bytes`.
    ///
    /// # Panics
    ///
    /// If `bytes` is shorter than [`Self::SIZE`].
    fn decode(bytes: &[u8]) -> Self;

    /// The stored offset relative to the segment's base offset.
    fn relative(&self) -> i32;

    /// The absolute offset. Wraps as Kafka's long addition does: the base
    /// comes from a file name and the slot from the file, and a wrapped
    /// offset fails the sanity check instead of panicking.
    fn offset(&self, base: Offset) -> Offset {
        Offset(base.0.wrapping_add(i64::from(self.relative())))
    }

    /// Kafka's checks on the first and last entries of a non-empty index
    /// beyond the one every index has (the last offset is not below the
    /// base, [`check_not_below_base`], checked after this).
    ///
    /// # Errors
    ///
    /// The first rule broken.
    fn check_ends(_first: Self, _last: Self) -> Result<(), IndexCorruption> {
        Ok(())
    }

    /// Strata's rule for entry `slot` following `prev`: every violation
    /// (at most two), in a fixed order.
    fn pair_violations(
        slot: usize,
        base: Offset,
        prev: Self,
        cur: Self,
    ) -> [Option<IndexCorruption>; 2];
}

/// One `.index` slot, as stored.
///
/// Format: `relative offset i32 | position i32`, big-endian (8 bytes).
/// Entry (O, P) is written by an append that started at position P and whose
/// largest offset is O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetSlot {
    pub relative: i32,
    /// The stored position (negative values are corruption).
    pub position: i32,
}

impl OffsetSlot {
    /// The 8 bytes of this slot.
    pub fn encode(&self) -> [u8; OFFSET_SLOT_SIZE] {
        join(&self.relative.to_be_bytes(), &self.position.to_be_bytes())
    }
}

/// Bytes per `.index` slot.
pub const OFFSET_SLOT_SIZE: usize = 8;

impl IndexSlot for OffsetSlot {
    const SIZE: usize = OFFSET_SLOT_SIZE;

    fn decode(bytes: &[u8]) -> OffsetSlot {
        OffsetSlot {
            relative: be_i32(bytes, 0),
            position: be_i32(bytes, 4),
        }
    }

    fn relative(&self) -> i32 {
        self.relative
    }

    fn pair_violations(
        slot: usize,
        base: Offset,
        prev: Self,
        cur: Self,
    ) -> [Option<IndexCorruption>; 2] {
        let (previous, offset) = (prev.offset(base), cur.offset(base));
        [
            (offset <= previous).then_some(IndexCorruption::OffsetNotIncreasing {
                slot,
                previous,
                offset,
            }),
            (cur.position < prev.position).then_some(IndexCorruption::PositionDecreasing {
                slot,
                previous: Position(prev.position as u32),
                position: Position(cur.position as u32),
            }),
        ]
    }
}

/// One `.timeindex` slot, as stored.
///
/// Format: `timestamp i64 | relative offset i32`, big-endian (12 bytes): the
/// largest timestamp among batches up to and including the offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeSlot {
    pub timestamp: Timestamp,
    pub relative: i32,
}

impl TimeSlot {
    /// The 12 bytes of this slot.
    pub fn encode(&self) -> [u8; TIME_SLOT_SIZE] {
        join(
            &self.timestamp.0.to_be_bytes(),
            &self.relative.to_be_bytes(),
        )
    }
}

/// Bytes per `.timeindex` slot.
pub const TIME_SLOT_SIZE: usize = 12;

impl IndexSlot for TimeSlot {
    const SIZE: usize = TIME_SLOT_SIZE;

    fn decode(bytes: &[u8]) -> TimeSlot {
        TimeSlot {
            timestamp: Timestamp(be_i64(bytes, 0)),
            relative: be_i32(bytes, 8),
        }
    }

    fn relative(&self) -> i32 {
        self.relative
    }

    fn check_ends(first: Self, last: Self) -> Result<(), IndexCorruption> {
        if last.timestamp < first.timestamp {
            return Err(IndexCorruption::LastTimestampBelowFirst {
                first: first.timestamp,
                last: last.timestamp,
            });
        }
        Ok(())
    }

    fn pair_violations(
        slot: usize,
        base: Offset,
        prev: Self,
        cur: Self,
    ) -> [Option<IndexCorruption>; 2] {
        let (previous, offset) = (prev.offset(base), cur.offset(base));
        [
            (cur.timestamp <= prev.timestamp).then_some(IndexCorruption::TimestampNotIncreasing {
                slot,
                previous: prev.timestamp,
                timestamp: cur.timestamp,
            }),
            (offset < previous).then_some(IndexCorruption::OffsetNotIncreasing {
                slot,
                previous,
                offset,
            }),
        ]
    }
}

/// `head` then `tail` as one `N`-byte slot.
fn join<const N: usize>(head: &[u8], tail: &[u8]) -> [u8; N] {
    let mut b = [0u8; N];
    b[..head.len()].copy_from_slice(head);
    b[head.len()..].copy_from_slice(tail);
    b
}

/// Slot `n` of an index file's bytes.
///
/// # Panics
///
/// If the bytes end before slot `n` does.
pub fn slot_at<S: IndexSlot>(bytes: &[u8], n: usize) -> S {
    S::decode(&bytes[n * S::SIZE..])
}

/// Every whole slot of an index file's bytes, in order (a partial trailing
/// slot is left out).
pub fn slots<'a, S: IndexSlot + 'a>(bytes: &'a [u8]) -> impl Iterator<Item = S> + 'a {
    bytes.chunks_exact(S::SIZE).map(S::decode)
}

/// Kafka's length rule: a whole number of `entry_size`-byte slots.
///
/// # Errors
///
/// [`IndexCorruption::LengthNotMultiple`].
pub fn check_length(length: u64, entry_size: usize) -> Result<(), IndexCorruption> {
    if length.is_multiple_of(entry_size as u64) {
        Ok(())
    } else {
        Err(IndexCorruption::LengthNotMultiple { length, entry_size })
    }
}

/// Kafka's rule for the last entry, which tools apply to every entry: its
/// offset is not below the segment's base offset.
///
/// # Errors
///
/// [`IndexCorruption::LastOffsetBelowBase`].
pub fn check_not_below_base<S: IndexSlot>(base: Offset, slot: S) -> Result<(), IndexCorruption> {
    let last_offset = slot.offset(base);
    if last_offset < base {
        return Err(IndexCorruption::LastOffsetBelowBase {
            last_offset,
            base_offset: base,
        });
    }
    Ok(())
}

/// Strata's rule for entry `slot` following `prev`; the first violation.
///
/// # Errors
///
/// [`IndexCorruption::OffsetNotIncreasing`],
/// [`IndexCorruption::PositionDecreasing`] or
/// [`IndexCorruption::TimestampNotIncreasing`].
pub fn check_pair<S: IndexSlot>(
    slot: usize,
    base: Offset,
    prev: S,
    cur: S,
) -> Result<(), IndexCorruption> {
    match S::pair_violations(slot, base, prev, cur) {
        [Some(v), _] | [None, Some(v)] => Err(v),
        [None, None] => Ok(()),
    }
}

/// Kafka's `sanityCheck` alone, for an index of `length` bytes holding
/// `entries` entries read through `slot`: the end rules, then the length.
///
/// # Errors
///
/// The first rule broken.
pub fn kafka_sanity_check<S: IndexSlot>(
    length: u64,
    entries: usize,
    base: Offset,
    slot: impl Fn(usize) -> S,
) -> Result<(), IndexCorruption> {
    if entries != 0 {
        let last = slot(entries - 1);
        S::check_ends(slot(0), last)?;
        check_not_below_base(base, last)?;
    }
    check_length(length, S::SIZE)
}

/// The load-time check: Kafka's `sanityCheck` plus Strata's rule on the last
/// two entries. Reads only slots `0`, `entries - 2` and `entries - 1`.
///
/// # Errors
///
/// The first rule broken.
pub fn sanity_check<S: IndexSlot>(
    length: u64,
    entries: usize,
    base: Offset,
    slot: impl Fn(usize) -> S,
) -> Result<(), IndexCorruption> {
    kafka_sanity_check(length, entries, base, &slot)?;
    match entries {
        n if n >= 2 => check_pair(n - 1, base, slot(n - 2), slot(n - 1)),
        _ => Ok(()),
    }
}

/// Kafka's `sanityCheck`, then Strata's rule on every adjacent pair (a full
/// scan, for tools), naming the first bad slot.
///
/// # Errors
///
/// The first rule broken.
pub fn check_all_entries<S: IndexSlot>(
    length: u64,
    entries: usize,
    base: Offset,
    slot: impl Fn(usize) -> S,
) -> Result<(), IndexCorruption> {
    kafka_sanity_check(length, entries, base, &slot)?;
    (1..entries).try_for_each(|n| check_pair(n, base, slot(n - 1), slot(n)))
}

/// Kafka's `DumpLogSegments` rule for where the entries of an index end,
/// given every slot's relative offset in order: at the first slot after the
/// first whose relative offset is 0 (the start of a zero-filled
/// preallocated tail).
pub fn slots_in_use(relatives: impl IntoIterator<Item = i32>) -> usize {
    let mut n = 0;
    for (i, relative) in relatives.into_iter().enumerate() {
        if i > 0 && relative == 0 {
            return i;
        }
        n = i + 1;
    }
    n
}

/// Where the zero-filled preallocated tail of an index file's bytes starts,
/// in slots: 0 for a wholly zero file (an untouched preallocated index);
/// otherwise [`slots_in_use`]'s cut if every byte from there is zero; else
/// every slot is in use (a non-zero slot after the cut makes the whole index
/// count, so the ordering rules see it).
pub fn zero_tail_start<S: IndexSlot>(bytes: &[u8]) -> usize {
    let whole: Vec<&[u8]> = bytes.chunks_exact(S::SIZE).collect();
    let zero = |s: &&[u8]| s.iter().all(|b| *b == 0);
    if whole.iter().all(zero) {
        return 0;
    }
    let cut = slots_in_use(whole.iter().map(|s| S::decode(s).relative()));
    if whole[cut..].iter().all(zero) {
        cut
    } else {
        whole.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset_bytes(slots: &[(i32, i32)]) -> Vec<u8> {
        slots
            .iter()
            .flat_map(|&(relative, position)| OffsetSlot { relative, position }.encode())
            .collect()
    }

    fn check<S: IndexSlot>(bytes: &[u8], base: i64, all: bool) -> Result<(), IndexCorruption> {
        let n = bytes.len() / S::SIZE;
        let slot = |i| slot_at::<S>(bytes, i);
        if all {
            check_all_entries(bytes.len() as u64, n, Offset(base), slot)
        } else {
            sanity_check(bytes.len() as u64, n, Offset(base), slot)
        }
    }

    #[test]
    fn slots_round_trip_big_endian() {
        let s = OffsetSlot {
            relative: 0x0102_0304,
            position: -2,
        };
        assert_eq!(s.encode(), [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(OffsetSlot::decode(&s.encode()), s);
        let t = TimeSlot {
            timestamp: Timestamp(1_700_000_000_000),
            relative: 7,
        };
        assert_eq!(TimeSlot::decode(&t.encode()), t);
        assert_eq!(t.encode()[8..], [0, 0, 0, 7]);
        assert_eq!(t.offset(Offset(10)), Offset(17));
        let wrapped = OffsetSlot {
            relative: 1,
            position: 0,
        };
        assert_eq!(wrapped.offset(Offset(i64::MAX)), Offset(i64::MIN));
    }

    #[test]
    fn a_zero_filled_tail_fails_only_strata_rule() {
        let mut bytes = offset_bytes(&[(3, 0), (9, 4096)]);
        bytes.extend([0u8; 16]);
        let n = bytes.len() / 8;
        assert_eq!(
            kafka_sanity_check(
                bytes.len() as u64,
                n,
                Offset(100),
                |i| slot_at::<OffsetSlot>(&bytes, i)
            ),
            Ok(())
        );
        assert_eq!(
            check::<OffsetSlot>(&bytes, 100, false),
            Err(IndexCorruption::OffsetNotIncreasing {
                slot: 3,
                previous: Offset(100),
                offset: Offset(100),
            })
        );
        assert_eq!(
            check::<OffsetSlot>(&bytes, 100, true),
            Err(IndexCorruption::OffsetNotIncreasing {
                slot: 2,
                previous: Offset(109),
                offset: Offset(100),
            })
        );
        let pair = OffsetSlot::pair_violations(
            2,
            Offset(100),
            OffsetSlot {
                relative: 9,
                position: 4096,
            },
            OffsetSlot {
                relative: 0,
                position: 0,
            },
        );
        assert!(matches!(
            pair,
            [
                Some(IndexCorruption::OffsetNotIncreasing { .. }),
                Some(IndexCorruption::PositionDecreasing { .. })
            ]
        ));
    }

    #[test]
    fn kafka_rules_in_kafkas_order() {
        let bytes = offset_bytes(&[(-1, 0)]);
        assert_eq!(
            check::<OffsetSlot>(&bytes, 10, false),
            Err(IndexCorruption::LastOffsetBelowBase {
                last_offset: Offset(9),
                base_offset: Offset(10),
            })
        );
        let mut bytes = offset_bytes(&[(1, 0), (2, 8)]);
        bytes.push(0);
        assert_eq!(
            check::<OffsetSlot>(&bytes, 0, false),
            Err(IndexCorruption::LengthNotMultiple {
                length: 17,
                entry_size: 8,
            })
        );
        let t = |ts, relative| TimeSlot {
            timestamp: Timestamp(ts),
            relative,
        };
        let bytes: Vec<u8> = [t(50, 1), t(40, 2)]
            .iter()
            .flat_map(|s| s.encode())
            .collect();
        assert_eq!(
            check::<TimeSlot>(&bytes, 0, false),
            Err(IndexCorruption::LastTimestampBelowFirst {
                first: Timestamp(50),
                last: Timestamp(40),
            })
        );
        let bytes: Vec<u8> = [t(50, 3), t(60, 2)]
            .iter()
            .flat_map(|s| s.encode())
            .collect();
        assert_eq!(
            check::<TimeSlot>(&bytes, 0, false),
            Err(IndexCorruption::OffsetNotIncreasing {
                slot: 1,
                previous: Offset(3),
                offset: Offset(2),
            })
        );
        assert_eq!(check::<TimeSlot>(&[], 0, true), Ok(()));
    }

    #[test]
    fn dump_rule_cuts_at_the_first_later_zero_relative() {
        assert_eq!(slots_in_use([0, 4, 0, 0]), 2);
        assert_eq!(slots_in_use([1, 4]), 2);
        assert_eq!(slots_in_use([]), 0);
        let zeros = [0u8; 24];
        assert_eq!(zero_tail_start::<OffsetSlot>(&zeros), 0);
        let mut bytes = offset_bytes(&[(0, 0), (4, 100)]);
        bytes.extend([0u8; 16]);
        assert_eq!(zero_tail_start::<OffsetSlot>(&bytes), 2);
        bytes.extend(
            OffsetSlot {
                relative: 0,
                position: 9,
            }
            .encode(),
        );
        assert_eq!(zero_tail_start::<OffsetSlot>(&bytes), 5);
        let bytes = offset_bytes(&[(1, 2), (3, 4)]);
        let all: Vec<OffsetSlot> = slots(&bytes[..15]).collect();
        assert_eq!(
            all,
            vec![OffsetSlot {
                relative: 1,
                position: 2
            }]
        );
    }
}
