//! Behaviour of the index files, mostly Kafka's OffsetIndexTest,
//! TimeIndexTest and TransactionIndexTest plus the on-disk bytes.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tempfile::TempDir;

use super::*;
use crate::types::{Offset, Position, ProducerId, Timestamp};

const BASE: Offset = Offset(45);

fn new_path(dir: &TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

fn offset_index(dir: &TempDir, base: Offset, max_entries: usize) -> OffsetIndex {
    OffsetIndex::open(&new_path(dir, "00.index"), base, max_entries * 8, true).unwrap()
}

fn op(offset: i64, position: u32) -> OffsetPosition {
    OffsetPosition {
        offset: Offset(offset),
        position: Position(position),
    }
}

fn to(ts: i64, offset: i64) -> TimestampOffset {
    TimestampOffset {
        timestamp: Timestamp(ts),
        offset: Offset(offset),
    }
}

fn corruption(r: Result<(), IndexError>) -> IndexCorruption {
    match r {
        Err(e) => e
            .corruption()
            .unwrap_or_else(|| panic!("not a corruption: {e}")),
        Ok(()) => panic!("expected corruption"),
    }
}

// ---------------------------------------------------------------- offset index

#[test]
fn new_offset_index_is_preallocated_and_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.index");
    // 30 * 8 + 5: rounded down to whole entries.
    let idx = OffsetIndex::open(&path, BASE, 245, true).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 240);
    assert_eq!((idx.entries(), idx.max_entries()), (0, 30));
    assert_eq!(idx.last_offset(), BASE);
    assert!(!idx.is_full());
    idx.sanity_check().unwrap();
}

#[test]
fn too_small_max_size_is_rejected_without_leaving_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.index");
    let err = OffsetIndex::open(&path, BASE, 7, true).err().unwrap();
    assert!(matches!(
        err,
        IndexError::InvalidMaxIndexSize {
            max_index_size: 7,
            entry_size: 8,
            ..
        }
    ));
    assert!(!path.exists());
    let err = TimeIndex::open(&path, BASE, 11, true).err().unwrap();
    assert!(matches!(
        err,
        IndexError::InvalidMaxIndexSize { entry_size: 12, .. }
    ));
}

#[test]
fn entries_are_big_endian_relative_offset_then_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, Offset(1000), 4);
    idx.append(Offset(1005), Position(100)).unwrap();
    idx.append(Offset(1000 + 0x0102_0304), Position(0x0a0b_0c0d))
        .unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    assert_eq!(
        fs::read(path).unwrap(),
        [0, 0, 0, 5, 0, 0, 0, 100, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d]
    );
}

#[test]
fn lookup_at_base_middle_end_and_beyond() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    assert_eq!(idx.lookup(BASE), op(45, 0), "empty index");
    assert_eq!(idx.lookup(Offset(92)), op(45, 0), "empty index");
    for i in 0..30u32 {
        idx.append(BASE.plus(1 + 2 * i as i64), Position(i * 100))
            .unwrap();
    }
    assert_eq!(idx.lookup(Offset(0)), op(45, 0), "below base");
    assert_eq!(idx.lookup(BASE), op(45, 0), "below first entry");
    assert_eq!(idx.lookup(Offset(46)), op(46, 0), "first entry");
    assert_eq!(idx.lookup(Offset(47)), op(46, 0), "between entries");
    assert_eq!(idx.lookup(Offset(76)), op(76, 1500), "middle");
    assert_eq!(idx.lookup(Offset(77)), op(76, 1500), "middle gap");
    assert_eq!(idx.lookup(Offset(104)), op(104, 2900), "last entry");
    assert_eq!(idx.lookup(Offset(1_000_000)), op(104, 2900), "beyond");
    assert_eq!(idx.last_offset(), Offset(104));
    assert_eq!(idx.entry(0), op(46, 0));
    assert_eq!(idx.entry(29), op(104, 2900));
}

