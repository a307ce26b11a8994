//! Guards the clean-start tail check: a `.kafka_cleanshutdown` marker must not
//! hide a torn active segment (log end at the segment base, offsets reused,
//! acknowledged appends lost at the next restart), and a segment that ends on
//! a whole batch must not be re-read.

use std::fs::{self, OpenOptions};
use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use strata_log::{LeaderEpoch, LoadParams, Log, LogConfig, MockClock, Offset, SegmentInfo};

/// Small index interval so that the active segment has many index entries;
/// large enough segments that the active one holds hundreds of records.
fn cfg() -> LogConfig {
    LogConfig {
        segment_bytes: 40_000,
        index_interval_bytes: 1_000,
        ..LogConfig::default()
    }
}

fn clean() -> LoadParams {
    LoadParams {
        had_clean_shutdown: true,
        ..LoadParams::default()
    }
}

fn unclean_from_zero() -> LoadParams {
    LoadParams::default()
}

fn reopen(root: &Path, name: &str, params: LoadParams) -> Arc<Log> {
    open_log(root, name, cfg(), &MockClock::new(0), params)
}

/// One batch as read back: (base offset, last offset, bytes).
type Stored = (i64, i64, Vec<u8>);

/// Every batch from the log start to the log end: (base, last, bytes).
fn read_batches(log: &Log) -> Vec<Stored> {
    read_all_batches(log)
        .into_iter()
        .map(|(b, bytes)| (b.base, b.last, bytes))
        .collect()
}

/// Batches compared by offsets and bytes, reporting the first difference
/// (not the whole byte lists).
fn assert_same(actual: &[Stored], expected: &[Stored]) {
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_eq!((a.0, a.1), (e.0, e.1), "offsets of batch {i}");
        assert!(
            a.2 == e.2,
            "bytes of batch {i} (offsets {}..={}) differ",
            e.0,
            e.1
        );
    }
    assert_eq!(actual.len(), expected.len(), "number of batches");
}

/// Append `n` two-record batches as the leader; the stored bytes of each.
fn append_new(log: &Log, n: usize) -> Vec<Stored> {
    (0..n)
        .map(|i| {
            let mut b = client_batch(2, 1_000_000 + i as i64, 50);
            let info = log.append_as_leader(&mut b, LeaderEpoch(7)).unwrap();
            (info.first_offset.0, info.last_offset.0, b)
        })
        .collect()
}

/// A log of `batches` two-record follower batches, closed cleanly; returns
/// every batch and the segments.
fn closed_log(root: &Path, name: &str, batches: i64) -> (Vec<Stored>, Vec<SegmentInfo>) {
    let log = reopen(root, name, unclean_from_zero());
    for i in 0..batches {
        log.append_as_follower(&follower_batch(2 * i, &[10 * i, 10 * i + 5], 30))
            .unwrap();
    }
    let all = read_batches(&log);
    assert_eq!(all.len() as i64, batches);
    let segs = log.segments();
    assert!(segs.len() >= 2, "want an inactive and an active segment");
    log.close().unwrap();
    (all, segs)
}

