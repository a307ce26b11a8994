//! Raw `.index` and `.timeindex` slots, exactly as stored.
//!
//! Kafka opens an existing index with `entries = floor(length / entrySize)` and
//! treats every slot as valid, including a zero-filled preallocated tail; the
//! dump tool stops at the first slot (after the first) whose offset equals the
//! base offset. These readers keep every slot so that callers can apply that
//! rule (dump) or judge the tail (verify).
//!
//! These read a copy of the file rather than using `strata_log::index`'s
//! `OffsetIndex` / `TimeIndex`: those memory-map the file on the premise that
//! this process holds the log directory's lock, and a tool run against a live
//! broker's directory must not map a file the broker may truncate (a read of
//! a truncated mapping is a SIGBUS).
//!
//! Format (`docs/kafka-behaviour.md` §3.1, §4.1): slot layouts, sizes and
//! sanity rules are `strata_log::codec::index`'s, shared with the engine;
//! this module only adds the absolute offsets.

use strata_log::codec::index::{slots, IndexSlot, OffsetSlot, TimeSlot};
use strata_log::{Offset, Timestamp};

/// One offset-index slot: the absolute offset and the `.log` position.
///
/// Format: `relativeOffset i32 | position i32`, offset = base + relative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetEntry {
    pub offset: Offset,
    /// The stored relative offset (negative values are corruption).
    pub relative: i32,
    /// The stored position (negative values are corruption).
    pub position: i32,
}

/// One time-index slot.
///
/// Format: `timestamp i64 | relativeOffset i32`, offset = base + relative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: Timestamp,
    pub offset: Offset,
    pub relative: i32,
}

/// All slots of an index file plus the length of an incomplete trailing slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawIndex<E> {
    pub entries: Vec<E>,
    /// `length % entrySize`: bytes that do not form a whole slot.
    pub partial_bytes: usize,
    pub file_len: usize,
}

/// Decode every whole slot of an `.index` file of the segment based at `base`.
pub fn parse_offset_index(bytes: &[u8], base: Offset) -> RawIndex<OffsetEntry> {
    let entries = slots::<OffsetSlot>(bytes)
        .map(|s| OffsetEntry {
            offset: s.offset(base),
            relative: s.relative,
            position: s.position,
        })
        .collect();
    RawIndex {
        entries,
        partial_bytes: bytes.len() % OffsetSlot::SIZE,
        file_len: bytes.len(),
    }
}

/// Decode every whole slot of a `.timeindex` file of the segment based at `base`.
pub fn parse_time_index(bytes: &[u8], base: Offset) -> RawIndex<TimeEntry> {
    let entries = slots::<TimeSlot>(bytes)
        .map(|s| TimeEntry {
            timestamp: s.timestamp,
            offset: s.offset(base),
            relative: s.relative,
        })
        .collect();
    RawIndex {
        entries,
        partial_bytes: bytes.len() % TimeSlot::SIZE,
        file_len: bytes.len(),
    }
}

/// Number of entries before the zero-filled tail, by Kafka's dump rule
/// (`strata_log::codec::index::slots_in_use`).
pub fn offset_slots_in_use(entries: &[OffsetEntry]) -> usize {
    strata_log::codec::index::slots_in_use(entries.iter().map(|e| e.relative))
}

/// As [`offset_slots_in_use`], for a time index.
pub fn time_slots_in_use(entries: &[TimeEntry]) -> usize {
    strata_log::codec::index::slots_in_use(entries.iter().map(|e| e.relative))
}

/// Kafka's `OffsetIndex.lookup(target).position`: the position of the largest
/// entry with offset ≤ `target` among sorted `entries`, or 0 (the base entry).
pub fn lookup_position(entries: &[OffsetEntry], target: Offset) -> i32 {
    let idx = entries.partition_point(|e| e.offset <= target);
    if idx == 0 {
        0
    } else {
        entries[idx - 1].position
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_slots_decode_relative_to_base() {
        let bytes = [0, 0, 0, 5, 0, 0, 1, 0, 0, 0, 0, 9, 0, 0, 2, 0, 0xff];
        let idx = parse_offset_index(&bytes, Offset(100));
        assert_eq!(idx.entries.len(), 2);
        assert_eq!(idx.entries[0].offset, Offset(105));
        assert_eq!(idx.entries[0].position, 256);
        assert_eq!(idx.entries[1].offset, Offset(109));
        assert_eq!(idx.partial_bytes, 1);
    }

    #[test]
    fn zero_tail_is_cut_after_first_slot() {
        let mut bytes = vec![0u8; 32];
        bytes[3] = 0; // first slot (0, 0) is legitimate
        bytes[11] = 4;
        let idx = parse_offset_index(&bytes, Offset(0));
        assert_eq!(offset_slots_in_use(&idx.entries), 2);
    }

    #[test]
    fn time_slots_decode() {
        let mut bytes = 1_700_000_000_000i64.to_be_bytes().to_vec();
        bytes.extend_from_slice(&7i32.to_be_bytes());
        let idx = parse_time_index(&bytes, Offset(10));
        assert_eq!(idx.entries[0].timestamp, Timestamp(1_700_000_000_000));
        assert_eq!(idx.entries[0].offset, Offset(17));
        assert_eq!(idx.partial_bytes, 0);
    }

    #[test]
    fn lookup_takes_largest_lower_bound() {
        let e = |o, p| OffsetEntry {
            offset: Offset(o),
            relative: o as i32,
            position: p,
        };
        let entries = [e(5, 100), e(9, 200)];
        assert_eq!(lookup_position(&entries, Offset(4)), 0);
        assert_eq!(lookup_position(&entries, Offset(5)), 100);
        assert_eq!(lookup_position(&entries, Offset(8)), 100);
        assert_eq!(lookup_position(&entries, Offset(100)), 200);
    }
}