#[test]
#[should_panic(expected = "entry 0 requested")]
fn entry_past_the_end_panics() {
    let dir = tempfile::tempdir().unwrap();
    offset_index(&dir, BASE, 30).entry(0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn offset_lookup_matches_sorted_map(
        gaps in proptest::collection::vec((1i64..15, 0u32..40), 1..2600),
        probes in proptest::collection::vec(0i64..40_000, 1..60),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = offset_index(&dir, BASE, gaps.len());
        let mut map = BTreeMap::new();
        let (mut offset, mut position) = (BASE.get(), 0u32);
        for (g, p) in gaps {
            offset += g;
            position += p;
            idx.append(Offset(offset), Position(position)).unwrap();
            map.insert(offset, position);
        }
        prop_assert!(idx.is_full());
        let expect = |t: i64| map.range(..=t).next_back().map(|(&o, &p)| op(o, p)).unwrap_or(op(BASE.get(), 0));
        for t in probes.into_iter().chain(map.keys().copied()) {
            prop_assert_eq!(idx.lookup(Offset(t)), expect(t));
        }
    }
}

#[test]
fn append_rejects_non_increasing_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(51), Position(0)).unwrap();
    for bad in [50, 51] {
        match idx.append(Offset(bad), Position(1)) {
            Err(IndexError::InvalidOffset { offset, last, .. }) => {
                assert_eq!((offset, last), (Offset(bad), Offset(51)))
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(idx.entries(), 1);
    // The first entry may equal the base offset (and then passes the check).
    let mut idx = OffsetIndex::open(&new_path(&dir, "b.index"), Offset(20), 80, true).unwrap();
    idx.append(Offset(20), Position(0)).unwrap();
    idx.sanity_check().unwrap();
}

#[test]
fn append_rejects_offsets_outside_the_relative_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    assert!(matches!(
        idx.append(Offset(44), Position(0)),
        Err(IndexError::OffsetOverflow { .. })
    ));
    assert!(matches!(
        idx.append(BASE.plus(1 << 31), Position(0)),
        Err(IndexError::OffsetOverflow { .. })
    ));
    assert!(idx.can_append_offset(BASE.plus(i32::MAX as i64)));
    idx.append(BASE.plus(i32::MAX as i64), Position(0)).unwrap();
    assert_eq!(
        idx.lookup(Offset(i64::MAX)).offset,
        BASE.plus(i32::MAX as i64)
    );
}

#[test]
fn full_index_rejects_appends() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    for i in 0..30 {
        assert!(!idx.is_full());
        idx.append(BASE.plus(i + 1), Position(i as u32)).unwrap();
    }
    assert!(idx.is_full());
    assert!(matches!(
        idx.append(Offset(1000), Position(1)),
        Err(IndexError::Full { entries: 30, .. })
    ));
}

#[test]
fn truncate_to_follows_kafkas_cases() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, Offset(0), 10);
    for i in 1..10 {
        idx.append(Offset(i), Position(i as u32)).unwrap();
    }
    idx.truncate_to(Offset(12)).unwrap();
    assert_eq!(idx.lookup(Offset(10)), op(9, 9), "past the end: unchanged");
    idx.append(Offset(10), Position(10)).unwrap();
    idx.truncate_to(Offset(10)).unwrap();
    assert_eq!(
        (idx.lookup(Offset(10)), idx.last_offset()),
        (op(9, 9), Offset(9))
    );
    idx.append(Offset(10), Position(10)).unwrap();
    idx.truncate_to(Offset(9)).unwrap();
    assert_eq!(
        (idx.lookup(Offset(10)), idx.last_offset()),
        (op(8, 8), Offset(8))
    );
    idx.append(Offset(9), Position(9)).unwrap();
    idx.truncate_to(Offset(5)).unwrap();
    assert_eq!(
        (idx.lookup(Offset(10)), idx.last_offset()),
        (op(4, 4), Offset(4))
    );
    idx.append(Offset(5), Position(5)).unwrap();
    idx.truncate().unwrap();
    assert_eq!((idx.entries(), idx.last_offset()), (0, Offset(0)));
}

