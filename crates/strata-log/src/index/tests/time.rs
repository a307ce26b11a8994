//! TimeIndex (Kafka TimeIndexTest) and the `.timeindex` bytes.

use std::fs;

use super::*;
fn time_index(dir: &TempDir, max_entries: usize) -> TimeIndex {
    TimeIndex::open(
        &crate::fs::StdFs::shared(),
        &new_path(dir, "00.timeindex"),
        BASE,
        max_entries * 12,
        true,
    )
    .unwrap()
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
    let mut idx = TimeIndex::open(
        &crate::fs::StdFs::shared(),
        &new_path(&dir, "s.timeindex"),
        base,
        1200,
        true,
    )
    .unwrap();
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
    let mut reopened =
        TimeIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 360, true).unwrap();
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
    let crashed = TimeIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 360, true).unwrap();
    assert_eq!(crashed.entries(), 30);
    assert!(matches!(
        corruption(crashed.sanity_check()),
        IndexCorruption::LastTimestampBelowFirst { .. }
    ));

    let write = |name: &str, bytes: &[u8]| -> TimeIndex {
        let p = new_path(&dir, name);
        fs::write(&p, bytes).unwrap();
        TimeIndex::open(&crate::fs::StdFs::shared(), &p, BASE, 360, true).unwrap()
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

/// The `.timeindex` twin of the offset index's
/// `slot_past_the_largest_base_offset_is_corruption_not_overflow`.
#[test]
fn time_slot_past_the_largest_base_offset_is_corruption_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "x.timeindex");
    let mut slot = 5i64.to_be_bytes().to_vec();
    slot.extend_from_slice(&1i32.to_be_bytes());
    fs::write(&path, &slot).unwrap();
    let idx = TimeIndex::open(
        &crate::fs::StdFs::shared(),
        &path,
        Offset(i64::MAX),
        120,
        false,
    )
    .unwrap();
    assert_eq!(idx.last_entry().offset, Offset(i64::MIN));
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::LastOffsetBelowBase { .. }
    ));
}
