//! Log-level behaviour: offsets, reads, roll, truncation, group commit.

use std::sync::Arc;

use super::*;
use crate::batch::{BatchBuilder, BatchView};
use crate::clock::MockClock;

pub(crate) fn client_batch(n: usize, ts: i64, value_len: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    let v = vec![b'x'; value_len];
    for i in 0..n {
        b.append(Timestamp(ts + i as i64), Some(b"key"), Some(&v), &[]);
    }
    b.build()
}

fn open(dir: &Path, cfg: LogConfig, clock: &Arc<MockClock>) -> Arc<Log> {
    Log::open(
        &dir.join("t-0"),
        cfg,
        LoadParams::default(),
        clock.clone(),
        DirHealth::new(dir),
    )
    .unwrap()
}

#[test]
fn leader_appends_assign_offsets_and_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(1_000_000);
    let log = open(dir.path(), LogConfig::default(), &clock);
    for i in 0..5 {
        let mut b = client_batch(3, 1_000_000, 10);
        let info = log.append_as_leader(&mut b, LeaderEpoch(2)).unwrap();
        assert_eq!(info.first_offset, Offset(i * 3));
        assert_eq!(info.last_offset, Offset(i * 3 + 2));
        let v = BatchView::parse(&b).unwrap();
        assert_eq!(v.base_offset(), Offset(i * 3));
        assert_eq!(v.partition_leader_epoch(), LeaderEpoch(2));
        assert!(v.is_crc_valid());
    }
    assert_eq!(log.log_end_offset(), Offset(15));
    assert_eq!(log.latest_epoch(), Some(LeaderEpoch(2)));
    assert_eq!(
        log.end_offset_for_epoch(LeaderEpoch(2)),
        Some((LeaderEpoch(2), Offset(15)))
    );
    log.update_high_watermark(Offset(15));
    let data = log
        .read(Offset(4), 1 << 20, ReadBound::HighWatermark, false)
        .unwrap();
    assert_eq!(data.first_offset_in_slice, Offset(3));
    let bytes = data.read_to_vec().unwrap();
    assert_eq!(crate::batch::BatchScanner::new(&bytes).count(), 4);
}

#[test]
fn log_append_time_stamps_now_and_recomputes_crc() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(5_000_000);
    let cfg = LogConfig {
        message_timestamp_type: crate::batch::TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let log = open(dir.path(), cfg, &clock);
    let mut b = client_batch(2, 1_000, 1);
    let info = log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    assert_eq!(info.log_append_time, Some(Timestamp(5_000_000)));
    let v = BatchView::parse(&b).unwrap();
    assert_eq!(v.max_timestamp(), Timestamp(5_000_000));
    assert!(v.is_crc_valid());
}

#[test]
fn rejects_appends_larger_than_a_segment_and_stale_follower_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        segment_bytes: 200,
        ..LogConfig::default()
    };
    let log = open(dir.path(), cfg, &clock);
    let mut big = client_batch(3, 0, 100);
    assert!(matches!(
        log.append_as_leader(&mut big, LeaderEpoch(0)),
        Err(LogError::RecordBatchTooLarge { .. })
    ));
    let mut small = client_batch(1, 0, 1);
    log.append_as_leader(&mut small, LeaderEpoch(0)).unwrap();
    // `small` now carries offset 0, below the log end 1.
    assert!(matches!(
        log.append_as_follower(&small),
        Err(LogError::UnexpectedAppendOffset { .. })
    ));
}