#[test]
fn truncate_to_every_boundary() {
    // Entries at 10, 20, ..., 100. For every target: keep exactly the
    // entries below it.
    let dir = tempfile::tempdir().unwrap();
    for target in 0..=111i64 {
        let path = new_path(&dir, &format!("{target}.index"));
        let mut idx = OffsetIndex::open(&path, Offset(0), 88, true).unwrap();
        for i in 1..=10 {
            idx.append(Offset(i * 10), Position(i as u32)).unwrap();
        }
        idx.truncate_to(Offset(target)).unwrap();
        let expected = (1..=10).filter(|i| i * 10 < target).count();
        assert_eq!(idx.entries(), expected, "truncate_to({target})");
        let last = if expected == 0 {
            0
        } else {
            expected as i64 * 10
        };
        assert_eq!(idx.last_offset(), Offset(last), "truncate_to({target})");
        // Appending continues after the cut.
        idx.append(Offset(last + 1), Position(100)).unwrap();
    }
}

#[test]
fn close_trims_and_reopen_reads_every_slot() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(51), Position(0)).unwrap();
    idx.append(Offset(52), Position(1)).unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 16);

    let mut reopened = OffsetIndex::open(&path, BASE, 30 * 8, true).unwrap();
    assert_eq!((reopened.entries(), reopened.max_entries()), (2, 2));
    assert_eq!(reopened.last_offset(), Offset(52));
    assert_eq!(reopened.lookup(Offset(51)), op(51, 0));
    assert_eq!(reopened.lookup(Offset(60)), op(52, 1));
    assert!(reopened.is_full(), "a trimmed index is full until resized");
    assert!(matches!(
        reopened.append(Offset(53), Position(2)),
        Err(IndexError::Full { .. })
    ));
    reopened.sanity_check().unwrap();
    // Growing it back (as loading does for the active segment) allows appends.
    assert!(reopened.resize(30 * 8).unwrap());
    assert!(!reopened.resize(30 * 8 + 3).unwrap(), "same rounded size");
    assert_eq!((reopened.entries(), reopened.max_entries()), (2, 30));
    reopened.append(Offset(53), Position(2)).unwrap();
    reopened.close().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 24);
}

#[test]
fn reset_clears_and_grows_to_max() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(0)).unwrap();
    idx.trim_to_valid_size().unwrap();
    assert_eq!(idx.max_entries(), 1);
    idx.reset().unwrap();
    assert_eq!(
        (idx.entries(), idx.max_entries(), idx.length()),
        (0, 30, 240)
    );
    assert_eq!(idx.last_offset(), BASE);
}

#[test]
fn resize_below_the_entries_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(0)).unwrap();
    idx.append(Offset(51), Position(0)).unwrap();
    assert!(matches!(
        idx.resize(8),
        Err(IndexError::ResizeBelowEntries { entries: 2, .. })
    ));
    assert_eq!(idx.entries(), 2);
}

#[test]
fn untrimmed_index_left_by_a_crash_fails_the_sanity_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(0)).unwrap();
    idx.append(Offset(60), Position(4096)).unwrap();
    idx.flush().unwrap();
    let path = idx.path().to_path_buf();
    drop(idx); // a crash: never trimmed
    assert_eq!(fs::metadata(&path).unwrap().len(), 240);

    let reopened = OffsetIndex::open(&path, BASE, 240, true).unwrap();
    assert_eq!(reopened.entries(), 30, "every slot counts, as in Kafka");
    assert!(reopened.is_full());
    assert_eq!(
        reopened.last_offset(),
        BASE,
        "zero slot decodes as (base, 0)"
    );
    assert_eq!(
        corruption(reopened.sanity_check()),
        IndexCorruption::OffsetNotIncreasing {
            slot: 29,
            previous: BASE,
            offset: BASE
        }
    );
    // The full scan names the first bad slot: the first zero after (60, 4096).
    assert_eq!(
        corruption(reopened.check_all_entries()),
        IndexCorruption::OffsetNotIncreasing {
            slot: 2,
            previous: Offset(60),
            offset: BASE
        }
    );
}