/// Cut the active `.log` to `tear` bytes, then check the whole story: the
/// clean open recovers the segment, old records keep their offsets and
/// bytes, new appends get fresh offsets, and both a clean and an unclean
/// restart keep the new acknowledged records.
fn torn_active_segment(name: &str, pick_tear: impl Fn(&[RawBatch], &[(i32, i32)]) -> usize) {
    let tmp = tempfile::tempdir().unwrap();
    let (all, segs) = closed_log(tmp.path(), name, 400);
    let active = segs.last().unwrap();
    let image = fs::read(&active.log_path).unwrap();
    let in_active = split_batches(&image);
    let index = read_offset_index(&active.index_path);
    assert!(
        index.len() >= 5,
        "the active segment has several index entries"
    );
    assert!(
        in_active.len() >= 100,
        "hundreds of records in the active segment"
    );
    let tear = pick_tear(&in_active, &index);
    let torn = in_active
        .iter()
        .find(|b| b.position < tear && tear < b.position + b.size)
        .expect("the tear is inside a batch");
    OpenOptions::new()
        .write(true)
        .open(&active.log_path)
        .unwrap()
        .set_len(tear as u64)
        .unwrap();

    // Everything before the torn batch survives, with offsets and bytes.
    let kept: Vec<_> = all.iter().filter(|b| b.0 < torn.base).cloned().collect();
    let end = torn.base;
    let log = reopen(tmp.path(), name, clean());
    assert_eq!(
        log.log_end_offset(),
        Offset(end),
        "log end at the last whole batch"
    );
    assert_same(&read_batches(&log), &kept);

    // New appends start at the old end, not at an offset still on disk.
    let new = append_new(&log, 20);
    assert_eq!(new[0].0, end, "first new offset is the old log end");
    let mut expected = kept.clone();
    expected.extend(new.iter().cloned());
    assert_same(&read_batches(&log), &expected);
    let stats = log.recovery_stats();
    assert_eq!(stats.recovered_segments, vec![active.base_offset]);
    assert_eq!(stats.truncated_bytes, (tear - torn.position) as u64);
    assert!(stats.deleted_segments.is_empty());
    log.close().unwrap();

    // A second clean restart keeps the acknowledged records...
    let log = reopen(tmp.path(), name, clean());
    assert_same(&read_batches(&log), &expected);
    assert!(log.recovery_stats().recovered_segments.is_empty());
    assert_eq!(log.log_end_offset(), Offset(new.last().unwrap().1 + 1));
    drop(log);
    // ...and so does an unclean one that re-reads every segment.
    let log = reopen(tmp.path(), name, unclean_from_zero());
    assert_same(&read_batches(&log), &expected);
    assert_eq!(log.recovery_stats().truncated_bytes, 0);
    assert_eq!(log.log_end_offset(), Offset(new.last().unwrap().1 + 1));
}

#[test]
fn tear_after_the_last_index_entry_is_recovered_on_a_clean_start() {
    torn_active_segment("tail-0", |batches, index| {
        let last_entry = index.last().unwrap().1 as usize;
        let b = batches
            .iter()
            .rev()
            .find(|b| b.position > last_entry)
            .unwrap();
        b.position + b.size / 2
    });
}

#[test]
fn tear_before_the_last_index_entry_is_recovered_on_a_clean_start() {
    // The index's last entries point past the new end of the file.
    torn_active_segment("tail-1", |batches, index| {
        let target = index[index.len() - 3].1 as usize;
        let b = batches.iter().find(|b| b.position >= target).unwrap();
        b.position + b.size / 2
    });
}

#[test]
fn tear_inside_the_first_batch_empties_the_active_segment() {
    torn_active_segment("tail-2", |batches, _| batches[0].size / 3);
}

#[test]
fn a_whole_tail_is_checked_without_re_reading_the_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let (all, segs) = closed_log(tmp.path(), "tail-3", 400);
    let active = segs.last().unwrap();
    // Read before the open resizes the active index to its maximum.
    let last_entry = read_offset_index(&active.index_path).last().unwrap().1 as u64;
    let log = reopen(tmp.path(), "tail-3", clean());
    let stats = log.recovery_stats();
    assert!(stats.recovered_segments.is_empty(), "{stats:?}");
    assert!(stats.rebuilt_indexes.is_empty(), "{stats:?}");
    assert_eq!(stats.truncated_bytes, 0);
    // The check read the tail after the last index entry, not the segment.
    assert_eq!(stats.clean_tail_checked_bytes, active.size - last_entry);
    assert!(
        stats.clean_tail_checked_bytes < active.size / 4,
        "{stats:?}"
    );
    assert_eq!(log.log_end_offset(), Offset(all.last().unwrap().1 + 1));
    assert_eq!(fs::metadata(&active.log_path).unwrap().len(), active.size);
    assert_same(&read_batches(&log), &all);
}