#[test]
fn out_of_range_reads_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    };
    let log = open(dir.path(), cfg, &clock);
    for _ in 0..10 {
        let mut b = client_batch(2, 0, 40);
        log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    }
    assert!(log.num_segments() > 2);
    assert!(matches!(
        log.read(Offset(21), 100, ReadBound::LogEnd, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    log.truncate_to(Offset(7)).unwrap();
    // Mid-batch target: the batch 6..7 goes too.
    assert_eq!(log.log_end_offset(), Offset(7));
    let segs = log.segments();
    assert!(segs.last().unwrap().base_offset <= Offset(7));
    let all = log
        .read(Offset(0), 1 << 20, ReadBound::LogEnd, false)
        .unwrap();
    assert_eq!(all.first_offset_in_slice, Offset(0));
    log.truncate_to(Offset(0)).unwrap();
    assert_eq!(log.log_end_offset(), Offset(0));
}

#[test]
fn durable_appends_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cfg = LogConfig {
        durable_append: true,
        ..LogConfig::default()
    };
    let log = open(dir.path(), cfg, &clock);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let mut b = client_batch(1, 0, 8);
                    let info = log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
                    assert!(log.durable_offset() > info.last_offset);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(log.durable_offset(), Offset(100));
    assert!(log.durable_sync_count() <= 100);
}

#[test]
fn one_fsync_covers_every_append_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), LogConfig::default(), &clock);
    let mut ends = Vec::new();
    for _ in 0..3 {
        let mut b = client_batch(2, 0, 8);
        ends.push(
            log.append_as_leader(&mut b, LeaderEpoch(0))
                .unwrap()
                .last_offset
                .plus(1),
        );
    }
    assert_eq!(log.durable_sync_count(), 0);
    // The first caller syncs up to the log end it sees...
    log.flush_up_to(ends[0]).unwrap();
    assert_eq!(log.durable_offset(), Offset(6));
    assert_eq!(log.durable_sync_count(), 1);
    // ...so the later ones are covered without another fsync.
    log.flush_up_to(ends[1]).unwrap();
    log.flush_up_to(ends[2]).unwrap();
    assert_eq!(log.durable_sync_count(), 1);
    let mut b = client_batch(1, 0, 8);
    log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    log.flush_up_to(Offset(7)).unwrap();
    assert_eq!(log.durable_sync_count(), 2);
}

#[test]
fn log_is_shareable_and_refuses_work_after_close() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Log>();
    assert_send_sync::<crate::LogManager>();
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let log = open(dir.path(), LogConfig::default(), &clock);
    let mut b = client_batch(1, 0, 8);
    log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    log.close().unwrap();
    let mut b = client_batch(1, 0, 8);
    assert!(matches!(
        log.append_as_leader(&mut b, LeaderEpoch(0)),
        Err(LogError::Closed { .. })
    ));
    assert!(matches!(
        log.read(Offset(0), 10, ReadBound::LogEnd, true),
        Err(LogError::Closed { .. })
    ));
    // Closing trimmed the indexes of the last segment.
    let seg = &log.segments()[0];
    assert_eq!(std::fs::metadata(&seg.index_path).unwrap().len(), 0);
    assert_eq!(std::fs::metadata(&seg.time_index_path).unwrap().len(), 12);
}

/// `append_as_leader_unsynced` on a durable log leaves the fsync to the
/// caller: nothing is durable until `flush_up_to`, whose one fsync covers
/// every append before it; `raise_high_watermark` never lowers the high
/// watermark when callers finish out of order.
#[test]
fn unsynced_durable_appends_wait_for_the_callers_flush() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(1_000_000);
    let cfg = LogConfig {
        durable_append: true,
        ..LogConfig::default()
    };
    let log = open(dir.path(), cfg, &clock);
    let syncs = log.durable_sync_count();
    let mut ends = Vec::new();
    for _ in 0..3 {
        let mut b = client_batch(2, 1_000_000, 10);
        let info = log
            .append_as_leader_unsynced(&mut b, LeaderEpoch(0))
            .unwrap();
        ends.push(info.last_offset.plus(1));
    }
    assert_eq!(log.durable_sync_count(), syncs, "no fsync yet");
    assert!(log.durable_offset() < ends[0]);
    log.flush_up_to(ends[2]).unwrap();
    log.flush_up_to(ends[0]).unwrap();
    assert_eq!(
        log.durable_sync_count(),
        syncs + 1,
        "one fsync for all three"
    );
    assert_eq!(log.durable_offset(), ends[2]);
    // The last caller finishes first: the first one's raise keeps it.
    assert_eq!(log.raise_high_watermark(ends[2]), ends[2]);
    assert_eq!(log.raise_high_watermark(ends[0]), ends[2]);
    assert_eq!(log.high_watermark(), ends[2]);
    // The synced path still fsyncs inside the append.
    let mut b = client_batch(1, 1_000_000, 10);
    let info = log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    assert!(log.durable_offset() > info.last_offset);
    // Another writer's unsynced append behind it: raising to the end stops
    // at what is fsynced, and moves on once that is flushed too.
    let synced_end = log.log_end_offset();
    assert_eq!(log.raise_high_watermark_to_end(), synced_end);
    let mut b = client_batch(2, 1_000_000, 10);
    let later = log
        .append_as_leader_unsynced(&mut b, LeaderEpoch(0))
        .unwrap();
    assert_eq!(log.raise_high_watermark_to_end(), synced_end);
    log.flush_up_to(later.last_offset.plus(1)).unwrap();
    assert_eq!(log.raise_high_watermark_to_end(), log.log_end_offset());
}