#[test]
fn sanity_check_reports_kafkas_corruptions() {
    let dir = tempfile::tempdir().unwrap();
    // Length not a multiple of 8: a 2-byte garbage file.
    let path = new_path(&dir, "short.index");
    fs::write(&path, [1, 2]).unwrap();
    let idx = OffsetIndex::open(&path, BASE, 240, true).unwrap();
    assert_eq!(idx.entries(), 0);
    assert_eq!(
        corruption(idx.sanity_check()),
        IndexCorruption::LengthNotMultiple {
            length: 2,
            entry_size: 8
        }
    );
    // Last offset below the base: a negative relative offset.
    let path = new_path(&dir, "neg.index");
    fs::write(&path, [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).unwrap();
    let idx = OffsetIndex::open(&path, BASE, 240, true).unwrap();
    assert_eq!(
        corruption(idx.sanity_check()),
        IndexCorruption::LastOffsetBelowBase {
            last_offset: Offset(44),
            base_offset: BASE
        }
    );
    // Decreasing positions.
    let path = new_path(&dir, "pos.index");
    fs::write(&path, [0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 8]).unwrap();
    let idx = OffsetIndex::open(&path, BASE, 240, true).unwrap();
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::PositionDecreasing { slot: 1, .. }
    ));
}

#[test]
fn fetch_upper_bound_offset_uses_positions() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    let (first, second, third, fourth) = (op(45, 0), op(46, 10), op(47, 23), op(48, 37));
    assert_eq!(idx.fetch_upper_bound_offset(first, 5), None);
    for e in [first, second, third, fourth] {
        idx.append(e.offset, e.position).unwrap();
    }
    assert_eq!(idx.fetch_upper_bound_offset(first, 5), Some(second));
    assert_eq!(idx.fetch_upper_bound_offset(first, 10), Some(second));
    assert_eq!(idx.fetch_upper_bound_offset(first, 23), Some(third));
    assert_eq!(idx.fetch_upper_bound_offset(first, 22), Some(third));
    assert_eq!(idx.fetch_upper_bound_offset(second, 24), Some(fourth));
    assert_eq!(idx.fetch_upper_bound_offset(fourth, 1), None);
    assert_eq!(idx.fetch_upper_bound_offset(first, 200), None);
    // Kafka's quirk: a target equal to the first entry's position is never
    // probed as an exact hit, so the entry after it is returned.
    assert_eq!(idx.fetch_upper_bound_offset(first, 0), Some(second));
    let mut single = OffsetIndex::open(&new_path(&dir, "one.index"), BASE, 80, true).unwrap();
    single.append(Offset(50), Position(10)).unwrap();
    assert_eq!(single.fetch_upper_bound_offset(op(50, 0), 10), None);
    assert_eq!(
        single.fetch_upper_bound_offset(op(50, 0), 9),
        Some(op(50, 10))
    );
}

#[test]
fn read_only_index() {
    let dir = tempfile::tempdir().unwrap();
    let missing = new_path(&dir, "missing.index");
    assert!(matches!(
        OffsetIndex::open(&missing, BASE, 240, false),
        Err(IndexError::Io {
            op: IndexOp::Open,
            ..
        })
    ));
    assert!(!missing.exists());
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(7)).unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    let mut ro = OffsetIndex::open(&path, BASE, 240, false).unwrap();
    assert_eq!(ro.entry(0), op(50, 7));
    ro.truncate_to(Offset(51)).unwrap();
    assert_eq!(ro.entries(), 1);
    ro.truncate().unwrap();
    assert!(matches!(
        ro.append(Offset(60), Position(0)),
        Err(IndexError::ReadOnly { .. })
    ));
}

#[test]
fn rename_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(7)).unwrap();
    let old = idx.path().to_path_buf();
    let renamed = new_path(&dir, "00.index.deleted");
    idx.rename_to(&renamed).unwrap();
    assert!(!old.exists() && renamed.exists());
    assert_eq!(idx.path(), renamed.as_path());
    idx.append(Offset(51), Position(8)).unwrap();
    assert_eq!(idx.lookup(Offset(51)), op(51, 8));
    assert!(idx.delete().unwrap());
    assert!(!renamed.exists());
    let idx = OffsetIndex::open(&old, BASE, 240, true).unwrap();
    fs::remove_file(&old).unwrap();
    assert!(!idx.delete().unwrap(), "already gone");
}

// ------------------------------------------------------------------ time index

fn time_index(dir: &TempDir, max_entries: usize) -> TimeIndex {
    TimeIndex::open(&new_path(dir, "00.timeindex"), BASE, max_entries * 12, true).unwrap()
}

/// Kafka TimeIndexTest.appendEntries: (i*10, base + i*10) for i in 1..=n.
fn append_entries(idx: &mut TimeIndex, n: i64) {
    for i in 1..=n {
        idx.maybe_append(Timestamp(i * 10), BASE.plus(i * 10), false)
            .unwrap();
    }
}

#[test]
fn time_entries_are_big_endian_timestamp_then_relative_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    idx.maybe_append(Timestamp(0x0102_0304_0506_0708), BASE.plus(9), false)
        .unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    assert_eq!(
        fs::read(path).unwrap(),
        [1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 9]
    );
}

#[test]
fn time_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    assert_eq!(idx.lookup(Timestamp(100)), to(-1, 45), "empty");
    append_entries(&mut idx, 29);
    assert_eq!(idx.lookup(Timestamp(9)), to(-1, 45), "below the first");
    assert_eq!(idx.lookup(Timestamp(25)), to(20, 65), "between");
    assert_eq!(idx.lookup(Timestamp(30)), to(30, 75), "exact");
    assert_eq!(idx.lookup(Timestamp(i64::MAX)), to(290, 335), "beyond");
    assert_eq!(idx.entry(0), to(10, 55));
    assert_eq!(idx.entry(3), to(40, 85));
    assert_eq!(idx.last_entry(), to(290, 335));
}

#[test]
fn time_index_reserves_the_last_slot() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    assert!(!idx.is_full());
    append_entries(&mut idx, 28);
    assert!(!idx.is_full());
    append_entries_from(&mut idx, 29);
    assert!(idx.is_full(), "full at max_entries - 1");
    assert!(matches!(
        idx.maybe_append(Timestamp(10_000), Offset(1000), false),
        Err(IndexError::Full { entries: 29, .. })
    ));
    // A forced append with an offset below the last entry still fails.
    assert!(matches!(
        idx.maybe_append(Timestamp(10_000), Offset(280), true),
        Err(IndexError::InvalidOffset { .. })
    ));
    // The forced final entry fits the reserved slot...
    idx.maybe_append(Timestamp(10_000), Offset(1000), true)
        .unwrap();
    assert_eq!((idx.entries(), idx.max_entries()), (30, 30));
    // ...and beyond that there is no slot at all.
    assert!(matches!(
        idx.maybe_append(Timestamp(10_001), Offset(1001), true),
        Err(IndexError::Full { entries: 30, .. })
    ));
    // Re-appending the last entry (roll after close) is a no-op, even now.
    idx.maybe_append(Timestamp(10_000), Offset(1000), true)
        .unwrap();
}

fn append_entries_from(idx: &mut TimeIndex, i: i64) {
    idx.maybe_append(Timestamp(i * 10), BASE.plus(i * 10), false)
        .unwrap();
}

#[test]
fn time_index_only_indexes_strictly_increasing_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    // -1 (no timestamp) is never indexed in an empty index.
    idx.maybe_append(Timestamp::NONE, BASE, false).unwrap();
    assert_eq!(idx.entries(), 0);
    idx.maybe_append(Timestamp(100), Offset(50), false).unwrap();
    // Same timestamp, larger offset: ignored.
    idx.maybe_append(Timestamp(100), Offset(55), false).unwrap();
    assert_eq!((idx.entries(), idx.last_entry()), (1, to(100, 50)));
    // Larger timestamp at the same offset: indexed.
    idx.maybe_append(Timestamp(101), Offset(50), false).unwrap();
    assert_eq!(idx.entries(), 2);
    match idx.maybe_append(Timestamp(99), Offset(60), false) {
        Err(IndexError::TimestampRegression {
            timestamp, last, ..
        }) => {
            assert_eq!((timestamp, last), (Timestamp(99), Timestamp(101)))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        idx.maybe_append(Timestamp(200), Offset(49), false),
        Err(IndexError::InvalidOffset { .. })
    ));
    assert!(matches!(
        idx.maybe_append(Timestamp(200), Offset(44), false),
        Err(IndexError::InvalidOffset { .. })
    ));
    assert_eq!(idx.entries(), 2);
}

#[test]
fn time_truncate_compares_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    append_entries(&mut idx, 29);
    idx.truncate().unwrap();
    assert_eq!((idx.entries(), idx.last_entry()), (0, to(-1, 45)));
    append_entries(&mut idx, 29);
    idx.truncate_to(BASE.plus(10)).unwrap();
    assert_eq!(idx.entries(), 0);
    append_entries(&mut idx, 29);
    idx.truncate_to(BASE.plus(35)).unwrap();
    assert_eq!((idx.entries(), idx.last_entry()), (3, to(30, 75)));
    idx.truncate_to(BASE.plus(30)).unwrap();
    assert_eq!((idx.entries(), idx.last_entry()), (2, to(20, 65)));
    idx.truncate_to(Offset(10_000)).unwrap();
    assert_eq!(idx.entries(), 2);
}

/// Kafka's sparse-append rule (§3.3/§4.3) on the time index, as in
/// testReloadLargestTimestampAndNextOffsetAfterTruncation: with
/// `index.interval.bytes = 2s - 1` and 30 appends of `s` bytes (record
/// timestamp = offset * 10), the time index gets 14 entries.
#[test]
fn sparse_append_rule_gives_fourteen_entries() {
    let dir = tempfile::tempdir().unwrap();
    let base = Offset(40);
    let mut idx = TimeIndex::open(&new_path(&dir, "s.timeindex"), base, 1200, true).unwrap();
    let (s, interval) = (100usize, 199usize);
    let mut since_last_entry = 0usize;
    let mut max_ts = Timestamp::NONE;
    let mut offset_of_max = base;
    for i in 0..30 {
        let offset = base.plus(i);
        let ts = Timestamp(offset.get() * 10);
        if ts > max_ts {
            max_ts = ts;
            offset_of_max = offset;
        }
        if since_last_entry > interval {
            idx.maybe_append(max_ts, offset_of_max, false).unwrap();
            since_last_entry = 0;
        }
        since_last_entry += s;
    }
    assert_eq!(idx.entries(), 14);
    assert_eq!(idx.entry(0), to(420, 42));
    idx.truncate_to(base.plus(1)).unwrap();
    assert_eq!(idx.entries(), 0);
}

#[test]
fn time_close_trims_and_reopen_reads_the_last_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    append_entries(&mut idx, 5);
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 60);
    let mut reopened = TimeIndex::open(&path, BASE, 360, true).unwrap();
    assert_eq!((reopened.entries(), reopened.max_entries()), (5, 5));
    assert_eq!(reopened.last_entry(), to(50, 95));
    assert!(reopened.is_full());
    reopened.sanity_check().unwrap();
    assert!(reopened.resize(360).unwrap());
    assert!(!reopened.is_full());
    reopened
        .maybe_append(Timestamp(60), BASE.plus(60), false)
        .unwrap();
    reopened.reset().unwrap();
    assert_eq!((reopened.entries(), reopened.last_entry()), (0, to(-1, 45)));
}

#[test]
fn time_resize_reports_changes_and_rereads_the_last_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    assert!(!idx.resize(30 * 12).unwrap());
    assert!(idx.resize(15 * 12).unwrap());
    assert!(idx.resize(60 * 12).unwrap());
    assert_eq!(idx.max_entries(), 60);
    // A zero-length time index (as loading leaves a missing one) is full.
    idx.resize(0).unwrap();
    assert!(idx.is_full());
}

#[test]
fn time_sanity_checks() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = time_index(&dir, 30);
    idx.sanity_check().unwrap();
    append_entries(&mut idx, 5);
    idx.sanity_check().unwrap();
    idx.flush().unwrap();
    let path = idx.path().to_path_buf();
    drop(idx); // crash: untrimmed
    let crashed = TimeIndex::open(&path, BASE, 360, true).unwrap();
    assert_eq!(crashed.entries(), 30);
    assert!(matches!(
        corruption(crashed.sanity_check()),
        IndexCorruption::LastTimestampBelowFirst { .. }
    ));

    let write = |name: &str, bytes: &[u8]| -> TimeIndex {
        let p = new_path(&dir, name);
        fs::write(&p, bytes).unwrap();
        TimeIndex::open(&p, BASE, 360, true).unwrap()
    };
    let entry = |ts: i64, rel: i32| -> Vec<u8> {
        let mut v = ts.to_be_bytes().to_vec();
        v.extend_from_slice(&rel.to_be_bytes());
        v
    };
    let idx = write("neg.timeindex", &entry(5, -1));
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::LastOffsetBelowBase { .. }
    ));
    let idx = write("len.timeindex", &[entry(5, 1), vec![0; 5]].concat());
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::LengthNotMultiple {
            length: 17,
            entry_size: 12
        }
    ));
    // Zero tail after real entries whose first timestamp is 0 still fails.
    let idx = write(
        "zero.timeindex",
        &[entry(0, 1), entry(7, 2), vec![0; 24]].concat(),
    );
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::TimestampNotIncreasing { slot: 3, .. }
    ));
    assert!(matches!(
        corruption(idx.check_all_entries()),
        IndexCorruption::TimestampNotIncreasing { slot: 2, .. }
    ));
}

// ----------------------------------------------------------- transaction index

fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn::new(ProducerId(pid), Offset(first), Offset(last), Offset(lso))
}

fn kafka_txns() -> Vec<AbortedTxn> {
    vec![
        txn(0, 0, 10, 11),
        txn(1, 5, 15, 13),
        txn(2, 18, 35, 25),
        txn(3, 32, 50, 40),
    ]
}

fn txn_index(path: &Path) -> TransactionIndex {
    TransactionIndex::open(path, Offset(0)).unwrap()
}

#[test]
fn aborted_txn_bytes() {
    let t = txn(983493, 137, 299, 200);
    let bytes = t.encode();
    let mut expected = vec![0u8, 0];
    for v in [983493i64, 137, 299, 200] {
        expected.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(bytes.to_vec(), expected);
    assert_eq!(AbortedTxn::decode(&bytes), Some(t));
    let mut newer = bytes;
    newer[0] = 1;
    assert_eq!(AbortedTxn::decode(&newer), None);
}

#[test]
fn txn_index_is_created_lazily_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "00.txnindex");
    let mut idx = txn_index(&path);
    assert!(!path.exists() && idx.is_empty().unwrap());
    idx.flush().unwrap();
    idx.reset().unwrap();
    assert!(idx.all_aborted_txns().unwrap().is_empty());
    assert!(!path.exists(), "no file until the first append");
    for t in kafka_txns() {
        idx.append(&t).unwrap();
    }
    idx.flush().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 4 * 34);
    idx.close().unwrap();
    let mut reopened = txn_index(&path);
    let extra = txn(3, 50, 60, 55);
    reopened.append(&extra).unwrap();
    let mut all = kafka_txns();
    all.push(extra);
    assert_eq!(reopened.all_aborted_txns().unwrap(), all);
}

#[test]
fn txn_index_last_offset_must_increase() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = txn_index(&new_path(&dir, "a.txnindex"));
    idx.append(&txn(1, 5, 15, 13)).unwrap();
    for last in [15, 10] {
        assert!(matches!(
            idx.append(&txn(0, 0, last, 11)),
            Err(IndexError::TxnOutOfOrder { .. })
        ));
    }
}

#[test]
fn collect_aborted_txns_like_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = txn_index(&new_path(&dir, "a.txnindex"));
    let all = kafka_txns();
    for t in &all {
        idx.append(t).unwrap();
    }
    let collect = |f: i64, u: i64| idx.collect_aborted_txns(Offset(f), Offset(u)).unwrap();
    let r = collect(0, 100);
    assert_eq!((r.aborted, r.is_complete), (all.clone(), false));
    let r = collect(0, 32);
    assert_eq!((r.aborted, r.is_complete), (all[..3].to_vec(), true));
    let r = collect(0, 35);
    assert_eq!((r.aborted, r.is_complete), (all.clone(), true));
    let r = collect(10, 35);
    assert_eq!((r.aborted, r.is_complete), (all.clone(), true));
    let r = collect(11, 35);
    assert_eq!((r.aborted, r.is_complete), (all[1..].to_vec(), true));
    let r = collect(20, 41);
    assert_eq!((r.aborted, r.is_complete), (all[2..].to_vec(), false));
}

#[test]
fn txn_truncate_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.txnindex");
    let mut idx = txn_index(&path);
    let all = vec![
        txn(0, 0, 10, 2),
        txn(1, 5, 15, 16),
        txn(2, 18, 35, 25),
        txn(3, 32, 50, 40),
    ];
    for t in &all {
        idx.append(t).unwrap();
    }
    idx.truncate_to(Offset(51)).unwrap();
    assert_eq!(idx.all_aborted_txns().unwrap(), all);
    idx.truncate_to(Offset(50)).unwrap();
    assert_eq!(idx.all_aborted_txns().unwrap(), all[..3].to_vec());
    assert_eq!(fs::metadata(&path).unwrap().len(), 3 * 34);
    // The remembered last offset moved back with the cut: 36 is accepted.
    idx.append(&txn(4, 36, 36, 37)).unwrap();
    idx.truncate_to(Offset(11)).unwrap();
    assert_eq!(idx.all_aborted_txns().unwrap(), all[..1].to_vec());
    idx.reset().unwrap();
    assert!(idx.is_empty().unwrap());
    assert!(path.exists(), "reset keeps the file");
    assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    idx.append(&txn(0, 0, 1, 2)).unwrap();
}

#[test]
fn txn_sanity_check_and_partial_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.txnindex");
    let mut idx = txn_index(&path);
    for t in kafka_txns() {
        idx.append(&t).unwrap();
    }
    idx.sanity_check().unwrap();
    idx.close().unwrap();
    let shifted = TransactionIndex::open(&path, Offset(100)).unwrap();
    assert_eq!(
        corruption(shifted.sanity_check()),
        IndexCorruption::AbortedTxnBelowBase {
            last_offset: Offset(10),
            base_offset: Offset(100)
        }
    );
    // A trailing partial record is ignored; a newer version is corrupt.
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0; 20]);
    fs::write(&path, &bytes).unwrap();
    assert_eq!(txn_index(&path).all_aborted_txns().unwrap(), kafka_txns());
    bytes[34] = 1;
    fs::write(&path, &bytes).unwrap();
    match txn_index(&path).all_aborted_txns() {
        Err(e) => assert_eq!(
            e.corruption(),
            Some(IndexCorruption::UnsupportedTxnVersion {
                version: 1,
                position: 34
            })
        ),
        Ok(v) => panic!("{v:?}"),
    }
}

#[test]
fn txn_rename_before_and_after_materialising() {
    let dir = tempfile::tempdir().unwrap();
    // Never materialised: renaming must not create anything.
    let mut lazy = txn_index(&new_path(&dir, "lazy.txnindex"));
    let lazy_new = new_path(&dir, "lazy.txnindex.swap");
    lazy.rename_to(&lazy_new).unwrap();
    assert!(!lazy_new.exists());
    lazy.append(&txn(0, 0, 10, 2)).unwrap();
    assert!(lazy_new.exists() && !new_path(&dir, "lazy.txnindex").exists());

    let path = new_path(&dir, "a.txnindex");
    let mut idx = txn_index(&path);
    idx.append(&txn(0, 0, 10, 2)).unwrap();
    let renamed = new_path(&dir, "a.txnindex.deleted");
    idx.rename_to(&renamed).unwrap();
    idx.append(&txn(1, 5, 15, 16)).unwrap();
    let got = idx
        .collect_aborted_txns(Offset(0), Offset(100))
        .unwrap()
        .aborted;
    assert_eq!(
        got.iter().map(|t| t.first_offset).collect::<Vec<_>>(),
        [Offset(0), Offset(5)]
    );
    assert!(!path.exists());
    assert!(idx.delete().unwrap());
    assert!(!renamed.exists());
}
